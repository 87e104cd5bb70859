//! The one integration-test binary: fake peers and real JVMs on loopback sockets, the proxy
//! in-process (`harness`) or as the real binary (`bin`).

use testkit as support;
// The kit's test-skipping macros, as `crate::need_podman!()` and `crate::need_test_hosts!()`.
use testkit::{need_podman, need_test_hosts};
mod served;

#[path = "integration/harness.rs"]
mod harness;

#[path = "integration/relay_fake.rs"]
mod relay_fake;
#[path = "integration/streamed.rs"]
mod streamed;
#[path = "integration/sharing.rs"]
mod sharing;
#[path = "integration/sharing_load.rs"]
mod sharing_load;
#[path = "integration/sharing_jvm.rs"]
mod sharing_jvm;
#[path = "integration/near_cache.rs"]
mod near_cache;
#[path = "integration/early_answers.rs"]
mod early_answers;
#[path = "integration/far.rs"]
mod far;
#[path = "integration/far_gather.rs"]
mod far_gather;
#[path = "integration/nearlink.rs"]
mod nearlink;
#[path = "integration/detach.rs"]
mod detach;
#[path = "integration/bad_input.rs"]
mod bad_input;
#[path = "integration/limits.rs"]
mod limits;
#[path = "integration/hostile.rs"]
mod hostile;
#[path = "integration/hostile_text.rs"]
mod hostile_text;
#[path = "integration/hostile_control.rs"]
mod hostile_control;
#[path = "integration/hotspot.rs"]
mod hotspot;
#[path = "integration/cli.rs"]
mod cli;
#[path = "integration/ddm_views.rs"]
mod ddm_views;
#[path = "integration/ddm_layouts.rs"]
mod ddm_layouts;
#[path = "integration/adb.rs"]
mod adb;
#[path = "integration/android_tcp.rs"]
mod android_tcp;
#[path = "integration/scan.rs"]
mod scan;
#[path = "integration/newcomer.rs"]
mod newcomer;
#[path = "integration/no_adb.rs"]
mod no_adb;
#[path = "integration/recent.rs"]
mod recent;
#[path = "integration/capture.rs"]
mod capture;
#[path = "integration/web_api.rs"]
mod web_api;
#[path = "integration/web_browser.rs"]
mod web_browser;
#[path = "integration/web_security.rs"]
mod web_security;
#[path = "integration/logs.rs"]
mod logs;
#[path = "integration/faults_vm.rs"]
mod faults_vm;
#[path = "integration/faults_debugger.rs"]
mod faults_debugger;
#[path = "integration/faults_daemon.rs"]
mod faults_daemon;
#[path = "integration/spin.rs"]
mod spin;
#[path = "integration/proc_scan.rs"]
mod proc_scan;
#[path = "integration/remote_paths.rs"]
mod remote_paths;
#[path = "integration/remote_link.rs"]
mod remote_link;
#[path = "integration/testhost_cut.rs"]
mod testhost_cut;
#[path = "integration/remote.rs"]
mod remote;
#[path = "integration/remote_faults.rs"]
mod remote_faults;
#[path = "integration/remote_far.rs"]
mod remote_far;
#[path = "integration/remote_far_peers.rs"]
mod remote_far_peers;
#[path = "integration/remote_far_cuts.rs"]
mod remote_far_cuts;
#[path = "integration/remote_far_copy.rs"]
mod remote_far_copy;
#[path = "integration/remote_far_hostile.rs"]
mod remote_far_hostile;
#[path = "integration/remote_far_takeover.rs"]
mod remote_far_takeover;
#[path = "integration/remote_far_thin.rs"]
mod remote_far_thin;
#[path = "integration/remote_far_gather.rs"]
mod remote_far_gather;
#[path = "integration/remote_far_attach.rs"]
mod remote_far_attach;
#[path = "integration/remote_far_classes.rs"]
mod remote_far_classes;
#[path = "integration/leave_pins.rs"]
mod leave_pins;
#[path = "integration/remote_far_containers.rs"]
mod remote_far_containers;
#[path = "integration/remote_ddm.rs"]
mod remote_ddm;
#[path = "integration/proc_serve.rs"]
mod proc_serve;
#[path = "integration/proc_users.rs"]
mod proc_users;
#[path = "integration/remote_users.rs"]
mod remote_users;
#[path = "integration/newest.rs"]
mod newest;
#[path = "integration/quiet.rs"]
mod quiet;
#[path = "integration/owner.rs"]
mod owner;
#[path = "integration/remote_hosts.rs"]
mod remote_hosts;
#[path = "integration/containers_support.rs"]
mod containers_support;
#[path = "integration/netns_connect.rs"]
mod netns_connect;
#[path = "integration/containers.rs"]
mod containers;
#[path = "integration/exec.rs"]
mod exec;
#[path = "integration/current_vm.rs"]
mod current_vm;
#[path = "integration/one_row.rs"]
mod one_row;
#[path = "integration/adb_default.rs"]
mod adb_default;
#[path = "integration/control_paths.rs"]
mod control_paths;
#[path = "integration/plain_flags.rs"]
mod plain_flags;
