//! Integration-test support for jdwpmux, independent of the crate under test: JDWP/DDM framing
//! (`wire`, `ddm`), a raw debugger client, a DDM-aware fake VM, a real HotSpot debuggee and a
//! driver for the real `jdb`. Used as `mod support;` from tests/integration.rs.
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
pub mod trace_check;
pub mod users;
pub mod wire;

pub use client::RawClient;
pub use fake_vm::{DbgdReply, EventRequestRecord, FakeThread, FakeVm, FakeVmConfig, HeapRequest};
pub use ports::PortHold;
pub use java::{java_available, jdb_available, JavaApp, JvmSpec};
pub use jdb::Jdb;
pub use wire::{Chunk, Kind, Packet, Reader, WireError};
