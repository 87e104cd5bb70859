//! `decode --stats`: a capture's records fed into the same traffic tables the daemon keeps
//! live (see [`crate::stats`]), one set per VM.
//!
//! Each request is counted once, where the one who sent it saw it: a debugger's on the
//! debugger leg (its latency is what the debugger waited), the proxy's own (no `orig_id`)
//! on the VM leg; DDM chunks on the VM leg, which carries them all. Captures from other
//! tools have no legs: every connection is a debugger, its client the debugger's address.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::pairing::Pairing;
use super::reader::{DecodedEvent, DecodedPacket, DecodedRecord, PacketKind};
use super::record::{Direction, Leg};
use crate::stats::{StatsReport, TrafficStats, Who};

/// Name of the VM for captures that do not say (other tools' pcaps).
const UNNAMED_VM: &str = "capture";

#[derive(Default)]
struct VmFigures {
    table: TrafficStats,
    first: Option<SystemTime>,
    last: Option<SystemTime>,
}

/// Traffic figures of a capture, record by record.
#[derive(Default)]
pub struct CaptureFigures {
    vms: BTreeMap<String, VmFigures>,
    /// When each outstanding command was seen, for replies whose latency the file lacks.
    sent: Pairing<SystemTime>,
}

/// Whose request a packet on this connection is, if it is one we count there.
fn requester(leg: Option<Leg>, conn: u64, p: &DecodedPacket) -> Option<Who> {
    let to_vm = p.dir == Direction::ToServer;
    let (command, reply) = match p.kind {
        PacketKind::Command { .. } => (true, false),
        PacketKind::Reply { .. } => (false, true),
    };
    match leg {
        Some(Leg::Debugger) | None if (command && to_vm) || (reply && !to_vm) => Some(Who::Debugger(conn)),
        Some(Leg::Vm) if p.orig_id.is_none() && ((command && to_vm) || (reply && !to_vm)) => Some(Who::Proxy),
        _ => None,
    }
}

/// The chunk type as the tables key it (the reader names it "HELO" or "0x48454c4f").
fn chunk_type(name: &str) -> u32 {
    match <[u8; 4]>::try_from(name.as_bytes()) {
        Ok(b) => u32::from_be_bytes(b),
        Err(_) => name.strip_prefix("0x").and_then(|h| u32::from_str_radix(h, 16).ok()).unwrap_or(0),
    }
}

