//! `decode --trace FILE`: a capture as a Chrome trace event file (the JSON object format),
//! which ui.perfetto.dev and chrome://tracing open.
//!
//! One process per VM; in it one track per debugger and one for the proxy's own requests
//! and the VM's DDM chunks. Each request is a slice from the command to its reply, named
//! by the command, with the ids and sizes as arguments; events and DDM chunks are instants.
//! A track's slices must nest, and a debugger may have several requests outstanding, so
//! overlapping requests go to further tracks of the same debugger ("lanes"): lane 0 is
//! the debugger's own track, lane 1 its first overlap, and so on.
//!
//! Written as the records stream by: a slice begins ("B") when the command is read and
//! ends ("E") at its reply; one never answered ends when its connection closes or the file
//! ends, marked `unanswered`. Timestamps are microseconds since the first record, never
//! decreasing within a track.

use std::collections::HashMap;
use std::io::Write;
use std::time::SystemTime;

use serde_json::{json, Value};

use super::pairing::Pairing;
use super::reader::{DecodedEvent, DecodedPacket, DecodedRecord, PacketKind};
use super::record::{Direction, Leg};
use super::time::format_rfc3339_micros;
use crate::ddm::{decode_payload, Dir};
use crate::jdwp::names::{display_command, display_error, EVENT_COMMAND_SET};

/// Most lanes per source; a request beyond (more than this many outstanding at once) is
/// drawn as an instant.
pub const MAX_LANES: usize = 64;
/// DDM chunks decoded into an instant's arguments per packet.
const MAX_CHUNKS_SHOWN: usize = 16;

/// Who a track belongs to, within a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Debugger(u64),
    Proxy,
}

/// One source's lanes: whether each is busy, and its track id.
struct Source {
    label: String,
    lanes: Vec<Lane>,
}

struct Lane {
    tid: u32,
    busy: bool,
    /// Last timestamp written on this track.
    last_ts: f64,
}

/// A slice that has begun: where, and what its end needs.
#[derive(Clone, Copy)]
struct Open {
    source: (u32, Owner),
    lane: usize,
}

/// What the trace holds, for the caller's summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    pub slices: u64,
    pub unanswered: u64,
    pub instants: u64,
    pub tracks: u64,
}

