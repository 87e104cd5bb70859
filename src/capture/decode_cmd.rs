//! `jdwpmux decode FILE`: a capture read back as the same text as the debug log (one line per
//! packet, DDM chunks decoded beneath) or as JSON lines; or summed up as traffic figures
//! (`--stats`) and drawn as a trace for Perfetto (`--trace`). Every mode reads the capture
//! once, as a stream.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::reader::{stream_any, stream_capture, DecodedEvent, DecodedPacket, DecodedRecord, PacketKind, ReadError, Sink};
use super::time::format_rfc3339_micros;
use super::{format_line, Direction};
use crate::ddm::{decode_payload, Dir};
use crate::jdwp::names;
use crate::safe_text::{shown, Shown};

/// Why `decode` stopped.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot write the output: {0}")]
    Write(std::io::Error),
    #[error("cannot write the trace {path}: {source}")]
    Trace { path: PathBuf, source: std::io::Error },
}

/// What `decode` shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// JSON lines instead of text (for `stats`: one JSON document).
    pub json: bool,
    /// Traffic figures instead of the packets.
    pub stats: bool,
    /// Write a Chrome trace event file here.
    pub trace: Option<PathBuf>,
}

/// `decode` with its options: the packet listing, or figures and/or a trace file.
/// Notes (warnings, the trace summary when figures are printed) go to `notes`.
pub fn run(path: &Path, opts: &DecodeOptions, out: &mut dyn Write, notes: &mut dyn Write) -> Result<(), DecodeError> {
    if !opts.stats && opts.trace.is_none() {
        return render_to(path, opts.json, out);
    }
    let mut figures = opts.stats.then(super::figures::CaptureFigures::new);
    let mut trace = match &opts.trace {
        Some(t) => {
            let file = std::fs::File::create(t).map_err(|source| DecodeError::Trace { path: t.clone(), source })?;
            let w = super::trace::TraceWriter::new(std::io::BufWriter::with_capacity(1 << 16, file));
            Some(w.map_err(|source| DecodeError::Trace { path: t.clone(), source })?)
        }
        None => None,
    };
    let mut trace_error = None;
    let warnings = stream_capture(path, &mut |r| {
        if let Some(f) = figures.as_mut() {
            f.add(&r);
        }
        if let Some(t) = trace.as_mut() {
            if let Err(e) = t.add(&r) {
                trace_error = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    let trace_failed = |source| DecodeError::Trace { path: opts.trace.clone().unwrap_or_default(), source };
    if let Some(e) = trace_error {
        return Err(trace_failed(e));
    }
    let written = trace.map(|t| t.finish()).transpose().map_err(trace_failed)?;
    let mut text = String::new();
    if let Some(f) = figures {
        let report = f.report();
        text = if opts.json {
            let mut j = serde_json::to_string_pretty(&report).unwrap_or_default();
            j.push('\n');
            j
        } else {
            report.to_text()
        };
    }
    let mut note = String::new();
    for w in &warnings {
        note.push_str(&format!("# warning: {}\n", Shown(w)));
    }
    if let (Some(c), Some(t)) = (written, &opts.trace) {
        note.push_str(&format!(
            "trace written to {}: {} slices ({} never answered), {} instants on {} tracks; open it in https://ui.perfetto.dev\n",
            t.display(),
            c.slices,
            c.unanswered,
            c.instants,
            c.tracks
        ));
    }
    // With nothing else to print, the notes are the output.
    let (main, side) = if opts.stats { (text, note) } else { (note, String::new()) };
    let result = out.write_all(main.as_bytes()).and_then(|()| out.flush());
    let _ = notes.write_all(side.as_bytes());
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(DecodeError::Write(e)),
        _ => Ok(()),
    }
}

/// Reads a capture and writes it to `out` as text (one line per record, DDM chunks decoded
/// beneath) or JSON lines, record by record: a capture of any size in bounded memory. A
/// reader that went away (`| head`) ends it quietly.
pub fn render_to(path: &Path, json: bool, out: &mut dyn Write) -> Result<(), DecodeError> {
    render_from(|sink| stream_capture(path, sink), json, out)
}

/// As [`render_to`] for a capture held in memory (the capture fuzz target renders so).
pub fn render_bytes(bytes: &[u8], json: bool, out: &mut dyn Write) -> Result<(), DecodeError> {
    render_from(|sink| stream_any(std::io::BufReader::new(bytes), sink), json, out)
}

/// The rendering loop over whatever `read` streams to its sink.
fn render_from(
    read: impl FnOnce(Sink<'_>) -> Result<Vec<String>, ReadError>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), DecodeError> {
    let mut failed: Option<std::io::Error> = None;
    let mut line = String::new();
    let warnings = read(&mut |r| {
        line.clear();
        if json {
            line.push_str(&to_json(&r).to_string());
            line.push('\n');
        } else {
            // A capture may come from anywhere: the VM's name in it, like the VM's own
            // words in its chunks, is shown as text.
            line.push_str(&shown(&format_line(&r)));
            line.push('\n');
            if let DecodedEvent::Packet(p) = &r.event {
                for chunk in ddm_lines(p) {
                    line.push_str("    ");
                    line.push_str(&shown(&chunk));
                    line.push('\n');
                }
            }
        }
        match out.write_all(line.as_bytes()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    let mut tail = String::new();
    for w in &warnings {
        tail.push_str(&format!("# warning: {}\n", Shown(w)));
    }
    let result = match failed {
        Some(e) => Err(e),
        None => out.write_all(tail.as_bytes()).and_then(|()| out.flush()),
    };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(DecodeError::Write(e)),
        _ => Ok(()),
    }
}

/// The whole rendering of a capture file, in memory (for small files and tests).
pub fn render(path: &Path, json: bool) -> Result<String, DecodeError> {
    let mut out = Vec::new();
    render_to(path, json, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn is_ddm(p: &DecodedPacket) -> bool {
    match p.kind {
        PacketKind::Command { set, .. } => set == crate::jdwp::packet::DDM_CMD_SET,
        PacketKind::Reply { command, .. } => command.is_some_and(|(set, _)| set == crate::jdwp::packet::DDM_CMD_SET),
    }
}

/// The payload's whole length when `payload` is only its first bytes (snaplen, or the
/// reader keeping a bounded copy).
fn prefix_of(p: &DecodedPacket, payload: &[u8]) -> Option<usize> {
    let total = (p.length as usize).saturating_sub(crate::jdwp::packet::HEADER_LEN);
    (payload.len() < total).then_some(total)
}

/// Each DDM chunk of a packet, decoded from what the capture kept of it.
fn ddm_lines(p: &DecodedPacket) -> Vec<String> {
    let Some(payload) = p.payload.as_deref().filter(|_| is_ddm(p)) else { return Vec::new() };
    let dir = if p.dir.from_vm() { Dir::FromVm } else { Dir::ToVm };
    let is_reply = matches!(p.kind, PacketKind::Reply { .. });
    decode_payload(payload, dir, is_reply, prefix_of(p, payload))
        .into_iter()
        .map(|c| match c {
            Ok(chunk) => chunk.to_string(),
            Err(e) => format!("malformed DDM chunk: {e}"),
        })
        .collect()
}

fn to_json(r: &DecodedRecord) -> Value {
    let c = &r.conn;
    let mut v = json!({
        "time": format_rfc3339_micros(r.time),
        "conn": { "id": c.id, "vm": c.vm, "leg": c.leg.map(|l| l.as_str()), "client": c.client.to_string(), "server": c.server.to_string() },
    });
    let fields = match &r.event {
        DecodedEvent::Open => json!({ "kind": "open" }),
        DecodedEvent::Close => json!({ "kind": "close" }),
        DecodedEvent::Handshake { dir } => json!({ "kind": "handshake", "dir": dir_str(*dir) }),
        DecodedEvent::Packet(p) => packet_json(p),
    };
    if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), fields) {
        obj.extend(more);
    }
    v
}

fn dir_str(d: Direction) -> &'static str {
    d.as_str()
}

fn packet_json(p: &DecodedPacket) -> Value {
    let mut v = json!({
        "kind": "packet",
        "dir": dir_str(p.dir),
        "id": p.id,
        "orig_id": p.orig_id,
        "flags": p.flags,
        "length": p.length,
        "truncated": p.truncated,
        "latency_us": p.latency.map(|l| l.as_micros() as u64),
    });
    let Some(obj) = v.as_object_mut() else { return v };
    match p.kind {
        PacketKind::Command { set, cmd } => {
            obj.insert("reply".into(), json!(false));
            obj.insert("cmd_set".into(), json!(set));
            obj.insert("cmd".into(), json!(cmd));
            obj.insert("command".into(), json!(names::display_command(set, cmd)));
        }
        PacketKind::Reply { error, command } => {
            obj.insert("reply".into(), json!(true));
            obj.insert("error".into(), json!(error));
            obj.insert("error_name".into(), json!(names::display_error(error)));
            if let Some((set, cmd)) = command {
                obj.insert("command".into(), json!(names::display_command(set, cmd)));
            }
        }
    }
    if is_ddm(p) {
        let chunks: Vec<Value> = match p.payload.as_deref() {
            Some(payload) => {
                let dir = p.dir.from_vm();
                let reply = matches!(p.kind, PacketKind::Reply { .. });
                crate::ddm::json::chunks_json_prefix(payload, dir, reply, prefix_of(p, payload))
            }
            None => p.ddm_chunks.iter().map(|(t, l)| json!({ "type": t, "length": l })).collect(),
        };
        obj.insert("chunks".into(), Value::Array(chunks));
    }
    v
}
