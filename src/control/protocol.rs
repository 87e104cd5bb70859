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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum Response {
    Vms { vms: Vec<VmInfo> },
    Selected { vm: VmInfo },
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
}
