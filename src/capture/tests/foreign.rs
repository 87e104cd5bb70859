//! Reading captures jdwpmux did not write: classic pcap over Ethernet, picked up
//! mid-stream (no SYN), with a header split across segments, a retransmission, a lost
//! segment and a non-IP frame.

use std::borrow::Cow;

use pcap_file::pcap::{PcapPacket, PcapWriter};

use super::*;
use crate::capture::reader::read_bytes;
use crate::capture::tcpip::{build_segment, SegmentSpec, TCP_ACK, TCP_FIN, TCP_PSH};

fn head(id: u32, flags: u8, kind: HeadKind, payload: &[u8]) -> Vec<u8> {
    let length = (11 + payload.len()) as u32;
    let mut v = PacketHead {
        length,
        id,
        flags,
        kind,
    }
    .to_bytes()
    .to_vec();
    v.extend_from_slice(payload);
    v
}

/// An Ethernet frame carrying one IPv4/TCP segment.
fn frame(src: SocketAddr, dst: SocketAddr, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let spec = SegmentSpec {
        src,
        dst,
        seq,
        ack: 1,
        flags,
        window: 65_535,
        options: &[],
        payload,
        wire_len: payload.len(),
        ip_id: 0,
    };
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend(build_segment(&spec).0);
    f
}

#[test]
fn classic_pcap_mid_stream_with_gaps_and_retransmission() {
    let c = SocketAddr::from(([10, 0, 2, 15], 40_000));
    let s = SocketAddr::from(([10, 0, 2, 16], 5005));
    let version = HeadKind::Command { set: 1, cmd: 1 };
    let mut both = head(1, 0, version, &[]);
    let second = head(2, 0, HeadKind::Command { set: 11, cmd: 1 }, &[0, 0, 0, 9]);
    both.extend_from_slice(&second[..5]); // header split across segments
    let reply = head(1, 0x80, HeadKind::Reply { error: 0 }, &[1, 2, 3, 4]);
    let arp = {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x06, 0, 0]);
        f
    };
    let psh = TCP_PSH | TCP_ACK;
    let frames = [
        frame(c, s, 1000, psh, b"JDWP-Handshake"),
        frame(s, c, 5000, psh, b"JDWP-Handshake"),
        frame(c, s, 1014, psh, &both),
        frame(c, s, 1014, psh, &both), // retransmission
        arp,
        frame(c, s, 1014 + both.len() as u32, psh, &second[5..]),
        frame(s, c, 5014 + 100, psh, &reply), // 100 bytes never captured before it
        frame(c, s, 1014 + 11 + 15, TCP_FIN | TCP_ACK, &[]),
    ];
    let mut w = PcapWriter::new(Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_micros(1_000_000 + i as u64);
        let p = PcapPacket {
            timestamp: ts,
            orig_len: f.len() as u32,
            data: Cow::Borrowed(f),
        };
        w.write_packet(&p).unwrap_or_else(|e| panic!("{e}"));
    }
    let got = read_bytes(&w.into_writer()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        got.warnings,
        vec!["1 captured packet(s) were not TCP over IP and were skipped"]
    );
    let conn = Arc::new(ConnDesc {
        id: 1,
        vm: String::new(),
        leg: None,
        client: c,
        server: s,
    });
    let at = |i: u64| UNIX_EPOCH + Duration::from_micros(1_000_000 + i);
    let rec = |i, event| DecodedRecord {
        time: at(i),
        conn: conn.clone(),
        event,
    };
    let pkt = |dir, id, flags, kind, length, payload: &[u8]| {
        DecodedEvent::Packet(DecodedPacket {
            dir,
            id,
            orig_id: None,
            flags,
            kind,
            length,
            latency: None,
            near: false,
            payload: Some(payload.to_vec()),
            truncated: false,
            ddm_chunks: vec![],
        })
    };
    use Direction::*;
    let ok = PacketKind::Reply {
        error: 0,
        command: Some((1, 1)),
    };
    let want = vec![
        rec(0, DecodedEvent::Handshake { dir: ToServer }),
        rec(1, DecodedEvent::Handshake { dir: ToClient }),
        rec(
            2,
            pkt(
                ToServer,
                1,
                0,
                PacketKind::Command { set: 1, cmd: 1 },
                11,
                &[],
            ),
        ),
        rec(
            2,
            pkt(
                ToServer,
                2,
                0,
                PacketKind::Command { set: 11, cmd: 1 },
                15,
                &[0, 0, 0, 9],
            ),
        ),
        rec(6, pkt(ToClient, 1, 0x80, ok, 15, &[1, 2, 3, 4])),
        rec(7, DecodedEvent::Close),
    ];
    assert_eq!(got.records, want);
}

#[test]
fn damaged_files_are_errors_or_warnings_not_panics() {
    // A pcapng section header cut short.
    let short = [0x0A, 0x0D, 0x0D, 0x0A, 0, 0, 0];
    assert!(read_bytes(&short).is_err());
    // A valid file with its last block cut: what came before is still decoded.
    let mut enc = crate::capture::pcapng::PcapngEncoder::new().unwrap_or_else(|e| panic!("{e}"));
    let c = conn(1, Leg::Debugger, 1, 2);
    let t = UNIX_EPOCH + Duration::from_secs(5);
    enc.encode(&Record::Open {
        time: t,
        conn: c.clone(),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut bytes = enc.take_output();
    bytes.truncate(bytes.len() - 10);
    let got = read_bytes(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.records.len(), 1, "{got:?}");
    assert!(
        got.warnings.iter().any(|w| w.contains("incomplete block")),
        "{:?}",
        got.warnings
    );
}
