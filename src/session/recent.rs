//! The last packets of one VM, as short summaries, for a page that shows them.
//!
//! A session keeps a ring only while somebody holds it (see `VmHandle::watch_packets`): a VM
//! nobody looks at pays one `Option` check per packet and nothing else. Summaries are small
//! and fixed-size (no payload, no names: the reader turns numbers into names), so the ring's
//! memory is bounded by [`RECENT_PACKETS`]. It is filled from the session's one task and read
//! from others, hence the mutex, held for a push or a copy and never across an `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::jdwp::packet::{DDM_CMD_SET, HEADER_LEN};
use crate::jdwp::Header;

/// Summaries kept per VM; older ones are dropped.
pub const RECENT_PACKETS: usize = 256;
/// Commands remembered until their reply, to name the replies the proxy itself makes and to
/// time them. Past this the memory is forgotten (a debugger that never reads replies).
pub const MAX_AWAITED: usize = 1024;

/// Who sent a packet or is to receive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Party {
    Debugger,
    Proxy,
    Vm,
}

/// One packet, as a line in a table. Serialized without the numbers a reader names
/// (command, error, chunk type): the reader adds them with their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PacketSummary {
    /// Increases by one per summary, so a reader can ask for what it has not seen.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub from: Party,
    pub to: Party,
    /// The debugger connection it came from or goes to.
    pub conn: Option<u64>,
    /// The id as its sender (for a reply: its requester) knows it.
    pub id: u32,
    /// The command, or for a reply the command it answers (when known).
    #[serde(skip)]
    pub command: Option<(u8, u8)>,
    pub reply: bool,
    /// A reply's error code.
    #[serde(skip)]
    pub error: u16,
    /// The packet's length on the wire.
    pub len: u32,
    /// For a reply: microseconds since its command was sent.
    pub latency_us: Option<u64>,
    /// The first chunk type of a DDM packet (`THST`).
    #[serde(skip)]
    pub chunk: Option<[u8; 4]>,
}

/// A command seen and not yet answered: its (set, command) and when it was seen.
type Awaited = ((u8, u8), Instant);

#[derive(Debug, Default)]
struct Ring {
    buf: VecDeque<PacketSummary>,
    next_seq: u64,
    /// (debugger connection or None for the proxy, id) -> (command, when it was seen).
    awaited: HashMap<(Option<u64>, u32), Awaited>,
}

/// A bounded ring of packet summaries.
#[derive(Debug, Default)]
pub struct RecentPackets {
    ring: Mutex<Ring>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn first_chunk(set: u8, bytes: &[u8]) -> Option<[u8; 4]> {
    if set != DDM_CMD_SET {
        return None;
    }
    bytes.get(HEADER_LEN..HEADER_LEN + 4)?.try_into().ok()
}

impl RecentPackets {
    /// A command from `from` (a debugger with its connection, the proxy or the VM) to `to`,
    /// whole or its head: the first bytes of the packet as written by its sender.
    pub fn command(&self, from: Party, to: Party, conn: Option<u64>, bytes: &[u8]) {
        let Some(h) = Header::parse(bytes) else { return };
        let command = (h.cmd_set(), h.cmd());
        let summary = PacketSummary {
            seq: 0,
            at_ms: now_ms(),
            from,
            to,
            conn,
            id: h.id,
            command: Some(command),
            reply: false,
            error: 0,
            len: h.length,
            latency_us: None,
            chunk: first_chunk(h.cmd_set(), bytes),
        };
        let Ok(mut r) = self.ring.lock() else { return };
        if from != Party::Vm {
            if r.awaited.len() >= MAX_AWAITED {
                r.awaited.clear();
            }
            r.awaited.insert((conn, h.id), (command, Instant::now()));
        }
        r.push(summary);
    }

    /// A reply from `from` to its requester (debugger `conn`, or the proxy when `None`),
    /// under the id the requester used. `answers` and `latency` when the caller knows them;
    /// else they come from the command seen earlier.
    pub fn reply(&self, from: Party, conn: Option<u64>, id: u32, bytes: &[u8], answers: Option<(u8, u8)>, latency: Option<Duration>) {
        let Some(h) = Header::parse(bytes) else { return };
        let Ok(mut r) = self.ring.lock() else { return };
        let seen = r.awaited.remove(&(conn, id));
        let command = answers.or(seen.map(|(c, _)| c));
        let latency = latency.or(seen.map(|(_, t)| t.elapsed()));
        let summary = PacketSummary {
            seq: 0,
            at_ms: now_ms(),
            from,
            to: if conn.is_some() { Party::Debugger } else { Party::Proxy },
            conn,
            id,
            command,
            reply: true,
            error: h.error_code(),
            len: h.length,
            latency_us: latency.map(|l| l.as_micros() as u64),
            chunk: command.and_then(|(set, _)| first_chunk(set, bytes)),
        };
        r.push(summary);
    }

