//! Minimal JDWP/DDM framing for the integration tests: packets, strings, a byte reader (DDM
//! chunks and event composites in `wire_chunks.rs`, re-exported here).
//! Written independently of jdwpmux's own codec on purpose: the tests must not trust the code
//! under test to tell them what is on the wire.

use std::fmt;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub use bytes::BufMut;

pub use super::consts::*;
pub use super::reader::*;
pub use super::wire_chunks::*;

pub const HANDSHAKE: &[u8; 14] = b"JDWP-Handshake";
pub const HEADER_LEN: usize = 11;
pub const FLAG_REPLY: u8 = 0x80;
/// Default sanity cap on a packet's length field (header included).
pub const DEFAULT_MAX_PACKET_LEN: usize = 64 << 20;
/// The cap of the benchmark's peers, the blocking client and the lean fake VMs: a 200 MiB
/// reply plus headroom.
pub const BULK_MAX_PACKET_LEN: usize = 512 << 20;

/// Malformed bytes are values, never panics.
#[derive(Debug)]
pub enum WireError {
    /// Length field below the 11-byte header.
    TooShort { len: u32 },
    /// Length field above the sanity cap.
    TooLong { len: u32, max: usize },
    /// A field wanted more bytes than were left.
    Truncated { at: usize, wanted: usize, left: usize },
    /// A chunk's length runs past its payload.
    ChunkOverrun { ty: [u8; 4], len: u32, left: usize },
    /// A UTF-16 or UTF-8 string did not decode.
    BadString { at: usize },
    /// An id size outside 1..=8 bytes was asked for.
    BadIdSize { size: usize },
    /// The peer closed the stream (mid-packet if `partial` > 0 bytes had arrived).
    Eof { partial: usize },
    Io(std::io::Error),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooShort { len } => write!(f, "packet length {len} is below the 11-byte header"),
            Self::TooLong { len, max } => write!(f, "packet length {len} exceeds cap {max}"),
            Self::Truncated { at, wanted, left } => {
                write!(f, "truncated at offset {at}: wanted {wanted} bytes, {left} left")
            }
            Self::ChunkOverrun { ty, len, left } => write!(
                f,
                "chunk {} claims {len} bytes, {left} left",
                String::from_utf8_lossy(ty)
            ),
            Self::BadString { at } => write!(f, "undecodable string at offset {at}"),
            Self::BadIdSize { size } => write!(f, "id size {size}"),
            Self::Eof { partial } => write!(f, "end of stream ({partial} bytes of a packet read)"),
            Self::Io(e) => write!(f, "i/o error: {e}"),
        }
    }
}

impl std::error::Error for WireError {}

impl From<std::io::Error> for WireError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// What follows the flags byte: a command's set and number, or a reply's error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Command { set: u8, cmd: u8 },
    Reply { error: u16 },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub id: u32,
    /// Kept as received so odd flag bits survive a round trip; bit 0x80 decides `kind`.
    pub flags: u8,
    pub kind: Kind,
    pub data: Vec<u8>,
}

impl Packet {
    pub fn command(id: u32, set: u8, cmd: u8, data: impl Into<Vec<u8>>) -> Packet {
        Packet { id, flags: 0, kind: Kind::Command { set, cmd }, data: data.into() }
    }

    pub fn reply(id: u32, error: u16, data: impl Into<Vec<u8>>) -> Packet {
        Packet { id, flags: FLAG_REPLY, kind: Kind::Reply { error }, data: data.into() }
    }

    /// A DDM command (set 0xC7, cmd 1) carrying `chunks`.
    pub fn ddm(id: u32, chunks: &[Chunk]) -> Packet {
        Packet::command(id, DDM_SET, DDM_CMD, encode_chunks(chunks))
    }

    pub fn is_reply(&self) -> bool {
        matches!(self.kind, Kind::Reply { .. })
    }

    /// `Some((set, cmd))` for a command.
    /// An Event.Composite from a VM.
    pub fn is_event(&self) -> bool {
        self.command_of() == Some((SET_EVENT, EVENT_COMPOSITE))
    }

    pub fn command_of(&self) -> Option<(u8, u8)> {
        match self.kind {
            Kind::Command { set, cmd } => Some((set, cmd)),
            Kind::Reply { .. } => None,
        }
    }

    pub fn is_command(&self, set: u8, cmd: u8) -> bool {
        self.command_of() == Some((set, cmd))
    }

    /// `Some(error)` for a reply.
    pub fn error_code(&self) -> Option<u16> {
        match self.kind {
            Kind::Reply { error } => Some(error),
            Kind::Command { .. } => None,
        }
    }

    pub fn is_ddm(&self) -> bool {
        self.is_command(DDM_SET, DDM_CMD)
    }