/// Writes trace events to `out` as records come.
pub struct TraceWriter<W: Write> {
    out: W,
    wrote_event: bool,
    t0: Option<SystemTime>,
    last: Option<SystemTime>,
    pids: HashMap<String, u32>,
    sources: HashMap<(u32, Owner), Source>,
    /// Slices waiting for their reply, by connection, direction and id.
    open: Pairing<Open>,
    /// The same, per connection, to end them when it closes.
    open_by_conn: HashMap<u64, Vec<(Direction, u32)>>,
    next_tid: u32,
    counts: TraceCounts,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(TraceWriter {
            out,
            wrote_event: false,
            t0: None,
            last: None,
            pids: HashMap::new(),
            sources: HashMap::new(),
            open: Pairing::default(),
            open_by_conn: HashMap::new(),
            next_tid: 1,
            counts: TraceCounts::default(),
        })
    }

    fn event(&mut self, v: &Value) -> std::io::Result<()> {
        if self.wrote_event {
            self.out.write_all(b",\n")?;
        }
        self.wrote_event = true;
        serde_json::to_writer(&mut self.out, v).map_err(std::io::Error::other)
    }

    /// Microseconds since the first record.
    fn ts(&self, t: SystemTime) -> f64 {
        let t0 = self.t0.unwrap_or(t);
        t.duration_since(t0).map_or(0.0, |d| d.as_nanos() as f64 / 1000.0)
    }

    fn pid(&mut self, vm: &str) -> std::io::Result<u32> {
        if let Some(p) = self.pids.get(vm) {
            return Ok(*p);
        }
        let pid = self.pids.len() as u32 + 1;
        self.pids.insert(vm.to_string(), pid);
        let name = if vm.is_empty() { "capture".to_string() } else { format!("VM {vm}") };
        self.event(&json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}))?;
        Ok(pid)
    }

    /// The lane a new slice of `owner` goes on (a new track if every lane is busy).
    fn free_lane(&mut self, pid: u32, owner: Owner, label: &str) -> std::io::Result<Option<usize>> {
        let key = (pid, owner);
        let source = self.sources.entry(key).or_insert_with(|| Source { label: label.to_string(), lanes: Vec::new() });
        if let Some(i) = source.lanes.iter().position(|l| !l.busy) {
            return Ok(Some(i));
        }
        if source.lanes.len() >= MAX_LANES {
            return Ok(None);
        }
        let lane = source.lanes.len();
        let tid = self.next_tid;
        self.next_tid += 1;
        source.lanes.push(Lane { tid, busy: false, last_ts: 0.0 });
        let name = if lane == 0 { source.label.clone() } else { format!("{} (overlap {lane})", source.label) };
        let sort = u64::from(tid);
        self.counts.tracks += 1;
        self.event(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}))?;
        self.event(&json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": sort}}))?;
        Ok(Some(lane))
    }

    /// (tid, ts) for an event at `t` on a lane, keeping the track's time from going back.
    fn stamp(&mut self, key: (u32, Owner), lane: usize, t: SystemTime) -> Option<(u32, f64)> {
        let ts = self.ts(t);
        let l = self.sources.get_mut(&key)?.lanes.get_mut(lane)?;
        l.last_ts = l.last_ts.max(ts);
        Some((l.tid, l.last_ts))
    }

    pub fn add(&mut self, r: &DecodedRecord) -> std::io::Result<()> {
        self.t0.get_or_insert(r.time);
        self.last = Some(r.time);
        match &r.event {
            DecodedEvent::Packet(p) => self.packet(r, p),
            DecodedEvent::Close => self.close_conn(r.conn.id, r.time),
            _ => Ok(()),
        }
    }

    fn packet(&mut self, r: &DecodedRecord, p: &DecodedPacket) -> std::io::Result<()> {
        let c = &r.conn;
        let to_vm = p.dir == Direction::ToServer;
        // Whose track: a debugger's requests and what it is sent on the debugger leg (or on
        // any connection of another tool's capture); the proxy's own requests and the VM's
        // DDM chunks on the VM leg. Relayed requests on the VM leg are the debugger's slices
        // already, and events there reach the debugger's track when relayed.
        let owner = match (c.leg, p.kind) {
            (Some(Leg::Debugger) | None, _) => Owner::Debugger(c.id),
            (Some(Leg::Vm), _) if p.orig_id.is_some() => return Ok(()),
            (Some(Leg::Vm), PacketKind::Command { set, .. }) if !to_vm && set == EVENT_COMMAND_SET => return Ok(()),
            (Some(Leg::Vm), _) => Owner::Proxy,
        };
        let label = match owner {
            Owner::Debugger(id) => format!("debugger #{id} {}", c.client),
            Owner::Proxy => "proxy: own requests, DDM from the VM".to_string(),
        };
        let pid = self.pid(&c.vm)?;
        match p.kind {
            PacketKind::Command { set, cmd } if to_vm => {
                let name = display_command(set, cmd);
                let mut args = json!({"id": p.id, "bytes": p.length});
                if let Some(o) = p.orig_id {
                    args["orig_id"] = json!(o);
                }
                if let Some(chunks) = ddm_args(p) {
                    args["chunks"] = chunks;
                }
                let Some(lane) = self.free_lane(pid, owner, &label)? else {
                    args["note"] = json!(format!("more than {MAX_LANES} requests outstanding"));
                    return self.instant(pid, owner, &label, r.time, &name, "command", args);
                };
                let key = (pid, owner);
                let Some((tid, ts)) = self.stamp(key, lane, r.time) else { return Ok(()) };
                if let Some(l) = self.sources.get_mut(&key).and_then(|s| s.lanes.get_mut(lane)) {
                    l.busy = true;
                }
                self.open.remember(c.id, p.dir, p.id, set, Open { source: key, lane });
                self.open_by_conn.entry(c.id).or_default().push((p.dir, p.id));
                self.event(&json!({"ph": "B", "name": name, "cat": "command", "ts": ts, "pid": pid, "tid": tid, "args": args}))
            }
            PacketKind::Command { set, cmd } => {
                let mut name = display_command(set, cmd);
                let mut args = json!({"id": p.id, "bytes": p.length});
                if let Some(first) = event_kind(p) {
                    name = format!("{name} {first}");
                }
                let cat = if let Some(chunks) = ddm_args(p) {
                    let types: Vec<&str> = p.ddm_chunks.iter().map(|(t, _)| t.as_str()).collect();
                    name = format!("DDM {}", types.join(","));
                    args["chunks"] = chunks;
                    "ddm"
                } else {
                    "event"
                };
                self.instant(pid, owner, &label, r.time, &name, cat, args)
            }
            PacketKind::Reply { error, .. } => {
                let Some(open) = self.open.answer(c.id, p.dir, p.id) else { return Ok(()) };
                if let Some(v) = self.open_by_conn.get_mut(&c.id) {
                    v.retain(|&(d, id)| (d, id) != (p.dir.reverse(), p.id));
                }
                let mut args = json!({"reply_bytes": p.length, "error": display_error(error)});
                if let Some(l) = p.latency {
                    args["latency_us"] = json!(l.as_micros() as u64);
                }
                if let Some(chunks) = ddm_args(p) {
                    args["reply_chunks"] = chunks;
                }
                self.end(open, r.time, args)
            }
        }
    }

    fn end(&mut self, open: Open, t: SystemTime, args: Value) -> std::io::Result<()> {
        let Some((tid, ts)) = self.stamp(open.source, open.lane, t) else { return Ok(()) };
        if let Some(l) = self.sources.get_mut(&open.source).and_then(|s| s.lanes.get_mut(open.lane)) {
            l.busy = false;
        }
        self.counts.slices += 1;
        let pid = open.source.0;
        self.event(&json!({"ph": "E", "ts": ts, "pid": pid, "tid": tid, "args": args}))
    }

    #[allow(clippy::too_many_arguments)]
    fn instant(
        &mut self,
        pid: u32,
        owner: Owner,
        label: &str,
        t: SystemTime,
        name: &str,
        cat: &str,
        args: Value,
    ) -> std::io::Result<()> {
        let key = (pid, owner);
        if self.sources.get(&key).is_none_or(|s| s.lanes.is_empty()) {
            // Lane 0 exists before anything is drawn on it.
            self.free_lane(pid, owner, label)?;
        }
        let Some((tid, ts)) = self.stamp(key, 0, t) else { return Ok(()) };
        self.counts.instants += 1;
        self.event(&json!({"ph": "i", "s": "t", "name": name, "cat": cat, "ts": ts, "pid": pid, "tid": tid, "args": args}))
    }

    /// A connection closed: its requests will never be answered.
    fn close_conn(&mut self, conn: u64, t: SystemTime) -> std::io::Result<()> {
        for (dir, id) in self.open_by_conn.remove(&conn).unwrap_or_default() {
            if let Some(open) = self.open.answer(conn, dir.reverse(), id) {
                self.counts.unanswered += 1;
                self.end(open, t, json!({"unanswered": true}))?;
            }
        }
        self.open.close(conn);
        Ok(())
    }

    /// Ends what is still open, closes the JSON and returns what was written.
    pub fn finish(mut self) -> std::io::Result<TraceCounts> {
        let at = self.last.unwrap_or(SystemTime::UNIX_EPOCH);
        let conns: Vec<u64> = self.open_by_conn.keys().copied().collect();
        for c in conns {
            self.close_conn(c, at)?;
        }
        let start = self.t0.map(format_rfc3339_micros);
        let other = json!({"generator": "jdwpmux decode --trace", "capture_start": start});
        write!(self.out, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{other}}}\n")?;
        self.out.flush()?;
        Ok(self.counts)
    }
}

