//! DDM chunks (plain and zlib-compressed) and JDWP event composites as bytes, for the tests'
//! fake VMs and clients: written independently of jdwpmux's own decoders, as `wire.rs` is.

use bytes::BufMut;

use super::consts::*;
use super::reader::Reader;
use super::wire::WireError;

/// One DDM chunk: four ASCII letters and the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub ty: [u8; 4],
    pub data: Vec<u8>,
}

impl Chunk {
    pub fn new(ty: &[u8; 4], data: impl Into<Vec<u8>>) -> Chunk {
        Chunk { ty: *ty, data: data.into() }
    }

    pub fn is(&self, ty: &[u8; 4]) -> bool {
        &self.ty == ty
    }

    pub fn type_str(&self) -> String {
        String::from_utf8_lossy(&self.ty).into_owned()
    }

    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.data)
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ty);
        out.put_u32(self.data.len() as u32);
        out.extend_from_slice(&self.data);
    }
}

pub fn encode_chunks(chunks: &[Chunk]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in chunks {
        c.encode_into(&mut out);
    }
    out
}

/// Splits a DDM payload into chunks; trailing bytes shorter than a chunk header are an error.
pub fn split_chunks(payload: &[u8]) -> Result<Vec<Chunk>, WireError> {
    let mut r = Reader::new(payload);
    let mut out = Vec::new();
    while !r.is_empty() {
        let ty = r.ty4()?;
        let len = r.u4()?;
        if len as usize > r.remaining() {
            return Err(WireError::ChunkOverrun { ty, len, left: r.remaining() });
        }
        out.push(Chunk { ty, data: r.bytes(len as usize)?.to_vec() });
    }
    Ok(out)
}

/// A ZLIB chunk wrapping `orig`: data = `u4 origType, u4 origLen, deflate(zlib) bytes`; the
/// chunk's own length field is the compressed length (the generic chunk framing).
pub fn zlib_chunk(orig: &Chunk) -> Chunk {
    zlib_chunk_claiming(&orig.ty, orig.data.len() as u32, &orig.data)
}

/// Like `zlib_chunk` but with a chosen (possibly false) original length: for bomb tests.
pub fn zlib_chunk_claiming(orig_ty: &[u8; 4], claimed_len: u32, raw: &[u8]) -> Chunk {
    use std::io::Write;
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(raw);
    let compressed = enc.finish().unwrap_or_default();
    let mut data = Vec::with_capacity(8 + compressed.len());
    data.extend_from_slice(orig_ty);
    data.put_u32(claimed_len);
    data.extend_from_slice(&compressed);
    Chunk::new(b"ZLIB", data)
}

/// Event.Composite payload with one event: `u1 policy, u4 1, u1 kind, u4 requestId, threadId`;
/// kinds whose event carries a location (single step, breakpoint, method entry/exit) get a
/// fixed dummy location (class tag 1, class 0x2001, method 0x3001, index 0) so it is valid JDWP.
pub fn event_composite_payload(suspend_policy: u8, kind: u8, request_id: u32, thread_id: u64) -> Vec<u8> {
    events_payload(suspend_policy, &[(kind, request_id, thread_id)])
}

/// One event of a composite as the tests write it: (kind, request id, thread).
pub type EventSpec = (u8, u32, u64);

/// An Event.Composite body with several `(kind, request id, thread)` events, in order.
pub fn events_payload(suspend_policy: u8, events: &[EventSpec]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u8(suspend_policy);
    out.put_u32(events.len() as u32);
    for &(kind, request_id, thread_id) in events {
        out.put_u8(kind);
        out.put_u32(request_id);
        out.put_u64(thread_id);
        if matches!(kind, KIND_SINGLE_STEP | KIND_BREAKPOINT | KIND_METHOD_ENTRY | KIND_METHOD_EXIT) {
            out.put_u8(1);
            out.put_u64(0x2001);
            out.put_u64(0x3001);
            out.put_u64(0);
        }
    }
    out
}

/// The `(kind, request id, thread)` of each event of a composite written by `events_payload`.
pub fn read_events(data: &[u8]) -> Option<(u8, Vec<EventSpec>)> {
    let mut r = Reader::new(data);
    let policy = r.u1().ok()?;
    let count = r.u4().ok()?;
    let mut out = Vec::new();
    for _ in 0..count {
        let kind = r.u1().ok()?;
        let request = r.u4().ok()?;
        let thread = r.u8().ok()?;
        if matches!(kind, KIND_SINGLE_STEP | KIND_BREAKPOINT | KIND_METHOD_ENTRY | KIND_METHOD_EXIT) {
            r.bytes(25).ok()?;
        }
        out.push((kind, request, thread));
    }
    Some((policy, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_and_reject_overrun() {
        let payload = encode_chunks(&[Chunk::new(b"THCR", vec![9; 5]), Chunk::new(b"THDE", vec![1, 2, 3, 4])]);
        let cs = split_chunks(&payload).unwrap();
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].type_str(), "THCR");
        assert_eq!(cs[1].data, vec![1, 2, 3, 4]);
        let mut bad = payload.clone();
        bad.truncate(payload.len() - 1);
        assert!(matches!(split_chunks(&bad), Err(WireError::ChunkOverrun { .. })));
        assert!(matches!(split_chunks(b"AB"), Err(WireError::Truncated { .. })));
    }

    #[test]
    fn zlib_chunk_inflates_back() {
        use std::io::Read;
        let orig = Chunk::new(b"HPDS", vec![7u8; 10_000]);
        let z = zlib_chunk(&orig);
        let mut r = z.reader();
        assert_eq!(&r.ty4().unwrap(), b"HPDS");
        assert_eq!(r.u4().unwrap(), 10_000);
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(r.rest()).read_to_end(&mut out).unwrap();
        assert_eq!(out, orig.data);
    }
}
