//! The far-side stream's decoder on any bytes (what a hostile or broken far side could
//! send), cut into reads of any size, and the frames it gives fed to the receiving side's
//! resume state.
//!
//! Input: one seed byte (how the stream is cut into reads), then the stream. What must hold:
//! - every frame that comes out encodes back to exactly the bytes it was decoded from (the
//!   encoding is canonical: one frame, one byte string), and the frames are the input, in
//!   order, up to the first error; a compressed Data frame (DataZ, whose deflate bytes any
//!   encoder may choose) decodes to a Data frame of at most `MAX_DATA` bytes;
//! - a frame obeys the header rules (channel and sequence by kind, within its maximum);
//! - while waiting, the decoder holds less than one frame, and never more than the header
//!   and the payload its (already checked) length announces: a length field never sizes a
//!   buffer beyond the kind's maximum;
//! - an error is about the frame at the position it stopped at: a header error is what
//!   checking that header gives;
//! - the resume state takes any sequence and ack numbers without a panic: in order frames are
//!   delivered once, anything else is refused, and what it holds never exceeds its bound.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::pieces;
use crate::remote::protocol::codec::{CodecError, FarCodec};
use crate::remote::protocol::frame::{check as check_header, Frame, Header, Kind, HEADER_LEN, MAX_DATA};
use crate::remote::protocol::resume::{Outbound, Received, Resume};

/// The resume state's bound on unacknowledged bytes in this target: small, so inputs cross it.
const LIMIT: usize = 4096;

pub fn check(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else { return };
    let mut codec = FarCodec;
    let mut buf = BytesMut::new();
    let mut used = 0usize;
    let mut fed = 0usize;
    let mut resume = Resume::new(Outbound::new(LIMIT));
    // Something of ours to be acknowledged, so hostile acks meet a non-empty table.
    for i in 0..3u8 {
        let _ = resume.out.push(1, crate::remote::protocol::Body::Data(bytes::Bytes::from(vec![i; 100])));
    }
    for piece in pieces(seed, stream) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let n = canonical(&frame, &stream[used..]);
                    used += n;
                    take(&mut resume, &frame);
                }
                Ok(None) => {
                    held_is_bounded(&buf);
                    break;
                }
                Err(e) => return error_is_honest(&e, &stream[used..]),
            }
        }
        assert_eq!(used + buf.len(), fed, "bytes lost or invented");
    }
    match codec.decode_eof(&mut buf) {
        Ok(None) => assert!(buf.is_empty(), "eof with {} bytes held", buf.len()),
        Ok(Some(f)) => panic!("a frame at eof that decode did not give: {f:?}"),
        Err(CodecError::Truncated { have, want }) => assert!(have == buf.len() && want > have, "truncated {have} of {want}"),
        Err(e) => error_is_honest(&e, &stream[used..]),
    }
}

/// The frame encodes back to the bytes at the front of `at`; returns how many those are.
fn canonical(frame: &Frame, at: &[u8]) -> usize {
    if let Some(Ok(h)) = Header::parse(at).filter(|h| h.as_ref().is_ok_and(|h| h.kind == Kind::DataZ)) {
        assert!(matches!(&frame.body, crate::remote::protocol::Body::Data(b) if !b.is_empty() && b.len() <= MAX_DATA), "a DataZ frame decoded to {frame:?}");
        assert_eq!((frame.channel, frame.seq, frame.ack), (h.channel, h.seq, h.ack));
        return HEADER_LEN + h.len as usize;
    }
    let mut again = BytesMut::new();
    let encoded = FarCodec.encode(frame, &mut again);
    assert!(encoded.is_ok(), "a decoded frame the encoder refuses: {frame:?}");
    assert!(at.starts_with(&again), "frame re-encodes differently: {frame:?}");
    let kind = frame.body.kind();
    assert!(check_header(kind, again.len() - HEADER_LEN, 0, frame.channel, frame.seq).is_ok());
    again.len()
}

/// A frame from the other side through the resume state: whatever the numbers, it never
/// panics, delivers only the next frame in order, and keeps its bound.
fn take(resume: &mut Resume, frame: &Frame) {
    let before = resume.inn.last();
    match resume.receive(frame) {
        Ok(Received::Deliver) => assert_eq!(resume.inn.last(), before + 1),
        Ok(Received::Link) => assert!(!frame.body.kind().numbered()),
        Err(_) => assert_eq!(resume.inn.last(), before, "a refused frame moved the receive count"),
    }
    assert!(resume.out.unacked_bytes() <= LIMIT, "{} bytes unacknowledged", resume.out.unacked_bytes());
    assert!(resume.out.acked() <= resume.out.sent());
}

fn held_is_bounded(buf: &BytesMut) {
    match Header::parse(buf) {
        None => assert!(buf.len() < HEADER_LEN),
        Some(Ok(h)) => assert!(buf.len() < HEADER_LEN + h.len as usize && h.len as usize <= h.kind.max_payload()),
        Some(Err(e)) => panic!("waiting on a refused header: {e}"),
    }
}

fn error_is_honest(e: &CodecError, at: &[u8]) {
    match e {
        CodecError::Header(he) => assert_eq!(Header::parse(at).and_then(Result::err).as_ref(), Some(he), "{e}"),
        CodecError::Payload { kind, .. } => {
            let h = Header::parse(at).and_then(Result::ok);
            assert!(h.is_some_and(|h| h.kind == *kind && at.len() >= HEADER_LEN + h.len as usize), "{e}");
        }
        other => panic!("decode gave {other}"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// The committed seeds hold a frame of every kind, so the fuzzer starts from each payload.
    #[test]
    fn the_corpus_has_every_kind() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/farlink");
        let mut kinds = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            let mut buf = BytesMut::from(&data[1..]);
            // By the header: a DataZ frame decodes to the Data it stands for.
            while let Some(Ok(h)) = Header::parse(&buf) {
                if FarCodec.decode(&mut buf).ok().flatten().is_none() {
                    break;
                }
                kinds.insert(h.kind as u8);
            }
        }
        let all: BTreeSet<u8> = crate::remote::protocol::Kind::ALL.iter().map(|k| *k as u8).collect();
        assert_eq!(kinds, all);
    }
}
