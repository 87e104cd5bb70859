//! Rebuilding JDWP conversations from pcapng (ours or another tool's) and classic pcap:
//! link headers are stripped, TCP streams are followed per direction (SYN/FIN become
//! open/close, retransmissions are skipped, gaps become holes) and each direction's bytes
//! go to the splitter in `reader_stream.rs`.

use std::collections::HashMap;
use std::io::BufRead;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};

use super::pairing::Pairing;
use super::pcapng_meta::{comment_says_near, parse_open_comment, parse_packet_comment};
use super::decoded::{ddm_chunks_of, ConnDesc, DecodedEvent, DecodedRecord, PacketKind, ReadError, Sink};
use super::reader_stream::{DirState, Emitter, Seg};
use super::record::Direction;
use super::tcpip::{parse_segment, ParsedSegment, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN};

struct Stream {
    conn: Arc<ConnDesc>,
    /// [to server, to client]
    dirs: [DirState; 2],
    closed: bool,
}

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::ToServer => 0,
        Direction::ToClient => 1,
    }
}

struct Reassembler<'s> {
    streams: HashMap<(SocketAddr, SocketAddr), Stream>,
    em: Emitter,
    next_foreign_id: u64,
    skipped: u64,
    warnings: Vec<String>,
    /// Names replies (and finds DDM replies) in release order, as the writer does.
    pairing: Pairing,
    sink: Sink<'s>,
    /// The sink wants no more records.
    stopped: bool,
}

impl<'s> Reassembler<'s> {
    fn new(sink: Sink<'s>) -> Self {
        Reassembler {
            streams: HashMap::new(),
            em: Emitter::default(),
            next_foreign_id: 0,
            skipped: 0,
            warnings: Vec::new(),
            pairing: Pairing::new(),
            sink,
            stopped: false,
        }
    }

    /// Hands out every record nothing earlier can still precede (all of them with `all`).
    fn release(&mut self, all: bool) {
        while !self.stopped {
            let Some(mut r) = self.em.pop(all) else { return };
            match &mut r.event {
                DecodedEvent::Packet(p) => {
                    match &mut p.kind {
                        PacketKind::Command { set, cmd } => self.pairing.command(r.conn.id, p.dir, p.id, *set, *cmd),
                        PacketKind::Reply { command, .. } => *command = self.pairing.reply(r.conn.id, p.dir, p.id),
                    }
                    p.ddm_chunks = ddm_chunks_of(p.kind, p.payload.as_deref().unwrap_or(&[]));
                }
                DecodedEvent::Close => self.pairing.close(r.conn.id),
                _ => {}
            }
            self.stopped = (self.sink)(r).is_break();
        }
    }

    fn new_stream(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        comment: Option<&str>,
    ) -> Stream {
        let (id, leg, vm) = match comment.and_then(parse_open_comment) {
            Some((id, leg, vm)) => (id, Some(leg), vm),
            None => {
                self.next_foreign_id += 1;
                (self.next_foreign_id, None, String::new())
            }
        };
        let conn = Arc::new(ConnDesc {
            id,
            vm,
            leg,
            client,
            server,
        });
        Stream {
            conn,
            dirs: [DirState::new(), DirState::new()],
            closed: false,
        }
    }

    fn end_stream(st: &mut Stream, idx: u64, time: SystemTime, em: &mut Emitter) {
        for d in [Direction::ToServer, Direction::ToClient] {
            let s = Seg {
                idx,
                time,
                orig_id: None,
                latency: None,
                near: false,
                conn: &st.conn,
                dir: d,
            };
            st.dirs[dir_index(d)].flush(&s, em);
        }
    }

    fn packet(&mut self, idx: u64, time: SystemTime, ip: &[u8], comment: Option<&str>) {
        let Ok(seg) = parse_segment(ip) else {
            self.skipped += 1;
            return;
        };
        self.segment(idx, time, &seg, comment);
    }

