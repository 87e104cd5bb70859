//! Splitting one direction of a reassembled TCP stream into the JDWP handshake and
//! packets, tolerating holes: a hole inside a packet marks it truncated, a hole where a
//! header should be loses the direction until a segment starts with a plausible header.
//!
//! Records are released in the order their first byte was captured, as soon as no packet
//! that began earlier is still being reassembled, so a capture of any size is read in
//! bounded memory: at most [`MAX_KEPT_PAYLOAD`] bytes per packet in progress and
//! [`MAX_REORDER`] finished records waiting behind one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::decoded::{ConnDesc, DecodedEvent, DecodedPacket, DecodedRecord, PacketKind};
use super::record::{Direction, HeadKind, PacketHead, HANDSHAKE, JDWP_HEADER_LEN, REPLY_FLAG};

/// Bytes of a packet's payload kept for decoding (DDM chunks, event summaries); the rest
/// is counted, as when the proxy reads a large packet itself.
pub const MAX_KEPT_PAYLOAD: usize = 1024 * 1024;
/// Finished records held back while an earlier packet is still incomplete (a large reply
/// on one connection while others carry on); beyond, the oldest go out of order.
pub const MAX_REORDER: usize = 65_536;

/// Order of a decoded record: (index of the capture packet it started in, tie-breaker).
pub(super) type Key = (u64, u64);

/// Hands records out in key order once nothing earlier can still appear.
#[derive(Default)]
pub(super) struct Emitter {
    ready: BTreeMap<Key, DecodedRecord>,
    /// Keys of packets begun and not yet finished.
    open: BTreeSet<Key>,
    counter: u64,
}

impl Emitter {
    /// A key for a record emitted at once (open, close, handshake).
    pub(super) fn key(&mut self, idx: u64) -> Key {
        self.counter += 1;
        (idx, self.counter)
    }

    /// A key for a packet whose first bytes just arrived: records after it wait for it.
    fn open_key(&mut self, idx: u64) -> Key {
        let k = self.key(idx);
        self.open.insert(k);
        k
    }

    pub(super) fn push(&mut self, key: Key, rec: DecodedRecord) {
        self.open.remove(&key);
        self.ready.insert(key, rec);
    }

    /// A packet begun at `key` will never be emitted (its header was lost).
    fn abandon(&mut self, key: Key) {
        self.open.remove(&key);
    }

    /// The next record that may go out (all of them with `all`, at the end of the file).
    pub(super) fn pop(&mut self, all: bool) -> Option<DecodedRecord> {
        let (&first, _) = self.ready.first_key_value()?;
        let blocked = self.open.first().is_some_and(|&o| o < first);
        if blocked && !all && self.ready.len() <= MAX_REORDER {
            return None;
        }
        self.ready.pop_first().map(|(_, r)| r)
    }
}

/// Where and when a packet's header began, with the metadata from that segment's comment.
#[derive(Clone)]
struct Start {
    time: SystemTime,
    key: Key,
    orig_id: Option<u32>,
    latency: Option<Duration>,
    near: bool,
}

struct Pending {
    head: PacketHead,
    start: Start,
    payload: Vec<u8>,
    remaining: usize,
    truncated: bool,
}

enum Phase {
    Handshake,
    Header { got: Vec<u8>, start: Option<Start> },
    Body(Pending),
    Lost,
}

fn header_phase() -> Phase {
    Phase::Header {
        got: Vec::new(),
        start: None,
    }
}

/// Facts about the segment being fed.
pub(super) struct Seg<'a> {
    pub(super) idx: u64,
    pub(super) time: SystemTime,
    pub(super) orig_id: Option<u32>,
    pub(super) latency: Option<Duration>,
    /// The segment's comment marks a reply made from the near cache.
    pub(super) near: bool,
    pub(super) conn: &'a Arc<ConnDesc>,
    pub(super) dir: Direction,
}

pub(super) struct DirState {
    pub(super) next_seq: Option<u32>,
    phase: Phase,
}

/// Good enough to resynchronise on: both flag values JDWP uses and a sane length.
fn plausible_head(b: &[u8]) -> bool {
    PacketHead::parse(b).is_some_and(|h| {
        (h.flags == 0 || h.flags == REPLY_FLAG)
            && h.length as usize >= JDWP_HEADER_LEN
            && h.length < 1 << 30
    })
}

fn emit_packet(p: Pending, s: &Seg<'_>, em: &mut Emitter) {
    let kind = match p.head.kind {
        HeadKind::Command { set, cmd } => PacketKind::Command { set, cmd },
        HeadKind::Reply { error } => PacketKind::Reply {
            error,
            command: None,
        },
    };
    let packet = DecodedPacket {
        dir: s.dir,
        id: p.head.id,
        orig_id: p.start.orig_id,
        flags: p.head.flags,
        kind,
        length: p.head.length,
        latency: p.start.latency,
        near: p.start.near,
        payload: Some(p.payload),
        truncated: p.truncated,
        ddm_chunks: Vec::new(), // filled once replies are paired
    };
    let rec = DecodedRecord {
        time: p.start.time,
        conn: s.conn.clone(),
        event: DecodedEvent::Packet(packet),
    };
    em.push(p.start.key, rec);
}

impl DirState {
    pub(super) fn new() -> Self {
        DirState {
            next_seq: None,
            phase: Phase::Handshake,
        }
    }

