//! Fuzz targets: what every fuzzer input goes through, and what must hold for it.
//!
//! The code lives in the library so that the AFL binaries in `fuzz/` and `cargo test` run
//! the same checks: `cargo test` replays every committed corpus file and every input that
//! once found a bug (`fuzz/corpus/TARGET`, `fuzz/regressions/TARGET`), and `fuzz/run.sh
//! TARGET SECONDS` looks for new ones. A target panics only when a property is broken; each
//! asserts more than "no panic" where the format allows: decode -> encode -> decode round
//! trips, lengths within their declared bounds, limits honoured.
//!
//! Inputs that need a mode (which side speaks, how the stream is cut into reads) take it
//! from their first byte, so a corpus file is that byte plus real bytes off the wire.
//!
//! A broken property is a panic by design here (that is how AFL sees it), so the crate's
//! rule against `unwrap()` and `expect()` outside tests does not hold for these checks, in
//! test builds or in the fuzzers' builds alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod adb;
pub mod capture;
pub mod codec;
pub mod config;
pub mod control;
pub mod ddm;
pub mod farlink;
pub mod handshake;
pub mod heapmap;
pub mod nearlink;
mod pieces;
pub mod procscan;

#[cfg(test)]
mod replay;

pub use pieces::pieces;

/// One fuzz target: its name (the corpus folder and the AFL binary) and its check.
#[derive(Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub check: fn(&[u8]),
}

/// Every target, in the order `fuzz/run.sh all` runs them.
pub const TARGETS: &[Target] = &[
    Target { name: "codec", check: codec::check },
    Target { name: "handshake", check: handshake::check },
    Target { name: "ddm", check: ddm::check },
    Target { name: "heapmap", check: heapmap::check },
    Target { name: "capture", check: capture::check },
    Target { name: "control", check: control::check },
    Target { name: "adb", check: adb::check },
    Target { name: "config", check: config::check },
    Target { name: "procscan", check: procscan::check },
    Target { name: "farlink", check: farlink::check },
    Target { name: "nearlink", check: nearlink::check },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}
