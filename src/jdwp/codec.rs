//! A sans-I/O JDWP packet decoder (a `tokio_util::codec::Decoder`).
//!
//! Small packets come out whole. A packet longer than `stream_over` whose body has not fully
//! arrived yet comes out as a `Head` followed by `Body` pieces as the bytes arrive, so a
//! 200 MiB reply is relayed cut-through with bounded memory instead of being held whole.
//! The length is checked against the limit as soon as its 4 bytes are in, before buffering.

use bytes::{BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::packet::{Header, Packet, HEADER_LEN};

/// JDWP lengths are Java ints: anything above this cannot be a real packet.
pub const MAX_PACKET_LEN: u32 = i32::MAX as u32;
/// Packets above this size are streamed when they have not fully arrived: relayed
/// cut-through, so a large reply's last hop does not wait for its first.
pub const DEFAULT_STREAM_OVER: usize = 32 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("packet length {0} is shorter than the 11-byte header")]
    TooShort(u32),
    #[error("packet length {len} exceeds {limit} ({max} bytes)")]
    TooLong { len: u32, max: u32, limit: &'static str },
    #[error("connection closed in the middle of a packet ({have} of {want} bytes)")]
    Truncated { have: usize, want: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What the decoder yields.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole packet.
    Packet(Packet),
    /// The 11-byte header of a large packet; its body follows as `Body` frames.
    Head(Header, BytesMut),
    /// A piece of the body announced by the last `Head`; `last` ends the packet.
    Body { bytes: BytesMut, last: bool },
}

#[derive(Debug, Clone)]
pub struct JdwpCodec {
    max_len: u32,
    /// The name of the constant `max_len` comes from, for the error (and so the log line).
    limit: &'static str,
    stream_over: usize,
    /// Body bytes of a streamed packet still to come.
    remaining: usize,
}

impl JdwpCodec {
    pub fn new(max_len: u32, stream_over: usize) -> JdwpCodec {
        let limit = if max_len == MAX_PACKET_LEN { "MAX_PACKET_LEN" } else { "the length limit" };
        JdwpCodec { max_len, limit, stream_over, remaining: 0 }
    }

    /// Names the constant the length limit comes from, so a refused packet's error says
    /// which limit it hit.
    pub fn limit_named(mut self, name: &'static str) -> JdwpCodec {
        self.limit = name;
        self
    }

    /// True while a streamed packet's body is being passed through.
    pub fn in_body(&self) -> bool {
        self.remaining > 0
    }

    /// Body bytes of the streamed packet in progress still to come (0 between packets).
    pub fn body_left(&self) -> usize {
        self.remaining
    }
}

impl Default for JdwpCodec {
    fn default() -> Self {
        JdwpCodec::new(MAX_PACKET_LEN, DEFAULT_STREAM_OVER)
    }
}

impl Decoder for JdwpCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if self.remaining > 0 {
            if src.is_empty() {
                return Ok(None);
            }
            let n = self.remaining.min(src.len());
            self.remaining -= n;
            return Ok(Some(Frame::Body { bytes: src.split_to(n), last: self.remaining == 0 }));
        }
        let Some(len_bytes) = src.get(..4) else { return Ok(None) };
        let len = u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        if (len as usize) < HEADER_LEN {
            return Err(CodecError::TooShort(len));
        }
        if len > self.max_len {
            return Err(CodecError::TooLong { len, max: self.max_len, limit: self.limit });
        }
        let len = len as usize;
        if src.len() >= len {
            return Ok(Some(Frame::Packet(Packet::from_wire(src.split_to(len)))));
        }
        let Some(header) = Header::parse(src) else { return Ok(None) };
        if len > self.stream_over {
            self.remaining = len - HEADER_LEN;
            return Ok(Some(Frame::Head(header, src.split_to(HEADER_LEN))));
        }
        src.reserve(len - src.len());
        Ok(None)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() && self.remaining == 0 => Ok(None),
            None => {
                let want = match src.get(..4) {
                    Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                    None => HEADER_LEN,
                };
                Err(CodecError::Truncated { have: src.len(), want: want.max(self.remaining) })
            }
        }
    }
}

