//! The TCP side of a synthesized connection: sequence and acknowledgement numbers in both
//! directions, and the segments for open (SYN, SYN-ACK, ACK), data (PSH|ACK, split at
//! MAX_SEGMENT_PAYLOAD) and close (FIN, FIN, ACK).

use std::sync::Arc;

use super::record::{ConnInfo, Direction};
use super::tcpip::{
    build_segment, SegmentSpec, MAX_SEGMENT_PAYLOAD, TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN,
};

/// SYN options: MSS = MAX_SEGMENT_PAYLOAD, NOP, window scale 7 (so the 65535 window field
/// means ~8 MiB and Wireshark does not flag our 64 KiB segments as overrunning the window).
#[rustfmt::skip]
const SYN_OPTIONS: [u8; 8] = [
    2, 4, (MAX_SEGMENT_PAYLOAD >> 8) as u8, (MAX_SEGMENT_PAYLOAD & 0xFF) as u8,
    1, 3, 3, 7,
];

/// One built IP packet: the captured bytes and its length on the wire.
pub type Packet = (Vec<u8>, u32);

/// Deterministic initial sequence numbers: distinct per connection and side, reproducible
/// so the same records always give the same file.
pub fn isn(conn: u64, server: bool) -> u32 {
    let x = (conn.wrapping_mul(2) + u64::from(server)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 32) as u32
}

#[derive(Debug)]
pub struct SynthTcp {
    info: Arc<ConnInfo>,
    /// Next sequence number from the client, and from the server.
    client_next: u32,
    server_next: u32,
    ip_id: u16,
}

impl SynthTcp {
    pub fn new(info: Arc<ConnInfo>) -> Self {
        let (client_next, server_next) = (isn(info.id, false), isn(info.id, true));
        SynthTcp {
            info,
            client_next,
            server_next,
            ip_id: 0,
        }
    }

    /// SYN, SYN-ACK, ACK.
    pub fn open(&mut self) -> [Packet; 3] {
        let syn = self.segment(Direction::ToServer, TCP_SYN, &SYN_OPTIONS, &[], 1);
        let syn_ack = self.segment(Direction::ToClient, TCP_SYN | TCP_ACK, &SYN_OPTIONS, &[], 1);
        [
            syn,
            syn_ack,
            self.segment(Direction::ToServer, TCP_ACK, &[], &[], 0),
        ]
    }

    /// Segments for `orig_len` bytes on the wire of which `bytes` were captured.
    pub fn data(&mut self, dir: Direction, bytes: &[u8], orig_len: usize) -> Vec<Packet> {
        let total = orig_len.max(bytes.len());
        let mut out = Vec::with_capacity(total.div_ceil(MAX_SEGMENT_PAYLOAD));
        let mut off = 0;
        while off < total {
            let seg = (total - off).min(MAX_SEGMENT_PAYLOAD);
            let captured = bytes.get(off..bytes.len().min(off + seg)).unwrap_or(&[]);
            out.push(self.segment(dir, TCP_PSH | TCP_ACK, &[], captured, seg));
            off += seg;
        }
        out
    }

    /// FIN from the client, FIN from the server, final ACK.
    pub fn close(&mut self) -> [Packet; 3] {
        let fin = TCP_FIN | TCP_ACK;
        let c = self.segment(Direction::ToServer, fin, &[], &[], 1);
        let s = self.segment(Direction::ToClient, fin, &[], &[], 1);
        [
            c,
            s,
            self.segment(Direction::ToServer, TCP_ACK, &[], &[], 0),
        ]
    }

    /// Builds one segment; `advance` is how much sequence space it uses (payload length,
    /// or 1 for SYN/FIN).
    fn segment(
        &mut self,
        dir: Direction,
        flags: u8,
        options: &[u8],
        payload: &[u8],
        advance: usize,
    ) -> Packet {
        let (src, dst, seq, ack) = match dir {
            Direction::ToServer => (
                self.info.client,
                self.info.server,
                self.client_next,
                self.server_next,
            ),
            Direction::ToClient => (
                self.info.server,
                self.info.client,
                self.server_next,
                self.client_next,
            ),
        };
        // The very first SYN carries no ACK, so its ack field stays zero.
        let ack = if flags & TCP_ACK != 0 { ack } else { 0 };
        let wire_len = if flags & (TCP_SYN | TCP_FIN) != 0 {
            0
        } else {
            advance
        };
        let spec = SegmentSpec {
            src,
            dst,
            seq,
            ack,
            flags,
            window: 65_535,
            options,
            payload,
            wire_len,
            ip_id: self.ip_id,
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let next = match dir {
            Direction::ToServer => &mut self.client_next,
            Direction::ToClient => &mut self.server_next,
        };
        *next = next.wrapping_add(advance as u32);
        build_segment(&spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::Leg;
    use crate::capture::tcpip::parse_segment;
    use std::net::SocketAddr;

    /// (flags, seq, ack, captured payload, wire payload)
    fn summary(p: &Packet) -> (u8, u32, u32, usize, usize) {
        let s = parse_segment(&p.0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.1 as usize, p.0.len() - s.payload.len() + s.wire_len);
        (s.flags, s.seq, s.ack, s.payload.len(), s.wire_len)
    }

    #[test]
    fn sequence_numbers_are_consistent_in_both_directions() {
        let info = Arc::new(ConnInfo {
            id: 1,
            vm: "vm".into(),
            leg: Leg::Vm,
            client: SocketAddr::from(([127, 0, 0, 1], 40000)),
            server: SocketAddr::from(([127, 0, 0, 1], 8700)),
        });
        let (c, s) = (isn(1, false), isn(1, true));
        let mut t = SynthTcp::new(info);
        let open: Vec<_> = t.open().iter().map(summary).collect();
        assert_eq!(open[0], (TCP_SYN, c, 0, 0, 0));
        assert_eq!(open[1], (TCP_SYN | TCP_ACK, s, c + 1, 0, 0));
        assert_eq!(open[2], (TCP_ACK, c + 1, s + 1, 0, 0));
        let hs: Vec<_> = t
            .data(Direction::ToServer, b"JDWP-Handshake", 14)
            .iter()
            .map(summary)
            .collect();
        assert_eq!(hs, vec![(TCP_PSH | TCP_ACK, c + 1, s + 1, 14, 14)]);
        // 150000 bytes on the wire, 100000 captured.
        let big: Vec<_> = t
            .data(Direction::ToClient, &[7; 100_000], 150_000)
            .iter()
            .map(summary)
            .collect();
        let psh = TCP_PSH | TCP_ACK;
        assert_eq!(big[0], (psh, s + 1, c + 15, 65_495, 65_495));
        assert_eq!(big[1], (psh, s + 1 + 65_495, c + 15, 34_505, 65_495));
        assert_eq!(big[2], (psh, s + 1 + 130_990, c + 15, 0, 19_010));
        let close: Vec<_> = t.close().iter().map(summary).collect();
        let fin = TCP_FIN | TCP_ACK;
        assert_eq!(close[0], (fin, c + 15, s + 150_001, 0, 0));
        assert_eq!(close[1], (fin, s + 150_001, c + 16, 0, 0));
        assert_eq!(close[2], (TCP_ACK, c + 16, s + 150_002, 0, 0));
    }

    #[test]
    fn initial_sequence_numbers_differ() {
        assert_ne!(isn(1, false), isn(1, true));
        assert_ne!(isn(1, false), isn(2, false));
        assert_eq!(isn(7, true), isn(7, true));
    }
}
