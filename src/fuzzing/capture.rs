//! Reading captures back: pcapng and classic pcap files (ours or another tool's, TCP
//! reassembled per direction) and JSON lines, then rendering them as `jdwpmux decode` does.
//!
//! Input: a whole capture file. What must hold:
//! - the reader returns records or an error, never more bytes of a packet than its JDWP
//!   length allows, and no more records than the file could hold;
//! - every record renders as text and as JSON, DDM chunks decoded from what was kept;
//! - a JSON line that parses writes back to a line that parses to the same record.

use crate::capture::decode_cmd::render_bytes;
use crate::capture::jsonl::JsonLine;
use crate::capture::reader::read_bytes;
use crate::capture::{DecodedEvent, ReadError};
use crate::jdwp::packet::HEADER_LEN;

pub fn check(data: &[u8]) {
    match read_bytes(data) {
        Ok(capture) => {
            // Each record comes from at least a few bytes of the file (a JSON line, a TCP
            // segment, a 14-byte handshake split across segments of one byte each).
            assert!(capture.records.len() <= data.len(), "{} records from {} bytes", capture.records.len(), data.len());
            for r in &capture.records {
                if let DecodedEvent::Packet(p) = &r.event {
                    let body = (p.length as usize).saturating_sub(HEADER_LEN);
                    let kept = p.payload.as_ref().map_or(0, Vec::len);
                    assert!(kept <= body, "{kept} bytes kept of a {}-byte packet", p.length);
                }
            }
            for json in [false, true] {
                let mut out = Vec::new();
                let rendered = render_bytes(data, json, &mut out);
                assert!(rendered.is_ok(), "rendering what was read failed: {rendered:?}");
                assert!(!out.is_empty() || capture.records.is_empty() && capture.warnings.is_empty());
            }
        }
        Err(e @ (ReadError::UnknownFormat(_) | ReadError::Pcap(_))) => assert!(!e.to_string().is_empty()),
        Err(e) => panic!("reading from memory failed: {e}"),
    }
    json_lines_round_trip(data);
}

/// decode -> encode -> decode of each JSON line. The `chunks` values are free-form JSON and
/// may hold floats, which do not all survive a round trip exactly: they are left out.
fn json_lines_round_trip(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        let Ok(mut first) = serde_json::from_str::<JsonLine>(line) else { continue };
        first.chunks = None;
        let written = serde_json::to_string(&first).unwrap_or_else(|e| panic!("{first:?} does not serialize: {e}"));
        let again: JsonLine = serde_json::from_str(&written).unwrap_or_else(|e| panic!("{written} does not parse: {e}"));
        assert_eq!(again, first, "JSON line changed in a round trip");
    }
}