impl CaptureFigures {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, r: &DecodedRecord) {
        let name = if r.conn.vm.is_empty() { UNNAMED_VM } else { r.conn.vm.as_str() };
        let vm = match self.vms.get_mut(name) {
            Some(v) => v,
            None => self.vms.entry(name.to_string()).or_default(),
        };
        vm.first.get_or_insert(r.time);
        vm.last = Some(r.time);
        let p = match &r.event {
            DecodedEvent::Packet(p) => p,
            DecodedEvent::Close => return self.sent.close(r.conn.id),
            _ => return,
        };
        let leg = r.conn.leg;
        if leg != Some(Leg::Debugger) {
            for (ty, len) in &p.ddm_chunks {
                vm.table.ddm_chunk(chunk_type(ty), *len);
            }
        }
        let Some(who) = requester(leg, r.conn.id, p) else { return };
        match p.kind {
            PacketKind::Command { set, cmd } => {
                let peer = matches!(who, Who::Debugger(_)).then_some(r.conn.client);
                vm.table.command(who, peer, set, cmd, p.length);
                self.sent.remember(r.conn.id, p.dir, p.id, set, r.time);
            }
            PacketKind::Reply { error, command } => {
                let sent = self.sent.answer(r.conn.id, p.dir, p.id);
                let Some((set, cmd)) = command else { return };
                let measured = sent.and_then(|t| r.time.duration_since(t).ok());
                let latency = p.latency.or(measured).unwrap_or(Duration::ZERO);
                vm.table.reply(who, set, cmd, error, p.length, latency);
            }
        }
    }

    /// The figures, one block per VM in name order.
    pub fn report(&self) -> StatsReport {
        let vms = self.vms.iter().map(|(name, v)| v.table.report(name, v.first, v.last)).collect();
        StatsReport { vms, links: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::reader::ConnDesc;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::UNIX_EPOCH;

    fn conn(id: u64, leg: Option<Leg>) -> Arc<ConnDesc> {
        Arc::new(ConnDesc {
            id,
            vm: if leg.is_some() { "app".into() } else { String::new() },
            leg,
            client: SocketAddr::from(([127, 0, 0, 1], 40_000 + id as u16)),
            server: SocketAddr::from(([127, 0, 0, 1], 8700)),
        })
    }

    fn rec(c: &Arc<ConnDesc>, at_us: u64, dir: Direction, id: u32, orig_id: Option<u32>, kind: PacketKind) -> DecodedRecord {
        let latency = match kind {
            PacketKind::Reply { .. } if c.leg.is_some() => Some(Duration::from_micros(700)),
            _ => None,
        };
        DecodedRecord {
            time: UNIX_EPOCH + Duration::from_micros(at_us),
            conn: c.clone(),
            event: DecodedEvent::Packet(DecodedPacket {
                dir,
                id,
                orig_id,
                flags: 0,
                kind,
                length: 20,
                latency,
                near: false,
                payload: None,
                truncated: false,
                ddm_chunks: if matches!(kind, PacketKind::Command { set: 0xC7, .. }) { vec![("THCR".into(), 9)] } else { vec![] },
            }),
        }
    }

    #[test]
    fn counts_each_request_once_where_its_sender_saw_it() {
        use Direction::*;
        let (dbg, vm) = (conn(2, Some(Leg::Debugger)), conn(1, Some(Leg::Vm)));
        let version = PacketKind::Command { set: 1, cmd: 1 };
        let answer = PacketKind::Reply { error: 0, command: Some((1, 1)) };
        let helo = PacketKind::Command { set: 0xC7, cmd: 1 };
        let mut f = CaptureFigures::new();
        for r in [
            rec(&dbg, 0, ToServer, 5, None, version),
            rec(&vm, 10, ToServer, 100, Some(5), version),
            rec(&vm, 500, ToClient, 100, Some(5), answer),
            rec(&dbg, 510, ToClient, 5, None, answer),
            rec(&vm, 600, ToServer, 101, None, helo),
            rec(&vm, 900, ToClient, 101, None, PacketKind::Reply { error: 0, command: Some((0xC7, 1)) }),
            rec(&vm, 950, ToClient, 7, None, helo), // a chunk pushed by the VM
            rec(&dbg, 960, ToClient, 7, None, helo), // relayed: not counted twice
        ] {
            f.add(&r);
        }
        let r = f.report();
        assert_eq!(r.vms.len(), 1);
        let v = &r.vms[0];
        assert_eq!((v.vm.as_str(), v.seconds), ("app", 0.00096));
        let d = v.sources.iter().find(|s| s.source == "debugger").unwrap_or_else(|| panic!("{v:?}"));
        assert_eq!((d.conn, d.peer.as_deref(), d.count), (Some(2), Some("127.0.0.1:40002"), 1));
        assert_eq!((d.commands[0].replies, d.commands[0].max_us), (1, 700), "the latency the capture recorded");
        let p = v.sources.iter().find(|s| s.source == "proxy").unwrap_or_else(|| panic!("{v:?}"));
        assert_eq!((p.count, p.commands[0].command.as_str()), (1, "DDM.Chunk"));
        assert_eq!(v.ddm_chunks.len(), 1);
        assert_eq!((v.ddm_chunks[0].chunk_type.as_str(), v.ddm_chunks[0].count), ("THCR", 2));
    }

    #[test]
    fn foreign_captures_measure_latency_from_timestamps() {
        use Direction::*;
        let c = conn(1, None);
        let mut f = CaptureFigures::new();
        f.add(&rec(&c, 1_000, ToServer, 9, None, PacketKind::Command { set: 1, cmd: 7 }));
        f.add(&rec(&c, 4_000, ToClient, 9, None, PacketKind::Reply { error: 99, command: Some((1, 7)) }));
        let r = f.report();
        let v = &r.vms[0];
        assert_eq!(v.vm, "capture");
        let row = &v.sources[0].commands[0];
        assert_eq!((row.command.as_str(), row.max_us, row.errors), ("VirtualMachine.IDSizes", 3_000, 1));
        assert_eq!(v.errors[0].name, "NOT_IMPLEMENTED");
    }
}
