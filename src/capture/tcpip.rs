//! Building and parsing the synthetic IPv4/IPv6 + TCP headers that wrap captured JDWP
//! bytes in pcapng files (link type RAW: the packet starts with the IP header).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thiserror::Error;

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;

const IPV4_HEADER_LEN: usize = 20;
const IPV6_HEADER_LEN: usize = 40;
const TCP_HEADER_LEN: usize = 20;
const PROTO_TCP: u8 = 6;

/// Largest TCP payload per synthetic segment: 65535 (IPv4 total-length limit) minus the
/// IPv4 and TCP headers. Also used for IPv6 so both families split identically.
pub const MAX_SEGMENT_PAYLOAD: usize = 65_495;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum NetError {
    #[error("packet too short: {len} bytes, need {need}")]
    Short { len: usize, need: usize },
    #[error("IP version {0} is not supported")]
    IpVersion(u8),
    #[error("not a TCP packet (protocol/next header {0})")]
    NotTcp(u8),
    #[error("IPv4 fragment (offset {0}) is not supported")]
    Fragment(u16),
    #[error("bad header length {0}")]
    HeaderLen(usize),
}

/// Both ends of a segment in one address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IpPair {
    V4(Ipv4Addr, Ipv4Addr),
    V6(Ipv6Addr, Ipv6Addr),
}

/// IPv4 when both ends are IPv4 (or IPv4-mapped IPv6, as a dual-stack listener reports
/// them); otherwise IPv6 with any IPv4 end written as its mapped form.
fn ip_pair(src: IpAddr, dst: IpAddr) -> IpPair {
    let v4 = |a: IpAddr| match a {
        IpAddr::V4(x) => Some(x),
        IpAddr::V6(x) => x.to_ipv4_mapped(),
    };
    let v6 = |a: IpAddr| match a {
        IpAddr::V4(x) => x.to_ipv6_mapped(),
        IpAddr::V6(x) => x,
    };
    match (v4(src), v4(dst)) {
        (Some(s), Some(d)) => IpPair::V4(s, d),
        _ => IpPair::V6(v6(src), v6(dst)),
    }
}

/// A segment to synthesize.
#[derive(Debug, Clone, Copy)]
pub struct SegmentSpec<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// Raw TCP options, length a multiple of 4.
    pub options: &'a [u8],
    /// The captured part of the payload.
    pub payload: &'a [u8],
    /// Length of the payload on the wire (>= payload.len(), <= MAX_SEGMENT_PAYLOAD).
    pub wire_len: usize,
    pub ip_id: u16,
}

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    !(acc as u16)
}

