//! jdwpmux's test kit, independent of the crate under test (the tests must not trust the
//! code under test to tell them what is on the wire). A dev-dependency of jdwpmux: the
//! integration tests use it as `support` (`use testkit as support;`), the benchmark
//! (benches/relay/) and the examples as `testkit`.
//!
//! # Layout
//! - **The wire**: `consts` (JDWP numbers), `reader` (bounds-checked bytes, JDWP and DDM
//!   strings), `wire` (packets and chunks), `ddm` (DDM payloads, built and parsed together).
//! - **Debuggers**: `client` (a raw JDWP client, async), `blocking_client` (the same on a
//!   blocking socket, for the benchmark's timed runs), `jvm_wire` (a raw debugger of a real
//!   HotSpot), `jdb` (the real jdb, and where its answers end) with `blocking_jdb` (the same
//!   jdb typed at from blocking code, for the benchmark's timed sessions), `jdi` (IDE-like
//!   JDI programs), `console` (a line-driven child `jdb` and `jdi` stand on), `browser` and
//!   `http` (the monitor page's clients).
//! - **VMs and servers**: `fake_vm` (the DDM-aware fake VM; `fake_vm::lean`, many lean ones
//!   for load), `fake_adb`, `java` (real JVMs compiled and started here), `output` (a
//!   child's output, waited on).
//! - **Between peers**: `tap` (records what reaches a VM, or both ways), `ide_counts` (what
//!   an IDE asked per step, from a tap's log), `link_relay` with `delay_link`
//!   and `rate_link` (links with a delay or a rate).
//! - **Places**: `testhost` and `testnet` (other machines: namespaces with sshd),
//!   `containers` (Podman, Docker Engine and bare namespaces), `users` (other accounts), `kube`
//!   (a stand-in Kubernetes API server for the real kubectl, its execs run in Docker containers).
//! - **Processes**: `process` (what /proc says: memory, descriptors, CPU, listening ports;
//!   signals and limits), `ports` (free and held ports), `faults` (what fault tests share),
//!   `trace_check` (a trace file read as a viewer reads it).
//! - **Tests that cannot run here**: `skip` (`not_run!`: they fail, or with
//!   `JDWPMUX_TEST_ALLOW_SKIP=1` are skipped and recorded; never passed).
#![allow(dead_code, unused_imports)]

pub mod blocking_client;
pub mod blocking_jdb;
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
pub mod ide_counts;
pub mod java;
pub mod jdi;
pub mod jdb;
pub mod jvm_wire;
pub mod kube;
pub mod link_relay;
pub mod output;
pub mod ports;
pub mod process;
pub mod rate_link;
pub mod reader;
pub mod skip;
pub mod tap;
pub mod testhost;
pub mod testnet;
// Also read by the capture module's unit tests in src/, which include it by this path.
#[path = "../../tests/support/trace_check.rs"]
pub mod trace_check;
pub mod users;
pub mod wire;
pub mod wire_chunks;

pub use blocking_client::BlockingClient;
pub use client::RawClient;
pub use fake_vm::{DbgdReply, EventRequestRecord, FakeThread, FakeVm, FakeVmConfig, HeapRequest};
pub use ports::PortHold;
pub use java::{java_available, jdb_available, JavaApp, JvmSpec};
pub use jdb::Jdb;
pub use wire::{Chunk, Kind, Packet, Reader, WireError};