/// The first event's kind of an Event.Composite ("BREAKPOINT").
fn event_kind(p: &DecodedPacket) -> Option<String> {
    if !matches!(p.kind, PacketKind::Command { set: EVENT_COMMAND_SET, .. }) {
        return None;
    }
    let kind = *p.payload.as_ref()?.get(5)?;
    Some(crate::jdwp::names::event_kind_name(kind).map_or_else(|| format!("KIND({kind})"), str::to_string))
}

/// The DDM chunks of a packet as arguments: decoded lines when the capture has the bytes,
/// else type and length.
fn ddm_args(p: &DecodedPacket) -> Option<Value> {
    if p.ddm_chunks.is_empty() {
        return None;
    }
    let lines: Vec<Value> = match p.payload.as_deref() {
        Some(payload) => {
            let dir = if p.dir.from_vm() { Dir::FromVm } else { Dir::ToVm };
            let total = (p.length as usize).saturating_sub(crate::jdwp::packet::HEADER_LEN);
            let prefix_of = (payload.len() < total).then_some(total);
            let reply = matches!(p.kind, PacketKind::Reply { .. });
            decode_payload(payload, dir, reply, prefix_of)
                .into_iter()
                .take(MAX_CHUNKS_SHOWN)
                .map(|c| match c {
                    Ok(c) => json!(c.to_string()),
                    Err(e) => json!(format!("malformed DDM chunk: {e}")),
                })
                .collect()
        }
        None => p.ddm_chunks.iter().take(MAX_CHUNKS_SHOWN).map(|(t, l)| json!(format!("{t} len={l}"))).collect(),
    };
    Some(Value::Array(lines))
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