impl Encoder<&Packet> for JdwpCodec {
    type Error = CodecError;

    fn encode(&mut self, item: &Packet, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.put_slice(item.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes and collects the frames as (kind, bytes).
    fn run(codec: &mut JdwpCodec, input: &[u8], step: usize) -> Result<Vec<(char, Vec<u8>)>, CodecError> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            while let Some(f) = codec.decode(&mut buf)? {
                out.push(match f {
                    Frame::Packet(p) => ('P', p.as_bytes().to_vec()),
                    Frame::Head(_, h) => ('H', h.to_vec()),
                    Frame::Body { bytes, last } => (if last { 'L' } else { 'B' }, bytes.to_vec()),
                });
            }
        }
        if let Some(f) = codec.decode_eof(&mut buf)? {
            panic!("unexpected frame at eof: {f:?}");
        }
        Ok(out)
    }

    struct Case {
        name: &'static str,
        input: Vec<u8>,
        /// Whole packets expected, concatenated as they come out.
        packets: usize,
    }

    fn cases() -> Vec<Case> {
        let version = Packet::command(1, 1, 1, &[]).as_bytes().to_vec();
        let reply = Packet::reply(1, 0, &[1, 2, 3, 4, 5]).as_bytes().to_vec();
        let mut two = version.clone();
        two.extend_from_slice(&reply);
        vec![
            Case { name: "one command", input: version, packets: 1 },
            Case { name: "one reply", input: reply, packets: 1 },
            Case { name: "two back to back", input: two, packets: 2 },
        ]
    }

    #[test]
    fn fixtures_whole_and_in_fragments() {
        for case in cases() {
            for step in [1, 2, 3, 7, 11, 1000] {
                let frames = run(&mut JdwpCodec::default(), &case.input, step).unwrap();
                assert_eq!(frames.len(), case.packets, "{} step {step}", case.name);
                assert!(frames.iter().all(|(k, _)| *k == 'P'));
                let joined: Vec<u8> = frames.into_iter().flat_map(|(_, b)| b).collect();
                assert_eq!(joined, case.input, "{} step {step}", case.name);
            }
        }
    }

    #[test]
    fn large_packet_streams_with_bounded_pieces() {
        let body = vec![0x5A; 100_000];
        let pkt = Packet::reply(9, 0, &body);
        let mut codec = JdwpCodec::new(MAX_PACKET_LEN, 1024);
        let frames = run(&mut codec, pkt.as_bytes(), 4096).unwrap();
        assert_eq!(frames[0].0, 'H');
        assert_eq!(frames[0].1, pkt.as_bytes()[..11].to_vec());
        assert_eq!(frames.last().map(|f| f.0), Some('L'));
        assert!(frames[1..].iter().all(|(_, b)| b.len() <= 4096));
        let joined: Vec<u8> = frames.into_iter().flat_map(|(_, b)| b).collect();
        assert_eq!(joined, pkt.as_bytes());
        assert!(!codec.in_body());
    }