    pub(super) fn feed(
        &mut self,
        mut data: &[u8],
        mut at_start: bool,
        s: &Seg<'_>,
        em: &mut Emitter,
    ) {
        while !data.is_empty() {
            self.phase = match std::mem::replace(&mut self.phase, Phase::Lost) {
                Phase::Handshake => {
                    if let Some(rest) = data.strip_prefix(&HANDSHAKE[..]) {
                        let rec = DecodedRecord {
                            time: s.time,
                            conn: s.conn.clone(),
                            event: DecodedEvent::Handshake { dir: s.dir },
                        };
                        let key = em.key(s.idx);
                        em.push(key, rec);
                        data = rest;
                        at_start = false;
                    }
                    // Without a handshake the capture began mid-stream: expect a header.
                    header_phase()
                }
                Phase::Header { mut got, mut start } => {
                    if got.is_empty() {
                        let (orig_id, latency, near) = if at_start {
                            (s.orig_id, s.latency, s.near)
                        } else {
                            (None, None, false)
                        };
                        start = Some(Start {
                            time: s.time,
                            key: em.open_key(s.idx),
                            orig_id,
                            latency,
                            near,
                        });
                    }
                    let n = (JDWP_HEADER_LEN - got.len()).min(data.len());
                    got.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    at_start = false;
                    match (PacketHead::parse(&got), start) {
                        (None, start) => Phase::Header { got, start },
                        (Some(head), start) if (head.length as usize) < JDWP_HEADER_LEN => {
                            if let Some(st) = start {
                                em.abandon(st.key);
                            }
                            Phase::Lost
                        }
                        (Some(head), start) => {
                            let start = start.unwrap_or_else(|| Start {
                                time: s.time,
                                key: em.open_key(s.idx),
                                orig_id: None,
                                latency: None,
                                near: false,
                            });
                            let remaining = head.length as usize - JDWP_HEADER_LEN;
                            let p = Pending {
                                head,
                                start,
                                payload: Vec::new(),
                                remaining,
                                truncated: false,
                            };
                            if remaining == 0 {
                                emit_packet(p, s, em);
                                header_phase()
                            } else {
                                Phase::Body(p)
                            }
                        }
                    }
                }
                Phase::Body(mut p) => {
                    let n = p.remaining.min(data.len());
                    let room = MAX_KEPT_PAYLOAD.saturating_sub(p.payload.len());
                    p.payload.extend_from_slice(&data[..n.min(room)]);
                    p.remaining -= n;
                    data = &data[n..];
                    at_start = false;
                    if p.remaining == 0 {
                        emit_packet(p, s, em);
                        header_phase()
                    } else {
                        Phase::Body(p)
                    }
                }
                Phase::Lost => {
                    if at_start && plausible_head(data) {
                        header_phase()
                    } else {
                        return; // the rest of this segment cannot be placed
                    }
                }
            };
        }
    }

    /// `n` bytes of the stream were not captured.
    pub(super) fn hole(&mut self, n: usize, s: &Seg<'_>, em: &mut Emitter) {
        if n == 0 {
            return;
        }
        self.phase = match std::mem::replace(&mut self.phase, Phase::Lost) {
            Phase::Body(mut p) => {
                let k = n.min(p.remaining);
                p.remaining -= k;
                p.truncated = true;
                if p.remaining > 0 {
                    Phase::Body(p)
                } else {
                    emit_packet(p, s, em);
                    if n > k {
                        Phase::Lost
                    } else {
                        header_phase()
                    }
                }
            }
            Phase::Header { start: Some(st), .. } => {
                em.abandon(st.key);
                Phase::Lost
            }
            _ => Phase::Lost,
        };
    }

    /// The stream ended: a packet in progress is emitted as truncated.
    pub(super) fn flush(&mut self, s: &Seg<'_>, em: &mut Emitter) {
        match std::mem::replace(&mut self.phase, Phase::Lost) {
            Phase::Body(mut p) => {
                p.truncated = true;
                emit_packet(p, s, em);
            }
            Phase::Header { start: Some(st), .. } => em.abandon(st.key),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::time::UNIX_EPOCH;

    fn head(len: u32, id: u32) -> Vec<u8> {
        PacketHead { length: len, id, flags: 0, kind: HeadKind::Command { set: 1, cmd: 1 } }.to_bytes().to_vec()
    }

    #[test]
    fn finished_and_lost_packets_leave_nothing_waiting() {
        let conn = Arc::new(ConnDesc {
            id: 1,
            vm: String::new(),
            leg: None,
            client: SocketAddr::from(([127, 0, 0, 1], 1)),
            server: SocketAddr::from(([127, 0, 0, 1], 2)),
        });
        let mut em = Emitter::default();
        let mut d = DirState::new();
        let seg = |idx| Seg { idx, time: UNIX_EPOCH, orig_id: None, latency: None, near: false, conn: &conn, dir: Direction::ToServer };
        d.feed(HANDSHAKE, true, &seg(1), &mut em);
        d.feed(&head(11, 1), true, &seg(2), &mut em); // no body
        let mut p = head(15, 2);
        p.extend_from_slice(&[1, 2, 3, 4]);
        d.feed(&p[..13], true, &seg(3), &mut em); // split in two segments
        assert_eq!(em.open.len(), 1, "a packet in progress holds what follows it");
        d.feed(&p[13..], false, &seg(4), &mut em);
        d.feed(&head(20, 3)[..5], true, &seg(5), &mut em); // a header cut by a hole
        d.hole(100, &seg(6), &mut em);
        d.feed(&head(11, 4), true, &seg(7), &mut em); // found again
        let mut out = Vec::new();
        while let Some(r) = em.pop(false) {
            out.push(r);
        }
        assert!(em.open.is_empty(), "{:?}", em.open);
        let ids: Vec<u32> = out
            .iter()
            .filter_map(|r| match &r.event {
                DecodedEvent::Packet(p) => Some(p.id),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [1, 2, 4]);
        assert_eq!(out.len(), 4, "the handshake and three packets");
    }
}
