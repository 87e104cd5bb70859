//! The benchmark's own unit tests (its client against fake VMs, statistics, parsing, rows): the
//! `relay_units` test target, which `cargo test` runs. The benchmark is a harness-less bench,
//! whose `#[test]` functions cargo never runs; this root builds the same modules (the list in
//! modules.rs) under the test harness.
#![allow(dead_code)]

include!("modules.rs");
