//! pcapng capture format: every proxied connection becomes a synthesized TCP stream with
//! its real addresses, so Wireshark/tshark can dissect it (`-d tcp.port==PORT,jdwp`).
//!
//! Link type RAW (101): packets start at the IP header, which lets IPv4 and IPv6 streams
//! share one interface and avoids inventing Ethernet MAC addresses. Timestamps are written
//! in nanoseconds (pcap-file 2 stores `Duration::as_nanos`), declared with if_tsresol = 9.
//! Each handshake and each JDWP packet record starts its own segment: Wireshark 4.0's JDWP
//! dissector only decodes a direction whose 14-byte handshake is a segment by itself.
//! Connection metadata (id, leg, VM) rides in the SYN's packet comment, and a rewritten id
//! or reply latency in the comment of the packet's first segment, so the reader can
//! restore them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness, PcapError};

use super::pcapng_meta::{open_comment, packet_comment};
use super::record::Record;
use super::synth_tcp::{Packet, SynthTcp};

/// Snaplen declared in the interface block: larger than any synthesized packet.
const IDB_SNAPLEN: u32 = 262_144;

/// Encodes records into pcapng bytes, kept in memory until [`PcapngEncoder::take_output`].
pub struct PcapngEncoder {
    writer: PcapNgWriter<Vec<u8>>,
    conns: HashMap<u64, SynthTcp>,
}