/// Builds the captured bytes of one IP packet and returns them with the packet's length
/// on the wire. The TCP checksum is correct when the whole payload was captured and zero
/// otherwise (it cannot be computed; Wireshark does not verify TCP checksums by default).
pub fn build_segment(s: &SegmentSpec<'_>) -> (Vec<u8>, u32) {
    let tcp_len = TCP_HEADER_LEN + s.options.len();
    let mut tcp = Vec::with_capacity(tcp_len + s.payload.len());
    tcp.extend_from_slice(&s.src.port().to_be_bytes());
    tcp.extend_from_slice(&s.dst.port().to_be_bytes());
    tcp.extend_from_slice(&s.seq.to_be_bytes());
    tcp.extend_from_slice(&s.ack.to_be_bytes());
    tcp.push(((tcp_len / 4) as u8) << 4);
    tcp.push(s.flags);
    tcp.extend_from_slice(&s.window.to_be_bytes());
    tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    tcp.extend_from_slice(s.options);
    tcp.extend_from_slice(s.payload);
    let tcp_wire_len = tcp_len + s.wire_len;
    let complete = s.payload.len() == s.wire_len;

    let pair = ip_pair(s.src.ip(), s.dst.ip());
    let mut out = Vec::with_capacity(IPV6_HEADER_LEN + tcp.len());
    let pseudo = match pair {
        IpPair::V4(src, dst) => {
            let total = (IPV4_HEADER_LEN + tcp_wire_len) as u16;
            let mut ip = [0u8; IPV4_HEADER_LEN];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[4..6].copy_from_slice(&s.ip_id.to_be_bytes());
            ip[6] = 0x40; // don't fragment
            ip[8] = 64;
            ip[9] = PROTO_TCP;
            ip[12..16].copy_from_slice(&src.octets());
            ip[16..20].copy_from_slice(&dst.octets());
            let ck = fold(sum16(&ip, 0));
            ip[10..12].copy_from_slice(&ck.to_be_bytes());
            out.extend_from_slice(&ip);
            let acc = sum16(&src.octets(), 0);
            let acc = sum16(&dst.octets(), acc);
            acc + u32::from(PROTO_TCP) + tcp_wire_len as u32
        }
        IpPair::V6(src, dst) => {
            let mut ip = [0u8; IPV6_HEADER_LEN];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&(tcp_wire_len as u16).to_be_bytes());
            ip[6] = PROTO_TCP;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&src.octets());
            ip[24..40].copy_from_slice(&dst.octets());
            out.extend_from_slice(&ip);
            let acc = sum16(&src.octets(), 0);
            let acc = sum16(&dst.octets(), acc);
            acc + u32::from(PROTO_TCP) + tcp_wire_len as u32
        }
    };
    if complete {
        let ck = fold(sum16(&tcp, pseudo));
        tcp[16..18].copy_from_slice(&ck.to_be_bytes());
    }
    out.extend_from_slice(&tcp);
    let wire = out.len() + s.wire_len.saturating_sub(s.payload.len());
    (out, wire as u32)
}

/// A parsed IP/TCP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSegment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// TCP options as captured.
    pub options: &'a [u8],
    /// Captured payload bytes.
    pub payload: &'a [u8],
    /// Payload length on the wire, from the IP length fields (>= payload.len()).
    pub wire_len: usize,
}

fn need(b: &[u8], n: usize) -> Result<(), NetError> {
    if b.len() < n {
        Err(NetError::Short {
            len: b.len(),
            need: n,
        })
    } else {
        Ok(())
    }
}

