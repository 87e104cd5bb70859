//! DDM payloads of every chunk type, both directions, requests and replies, whole or seen
//! through a prefix of their packet, ZLIB and nested chunks included.
//!
//! Input: one flag byte (bit 0: to the VM, bit 1: a reply, bit 2: the payload is only a
//! prefix of its packet, bits 3-7: how much of it is unseen), then the payload. What must
//! hold for every chunk decoded:
//! - decode -> encode -> decode gives the same chunk (a ZLIB chunk: the same inner chunk),
//!   for every form that keeps all its bytes; only summaries may refuse to encode;
//! - a ZLIB chunk never inflated past `MAX_INFLATED_LEN`, nor past what its compressed bytes
//!   can honestly hold (`MAX_DEFLATE_RATIO`);
//! - a chunk seen through a prefix has fewer bytes than it declares;
//! - its log line stays short and its JSON form exists;
//! - the payload yields at most `MAX_CHUNKS_PER_PAYLOAD` chunks and one error, last;
//! - the per-VM state it feeds stays within `MAX_THREADS`.

use crate::ddm::json::chunks_json;
use crate::ddm::state::MAX_THREADS;
use crate::ddm::zlib::{MAX_DEFLATE_RATIO, MAX_INFLATED_LEN};
use crate::ddm::{decode_payload, Chunk, ClientData, DdmError, Dir, MAX_CHUNKS_PER_PAYLOAD};

/// Longest log line a chunk may produce: strings, lists and byte heads are all shortened.
pub const MAX_LINE: usize = 16 * 1024;

pub fn check(data: &[u8]) {
    let Some((&flags, payload)) = data.split_first() else { return };
    let dir = if flags & 1 != 0 { Dir::ToVm } else { Dir::FromVm };
    let is_reply = flags & 2 != 0;
    let prefix_of = (flags & 4 != 0).then(|| payload.len() + usize::from(flags >> 3) * 97);
    let items = decode_payload(payload, dir, is_reply, prefix_of);
    assert!(items.len() <= MAX_CHUNKS_PER_PAYLOAD + 1, "{} chunks", items.len());
    let mut state = ClientData::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(chunk) => {
                check_chunk(chunk, dir, is_reply);
                state.apply(chunk);
            }
            Err(e) => {
                assert_eq!(i + 1, items.len(), "decoding went on after an error");
                assert!(e.to_string().len() <= MAX_LINE);
            }
        }
    }
    assert!(state.threads.len() <= MAX_THREADS);
    let _ = state.label();
    assert!(serde_json::to_string(&state).is_ok());
    assert_eq!(chunks_json(payload, dir == Dir::FromVm, is_reply).len(), decode_payload(payload, dir, is_reply, None).len());
}

/// Everything that must hold for one decoded chunk.
pub fn check_chunk(chunk: &Chunk, dir: Dir, is_reply: bool) {
    let line = chunk.to_string();
    assert!(line.len() <= MAX_LINE, "log line of {} bytes", line.len());
    assert!(serde_json::to_value(chunk).is_ok());
    match chunk {
        Chunk::Compressed { compressed_len, original_len, inner } => {
            let original = *original_len as usize;
            assert!(original <= MAX_INFLATED_LEN, "inflated to {original}");
            assert!(original <= (*compressed_len as usize).saturating_mul(MAX_DEFLATE_RATIO), "{compressed_len} -> {original}");
            assert!(!inner.is_compressed(), "nested ZLIB decoded");
        }
        Chunk::Truncated { declared_len, have, .. } => assert!(*have < *declared_len as usize),
        _ => {}
    }
    match chunk.encode() {
        Ok(bytes) => {
            let again = decode_payload(&bytes, dir, is_reply, None);
            match again.as_slice() {
                [Ok(back)] => assert_eq!(back.uncompressed(), chunk.uncompressed(), "round trip changed the chunk"),
                other => panic!("{chunk:?} encodes to {bytes:02x?}, which decodes to {other:?}"),
            }
        }
        Err(DdmError::NotEncodable { .. }) => {}
        Err(e) => panic!("{chunk:?} does not encode: {e}"),
    }
}
