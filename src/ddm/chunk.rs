//! The framing of a DDM payload into raw chunks: `u4 type, u4 length, data`, repeated (the
//! chunk types are in `chunk_type.rs`).
//!
//! The framing is where "huge" chunks are handled: an hprof dump (HPDS) or a method trace
//! (MPSE/SPSE) can be hundreds of MiB, and the proxy may only hand us a bounded prefix of
//! such a packet. Those chunks come back marked `truncated` with their declared length.


pub use super::chunk_type::ChunkType;
use super::error::DdmError;

/// Most chunks one payload may yield before decoding gives up (bounds memory on a payload
/// of thousands of empty chunks).
pub const MAX_CHUNKS_PER_PAYLOAD: usize = 4096;


/// One chunk as framed in a payload, data not yet interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawChunk<'a> {
    pub ty: ChunkType,
    /// The length the header declares.
    pub declared_len: u32,
    /// The data we have: all of it, or (when `truncated`) the part inside the prefix.
    pub data: &'a [u8],
    pub truncated: bool,
}

/// Splits a payload into chunks. `payload_is_prefix_of = Some(total)` says the payload is only
/// the first bytes of a `total`-byte payload; then a huge or unknown chunk running past the
/// prefix (but not past `total`) is returned truncated instead of as an error.
/// After the first error the iterator ends.
pub fn split_chunks(payload: &[u8], payload_is_prefix_of: Option<usize>) -> ChunkIter<'_> {
    let total = payload_is_prefix_of.filter(|&t| t > payload.len());
    ChunkIter { rest: payload, total_after_rest: total.map(|t| t - payload.len()), count: 0, done: false }
}

/// Iterator returned by [`split_chunks`].
#[derive(Debug, Clone)]
pub struct ChunkIter<'a> {
    rest: &'a [u8],
    /// With a prefix: how many bytes of the whole payload lie beyond `rest`.
    total_after_rest: Option<usize>,
    count: usize,
    done: bool,
}

impl<'a> ChunkIter<'a> {
    fn fail(&mut self, e: DdmError) -> Option<Result<RawChunk<'a>, DdmError>> {
        self.done = true;
        Some(Err(e))
    }
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = Result<RawChunk<'a>, DdmError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        if self.count == MAX_CHUNKS_PER_PAYLOAD {
            let remaining = self.rest.len();
            return self.fail(DdmError::TooManyChunks { limit: MAX_CHUNKS_PER_PAYLOAD, remaining });
        }
        if self.rest.len() < 8 {
            // A header cut by the prefix boundary is not malformed: the rest is unseen.
            if self.total_after_rest.is_some() {
                self.done = true;
                return None;
            }
            let available = self.rest.len();
            return self.fail(DdmError::ShortHeader { available });
        }
        let (header, body) = self.rest.split_at(8);
        let ty = ChunkType(u32::from_be_bytes([header[0], header[1], header[2], header[3]]));
        let declared_len = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        let declared = declared_len as usize;
        self.count += 1;
        if declared <= body.len() {
            let (data, rest) = body.split_at(declared);
            self.rest = rest;
            return Some(Ok(RawChunk { ty, declared_len, data, truncated: false }));
        }
        let may_truncate = ty.is_huge() || !ty.is_known();
        match self.total_after_rest {
            Some(beyond) if may_truncate && declared - body.len() <= beyond => {
                self.done = true;
                Some(Ok(RawChunk { ty, declared_len, data: body, truncated: true }))
            }
            _ => self.fail(DdmError::ChunkOverrun { ty, declared: declared_len, available: body.len() }),
        }
    }
}

