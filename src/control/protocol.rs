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
    /// Every VM, and each `--ssh` host's row (absent from older daemons' answers).
    Vms {
        vms: Vec<VmInfo>,
        #[serde(default)]
        hosts: Vec<crate::remote::status::HostRow>,
        /// The current-VM port (absent from older daemons' answers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        current_port: Option<u16>,
        /// Why the current-VM port leads to no VM now (None while one is current).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_current: Option<String>,
    },
    Selected { vm: Box<VmInfo> },
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

/// Parses one request line as the daemon reads it (at most [`MAX_REQUEST_LINE`] bytes of
/// it); a bad one gets the message of the request error the client is sent. A line cut at
/// the limit is refused as such, not as whatever JSON error the cut makes.
pub fn parse_request(line: &str) -> Result<Request, String> {
    if line.len() >= MAX_REQUEST_LINE && !line.ends_with('\n') {
        return Err(format!("bad request: longer than MAX_REQUEST_LINE ({MAX_REQUEST_LINE} bytes)"));
    }
    serde_json::from_str::<Request>(line.trim()).map_err(|e| format!("bad request: {e}"))
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

/// Pairs of hex digits (either case) back to bytes; anything else is `None`. Digit by digit:
/// `from_str_radix` would also take a sign (`"+f"`).
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| char::from(c).to_digit(16);
    let b = s.as_bytes();
    if b.len() % 2 != 0 {
        return None;
    }
    b.chunks_exact(2).map(|p| Some((digit(p[0])? << 4 | digit(p[1])?) as u8)).collect()
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
    fn a_line_cut_at_the_limit_names_it() {
        let long = format!("{{\"cmd\":\"select\",\"selector\":\"{}\"}}", "x".repeat(MAX_REQUEST_LINE));
        let cut = &long[..MAX_REQUEST_LINE];
        let message = parse_request(cut).unwrap_err();
        assert!(message.contains("MAX_REQUEST_LINE"), "{message}");
        // Just under the limit, with its newline: an ordinary request.
        let fits = format!("{{\"cmd\":\"select\",\"selector\":\"{}\"}}\n", "x".repeat(MAX_REQUEST_LINE - 31));
        assert_eq!(fits.len(), MAX_REQUEST_LINE);
        assert!(matches!(parse_request(&fits), Ok(Request::Select { .. })));
    }

    #[test]
    fn hex_round_trip() {
        let data = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(to_hex(&data), "00017f80ff");
        assert_eq!(from_hex(&to_hex(&data)).unwrap(), data);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_eq!(from_hex("ABcd"), Some(vec![0xab, 0xcd]));
        // Found by fuzzing: a sign is not a hex digit.
        assert_eq!(from_hex("+f"), None);
        assert_eq!(from_hex("0a+d"), None);
    }
}
