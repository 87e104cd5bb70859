//! ZLIB wrapper chunks: the design document says a compressed chunk is "a chunk type that
//! indicates the compression, followed by the compressed length, followed by the original
//! chunk type and the uncompressed length". Read literally, the compressed length is the
//! chunk's own length field, so the data is `u4 original type, u4 original length, deflate`.
//! Some writers repeat the compressed length inside the data (`u4 compressed length, u4
//! original type, u4 original length, deflate`); both are accepted: a first word equal to the
//! deflate size is that length, while an original type (four ASCII letters) never is.
//!
//! The design document only says "zlib's deflate algorithm", so both zlib-wrapped (RFC 1950)
//! and raw deflate (RFC 1951) streams are accepted. The compressed length is read as the
//! length of the deflate data that follows the 12-byte header. Inflation is bounded: never
//! more than the declared original length, never more than [`MAX_INFLATED_LEN`], and never
//! more than the compressed bytes could hold ([`MAX_DEFLATE_RATIO`]); a bomb, a length
//! mismatch or a corrupt stream is an error value.

use std::io::Write;

use flate2::{Compression, Decompress, FlushDecompress, Status};

use super::chunk::ChunkType;
use super::error::DdmError;
use super::reader::Reader;

/// The most a ZLIB chunk may inflate to. Generous for anything a VM compresses (heap
/// segments), small enough that a hostile stream cannot exhaust memory.
pub const MAX_INFLATED_LEN: usize = 16 << 20;

/// The most output one byte of deflate data can stand for: a 258-byte match coded in two
/// bits (zlib's documented limit, 1032:1). A chunk declaring more than its compressed bytes
/// times this cannot be honest, and is refused before anything is inflated.
pub const MAX_DEFLATE_RATIO: usize = 1032;

/// Output buffer growth step: we never reserve far ahead of what the stream produced.
const GROW_STEP: usize = 64 << 10;

/// The fixed part of a ZLIB chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZlibHeader {
    pub compressed_len: u32,
    pub original_type: ChunkType,
    pub original_len: u32,
}

/// Parses a ZLIB chunk's data and inflates the wrapped payload under [`MAX_INFLATED_LEN`].
pub fn unwrap_zlib(data: &[u8]) -> Result<(ZlibHeader, Vec<u8>), DdmError> {
    unwrap_zlib_capped(data, MAX_INFLATED_LEN)
}

/// As [`unwrap_zlib`] with an explicit output cap.
pub fn unwrap_zlib_capped(data: &[u8], cap: usize) -> Result<(ZlibHeader, Vec<u8>), DdmError> {
    let mut r = Reader::new(data);
    let first = data.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let repeated_len = first.is_some_and(|f| f < 0x2000_0000 && data.len() >= 12);
    let header = if repeated_len {
        ZlibHeader {
            compressed_len: r.u4("compressed length")?,
            original_type: ChunkType(r.u4("original type")?),
            original_len: r.u4("original length")?,
        }
    } else {
        let original_type = ChunkType(r.u4("original type")?);
        let original_len = r.u4("original length")?;
        ZlibHeader { compressed_len: r.remaining() as u32, original_type, original_len }
    };
    let stream = r.rest();
    if header.compressed_len as usize != stream.len() {
        return Err(DdmError::LengthMismatch {
            what: "compressed length",
            declared: u64::from(header.compressed_len),
            actual: stream.len() as u64,
        });
    }
    let out = inflate(stream, header.original_len, cap)?;
    Ok((header, out))
}

/// Inflates a zlib or raw deflate stream that must produce exactly `declared` bytes, and at
/// most `cap` bytes whatever `declared` says. A declared length the stream could not hold at
/// deflate's best ratio is refused first, so the output buffer never follows a lie.
pub fn inflate(stream: &[u8], declared: u32, cap: usize) -> Result<Vec<u8>, DdmError> {
    let declared_len = declared as usize;
    if declared_len > cap {
        return Err(DdmError::ZlibTooLarge { declared, cap });
    }
    if declared_len > stream.len().saturating_mul(MAX_DEFLATE_RATIO) {
        return Err(DdmError::ZlibRatio { declared, compressed: stream.len(), max_ratio: MAX_DEFLATE_RATIO });
    }
    let out = if looks_like_zlib(stream) {
        match inflate_with(stream, true, declared, declared_len) {
            // A raw deflate stream can start with bytes that pass the zlib header check.
            Err(zlib_err @ DdmError::ZlibCorrupt { .. }) => {
                inflate_with(stream, false, declared, declared_len).map_err(|_| zlib_err)?
            }
            other => other?,
        }
    } else {
        inflate_with(stream, false, declared, declared_len)?
    };
    if out.len() != declared_len {
        return Err(DdmError::LengthMismatch {
            what: "original length",
            declared: u64::from(declared),
            actual: out.len() as u64,
        });
    }
    Ok(out)
}

