//! jdwpmux: a transparent JDWP proxy and debugger multiplexer.
//!
//! It keeps one connection to each Java or Android VM, speaks DDM to the VMs that
//! understand it, and lets debuggers in through per-VM ports and one current-VM port,
//! several at once, rewriting request ids so the proxy's own traffic and the debuggers'
//! never collide, and splitting events and suspensions so each sees a VM of its own.
//!
//! # Layout
//! - [`jdwp`]: the wire format (handshake, packets, streaming decoder, event composites,
//!   names). Pure.
//! - [`ddm`]: DDM chunks: typed decoding, zlib, heap maps, per-VM client state. Pure.
//! - [`capture`]: packet captures (pcapng for Wireshark, JSON lines) and reading them back.
//! - [`session`]: one task per VM owning the VM socket and its debuggers' sockets, so a
//!   packet is routed in the wake-up that read it; the id table; the sharing tables (who
//!   owns which event request, suspension and pin); attach and detach.
//! - [`listen`]: debugger accept loops; each new connection's handshake, then the hand-over
//!   of its socket to the VM's session.
//! - [`discovery`]: finding VMs: port-range scans and the adb server.
//! - [`remote`]: VMs on other hosts: the near side, the far side (`jdwpmux far`), the link
//!   between them, the ssh and runtime ways in, and the answers gathered at a stop.
//! - [`transport`]: where a VM (or an adb server) is reached and the byte stream to it;
//!   [`transport::open`] connects to a VM's agent and does the JDWP handshake.
//! - [`netns`]: a connected socket inside another process's network namespace (a JVM on its
//!   container's own loopback): a thread of ours when root, a single-threaded helper process
//!   of this binary when not.
//! - [`park`]: what the runtime's one thread does before it sleeps (yield after a write).
//! - [`private_folder`]: the user's runtime folder and the checks of a folder only its user
//!   may write to (the control socket's and the ssh sockets').
//! - [`registry`]: the known VMs, their ports, and the current selection.
//! - [`control`]: the local control socket behind `list` and `select`.
//! - [`stats`]: traffic figures per debugger and command (latency histograms), live and
//!   from captures.
//! - [`views`]: what people see of DDM data: thread tables, heap summaries and pictures.
//! - [`web`]: the live monitor page (`serve --web`) and its JSON API.
//! - [`config`] and [`manpage`]: the TOML config file; the man page and completions.
//! - `fuzzing`: the fuzz targets' checks, shared by the fuzzers in `fuzz/` and `cargo test`
//!   (built for tests, and with the `fuzzing` feature, which `fuzz/` enables).
//! - [`safe_text`]: text from VMs, hosts and processes made inert for terminals and logs.
//! - [`settings`] and [`cli`]: validated settings and the command line.
//!
//! `ARCHITECTURE.md` (beside `Cargo.toml`) follows one debugger command from the listener to
//! the VM and back, locally and through the far side, naming the file of each step.
//!
//! # Layers
//! Bottom to top. A module imports from its own layer and the layers below it, never from
//! one above (`house_tests` reads every file in `src/` and fails on an import that points
//! up); `main.rs` alone sees everything.
//! 1. safe_text, jdwp, netns, park, accept, fd_limit, private_folder, logwriter: leaves.
//! 2. ddm, transport: DDM on JDWP; where a VM is reached, and opening its connection.
//! 3. discovery: finding VMs (port scans, adb, /proc and remote scans).
//! 4. remote: VMs on other hosts (its own map: the link's protocol at the bottom, then the
//!    ssh client and the exec command, then the near and far sides, then the hosts served
//!    over the near link).
//! 5. capture, stats, views: captures, traffic figures, what people see of DDM data.
//! 6. session: the VM actor.
//! 7. registry, listen: the known VMs; the debuggers' way in.
//! 8. settings, cli, config, manpage: what the user asks for.
//! 9. control, web: the control socket and the live page (nothing else imports control
//!    but `daemon` and `main`).
//! 10. daemon: starts and wires everything (nothing below imports it).
//! 11. fuzzing, house_tests: the fuzz targets' checks, and these rules' tests, over every
//!     layer (test and fuzz builds only).

// Nothing from the network, a file or a peer is unwrapped or expected: a bad input is an error,
// never a panic (tests may unwrap what they made themselves).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod accept;
pub mod capture;
pub mod cli;
pub mod config;
pub mod control;
mod daemon;
pub mod discovery;
pub mod ddm;
pub mod fd_limit;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
#[cfg(test)]
mod house_tests;
pub mod jdwp;
pub mod listen;
pub mod logwriter;
pub mod manpage;
pub mod netns;
pub mod park;
pub mod private_folder;
pub mod registry;
pub mod remote;
pub mod safe_text;
pub mod session;
pub mod settings;
pub mod stats;
pub mod transport;
pub mod views;
pub mod web;

pub use daemon::{start, Daemon, RunError};

