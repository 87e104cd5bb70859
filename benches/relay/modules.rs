// The benchmark's modules, one list for its two crate roots: main.rs (the benchmark, a
// harness-less bench) and units.rs (their unit tests, which a harness-less bench never runs).
// Both roots include this file, so each module is declared once and found next to it.

mod bulk;
mod capture_gen;
mod containers;
mod cpu_budget;
mod decode;
mod docker;
mod docker_user;
mod exec;
mod failures;
mod far;
mod far_idle;
mod far_mut;
mod far_paths;
mod ide;
mod instructions;
mod jdb_far;
mod jdwp_ops;
mod jvm;
mod jvm_suite;
mod one_cpu;
mod owner_cost;
mod params;
mod paths;
mod proc_tree;
mod procs;
mod proxy;
mod remote;
mod remote_paths;
mod report;
mod scale;
mod sched_wait;
mod sections;
mod soak;
mod soak_debugger;
mod soak_report;
mod soak_world;
mod stats;
mod stats_cost;
mod table;
mod test_hosts;
mod thin;
mod web_page;
mod where_time;