    fn segment(
        &mut self,
        idx: u64,
        time: SystemTime,
        seg: &ParsedSegment<'_>,
        comment: Option<&str>,
    ) {
        let (src, dst) = (seg.src, seg.dst);
        if seg.flags & (TCP_SYN | TCP_ACK) == TCP_SYN {
            if let Some(mut old) = self.streams.remove(&(src, dst)) {
                Self::end_stream(&mut old, idx, time, &mut self.em);
            }
            let mut st = self.new_stream(src, dst, comment);
            st.dirs[0].next_seq = Some(seg.seq.wrapping_add(1));
            let key = self.em.key(idx);
            let rec = DecodedRecord {
                time,
                conn: st.conn.clone(),
                event: DecodedEvent::Open,
            };
            self.em.push(key, rec);
            self.streams.insert((src, dst), st);
            return;
        }
        let (key, dir) = if self.streams.contains_key(&(src, dst)) {
            ((src, dst), Direction::ToServer)
        } else if self.streams.contains_key(&(dst, src)) {
            ((dst, src), Direction::ToClient)
        } else {
            // Picked up mid-stream: guess the sender is the client.
            let st = self.new_stream(src, dst, None);
            self.streams.insert((src, dst), st);
            ((src, dst), Direction::ToServer)
        };
        let Some(st) = self.streams.get_mut(&key) else {
            return;
        };
        let ds = &mut st.dirs[dir_index(dir)];
        if seg.flags & TCP_SYN != 0 {
            ds.next_seq = Some(seg.seq.wrapping_add(1));
            return;
        }
        let (orig_id, latency) = comment.map(parse_packet_comment).unwrap_or((None, None));
        let near = comment.is_some_and(comment_says_near);
        let s = Seg {
            idx,
            time,
            orig_id,
            latency,
            near,
            conn: &st.conn,
            dir,
        };
        if seg.wire_len > 0 {
            let next = *ds.next_seq.get_or_insert(seg.seq);
            let rel = seg.seq.wrapping_sub(next) as i32;
            let (mut payload, mut wire) = (seg.payload, seg.wire_len);
            if rel < 0 {
                // Retransmission or overlap: drop what was already seen.
                let skip = rel.unsigned_abs() as usize;
                payload = payload.get(skip..).unwrap_or(&[]);
                wire = wire.saturating_sub(skip);
            } else {
                ds.hole(rel as usize, &s, &mut self.em);
            }
            if wire > 0 {
                ds.feed(payload, rel >= 0, &s, &mut self.em);
                ds.hole(wire - payload.len(), &s, &mut self.em);
                ds.next_seq =
                    Some(next.wrapping_add((rel.max(0) as u32).wrapping_add(wire as u32)));
            }
        }
        if seg.flags & (TCP_FIN | TCP_RST) != 0 && !st.closed {
            st.closed = true;
            Self::end_stream(st, idx, time, &mut self.em);
            let key = self.em.key(idx);
            let rec = DecodedRecord {
                time,
                conn: st.conn.clone(),
                event: DecodedEvent::Close,
            };
            self.em.push(key, rec);
        }
    }

    /// The file ended: packets in progress go out truncated, then every record left.
    fn finish(mut self, last_idx: u64) -> Vec<String> {
        let mut streams = std::mem::take(&mut self.streams);
        for st in streams.values_mut() {
            Self::end_stream(st, last_idx + 1, UNIX_EPOCH, &mut self.em);
        }
        self.release(true);
        if self.skipped > 0 {
            self.warnings.push(format!(
                "{} captured packet(s) were not TCP over IP and were skipped",
                self.skipped
            ));
        }
        self.warnings
    }
}

/// Bytes before the IP header for a link type, or None when the packet is not IP.
fn link_header_len(link: u32, data: &[u8]) -> Option<usize> {
    match link {
        101 | 228 | 229 | 12 | 14 => Some(0), // raw IP variants
        0 | 108 => Some(4),                   // BSD loopback
        113 => Some(16),                      // Linux cooked v1
        276 => Some(20),                      // Linux cooked v2
        1 => {
            let mut off = 12;
            loop {
                let et = u16::from_be_bytes(data.get(off..off + 2)?.try_into().ok()?);
                match et {
                    0x8100 | 0x88A8 => off += 4, // VLAN tags
                    0x0800 | 0x86DD => return Some(off + 2),
                    _ => return None,
                }
            }
        }
        _ => None,
    }
}

/// pcap-file 2 hands back the raw timestamp as if it were nanoseconds; rescale it by the
/// interface's if_tsresol (default 6: microseconds).
fn scale_ts(raw: Duration, tsresol: u8) -> Duration {
    let units = raw.as_nanos();
    let nanos = if tsresol & 0x80 == 0 {
        let e = u32::from(tsresol);
        if e <= 9 {
            10u128.checked_pow(9 - e).and_then(|m| units.checked_mul(m))
        } else {
            10u128.checked_pow(e - 9).map(|d| units / d)
        }
    } else {
        units
            .checked_mul(1_000_000_000)
            .map(|n| n >> (tsresol & 0x7F).min(127))
    }
    .unwrap_or(0);
    Duration::new(
        (nanos / 1_000_000_000).min(u128::from(u64::MAX)) as u64,
        (nanos % 1_000_000_000) as u32,
    )
}