    /// The DDM chunks in `data` (valid for DDM commands and for replies to them).
    pub fn chunks(&self) -> Result<Vec<Chunk>, WireError> {
        split_chunks(&self.data)
    }

    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.data)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.data.len());
        out.put_u32((HEADER_LEN + self.data.len()) as u32);
        out.put_u32(self.id);
        out.put_u8(self.flags);
        match self.kind {
            Kind::Command { set, cmd } => {
                out.put_u8(set);
                out.put_u8(cmd);
            }
            Kind::Reply { error } => out.put_u16(error),
        }
        out.extend_from_slice(&self.data);
        out
    }
}

#[inline]
fn check_len(len: u32, max_len: usize) -> Result<usize, WireError> {
    let n = len as usize;
    if n < HEADER_LEN {
        return Err(WireError::TooShort { len });
    }
    if n > max_len {
        return Err(WireError::TooLong { len, max: max_len });
    }
    Ok(n)
}

/// A packet's header as read, before its body: for readers that take the body their own
/// way (stream it, reuse a buffer) instead of into a [`Packet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The length field: header and body.
    pub len: u32,
    pub id: u32,
    pub flags: u8,
    /// Command set, or the high byte of the error code in a reply.
    pub a: u8,
    /// Command, or the low byte of the error code in a reply.
    pub b: u8,
}

impl Header {
    /// The 11 header bytes; a length field below the header's or above `max_len` is an error.
    /// Inlined across crates: the benchmark's client decodes one per round trip it times.
    #[inline]
    pub fn parse(b: &[u8; HEADER_LEN], max_len: usize) -> Result<Header, WireError> {
        let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        check_len(len, max_len)?;
        Ok(Header { len, id: u32::from_be_bytes([b[4], b[5], b[6], b[7]]), flags: b[8], a: b[9], b: b[10] })
    }

    /// Bit 0x80 of the flags.
    #[inline]
    pub fn is_reply(&self) -> bool {
        self.flags & FLAG_REPLY != 0
    }

    /// A reply's error code (meaningless for a command).
    #[inline]
    pub fn error(&self) -> u16 {
        u16::from_be_bytes([self.a, self.b])
    }

    #[inline]
    pub fn body_len(&self) -> usize {
        self.len as usize - HEADER_LEN
    }

    pub fn kind(&self) -> Kind {
        if self.is_reply() {
            Kind::Reply { error: self.error() }
        } else {
            Kind::Command { set: self.a, cmd: self.b }
        }
    }

    /// The packet with this header and `data` as its body.
    pub fn with_body(&self, data: Vec<u8>) -> Packet {
        Packet { id: self.id, flags: self.flags, kind: self.kind(), data }
    }
}

/// A whole packet in one allocation from its header fields (the bytes [`Packet::encode`]
/// writes, without a `Packet` first): for the lean fake VMs' and the benchmark client's
/// hot paths.
#[inline]
pub fn frame(id: u32, flags: u8, a: u8, b: u8, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(HEADER_LEN + data.len());
    p.extend_from_slice(&((HEADER_LEN + data.len()) as u32).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[flags, a, b]);
    p.extend_from_slice(data);
    p
}

/// A whole command packet.
#[inline]
pub fn command_frame(id: u32, set: u8, cmd: u8, data: &[u8]) -> Vec<u8> {
    frame(id, 0, set, cmd, data)
}

/// A whole reply packet.
#[inline]
pub fn reply_frame(id: u32, error: u16, data: &[u8]) -> Vec<u8> {
    let [a, b] = error.to_be_bytes();
    frame(id, FLAG_REPLY, a, b, data)
}

/// Decodes one packet from the front of `buf`: `Ok(None)` when more bytes are needed,
/// otherwise the packet and how many bytes it used. Suits cancel-safe buffered readers.
pub fn try_decode(buf: &[u8], max_len: usize) -> Result<Option<(Packet, usize)>, WireError> {
    let Some(len_bytes) = buf.get(..4) else { return Ok(None) };
    let len = u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
    let n = check_len(len, max_len)?;
    // `n` is at least the header's length.
    let Some((head, body)) = buf.get(..n).and_then(|whole| whole.split_first_chunk::<HEADER_LEN>()) else { return Ok(None) };
    let h = Header::parse(head, max_len)?;
    Ok(Some((h.with_body(body.to_vec()), n)))
}

/// Reads exactly one packet (not cancel-safe: use `try_decode` on a buffer under `select!`).
pub async fn read_packet<R: AsyncRead + Unpin>(r: &mut R, max_len: usize) -> Result<Packet, WireError> {
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        let n = r.read(&mut header[got..]).await?;
        if n == 0 {
            return Err(WireError::Eof { partial: got });
        }
        got += n;
    }
    let h = Header::parse(&header, max_len)?;
    let mut data = vec![0u8; h.body_len()];
    if let Err(e) = r.read_exact(&mut data).await {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            return Err(WireError::Eof { partial: HEADER_LEN });
        }
        return Err(e.into());
    }
    Ok(h.with_body(data))
}

