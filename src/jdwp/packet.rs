//! JDWP packets as they travel on the wire: an 11-byte header and a body, kept as one
//! contiguous buffer so the proxy can rewrite the id in place and forward without copying.

use bytes::{BufMut, Bytes, BytesMut};

/// Size of the JDWP header: u4 length, u4 id, u1 flags, then u1 set + u1 cmd or u2 error.
pub const HEADER_LEN: usize = 11;
/// Flag bit that marks a reply packet.
pub const FLAG_REPLY: u8 = 0x80;
/// The vendor command set Android uses for DDM chunks.
pub const DDM_CMD_SET: u8 = 0xC7;
/// The only DDM command.
pub const DDM_CMD: u8 = 0x01;
/// Event.Composite: the one command a VM sends on its own in standard JDWP.
pub const EVENT_CMD_SET: u8 = 64;
pub const EVENT_COMPOSITE: u8 = 100;

/// JDWP error codes the proxy itself produces or reads.
pub mod error {
    pub const NONE: u16 = 0;
    pub const NOT_IMPLEMENTED: u16 = 99;
    /// ABSENT_INFORMATION: the class file lacks what was asked for.
    pub const ABSENT_INFORMATION: u16 = 101;
    pub const VM_DEAD: u16 = 112;
}

/// A decoded header. `length` counts the header itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub length: u32,
    pub id: u32,
    pub flags: u8,
    /// Command set (command) or high byte of the error code (reply).
    pub b9: u8,
    /// Command (command) or low byte of the error code (reply).
    pub b10: u8,
}

impl Header {
    /// Parses the first 11 bytes of `buf`; `None` when fewer are available.
    pub fn parse(buf: &[u8]) -> Option<Header> {
        let h: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Header {
            length: u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
            id: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            flags: h[8],
            b9: h[9],
            b10: h[10],
        })
    }

    pub fn is_reply(&self) -> bool {
        self.flags & FLAG_REPLY != 0
    }
    pub fn cmd_set(&self) -> u8 {
        self.b9
    }
    pub fn cmd(&self) -> u8 {
        self.b10
    }
    pub fn error_code(&self) -> u16 {
        u16::from_be_bytes([self.b9, self.b10])
    }
    pub fn is_ddm_command(&self) -> bool {
        !self.is_reply() && self.b9 == DDM_CMD_SET
    }
    pub fn body_len(&self) -> usize {
        (self.length as usize).saturating_sub(HEADER_LEN)
    }
}

/// A whole packet: header and body in one buffer whose length equals the header's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    buf: BytesMut,
}

impl Packet {
    /// Wraps wire bytes. The caller (the codec) guarantees `buf.len() == length >= 11`.
    pub(crate) fn from_wire(buf: BytesMut) -> Packet {
        debug_assert!(buf.len() >= HEADER_LEN);
        Packet { buf }
    }

    /// Builds a command packet.
    pub fn command(id: u32, cmd_set: u8, cmd: u8, data: &[u8]) -> Packet {
        Self::build(id, 0, cmd_set, cmd, data)
    }

    /// Builds a reply packet.
    pub fn reply(id: u32, error: u16, data: &[u8]) -> Packet {
        let [hi, lo] = error.to_be_bytes();
        Self::build(id, FLAG_REPLY, hi, lo, data)
    }

    fn build(id: u32, flags: u8, b9: u8, b10: u8, data: &[u8]) -> Packet {
        let len = HEADER_LEN + data.len();
        let mut buf = BytesMut::with_capacity(len);
        // A body over 4 GiB cannot be built by the proxy: all its own packets are small.
        buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
        buf.put_u32(id);
        buf.put_u8(flags);
        buf.put_u8(b9);
        buf.put_u8(b10);
        buf.put_slice(data);
        Packet { buf }
    }

    pub fn header(&self) -> Header {
        // The buffer always holds at least a header (see from_wire and build).
        Header::parse(&self.buf).unwrap_or(Header { length: 0, id: 0, flags: 0, b9: 0, b10: 0 })
    }
    pub fn id(&self) -> u32 {
        self.header().id
    }
    /// Rewrites the id in place.
    pub fn set_id(&mut self, id: u32) {
        self.buf[4..8].copy_from_slice(&id.to_be_bytes());
    }
    pub fn data(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn into_bytes(self) -> Bytes {
        self.buf.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_layout_matches_spec() {
        let p = Packet::command(0x01020304, 1, 1, &[]);
        assert_eq!(p.as_bytes(), &[0, 0, 0, 11, 1, 2, 3, 4, 0, 1, 1]);
        let h = p.header();
        assert!(!h.is_reply());
        assert_eq!((h.cmd_set(), h.cmd(), h.length), (1, 1, 11));
    }

    #[test]
    fn reply_layout_and_id_rewrite() {
        let mut p = Packet::reply(7, error::NOT_IMPLEMENTED, &[0xAA]);
        assert_eq!(p.as_bytes(), &[0, 0, 0, 12, 0, 0, 0, 7, 0x80, 0, 99, 0xAA]);
        p.set_id(0xFFFF_FFFE);
        assert_eq!(p.id(), 0xFFFF_FFFE);
        assert_eq!(p.header().error_code(), 99);
        assert_eq!(p.data(), &[0xAA]);
    }

    #[test]
    fn header_needs_eleven_bytes() {
        assert_eq!(Header::parse(&[0; 10]), None);
        assert!(Header::parse(&[0; 11]).is_some());
    }
}
