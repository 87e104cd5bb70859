//! Reading captures back (`jdwpmux decode FILE`): format sniffing and the JSON-lines
//! reader; the common decoded form is in `decoded.rs`. The pcap/pcapng reassembly lives in
//! `reader_pcapng.rs`, the text rendering in `display.rs`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::jsonl::{JsonLine, LineKind};
use super::time::parse_rfc3339;

pub use super::decoded::{ConnDesc, DecodedCapture, DecodedEvent, DecodedPacket, DecodedRecord, PacketKind, ReadError, Sink};


/// Buffer for reading capture files: large reads, few system calls.
const READ_BUFFER: usize = 1 << 20;

/// Reads a whole capture of any supported format, recognised by its first bytes, into
/// memory. [`stream_capture`] reads one of any size.
pub fn read_capture(path: &Path) -> Result<DecodedCapture, ReadError> {
    let file = open(path)?;
    read_any(BufReader::with_capacity(READ_BUFFER, file))
}

fn open(path: &Path) -> Result<std::fs::File, ReadError> {
    std::fs::File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a capture record by record in bounded memory, handing each to `sink` in file
/// order. Returns what could not be decoded.
pub fn stream_capture(path: &Path, sink: Sink<'_>) -> Result<Vec<String>, ReadError> {
    let file = open(path)?;
    stream_any(BufReader::with_capacity(READ_BUFFER, file), sink)
}

/// Like [`read_capture`] for any buffered reader.
pub fn read_any<R: BufRead>(r: R) -> Result<DecodedCapture, ReadError> {
    let mut records = Vec::new();
    let warnings = stream_any(r, &mut |rec| {
        records.push(rec);
        ControlFlow::Continue(())
    })?;
    Ok(DecodedCapture { records, warnings })
}

/// Like [`stream_capture`] for any buffered reader.
pub fn stream_any<R: BufRead>(mut r: R, sink: Sink<'_>) -> Result<Vec<String>, ReadError> {
    let head = r.fill_buf()?.iter().take(4).copied().collect::<Vec<u8>>();
    match head.as_slice() {
        [] => Ok(Vec::new()),
        [0x0A, 0x0D, 0x0D, 0x0A] => super::reader_pcapng::read_pcapng(r, sink),
        [0xA1, 0xB2, 0xC3, 0xD4]
        | [0xD4, 0xC3, 0xB2, 0xA1]
        | [0xA1, 0xB2, 0x3C, 0x4D]
        | [0x4D, 0x3C, 0xB2, 0xA1] => super::reader_pcapng::read_pcap(r, sink),
        [b'{', ..] | [b' ' | b'\n' | b'\r' | b'\t', ..] => read_jsonl(r, sink),
        other => Err(ReadError::UnknownFormat(other.to_vec())),
    }
}

/// `{type, length}` pairs out of a JSON `chunks` array (other shapes are ignored).
fn chunks_from_json(v: &[serde_json::Value]) -> Vec<(String, u32)> {
    v.iter()
        .filter_map(|c| {
            let ty = c.get("type")?.as_str()?.to_string();
            let len = c.get("length").and_then(|l| l.as_u64()).unwrap_or(0);
            Some((ty, u32::try_from(len).unwrap_or(u32::MAX)))
        })
        .collect()
}

fn line_to_record(
    l: JsonLine,
    conns: &mut HashMap<u64, Arc<ConnDesc>>,
) -> Result<Option<DecodedRecord>, String> {
    let time = parse_rfc3339(&l.time).map_err(|e| e.to_string())?;
    let desc = ConnDesc {
        id: l.conn.id,
        vm: l.conn.vm,
        leg: Some(l.conn.leg),
        client: l.conn.client,
        server: l.conn.server,
    };
    let conn = match conns.get(&desc.id) {
        Some(c) if **c == desc => c.clone(),
        _ => {
            let c = Arc::new(desc);
            conns.insert(c.id, c.clone());
            c
        }
    };
    let dir = || l.dir.ok_or_else(|| "data line without dir".to_string());
    let event = match l.kind {
        LineKind::Open => DecodedEvent::Open,
        LineKind::Close => DecodedEvent::Close,
        LineKind::Handshake => DecodedEvent::Handshake { dir: dir()? },
        // Bodies belong to the packet line before them, which already has the length.
        LineKind::Body => return Ok(None),
        LineKind::Packet => {
            if l.malformed == Some(true) {
                return Err("packet record shorter than a JDWP header".into());
            }
            let missing = |f: &str| format!("packet line without {f}");
            let reply = l.reply.ok_or_else(|| missing("reply"))?;
            let command = match (l.cmd_set, l.cmd) {
                (Some(s), Some(c)) => Some((s, c)),
                _ => None,
            };
            let kind = if reply {
                PacketKind::Reply {
                    error: l.error.ok_or_else(|| missing("error"))?,
                    command,
                }
            } else {
                let (set, cmd) = command.ok_or_else(|| missing("cmd_set/cmd"))?;
                PacketKind::Command { set, cmd }
            };
            DecodedEvent::Packet(DecodedPacket {
                dir: dir()?,
                id: l.id.ok_or_else(|| missing("id"))?,
                orig_id: l.orig_id,
                flags: l.flags.ok_or_else(|| missing("flags"))?,
                kind,
                length: u32::try_from(l.length.ok_or_else(|| missing("length"))?)
                    .map_err(|e| e.to_string())?,
                latency: l.latency_us.map(Duration::from_micros),
                near: l.near.unwrap_or(false),
                payload: None,
                truncated: l.truncated.unwrap_or(false),
                ddm_chunks: l
                    .chunks
                    .as_deref()
                    .map(chunks_from_json)
                    .unwrap_or_default(),
            })
        }
    };
    Ok(Some(DecodedRecord { time, conn, event }))
}

/// Reads JSON lines; a line that does not parse becomes a warning (a capture still being
/// written usually ends in a partial line).
pub fn read_jsonl<R: BufRead>(mut r: R, sink: Sink<'_>) -> Result<Vec<String>, ReadError> {
    let mut warnings = Vec::new();
    let mut conns = HashMap::new();
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        n += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = serde_json::from_slice::<JsonLine>(&line).map_err(|e| e.to_string());
        match parsed.and_then(|l| line_to_record(l, &mut conns)) {
            Ok(Some(rec)) => {
                if sink(rec).is_break() {
                    break;
                }
            }
            Ok(None) => {}
            Err(e) => warnings.push(format!("line {n}: {e}")),
        }
    }
    Ok(warnings)
}


/// Decodes a capture held in memory.
pub fn read_bytes(bytes: &[u8]) -> Result<DecodedCapture, ReadError> {
    read_any(BufReader::new(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_and_bad_jsonl_lines() {
        assert!(matches!(
            read_bytes(b"GARBAGE"),
            Err(ReadError::UnknownFormat(_))
        ));
        assert_eq!(
            read_bytes(b"").map_err(|e| e.to_string()),
            Ok(DecodedCapture::default())
        );
        let got = read_bytes(b"{\"time\":\"x\"}\n{not json\n").unwrap_or_default();
        assert_eq!(got.records.len(), 0);
        assert_eq!(got.warnings.len(), 2);
        assert!(got.warnings[0].starts_with("line 1:"), "{:?}", got.warnings);
    }

    /// Found by fuzzing: one line that is not UTF-8 made the whole file an I/O error.
    #[test]
    fn a_line_that_is_not_text_is_a_warning() {
        let got = read_bytes(b"{\"time\":\"x\"}\r\n\t\xff\xfe\n{not json\n").unwrap_or_default();
        assert_eq!(got.warnings.len(), 3, "{:?}", got.warnings);
        assert!(got.warnings[1].starts_with("line 2:"), "{:?}", got.warnings);
    }
}