pub async fn write_packet<W: AsyncWrite + Unpin>(w: &mut W, p: &Packet) -> std::io::Result<()> {
    w.write_all(&p.encode()).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_through_encode_and_try_decode() {
        let cases = [
            Packet::command(1, SET_VM, VM_VERSION, vec![]),
            Packet::reply(0x8000_0001, ERR_NOT_IMPLEMENTED, vec![1, 2, 3]),
            Packet::ddm(7, &[Chunk::new(b"HELO", vec![0, 0, 0, 1]), Chunk::new(b"FEAT", vec![])]),
        ];
        for p in cases {
            let bytes = p.encode();
            assert_eq!(bytes.len(), HEADER_LEN + p.data.len());
            assert_eq!(try_decode(&bytes[..bytes.len() - 1], 1 << 20).unwrap(), None);
            let (q, used) = try_decode(&bytes, 1 << 20).unwrap().unwrap();
            assert_eq!((q, used), (p, bytes.len()));
        }
    }

    #[tokio::test]
    async fn read_packet_from_async_read_honours_cap_and_eof() {
        let a = Packet::command(1, SET_VM, VM_VERSION, vec![]);
        let b = Packet::reply(1, ERR_NONE, vec![5; 20]);
        let mut bytes = a.encode();
        bytes.extend(b.encode());
        bytes.extend(&[0, 0]);
        let mut r: &[u8] = &bytes;
        assert_eq!(read_packet(&mut r, 100).await.unwrap(), a);
        assert_eq!(read_packet(&mut r, 100).await.unwrap(), b);
        assert!(matches!(read_packet(&mut r, 100).await, Err(WireError::Eof { partial: 2 })));
        let big = b.encode();
        let mut r: &[u8] = &big;
        assert!(matches!(read_packet(&mut r, 30).await, Err(WireError::TooLong { len: 31, max: 30 })));
    }

    #[test]
    fn bad_lengths_are_errors() {
        let table: [(u32, usize, &str); 3] = [(10, 100, "below"), (0, 100, "below"), (101, 100, "exceeds")];
        for (len, cap, want) in table {
            let mut b = len.to_be_bytes().to_vec();
            b.resize(HEADER_LEN, 0);
            let err = try_decode(&b, cap).unwrap_err().to_string();
            assert!(err.contains(want), "{len}: {err}");
        }
    }

    #[test]
    fn headers_parse_within_bounds_and_frames_match_encode() {
        let cmd = command_frame(7, 1, 3, &[9, 9]);
        assert_eq!(cmd, Packet::command(7, 1, 3, vec![9, 9]).encode());
        let h = Header::parse(cmd[..HEADER_LEN].try_into().unwrap(), 100).unwrap();
        assert_eq!((h.len, h.id, h.is_reply(), h.a, h.b, h.body_len()), (13, 7, false, 1, 3, 2));
        assert_eq!(h.kind(), Kind::Command { set: 1, cmd: 3 });
        let rep = reply_frame(0x8000_0001, 99, &[]);
        assert_eq!(rep, Packet::reply(0x8000_0001, 99, vec![]).encode());
        let h = Header::parse(rep[..].try_into().unwrap(), 100).unwrap();
        assert!(h.is_reply());
        assert_eq!((h.error(), h.kind(), h.body_len()), (99, Kind::Reply { error: 99 }, 0));
        assert_eq!(h.with_body(vec![]), Packet::reply(0x8000_0001, 99, vec![]));
        // Odd flag bits are kept; 0x80 alone decides.
        let odd = frame(1, 0x81, 0, 0, &[]);
        assert_eq!(Header::parse(odd[..].try_into().unwrap(), 100).unwrap().with_body(vec![]).flags, 0x81);
        let table: [(u32, usize, bool); 5] = [(10, 100, false), (0, 100, false), (11, 100, true), (100, 100, true), (101, 100, false)];
        for (len, cap, ok) in table {
            let mut b = [0u8; HEADER_LEN];
            b[..4].copy_from_slice(&len.to_be_bytes());
            assert_eq!(Header::parse(&b, cap).is_ok(), ok, "{len} under {cap}");
        }
        let mut big = [0u8; HEADER_LEN];
        big[..4].copy_from_slice(&(BULK_MAX_PACKET_LEN as u32 + 1).to_be_bytes());
        assert!(matches!(Header::parse(&big, BULK_MAX_PACKET_LEN), Err(WireError::TooLong { .. })));
    }
}
