//! The JDWP packet decoder on any byte stream, cut into reads of any size.
//!
//! Input: one seed byte (bits 0-1: largest read, bits 2-3: the streaming threshold, bit 4:
//! a small length limit instead of the VM side's), then the stream. What must hold:
//! - what comes out (whole packets, or a head and body pieces) is exactly the input, in
//!   order, up to the first error;
//! - a whole packet is as long as its length field, at least a header, within the limit,
//!   and rebuilding it from its fields gives the same bytes;
//! - a streamed packet's body pieces add up to its length and `last` marks the end;
//! - between frames the decoder holds less than one packet it would not stream: its memory
//!   never follows a length field, whatever the length field says;
//! - an error names the length that caused it, and that length is really out of bounds.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::pieces;
use crate::jdwp::codec::{CodecError, Frame, JdwpCodec, DEFAULT_STREAM_OVER, MAX_PACKET_LEN};
use crate::jdwp::packet::{Header, Packet, FLAG_REPLY, HEADER_LEN};

/// A small limit, so inputs of a few KiB can cross it.
const SMALL_MAX: u32 = 4096;

pub fn check(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else { return };
    let stream_over = [16, 64, 1024, DEFAULT_STREAM_OVER][usize::from((seed >> 2) & 3)];
    let max_len = if seed & 0x10 != 0 { SMALL_MAX } else { MAX_PACKET_LEN };
    let mut codec = JdwpCodec::new(max_len, stream_over);
    let mut buf = BytesMut::new();
    let mut out: Vec<u8> = Vec::with_capacity(stream.len());
    let mut body_left = 0usize;
    let mut fed = 0usize;
    for piece in pieces(seed, stream) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => take_frame(frame, &codec, &mut body_left, max_len, stream_over, &mut out),
                Ok(None) => {
                    held_is_bounded(&codec, &buf, stream_over);
                    break;
                }
                Err(e) => return error_is_honest(&e, &stream[out.len()..], max_len, &out, stream),
            }
        }
        assert_eq!(out.len() + buf.len(), fed, "bytes lost or invented");
    }
    assert_eq!(out, stream[..out.len()], "frames differ from the input");
    match codec.decode_eof(&mut buf) {
        Ok(None) => assert!(buf.is_empty() && body_left == 0, "eof with {} bytes held", buf.len()),
        Ok(Some(f)) => panic!("a frame at eof that decode did not give: {f:?}"),
        Err(CodecError::Truncated { have, want }) => {
            assert_eq!(have, buf.len());
            assert!(want > have || body_left > 0, "truncated {have} of {want}");
        }
        Err(e) => panic!("unexpected error at eof: {e}"),
    }
}

fn take_frame(frame: Frame, codec: &JdwpCodec, body_left: &mut usize, max_len: u32, stream_over: usize, out: &mut Vec<u8>) {
    match frame {
        Frame::Packet(p) => {
            assert_eq!(*body_left, 0, "a whole packet inside a streamed one");
            let h = p.header();
            assert_eq!(h.length as usize, p.len());
            assert!(p.len() >= HEADER_LEN && h.length <= max_len, "packet of {} bytes", p.len());
            rebuilds(&p, h);
            out.extend_from_slice(p.as_bytes());
        }
        Frame::Head(h, bytes) => {
            assert_eq!(*body_left, 0, "a head inside a streamed packet");
            assert_eq!(Header::parse(&bytes), Some(h));
            assert_eq!(bytes.len(), HEADER_LEN);
            assert!(h.length as usize > stream_over && h.length <= max_len, "streamed {}", h.length);
            *body_left = h.body_len();
            assert_eq!(codec.body_left(), *body_left);
            out.extend_from_slice(&bytes);
        }
        Frame::Body { bytes, last } => {
            assert!(!bytes.is_empty() && bytes.len() <= *body_left, "body piece of {} with {body_left} left", bytes.len());
            *body_left -= bytes.len();
            assert_eq!(last, *body_left == 0);
            assert_eq!(codec.body_left(), *body_left);
            out.extend_from_slice(&bytes);
        }
    }
}

/// decode -> encode -> decode: the packet built from the decoded fields is the same packet,
/// and the encoder writes it back byte for byte.
fn rebuilds(p: &Packet, h: Header) {
    let rebuilt = match h.flags {
        0 => Some(Packet::command(h.id, h.cmd_set(), h.cmd(), p.data())),
        FLAG_REPLY => Some(Packet::reply(h.id, h.error_code(), p.data())),
        _ => None,
    };
    if let Some(rebuilt) = rebuilt {
        assert_eq!(rebuilt.as_bytes(), p.as_bytes(), "rebuilt packet differs");
    }
    let mut encoded = BytesMut::new();
    let encode = JdwpCodec::default().encode(p, &mut encoded);
    assert!(encode.is_ok() && encoded[..] == p.as_bytes()[..], "encoder changed the packet");
}

/// While waiting for more input the decoder holds less than one packet it would buffer whole
/// (at most the streaming threshold), or, inside a streamed body, nothing at all.
fn held_is_bounded(codec: &JdwpCodec, buf: &BytesMut, stream_over: usize) {
    if codec.in_body() {
        assert!(buf.is_empty(), "{} bytes held inside a streamed body", buf.len());
    } else {
        assert!(buf.len() < stream_over.max(HEADER_LEN), "{} bytes held, threshold {stream_over}", buf.len());
    }
}

fn error_is_honest(e: &CodecError, at: &[u8], max_len: u32, out: &[u8], stream: &[u8]) {
    assert_eq!(out, &stream[..out.len()], "frames before the error differ from the input");
    let len = at.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match e {
        CodecError::TooShort(l) => assert!(Some(*l) == len && (*l as usize) < HEADER_LEN, "{e}"),
        CodecError::TooLong { len: l, max, .. } => assert!(Some(*l) == len && *max == max_len && *l > max_len, "{e}"),
        other => panic!("decode gave {other}"),
    }
}