    #[test]
    fn large_packet_already_buffered_comes_whole() {
        let pkt = Packet::reply(9, 0, &[7; 5000]);
        let frames = run(&mut JdwpCodec::new(MAX_PACKET_LEN, 1024), pkt.as_bytes(), 10_000).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].0, 'P');
    }

    #[test]
    fn length_below_header_is_an_error() {
        for len in [0u32, 1, 10] {
            let err = run(&mut JdwpCodec::default(), &len.to_be_bytes(), 1).unwrap_err();
            assert!(matches!(err, CodecError::TooShort(l) if l == len), "{err}");
        }
    }

    #[test]
    fn length_over_limit_is_rejected_before_buffering() {
        let mut codec = JdwpCodec::new(1 << 20, 1024);
        let mut buf = BytesMut::from(&0x7FFF_FFFFu32.to_be_bytes()[..]);
        let err = codec.decode(&mut buf).unwrap_err();
        assert!(matches!(err, CodecError::TooLong { len: 0x7FFF_FFFF, max: 1048576, .. }));
        let mut buf = BytesMut::from(&u32::MAX.to_be_bytes()[..]);
        assert!(JdwpCodec::default().decode(&mut buf).is_err());
    }

    #[test]
    fn absurd_lengths_never_size_a_buffer_and_name_their_limit() {
        // From the VM: anything up to MAX_PACKET_LEN is legal, and streamed: the decoder
        // buffers a header, never the 2 GiB the length announces.
        let mut codec = JdwpCodec::default();
        let mut buf = BytesMut::from(Packet::reply(1, 0, &[]).as_bytes());
        buf[..4].copy_from_slice(&MAX_PACKET_LEN.to_be_bytes());
        buf.extend_from_slice(&[0xAB; 100]);
        assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Frame::Head(h, _)) if h.length == MAX_PACKET_LEN));
        assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Frame::Body { last: false, .. })));
        assert_eq!(codec.decode(&mut buf).unwrap(), None);
        assert!(buf.capacity() < 1 << 20, "buffer of {} bytes", buf.capacity());
        // Past it (a length no Java int can say): refused, naming the limit.
        for len in [MAX_PACKET_LEN + 1, u32::MAX] {
            let mut buf = BytesMut::from(&len.to_be_bytes()[..]);
            let err = JdwpCodec::default().decode(&mut buf).unwrap_err();
            assert_eq!(err.to_string(), format!("packet length {len} exceeds MAX_PACKET_LEN (2147483647 bytes)"));
        }
        // A named limit (the debugger side's) is named in the error.
        let mut buf = BytesMut::from(&0x7FFF_FFFFu32.to_be_bytes()[..]);
        let err = JdwpCodec::new(1 << 20, 1024).limit_named("MAX_DEBUGGER_PACKET").decode(&mut buf).unwrap_err();
        assert!(err.to_string().contains("exceeds MAX_DEBUGGER_PACKET (1048576 bytes)"), "{err}");
        assert_eq!(buf.capacity(), 4, "nothing reserved for a refused length");
    }

    #[test]
    fn truncated_at_eof() {
        let pkt = Packet::command(3, 1, 1, &[1, 2, 3]);
        let mut buf = BytesMut::from(&pkt.as_bytes()[..9]);
        let mut codec = JdwpCodec::default();
        assert!(codec.decode(&mut buf).unwrap().is_none());
        let err = codec.decode_eof(&mut buf).unwrap_err();
        assert!(matches!(err, CodecError::Truncated { have: 9, want: 14 }), "{err}");
    }

    #[test]
    fn truncated_stream_body_at_eof() {
        let pkt = Packet::command(3, 1, 1, &[0; 3000]);
        let mut codec = JdwpCodec::new(MAX_PACKET_LEN, 100);
        let mut buf = BytesMut::from(&pkt.as_bytes()[..500]);
        assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Frame::Head(..))));
        assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Frame::Body { last: false, .. })));
        assert!(matches!(codec.decode_eof(&mut buf), Err(CodecError::Truncated { .. })));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_random_input(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300), step in 1usize..40) {
            let mut codec = JdwpCodec::new(1 << 16, 64);
            let mut buf = BytesMut::new();
            for piece in data.chunks(step) {
                buf.extend_from_slice(piece);
                while let Ok(Some(_)) = codec.decode(&mut buf) {}
            }
        }

        #[test]
        fn any_split_reassembles(lens in proptest::collection::vec(0usize..3000, 1..6), step in 1usize..5000) {
            let mut input = Vec::new();
            for (i, l) in lens.iter().enumerate() {
                input.extend_from_slice(Packet::command(i as u32, 1, 1, &vec![i as u8; *l]).as_bytes());
            }
            let frames = run(&mut JdwpCodec::new(MAX_PACKET_LEN, 1000), &input, step).unwrap();
            let joined: Vec<u8> = frames.into_iter().flat_map(|(_, b)| b).collect();
            proptest::prop_assert_eq!(joined, input);
        }
    }
}