    /// The summaries with `seq >= from`, oldest first (all that are kept, for 0).
    pub fn since(&self, from: u64) -> Vec<PacketSummary> {
        let Ok(r) = self.ring.lock() else { return Vec::new() };
        r.buf.iter().filter(|p| p.seq >= from).copied().collect()
    }
}

impl Ring {
    fn push(&mut self, mut p: PacketSummary) {
        p.seq = self.next_seq;
        self.next_seq += 1;
        if self.buf.len() == RECENT_PACKETS {
            self.buf.pop_front();
        }
        self.buf.push_back(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jdwp::packet::error;
    use crate::jdwp::Packet;

    #[test]
    fn keeps_the_last_packets_in_order() {
        let r = RecentPackets::default();
        for id in 0..(RECENT_PACKETS as u32 + 10) {
            r.command(Party::Vm, Party::Debugger, None, Packet::command(id, 64, 100, &[]).as_bytes());
        }
        let all = r.since(0);
        assert_eq!(all.len(), RECENT_PACKETS);
        assert_eq!(all[0].id, 10);
        assert_eq!(all[0].seq, 10);
        assert!(all.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        let tail = r.since(all[RECENT_PACKETS - 3].seq);
        assert_eq!(tail.len(), 3);
        assert!(r.since(u64::MAX).is_empty());
    }

    #[test]
    fn a_reply_the_proxy_makes_gets_its_commands_name_and_time() {
        let r = RecentPackets::default();
        r.command(Party::Debugger, Party::Vm, Some(3), Packet::command(7, 1, 9, &[]).as_bytes());
        r.reply(Party::Proxy, Some(3), 7, Packet::reply(7, error::NONE, &[]).as_bytes(), None, None);
        let [cmd, reply] = r.since(0)[..] else { panic!("two summaries") };
        assert_eq!((cmd.command, cmd.reply, cmd.conn, cmd.latency_us), (Some((1, 9)), false, Some(3), None));
        assert_eq!((reply.command, reply.reply, reply.to, reply.from), (Some((1, 9)), true, Party::Debugger, Party::Proxy));
        assert!(reply.latency_us.is_some());
        // The same id from another debugger is another command.
        r.reply(Party::Vm, Some(4), 7, Packet::reply(7, error::VM_DEAD, &[]).as_bytes(), None, None);
        let last = *r.since(0).last().unwrap();
        assert_eq!((last.command, last.error, last.latency_us), (None, error::VM_DEAD, None));
    }

    #[test]
    fn what_the_caller_knows_wins_and_ddm_chunks_are_named() {
        let r = RecentPackets::default();
        let mut payload = b"THST".to_vec();
        payload.extend_from_slice(&[0, 0, 0, 0]);
        r.command(Party::Proxy, Party::Vm, None, Packet::command(0x4000_0001, DDM_CMD_SET, 1, &payload).as_bytes());
        let reply = Packet::reply(0x4000_0001, error::NONE, &payload);
        r.reply(Party::Vm, None, 0x4000_0001, reply.as_bytes(), Some((DDM_CMD_SET, 1)), Some(Duration::from_micros(250)));
        let s = r.since(0);
        assert_eq!(s[0].chunk, Some(*b"THST"));
        assert_eq!((s[1].chunk, s[1].latency_us, s[1].to), (Some(*b"THST"), Some(250), Party::Proxy));
        // Torn bytes are ignored, never a panic.
        r.command(Party::Vm, Party::Proxy, None, &[0, 0, 0]);
        assert_eq!(r.since(0).len(), 2);
    }

    #[test]
    fn awaited_commands_are_bounded() {
        let r = RecentPackets::default();
        for id in 0..(MAX_AWAITED as u32 * 3) {
            r.command(Party::Debugger, Party::Vm, Some(1), Packet::command(id, 1, 1, &[]).as_bytes());
        }
        assert!(r.ring.lock().unwrap().awaited.len() <= MAX_AWAITED);
    }
}
