//! jdwpmux's test kit, independent of the crate under test: JDWP/DDM framing (`wire`, `ddm`),
//! a raw debugger client, a DDM-aware fake VM, a real HotSpot debuggee, a driver for the real
//! `jdb`, test hosts (`testhost`), containers and links with delay or a rate (`delay_link`,
//! `rate_link`). A dev-dependency of jdwpmux: the integration tests use it as `support`
//! (`use testkit as support;`), the benchmark and the examples as `testkit`.
#![allow(dead_code, unused_imports)]

pub mod browser;
pub mod client;
pub mod console;
pub mod containers;
pub mod consts;
pub mod delay_link;
pub mod ddm;
pub mod fake_adb;
pub mod fake_vm;
pub mod faults;
pub mod http;
pub mod java;
pub mod jdi;
pub mod jdb;
pub mod jvm_wire;
pub mod link_relay;
pub mod output;
pub mod ports;
pub mod process;
pub mod rate_link;
pub mod reader;
pub mod tap;
pub mod testhost;
pub mod testnet;
// Also read by the capture module's unit tests in src/, which include it by this path.
#[path = "../../tests/support/trace_check.rs"]
pub mod trace_check;
pub mod users;
pub mod wire;

pub use client::RawClient;
pub use fake_vm::{DbgdReply, EventRequestRecord, FakeThread, FakeVm, FakeVmConfig, HeapRequest};
pub use ports::PortHold;
pub use java::{java_available, jdb_available, JavaApp, JvmSpec};
pub use jdb::Jdb;
pub use wire::{Chunk, Kind, Packet, Reader, WireError};
