//! The one integration-test binary: fake peers and real JVMs on loopback sockets, the proxy
//! in-process (`harness`) or as the real binary (`bin`).

use testkit as support;
// The kit's macros for tests that cannot run here (they fail unless skipping is allowed), as
// `crate::need_podman!()`, `crate::need_docker!()`, `crate::need_test_hosts!()` and
// `crate::not_run!(why)`.
use testkit::{need_docker, need_podman, need_test_hosts, not_run};
mod served;

mod harness;

mod relay_fake;
mod streamed;
mod sharing;
mod sharing_load;
mod sharing_jvm;
mod near_cache;
mod early_answers;
mod far;
mod far_gather;
mod nearlink;
mod detach;
mod bad_input;
mod limits;
mod hostile;
mod hostile_text;
mod hostile_control;
mod hotspot;
mod cli;
mod ddm_views;
mod ddm_layouts;
mod adb;
mod android_tcp;
mod scan;
mod newcomer;
mod no_adb;
mod recent;
mod capture;
mod web_api;
mod web_browser;
mod web_security;
mod logs;
mod faults_vm;
mod faults_debugger;
mod faults_daemon;
mod spin;
mod proc_scan;
mod remote_paths;
mod remote_link;
mod testhost_cut;
mod remote;
mod remote_faults;
mod remote_far;
mod remote_far_peers;
mod remote_far_cuts;
mod remote_far_copy;
mod remote_far_hostile;
mod remote_far_takeover;
mod remote_far_thin;
mod remote_far_gather;
mod remote_far_attach;
mod remote_far_classes;
mod leave_pins;
mod remote_far_containers;
mod remote_ddm;
mod proc_serve;
mod proc_users;
mod remote_users;
mod newest;
mod quiet;
mod owner;
mod remote_hosts;
mod containers_support;
mod netns_connect;
mod containers;
mod docker_kit;
mod docker;
mod docker_user;
mod docker_restart;
mod podman_sudo;
mod exec;
mod kube_standin;
mod kube_serve;
mod current_vm;
mod one_row;
mod adb_default;
mod control_paths;
mod plain_flags;