/// Parses an IP packet that starts at `b[0]` and carries TCP.
pub fn parse_segment(b: &[u8]) -> Result<ParsedSegment<'_>, NetError> {
    need(b, 1)?;
    let (src, dst, ip_len, rest) = match b[0] >> 4 {
        4 => {
            need(b, IPV4_HEADER_LEN)?;
            let ihl = usize::from(b[0] & 0x0F) * 4;
            if ihl < IPV4_HEADER_LEN {
                return Err(NetError::HeaderLen(ihl));
            }
            need(b, ihl)?;
            if b[9] != PROTO_TCP {
                return Err(NetError::NotTcp(b[9]));
            }
            let frag = u16::from_be_bytes([b[6], b[7]]);
            if frag & 0x3FFF != 0 {
                return Err(NetError::Fragment(frag & 0x1FFF));
            }
            let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
            let src = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
            let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
            (
                IpAddr::V4(src),
                IpAddr::V4(dst),
                total.saturating_sub(ihl),
                &b[ihl..],
            )
        }
        6 => {
            need(b, IPV6_HEADER_LEN)?;
            if b[6] != PROTO_TCP {
                return Err(NetError::NotTcp(b[6]));
            }
            let plen = usize::from(u16::from_be_bytes([b[4], b[5]]));
            let mut s = [0u8; 16];
            s.copy_from_slice(&b[8..24]);
            let mut d = [0u8; 16];
            d.copy_from_slice(&b[24..40]);
            (
                IpAddr::V6(s.into()),
                IpAddr::V6(d.into()),
                plen,
                &b[IPV6_HEADER_LEN..],
            )
        }
        v => return Err(NetError::IpVersion(v)),
    };
    need(rest, TCP_HEADER_LEN)?;
    let off = usize::from(rest[12] >> 4) * 4;
    if off < TCP_HEADER_LEN {
        return Err(NetError::HeaderLen(off));
    }
    need(rest, off)?;
    let sport = u16::from_be_bytes([rest[0], rest[1]]);
    let dport = u16::from_be_bytes([rest[2], rest[3]]);
    let seq = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let ack = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
    let wire_len = ip_len.saturating_sub(off);
    // Ethernet padding can make the capture longer than the IP length says: trust the IP.
    let payload = &rest[off..];
    let payload = payload.get(..wire_len).unwrap_or(payload);
    Ok(ParsedSegment {
        src: SocketAddr::new(src, sport),
        dst: SocketAddr::new(dst, dport),
        seq,
        ack,
        flags: rest[13],
        options: &rest[TCP_HEADER_LEN..off],
        payload,
        wire_len: wire_len.max(payload.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(src: &str, dst: &str, payload: &'a [u8], wire_len: usize) -> SegmentSpec<'a> {
        SegmentSpec {
            src: src
                .parse()
                .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            dst: dst
                .parse()
                .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            seq: 1000,
            ack: 2000,
            flags: TCP_PSH | TCP_ACK,
            window: 65535,
            options: &[],
            payload,
            wire_len,
            ip_id: 7,
        }
    }

    #[test]
    fn ipv4_round_trip_with_valid_checksums() {
        let s = spec("127.0.0.1:5000", "127.0.0.1:8700", b"hello", 5);
        let (bytes, wire) = build_segment(&s);
        assert_eq!(wire as usize, bytes.len());
        assert_eq!(bytes.len(), 45);
        assert_eq!(
            fold(sum16(&bytes[..20], 0)),
            0,
            "IPv4 header checksum verifies"
        );
        let mut pseudo = sum16(&bytes[12..20], 0) + 6 + 25;
        pseudo = sum16(&bytes[20..], pseudo);
        assert_eq!(fold(pseudo), 0, "TCP checksum verifies");
        let p = parse_segment(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (p.src, p.dst, p.seq, p.ack, p.flags),
            (s.src, s.dst, 1000, 2000, TCP_PSH | TCP_ACK)
        );
        assert_eq!((p.payload, p.wire_len), (&b"hello"[..], 5));
    }

    #[test]
    fn ipv6_and_mapped_addresses() {
        let s = spec("[::1]:5000", "127.0.0.1:8700", b"abc", 3);
        let (bytes, _) = build_segment(&s);
        assert_eq!(bytes[0] >> 4, 6);
        let p = parse_segment(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.dst, "[::ffff:127.0.0.1]:8700".parse().unwrap_or(p.src));
        let mapped = spec("[::ffff:127.0.0.1]:5000", "127.0.0.1:8700", b"abc", 3);
        assert_eq!(build_segment(&mapped).0[0] >> 4, 4);
    }

    #[test]
    fn truncated_payload_keeps_wire_length() {
        let s = spec("127.0.0.1:5000", "127.0.0.1:8700", b"head", 1000);
        let (bytes, wire) = build_segment(&s);
        assert_eq!(wire, 1040);
        assert_eq!(
            &bytes[36..38],
            &[0, 0],
            "no TCP checksum without the full payload"
        );
        let p = parse_segment(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.payload.len(), p.wire_len), (4, 1000));
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert_eq!(parse_segment(&[]), Err(NetError::Short { len: 0, need: 1 }));
        assert_eq!(
            parse_segment(&[0x45; 10]),
            Err(NetError::Short { len: 10, need: 20 })
        );
        assert_eq!(parse_segment(&[0x20; 30]), Err(NetError::IpVersion(2)));
        let (mut udp, _) = build_segment(&spec("127.0.0.1:1", "127.0.0.1:2", b"", 0));
        udp[9] = 17;
        assert_eq!(parse_segment(&udp), Err(NetError::NotTcp(17)));
        let (short, _) = build_segment(&spec("127.0.0.1:1", "127.0.0.1:2", b"", 0));
        assert!(matches!(
            parse_segment(&short[..30]),
            Err(NetError::Short { .. })
        ));
    }
}
