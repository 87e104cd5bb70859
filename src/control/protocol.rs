//! The control protocol: one JSON object per line over a local socket, a request from the
//! client and one response (or, for watching commands, a stream of them) from the daemon.

use serde::{Deserialize, Serialize};

use crate::registry::VmInfo;

/// Longest request line the daemon reads (a selector is short).
pub const MAX_REQUEST_LINE: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Request {
    List,
    Select { selector: String },
    /// Thread table snapshots every `interval_ms` while the client stays (one with `once`).
    Threads { selector: String, interval_ms: u64, once: bool },
    /// Heap summary now and, with `map`, the heap map at the next GC (`gc` asks for one).
    Heap { selector: String, native: bool, gc: bool, map: bool, png: bool, timeout_ms: u64 },
    Exit { selector: String, status: i32 },
    Features { selector: String },
    /// Traffic figures since start, of one VM or (no selector) of every VM.
    Stats { selector: Option<String> },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum Response {
    Vms { vms: Vec<VmInfo> },
    Selected { vm: VmInfo },
    /// Text to print as it is (a thread table screen, a heap summary, a feature list).
    Text { text: String },
    /// A heap summary and, when asked for, the heap map as a hex-encoded PNG.
    Heap { text: String, png_hex: Option<String>, png_size: Option<(u32, u32)> },
    Stats { report: crate::stats::StatsReport },
    Error { kind: ErrorKind, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The request named no VM, or several: a usage error (exit 2).
    Selector,
    /// The request was malformed.
    Request,
    /// The VM could not do it (not DDM-aware, gone...).
    Vm,
}

/// Lowercase hex, for the PNG in a JSON line.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_tagged_json() {
        let r = Request::Select { selector: "com.example".into() };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(s, r#"{"cmd":"select","selector":"com.example"}"#);
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
        assert_eq!(serde_json::from_str::<Request>(r#"{"cmd":"list"}"#).unwrap(), Request::List);
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"rm -rf"}"#).is_err());
    }

    #[test]
    fn hex_round_trip() {
        let data = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(to_hex(&data), "00017f80ff");
        assert_eq!(from_hex(&to_hex(&data)).unwrap(), data);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }
}