/// RFC 1950 header: method 8, window <= 32 KiB, check bits, no preset dictionary.
fn looks_like_zlib(s: &[u8]) -> bool {
    match s {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && flg & 0x20 == 0 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// Inflates into a buffer that never grows beyond `limit + 1` bytes (the extra byte is how
/// an over-long stream is noticed).
fn inflate_with(stream: &[u8], zlib: bool, declared: u32, limit: usize) -> Result<Vec<u8>, DdmError> {
    let mut d = Decompress::new(zlib);
    let hard_max = limit.saturating_add(1);
    let mut out: Vec<u8> = Vec::with_capacity(hard_max.min(GROW_STEP));
    loop {
        if out.len() == out.capacity() {
            out.reserve_exact(GROW_STEP.min(hard_max - out.len()).max(1));
        }
        let (in_before, out_before) = (d.total_in(), d.total_out());
        let input = stream.get(in_before as usize..).unwrap_or(&[]);
        let status = d.decompress_vec(input, &mut out, FlushDecompress::None).map_err(|e| {
            DdmError::ZlibCorrupt { consumed: d.total_in(), total: stream.len(), msg: e.to_string() }
        })?;
        if out.len() > limit {
            return Err(DdmError::ZlibBomb { limit, declared });
        }
        match status {
            Status::StreamEnd => break,
            Status::Ok | Status::BufError => {
                let progressed = d.total_in() != in_before || d.total_out() != out_before;
                if !progressed && out.len() < out.capacity() {
                    return Err(DdmError::ZlibCorrupt {
                        consumed: d.total_in(),
                        total: stream.len(),
                        msg: format!("stream ends before its end marker, after {} bytes of output", out.len()),
                    });
                }
            }
        }
    }
    let used = d.total_in() as usize;
    if used < stream.len() {
        return Err(DdmError::Trailing { after: "deflate stream", trailing: stream.len() - used });
    }
    Ok(out)
}

/// Builds the data of a ZLIB chunk wrapping `data` of type `ty` (zlib-wrapped stream).
pub fn wrap_zlib(ty: ChunkType, data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail; an error here would only lose the test chunk's body.
    let compressed = match enc.write_all(data) {
        Ok(()) => enc.finish().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let mut out = Vec::with_capacity(12 + compressed.len());
    out.extend_from_slice(&u32::try_from(compressed.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&ty.to_bytes());
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&compressed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, ZlibEncoder};

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw(data: &[u8]) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn chunk_data(stream: &[u8], ty: &[u8; 4], original_len: u32) -> Vec<u8> {
        let mut v = (stream.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(ty);
        v.extend_from_slice(&original_len.to_be_bytes());
        v.extend_from_slice(stream);
        v
    }

    #[test]
    fn round_trip_zlib_and_raw() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        for stream in [zlib(&payload), raw(&payload), zlib(&[]), raw(&[])] {
            let want: &[u8] = if stream.len() > 20 { &payload } else { &[] };
            let data = chunk_data(&stream, b"HPSG", want.len() as u32);
            let (h, out) = unwrap_zlib(&data).unwrap();
            assert_eq!(h.original_type, ChunkType::HPSG);
            assert_eq!(h.compressed_len as usize, stream.len());
            assert_eq!(out, want);
        }
        // Bigger than one growth step of the output buffer.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for stream in [zlib(&big), raw(&big)] {
            assert_eq!(inflate(&stream, big.len() as u32, MAX_INFLATED_LEN).unwrap(), big);
        }
        let wrapped = wrap_zlib(ChunkType::THST, &payload);
        let (h, out) = unwrap_zlib(&wrapped).unwrap();
        assert_eq!((h.original_type, h.original_len as usize, out), (ChunkType::THST, payload.len(), payload));
    }

    #[test]
    fn bomb_past_the_real_cap_is_an_error() {
        // ~17 MiB of zeros deflate to a few KiB.
        let mut e = ZlibEncoder::new(Vec::new(), Compression::fast());
        let block = vec![0u8; 1 << 20];
        for _ in 0..17 {
            e.write_all(&block).unwrap();
        }
        let stream = e.finish().unwrap();
        assert!(stream.len() < 100_000, "fixture should be small: {}", stream.len());
        // Declared at the cap: the stream still tries to go past it.
        let data = chunk_data(&stream, b"HPSG", MAX_INFLATED_LEN as u32);
        assert_eq!(unwrap_zlib(&data).unwrap_err(), DdmError::ZlibBomb {
            limit: MAX_INFLATED_LEN,
            declared: MAX_INFLATED_LEN as u32
        });
        // Declared honestly: refused before inflating anything.
        let data = chunk_data(&stream, b"HPSG", 17 << 20);
        assert_eq!(unwrap_zlib(&data).unwrap_err(), DdmError::ZlibTooLarge {
            declared: 17 << 20,
            cap: MAX_INFLATED_LEN
        });
    }

    #[test]
    fn declared_past_the_deflate_ratio_is_refused_before_inflating() {
        // The best deflate can do: a megabyte of zeros at the highest level stays under the
        // ratio, so an honest chunk is never refused.
        let zeros = vec![0u8; 1 << 20];
        let best = zlib(&zeros);
        assert!(zeros.len() <= best.len() * MAX_DEFLATE_RATIO, "{} bytes from {}", zeros.len(), best.len());
        assert_eq!(inflate(&best, zeros.len() as u32, MAX_INFLATED_LEN).unwrap(), zeros);
        // A 100-byte stream claiming 4 GiB, or one byte more than it can hold: refused, with
        // the limit named, before any output buffer is made.
        let claims = [u32::MAX, 100 * MAX_DEFLATE_RATIO as u32 + 1];
        for declared in claims {
            let err = inflate(&[0u8; 100], declared, usize::MAX).unwrap_err();
            assert_eq!(err, DdmError::ZlibRatio { declared, compressed: 100, max_ratio: MAX_DEFLATE_RATIO });
            assert!(err.to_string().contains("MAX_DEFLATE_RATIO"), "{err}");
        }
        let data = chunk_data(&best[..10], b"HPSG", 10 * MAX_DEFLATE_RATIO as u32 + 1);
        assert!(matches!(unwrap_zlib(&data).unwrap_err(), DdmError::ZlibRatio { compressed: 10, .. }));
        let err = unwrap_zlib(&chunk_data(&best, b"HPSG", u32::MAX)).unwrap_err();
        assert!(err.to_string().contains("MAX_INFLATED_LEN"), "{err}");
    }

    #[test]
    fn stream_longer_than_declared_is_a_bomb() {
        let stream = raw(&[7u8; 100_000]);
        let err = inflate(&stream, 1000, MAX_INFLATED_LEN).unwrap_err();
        assert_eq!(err, DdmError::ZlibBomb { limit: 1000, declared: 1000 });
        assert_eq!(inflate(&stream, 100_000, 50_000).unwrap_err(), DdmError::ZlibTooLarge {
            declared: 100_000,
            cap: 50_000
        });
    }

    #[test]
    fn shorter_than_declared_is_a_length_mismatch() {
        let stream = zlib(b"hello");
        assert_eq!(inflate(&stream, 9, 100).unwrap_err(), DdmError::LengthMismatch {
            what: "original length",
            declared: 9,
            actual: 5
        });
        let mut data = chunk_data(&stream, b"TEST", 5);
        data[3] += 1; // compressed length one more than present
        assert_eq!(unwrap_zlib(&data).unwrap_err(), DdmError::LengthMismatch {
            what: "compressed length",
            declared: stream.len() as u64 + 1,
            actual: stream.len() as u64
        });
    }

    #[test]
    fn corrupt_truncated_and_trailing_streams_are_errors() {
        let good = zlib(&[1u8; 3000]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("garbage", vec![0xff; 40]),
            ("bad zlib body", {
                let mut v = good.clone();
                v[2] = 0xff;
                v[3] = 0xff;
                v
            }),
            ("truncated", good[..good.len() / 2].to_vec()),
        ];
        for (name, stream) in cases {
            match inflate(&stream, 3000, MAX_INFLATED_LEN) {
                Err(DdmError::ZlibCorrupt { total, .. }) => assert_eq!(total, stream.len(), "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        // An empty stream cannot hold anything: refused by the ratio before inflating.
        assert!(matches!(inflate(&[], 3000, MAX_INFLATED_LEN), Err(DdmError::ZlibRatio { compressed: 0, .. })));
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"xyz");
        assert_eq!(inflate(&trailing, 3000, MAX_INFLATED_LEN).unwrap_err(), DdmError::Trailing {
            after: "deflate stream",
            trailing: 3
        });
    }

    #[test]
    fn short_header_is_an_error() {
        assert!(matches!(unwrap_zlib(&[0, 0, 0, 1, b'T']).unwrap_err(), DdmError::Short { needed: 4, available: 1, .. }));
        assert!(matches!(unwrap_zlib(b"TH").unwrap_err(), DdmError::Short { field: "original type", .. }));
    }

    #[test]
    fn the_documents_layout_without_a_repeated_length_inflates() {
        // `u4 original type, u4 original length, deflate`: the compressed length is the
        // chunk's own length field.
        let payload = b"a thread name and then some".repeat(10);
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&payload).unwrap();
        let deflate = enc.finish().unwrap();
        let mut data = b"THCR".to_vec();
        data.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        data.extend_from_slice(&deflate);
        let (h, out) = unwrap_zlib(&data).unwrap();
        assert_eq!(h.original_type, ChunkType::THCR);
        assert_eq!(h.compressed_len as usize, deflate.len());
        assert_eq!(out, payload);
    }
}