impl PcapngEncoder {
    /// Starts a file: section header and the single RAW interface.
    pub fn new() -> Result<Self, PcapError> {
        let app = SectionHeaderOption::UserApplication(Cow::Borrowed("jdwpmux"));
        let shb = SectionHeaderBlock {
            endianness: Endianness::native(),
            major_version: 1,
            minor_version: 0,
            section_length: -1,
            options: vec![app],
        };
        let mut writer = PcapNgWriter::with_section_header(Vec::new(), shb)?;
        let description = "proxied JDWP connections as synthesized TCP";
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::RAW,
            snaplen: IDB_SNAPLEN,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Borrowed("jdwpmux")),
                InterfaceDescriptionOption::IfDescription(Cow::Borrowed(description)),
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        writer.write_pcapng_block(idb)?;
        let conns = HashMap::new();
        Ok(PcapngEncoder { writer, conns })
    }

    /// Bytes encoded since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.get_mut())
    }

    pub fn encode(&mut self, r: &Record) -> Result<(), PcapError> {
        let time = r.time();
        let conn = r.conn();
        let mut tcp = match (self.conns.remove(&conn.id), r) {
            // A reused id (should not happen) restarts the stream rather than failing.
            (_, Record::Open { .. }) | (None, Record::Data { .. }) => {
                // Data without Open means the Open record was dropped (queue full):
                // synthesize the handshake so the stream still dissects.
                let mut tcp = SynthTcp::new(conn.clone());
                self.write(time, tcp.open(), Some(open_comment(conn)))?;
                tcp
            }
            (Some(tcp), _) => tcp,
            (None, Record::Close { .. }) => return Ok(()),
        };
        match r {
            Record::Open { .. } => {}
            Record::Data {
                dir,
                kind,
                bytes,
                orig_len,
                ..
            } => {
                let packets = tcp.data(*dir, bytes, *orig_len);
                self.write(time, packets, packet_comment(kind))?;
            }
            Record::Close { .. } => return self.write(time, tcp.close(), None),
        }
        self.conns.insert(conn.id, tcp);
        Ok(())
    }

    /// One Enhanced Packet Block per packet; `comment` goes on the first.
    fn write(
        &mut self,
        time: SystemTime,
        packets: impl IntoIterator<Item = Packet>,
        mut comment: Option<String>,
    ) -> Result<(), PcapError> {
        let timestamp = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        for (data, original_len) in packets {
            let options = comment
                .take()
                .map(|c| EnhancedPacketOption::Comment(Cow::Owned(c)));
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp,
                original_len,
                data: Cow::Owned(data),
                options: options.into_iter().collect(),
            };
            self.writer.write_pcapng_block(epb)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::{ConnInfo, DataKind, Direction, Leg};
    use crate::capture::tcpip::{parse_segment, TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN};
    use bytes::Bytes;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Duration;

    fn conn() -> Arc<ConnInfo> {
        Arc::new(ConnInfo {
            id: 1,
            vm: "vm one".into(),
            leg: Leg::Vm,
            client: SocketAddr::from(([127, 0, 0, 1], 40000)),
            server: SocketAddr::from(([127, 0, 0, 1], 8700)),
        })
    }

    /// (flags, payload length, timestamp, comment) of every packet, after checking the
    /// interface block.
    fn blocks(file: &[u8]) -> Vec<(u8, usize, Duration, Option<String>)> {
        let mut out = Vec::new();
        let mut r = PcapNgReader::new(file).unwrap_or_else(|e| panic!("{e}"));
        while let Some(b) = r.next_block() {
            match b.unwrap_or_else(|e| panic!("{e}")) {
                Block::InterfaceDescription(idb) => {
                    assert_eq!(idb.linktype, DataLink::RAW);
                    assert!(idb
                        .options
                        .contains(&InterfaceDescriptionOption::IfTsResol(9)));
                }
                Block::EnhancedPacket(epb) => {
                    let s = parse_segment(&epb.data).unwrap_or_else(|e| panic!("{e}"));
                    let c = epb.options.iter().find_map(|o| match o {
                        EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                        _ => None,
                    });
                    out.push((s.flags, s.wire_len, epb.timestamp, c));
                }
                _ => {}
            }
        }
        out
    }

    fn data(dir: Direction, bytes: &'static [u8], len: usize, kind: DataKind) -> Record {
        let (time, conn, bytes) = (
            UNIX_EPOCH + Duration::from_nanos(1_500),
            conn(),
            Bytes::from_static(bytes),
        );
        Record::Data {
            time,
            conn,
            dir,
            kind,
            bytes,
            orig_len: len,
        }
    }

    #[test]
    fn records_become_comment_carrying_blocks() {
        let mut enc = PcapngEncoder::new().unwrap_or_else(|e| panic!("{e}"));
        let t = UNIX_EPOCH + Duration::from_nanos(1_500);
        let kind = DataKind::Packet {
            orig_id: Some(4),
            latency: None,
        };
        let recs = [
            Record::Open {
                time: t,
                conn: conn(),
            },
            data(
                Direction::ToServer,
                b"JDWP-Handshake",
                14,
                DataKind::Handshake,
            ),
            data(
                Direction::ToClient,
                &[0, 0, 0, 11, 0, 0, 0, 1, 0x80, 0, 0],
                70_000,
                kind,
            ),
            Record::Close {
                time: t,
                conn: conn(),
            },
        ];
        for r in &recs {
            enc.encode(r).unwrap_or_else(|e| panic!("{e}"));
        }
        let got = blocks(&enc.take_output());
        let open = Some("jdwpmux conn=1 leg=vm vm=vm one".to_string());
        let (psh, fin) = (TCP_PSH | TCP_ACK, TCP_FIN | TCP_ACK);
        let want = [
            (TCP_SYN, 0, open),
            (TCP_SYN | TCP_ACK, 0, None),
            (TCP_ACK, 0, None),
            (psh, 14, None),
            (psh, 65_495, Some("jdwpmux orig_id=4".to_string())),
            (psh, 70_000 - 65_495, None),
            (fin, 0, None),
            (fin, 0, None),
            (TCP_ACK, 0, None),
        ];
        let got: Vec<_> = got
            .into_iter()
            .map(|(f, l, ts, c)| {
                assert_eq!(ts, Duration::from_nanos(1_500));
                (f, l, c)
            })
            .collect();
        assert_eq!(got, want);
        assert!(enc.take_output().is_empty(), "output is drained");
    }

    #[test]
    fn data_without_open_synthesizes_a_handshake_and_close_without_open_is_ignored() {
        let mut enc = PcapngEncoder::new().unwrap_or_else(|e| panic!("{e}"));
        let header_len = enc.take_output().len();
        assert!(header_len > 0);
        enc.encode(&Record::Close {
            time: UNIX_EPOCH,
            conn: conn(),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(enc.take_output().is_empty());
        let r = data(
            Direction::ToServer,
            b"JDWP-Handshake",
            14,
            DataKind::Handshake,
        );
        enc.encode(&r).unwrap_or_else(|e| panic!("{e}"));
        let mut file = PcapngEncoder::new()
            .unwrap_or_else(|e| panic!("{e}"))
            .take_output();
        file.extend(enc.take_output());
        let flags: Vec<u8> = blocks(&file).iter().map(|b| b.0).collect();
        assert_eq!(
            flags,
            vec![TCP_SYN, TCP_SYN | TCP_ACK, TCP_ACK, TCP_PSH | TCP_ACK]
        );
    }
}
