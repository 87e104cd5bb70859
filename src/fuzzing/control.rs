//! The control socket's protocol: request lines as the daemon reads them (and the selector
//! they carry), response lines as the client reads them, and the hex the heap PNG travels in.
//!
//! Input: one byte choosing the side (0: a request, 1: a response, 2: hex), then the text.
//! What must hold:
//! - a request that parses writes back to JSON that parses to the same request, and its
//!   selector resolves (to "no such VM", on an empty registry) without panicking;
//! - a request that does not parse gets a request error message;
//! - the daemon never reads past `MAX_REQUEST_LINE` of one line;
//! - a response that parses writes back to the same JSON, and prints as `list` prints it;
//! - hex decodes only from pairs of hex digits, and decode -> encode gives the same text.

use crate::control::protocol::{from_hex, parse_request, to_hex, Request, Response, MAX_REQUEST_LINE};
use crate::registry::{Registry, SelectError};

pub fn check(data: &[u8]) {
    let Some((&side, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match side % 3 {
        0 => request(&text),
        1 => response(&text),
        _ => hex(&text, rest),
    }
}

fn request(text: &str) {
    // The daemon reads one line, at most MAX_REQUEST_LINE bytes of it.
    let mut end = text.find('\n').map_or(text.len(), |i| i + 1).min(MAX_REQUEST_LINE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let line = &text[..end];
    match parse_request(line) {
        Ok(req) => {
            let written = serde_json::to_string(&req).unwrap_or_else(|e| panic!("{req:?} does not serialize: {e}"));
            assert_eq!(parse_request(&written).ok(), Some(req.clone()), "request changed in a round trip: {written}");
            if let Some(selector) = selector_of(&req) {
                match Registry::default().resolve(selector) {
                    Err(SelectError::Unknown { selector: s, candidates }) => assert!(s == selector && candidates.is_empty()),
                    other => panic!("an empty registry resolved {selector:?} to {other:?}"),
                }
            }
        }
        Err(message) => assert!(message.starts_with("bad request: ")),
    }
}

fn selector_of(req: &Request) -> Option<&str> {
    match req {
        Request::List | Request::Stats { selector: None } => None,
        Request::Stats { selector: Some(selector) } => Some(selector),
        Request::Select { selector }
        | Request::Threads { selector, .. }
        | Request::Heap { selector, .. }
        | Request::Exit { selector, .. }
        | Request::Features { selector } => Some(selector),
    }
}

fn response(text: &str) {
    for line in text.lines() {
        let Ok(r) = serde_json::from_str::<Response>(line) else { continue };
        let written = serde_json::to_value(&r).unwrap_or_else(|e| panic!("{r:?} does not serialize: {e}"));
        let again: Response = serde_json::from_value(written.clone()).unwrap_or_else(|e| panic!("{written} does not parse: {e}"));
        assert_eq!(serde_json::to_value(&again).ok(), Some(written), "response changed in a round trip");
        match &r {
            Response::Vms { vms, .. } => assert!(crate::control::view::table(vms).lines().count() > vms.len()),
            Response::Heap { png_hex: Some(h), .. } => {
                let _ = from_hex(h);
            }
            _ => {}
        }
    }
}

fn hex(text: &str, raw: &[u8]) {
    if let Some(bytes) = from_hex(text) {
        assert_eq!(bytes.len() * 2, text.len());
        assert_eq!(to_hex(&bytes), text.to_ascii_lowercase());
    }
    assert_eq!(from_hex(&to_hex(raw)).as_deref(), Some(raw));
}