struct Iface {
    link: u32,
    tsresol: u8,
}

pub(super) fn read_pcapng<R: BufRead>(r: R, sink: Sink<'_>) -> Result<Vec<String>, ReadError> {
    let mut reader = PcapNgReader::new(r).map_err(|e| ReadError::Pcap(e.to_string()))?;
    let mut ifaces: Vec<Iface> = Vec::new();
    let mut re = Reassembler::new(sink);
    let mut idx = 0u64;
    while let Some(block) = reader.next_block() {
        if re.stopped {
            break;
        }
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                re.warnings.push(format!(
                    "stopped at a damaged or incomplete block after packet {idx}: {e}"
                ));
                break;
            }
        };
        match block {
            Block::SectionHeader(_) => ifaces.clear(),
            Block::InterfaceDescription(idb) => {
                let tsresol = idb.options.iter().find_map(|o| match o {
                    InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
                    _ => None,
                });
                ifaces.push(Iface {
                    link: u32::from(idb.linktype),
                    tsresol: tsresol.unwrap_or(6),
                });
            }
            Block::EnhancedPacket(epb) => {
                idx += 1;
                let Some(iface) = ifaces.get(epb.interface_id as usize) else {
                    re.skipped += 1;
                    continue;
                };
                let comment = epb.options.iter().find_map(|o| match o {
                    EnhancedPacketOption::Comment(c) => Some(c.as_ref()),
                    _ => None,
                });
                let time = UNIX_EPOCH + scale_ts(epb.timestamp, iface.tsresol);
                match link_header_len(iface.link, &epb.data) {
                    Some(off) => re.packet(idx, time, epb.data.get(off..).unwrap_or(&[]), comment),
                    None => re.skipped += 1,
                }
                re.release(false);
            }
            _ => {}
        }
    }
    Ok(re.finish(idx))
}

pub(super) fn read_pcap<R: BufRead>(r: R, sink: Sink<'_>) -> Result<Vec<String>, ReadError> {
    let mut reader = PcapReader::new(r).map_err(|e| ReadError::Pcap(e.to_string()))?;
    let link = u32::from(reader.header().datalink);
    let mut re = Reassembler::new(sink);
    let mut idx = 0u64;
    while let Some(pkt) = reader.next_packet() {
        if re.stopped {
            break;
        }
        let pkt = match pkt {
            Ok(p) => p,
            Err(e) => {
                re.warnings.push(format!(
                    "stopped at a damaged or incomplete record after packet {idx}: {e}"
                ));
                break;
            }
        };
        idx += 1;
        match link_header_len(link, &pkt.data) {
            Some(off) => re.packet(
                idx,
                UNIX_EPOCH + pkt.timestamp,
                pkt.data.get(off..).unwrap_or(&[]),
                None,
            ),
            None => re.skipped += 1,
        }
        re.release(false);
    }
    Ok(re.finish(idx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_follow_if_tsresol() {
        let raw = Duration::from_nanos(1_500); // 1500 units, as pcap-file reports them
        assert_eq!(scale_ts(raw, 9), Duration::from_nanos(1_500));
        assert_eq!(scale_ts(raw, 6), Duration::from_micros(1_500));
        assert_eq!(scale_ts(raw, 3), Duration::from_millis(1_500));
        assert_eq!(scale_ts(raw, 12), Duration::from_nanos(1));
        assert_eq!(
            scale_ts(raw, 0x80 | 10),
            Duration::from_nanos(1_464_843_750)
        ); // 1500/1024 s
        assert_eq!(scale_ts(raw, 60), Duration::ZERO); // absurd resolution: no panic
    }

    #[test]
    fn link_headers() {
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x81, 0x00, 0, 1, 0x86, 0xDD]);
        assert_eq!(link_header_len(1, &eth), Some(18), "VLAN-tagged IPv6");
        assert_eq!(link_header_len(1, &[0u8; 5]), None);
        assert_eq!(link_header_len(101, &[]), Some(0));
        assert_eq!(link_header_len(113, &[]), Some(16));
        assert_eq!(link_header_len(147, &[]), None);
    }
}
