//! The benchmark harness's own unit tests (wire format, fake VMs, statistics, parsing).
//! The harness is a harness-less bench, which never runs `#[test]` functions, so its modules
//! are built here again, at this crate's root as in the bench, and `cargo test` runs them.
#![allow(dead_code)]

#[path = "../benches/relay/bulk.rs"]
mod bulk;
#[path = "../benches/relay/capture_gen.rs"]
mod capture_gen;
#[path = "../benches/relay/cpu_budget.rs"]
mod cpu_budget;
#[path = "support/delay_link.rs"]
mod delay_link;
#[path = "support/link_relay.rs"]
mod link_relay;
#[path = "../benches/relay/ddm_wire.rs"]
mod ddm_wire;
#[path = "../benches/relay/decode.rs"]
mod decode;
#[path = "../benches/relay/fake_vm.rs"]
mod fake_vm;
#[path = "../benches/relay/far.rs"]
mod far;
#[path = "support/rate_link.rs"]
mod rate_link;
#[path = "../benches/relay/thin.rs"]
mod thin;
#[path = "../benches/relay/far_idle.rs"]
mod far_idle;
#[path = "../benches/relay/far_paths.rs"]
mod far_paths;
#[path = "../benches/relay/ide.rs"]
mod ide;
#[path = "../benches/relay/jdwp_tap.rs"]
mod jdwp_tap;
#[path = "../benches/relay/jdwp_ops.rs"]
mod jdwp_ops;
#[path = "../benches/relay/jdb_far.rs"]
mod jdb_far;
#[path = "../benches/relay/jvm.rs"]
mod jvm;
#[path = "../benches/relay/jvm_suite.rs"]
mod jvm_suite;
#[path = "../benches/relay/one_cpu.rs"]
mod one_cpu;
#[path = "../benches/relay/owner_cost.rs"]
mod owner_cost;
#[path = "../benches/relay/params.rs"]
mod params;
#[path = "../benches/relay/paths.rs"]
mod paths;
#[path = "../benches/relay/procs.rs"]
mod procs;
#[path = "../benches/relay/proc_tree.rs"]
mod proc_tree;
#[path = "../benches/relay/proxy.rs"]
mod proxy;
#[path = "../benches/relay/remote.rs"]
mod remote;
#[path = "../benches/relay/remote_paths.rs"]
mod remote_paths;
#[path = "../benches/relay/report.rs"]
mod report;
#[path = "../benches/relay/sched_wait.rs"]
mod sched_wait;
#[path = "../benches/relay/scale.rs"]
mod scale;
#[path = "../benches/relay/soak.rs"]
mod soak;
#[path = "../benches/relay/soak_report.rs"]
mod soak_report;
#[path = "../benches/relay/soak_debugger.rs"]
mod soak_debugger;
#[path = "../benches/relay/soak_world.rs"]
mod soak_world;
#[path = "../benches/relay/web_page.rs"]
mod web_page;
#[path = "../benches/relay/stats.rs"]
mod stats;
#[path = "../benches/relay/stats_cost.rs"]
mod stats_cost;
#[path = "../benches/relay/table.rs"]
mod table;
#[path = "../benches/relay/test_hosts.rs"]
mod test_hosts;
#[path = "support/testhost.rs"]
mod testhost;
#[path = "support/testnet.rs"]
mod testnet;
#[path = "../benches/relay/where_time.rs"]
mod where_time;
#[path = "../benches/relay/instructions.rs"]
mod instructions;
#[path = "../benches/relay/wire.rs"]
mod wire;