/// `u4 type, u4 length, data`. Panics never; data longer than u32::MAX is not a DDM chunk and
/// is clamped in the header (callers only encode small chunks).
pub fn encode_chunk(ty: ChunkType, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + data.len());
    out.extend_from_slice(&ty.to_bytes());
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_spell_their_names() {
        assert_eq!(ChunkType::HELO.0, 0x48454c4f);
        assert_eq!(ChunkType::ZLIB.to_bytes(), *b"ZLIB");
        assert_eq!(ChunkType::KNOWN.len(), 44);
        for t in ChunkType::KNOWN {
            assert!(t.is_known());
            assert_eq!(t.to_string().len(), 4);
        }
        assert!(!ChunkType::from_bytes(*b"ABCD").is_known());
        assert!(ChunkType::HPDS.is_huge() && !ChunkType::HPSG.is_huge());
    }

    #[test]
    fn display_escapes_non_printables() {
        let cases = [
            (*b"THCR", "THCR"),
            ([0, b'A', 0x7f, b'\\'], "\\x00A\\x7f\\x5c"),
            ([b'a', b' ', 0xff, b'Z'], "a \\xffZ"),
        ];
        for (bytes, want) in cases {
            assert_eq!(ChunkType::from_bytes(bytes).to_string(), want);
        }
        assert_eq!(format!("{:?}", ChunkType::THST), "ChunkType(THST)");
        assert_eq!(serde_json::to_string(&ChunkType::FAIL).unwrap(), "\"FAIL\"");
    }

    fn split(p: &[u8], prefix: Option<usize>) -> Vec<Result<RawChunk<'_>, DdmError>> {
        split_chunks(p, prefix).collect()
    }

    #[test]
    fn splits_several_chunks() {
        let p = [
            b'T', b'H', b'D', b'E', 0, 0, 0, 4, 0, 0, 0, 9, //
            b'D', b'B', b'G', b'D', 0, 0, 0, 0,
        ];
        let got = split(&p, None);
        assert_eq!(got.len(), 2);
        let a = got[0].as_ref().unwrap();
        assert_eq!((a.ty, a.declared_len, a.data, a.truncated), (ChunkType::THDE, 4, &[0, 0, 0, 9][..], false));
        let b = got[1].as_ref().unwrap();
        assert_eq!((b.ty, b.data.len()), (ChunkType::DBGD, 0));
        assert!(split(&[], None).is_empty());
    }

    #[test]
    fn framing_errors_stop_iteration() {
        let stray = [b'D', b'B', b'G', b'D', 0, 0, 0, 0, 1, 2, 3];
        let got = split(&stray, None);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].as_ref().unwrap_err(), &DdmError::ShortHeader { available: 3 });

        let over = [b'T', b'H', b'D', b'E', 0, 0, 0, 20, 0, 0, 0, 1, b'X', b'X', b'X', b'X', 0, 0, 0, 0];
        let got = split(&over, None);
        assert_eq!(got, vec![Err(DdmError::ChunkOverrun { ty: ChunkType::THDE, declared: 20, available: 12 })]);
    }

    #[test]
    fn huge_and_unknown_chunks_truncate_only_through_a_prefix() {
        let mut p = b"HPDS".to_vec();
        p.extend_from_slice(&1000u32.to_be_bytes());
        p.extend_from_slice(b"JAVA PROFILE");
        let cases: &[(&[u8; 4], Option<usize>, bool)] = &[
            (b"HPDS", Some(1008), true),  // exactly the whole payload
            (b"HPDS", Some(5000), true),  // more payload after it
            (b"HPDS", Some(1007), false), // runs past the whole payload
            (b"HPDS", None, false),       // not a prefix: overrun is an error
            (b"HPDS", Some(p.len()), false), // "prefix" that is the whole payload
            (b"ABCD", Some(1008), true),  // unknown types too
            (b"MPSE", Some(1008), true),
            (b"THCR", Some(1008), false), // known small type: error
        ];
        for (ty, prefix, ok) in cases {
            p[..4].copy_from_slice(*ty);
            let got = split(&p, *prefix);
            assert_eq!(got.len(), 1, "{ty:?} {prefix:?}");
            match (&got[0], ok) {
                (Ok(c), true) => {
                    assert!(c.truncated);
                    assert_eq!((c.declared_len, c.data), (1000, &b"JAVA PROFILE"[..]));
                }
                (Err(DdmError::ChunkOverrun { declared: 1000, available: 12, .. }), false) => {}
                other => panic!("{ty:?} {prefix:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn header_cut_by_prefix_ends_quietly() {
        let p = [b'D', b'B', b'G', b'D', 0, 0, 0, 0, b'H', b'P'];
        let got = split(&p, Some(100));
        assert_eq!(got.len(), 1);
        assert!(got[0].is_ok());
    }

    #[test]
    fn too_many_chunks_is_an_error() {
        let p: Vec<u8> = b"TEST\0\0\0\0".repeat(MAX_CHUNKS_PER_PAYLOAD + 3);
        let got = split(&p, None);
        assert_eq!(got.len(), MAX_CHUNKS_PER_PAYLOAD + 1);
        assert_eq!(got.last().unwrap().as_ref().unwrap_err(), &DdmError::TooManyChunks {
            limit: MAX_CHUNKS_PER_PAYLOAD,
            remaining: 24
        });
    }

    #[test]
    fn encode_chunk_writes_header() {
        assert_eq!(encode_chunk(ChunkType::EXIT, &[0, 0, 0, 1]), b"EXIT\0\0\0\x04\0\0\0\x01".to_vec());
    }
}
