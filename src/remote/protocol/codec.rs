//! The sans-I/O frame codec (a `tokio_util::codec::Decoder` and `Encoder`).
//!
//! The header is checked whole (kind known, length within the kind's maximum, flags, channel
//! and sequence rules) as soon as its 26 bytes are in, before any payload is buffered, so a
//! hostile peer's length field never sizes a buffer. Incomplete input is `Ok(None)`.
//! Payloads are copied out of the read buffer (small), so the buffer is reused read after read.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame::{check, Body, Frame, Header, HeaderError, Kind, HEADER_LEN};
use super::payload::{self, PayloadError};
use super::squeeze::{self, SqueezeCount};

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
        // The payload is copied out (JDWP packets are mostly a few hundred bytes) rather than
        // split off: a piece split off would share the read buffer's allocation while it
        // waits for its channel, and the reader's next `reserve` would then allocate a whole
        // new buffer for every read. Copied, the buffer stays the reader's and is reused.
        let bytes = Bytes::copy_from_slice(&src[HEADER_LEN..total]);
        src.advance(total);
        let body = payload::decode(h.kind, bytes).map_err(|source| CodecError::Payload { kind: h.kind, source })?;
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
        // Data, nearly every frame, goes from its bytes straight into `dst`: no payload
        // buffer to allocate and copy through.
        let owned;
        let payload: &[u8] = match &frame.body {
            Body::Data(bytes) => {
                if bytes.is_empty() {
                    return Err(CodecError::Payload { kind, source: PayloadError::Invalid { what: "data length", value: 0 } });
                }
                bytes
            }
            body => {
                let mut v = Vec::new();
                payload::encode(body, &mut v).map_err(|source| CodecError::Payload { kind, source })?;
                owned = v;
                &owned
            }
        };
        check(kind, payload.len(), 0, frame.channel, frame.seq)?;
        let header = Header { len: payload.len() as u32, kind, channel: frame.channel, seq: frame.seq, ack: frame.ack };
        let mut head = [0u8; HEADER_LEN];
        header.put(&mut head);
        dst.reserve(HEADER_LEN + payload.len());
        dst.put_slice(&head);
        dst.put_slice(payload);
        Ok(())
    }
}

impl FarCodec {
    /// Writes `frame` as `encode` does, but a Data frame that compressing makes smaller goes
    /// out as a DataZ frame (`super::squeeze`; only under protocol 5), counted in `count`.
    pub fn encode_squeezed(frame: &Frame, dst: &mut BytesMut, count: &mut SqueezeCount) -> Result<(), CodecError> {
        let Body::Data(bytes) = &frame.body else { return FarCodec.encode(frame, dst) };
        let Some(packed) = squeeze::squeeze(bytes) else {
            count.data(bytes.len(), None);
            return FarCodec.encode(frame, dst);
        };
        check(Kind::DataZ, packed.len(), 0, frame.channel, frame.seq)?;
        count.data(bytes.len(), Some(packed.len()));
        let header = Header { len: packed.len() as u32, kind: Kind::DataZ, channel: frame.channel, seq: frame.seq, ack: frame.ack };
        let mut head = [0u8; HEADER_LEN];
        header.put(&mut head);
        dst.reserve(HEADER_LEN + packed.len());
        dst.put_slice(&head);
        dst.put_slice(&packed);
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
#[cfg(test)]
#[path = "codec_squeeze_tests.rs"]
mod squeeze_tests;
