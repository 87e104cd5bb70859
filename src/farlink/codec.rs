//! The sans-I/O frame codec (a `tokio_util::codec::Decoder` and `Encoder`).
//!
//! The header is checked whole (kind known, length within the kind's maximum, flags, channel
//! and sequence rules) as soon as its 26 bytes are in, before any payload is buffered, so a
//! hostile peer's length field never sizes a buffer. Incomplete input is `Ok(None)`.
//! Data payloads come out as `Bytes` split off the read buffer, without a copy.

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame::{check, Body, Frame, Header, HeaderError, Kind, HEADER_LEN};
use super::payload::{self, PayloadError};

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("{kind:?} frame: {source}")]
    Payload { kind: Kind, source: PayloadError },
    #[error("stream closed in the middle of a frame ({have} of {want} bytes)")]
    Truncated { have: usize, want: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads and writes frames. It keeps no state between frames: a new connection takes a new
/// codec, and whatever a cut left half-read is dropped with the old one.
#[derive(Debug, Clone, Copy, Default)]
pub struct FarCodec;

impl Decoder for FarCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        let Some(header) = Header::parse(src) else { return Ok(None) };
        let h = header?;
        let total = HEADER_LEN + h.len as usize;
        if src.len() < total {
            src.reserve(total - src.len());
            return Ok(None);
        }
        let mut bytes = src.split_to(total);
        bytes.advance(HEADER_LEN);
        let body = payload::decode(h.kind, bytes.freeze()).map_err(|source| CodecError::Payload { kind: h.kind, source })?;
        Ok(Some(Frame { channel: h.channel, seq: h.seq, ack: h.ack, body }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => {
                let want = match src.get(..4) {
                    Some(b) if src.len() >= HEADER_LEN => HEADER_LEN + u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                    _ => HEADER_LEN,
                };
                Err(CodecError::Truncated { have: src.len(), want })
            }
        }
    }
}

impl Encoder<&Frame> for FarCodec {
    type Error = CodecError;

    /// Writes `frame`, or nothing at all when it breaks a rule the decoder would refuse.
    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), CodecError> {
        let kind = frame.body.kind();
        let mut payload = Vec::new();
        payload::encode(&frame.body, &mut payload).map_err(|source| CodecError::Payload { kind, source })?;
        check(kind, payload.len(), 0, frame.channel, frame.seq)?;
        let header = Header { len: payload.len() as u32, kind, channel: frame.channel, seq: frame.seq, ack: frame.ack };
        let mut head = Vec::with_capacity(HEADER_LEN);
        header.write(&mut head);
        dst.reserve(HEADER_LEN + payload.len());
        dst.put_slice(&head);
        dst.put_slice(&payload);
        Ok(())
    }
}

/// The bytes a frame with `body` takes on the wire, header included (what the resume table
/// counts); an error when the encoder would refuse it.
pub fn wire_len(body: &Body) -> Result<usize, CodecError> {
    let kind = body.kind();
    let len = match body {
        Body::Data(bytes) => bytes.len(),
        _ => {
            let mut payload = Vec::new();
            payload::encode(body, &mut payload).map_err(|source| CodecError::Payload { kind, source })?;
            payload.len()
        }
    };
    if len == 0 && kind == Kind::Data {
        return Err(CodecError::Payload { kind, source: PayloadError::Invalid { what: "data length", value: 0 } });
    }
    if len > kind.max_payload() {
        return Err(HeaderError::TooLong { kind, len: u32::try_from(len).unwrap_or(u32::MAX), max: kind.max_payload() }.into());
    }
    Ok(HEADER_LEN + len)
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
