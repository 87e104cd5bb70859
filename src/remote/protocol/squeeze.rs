//! Big Data frames compressed on the link (protocol 5): a frame's bytes to a smaller payload
//! and back. Pure.
//!
//! On a thin link (a VPN at 10 Mbit/s) a big answer costs its bytes, not the round trip: an
//! AllClassesWithGeneric of 10,000 classes is about 1 MB, 0.8 s at 10 Mbit/s. Class
//! signatures, strings and id runs compress well (13:1 for a class list, frame by frame), so
//! a Data frame of at least [`MIN_SQUEEZE`] bytes is deflated, and sent as a `DataZ` frame when that made it
//! smaller, else as the Data frame it was. Each frame is deflated on its own (at most
//! `MAX_DATA`, 64 KiB: deflate's window is 32 KiB, so little is lost against one stream per
//! channel), which keeps the rest of the link as it was: a DataZ frame decodes to the very
//! `Body::Data` it was made from, is numbered, acknowledged and replayed as that frame, and
//! a frame replayed to a near side that speaks no protocol 5 goes out plain.
//!
//! The payload: `u32 original length` then a zlib stream (RFC 1950, its Adler-32 checked).
//! Inflating is bounded as DDM's ZLIB chunks are (`ddm::zlib::inflate`, reused): never more
//! than the declared length, which is at most `MAX_DATA`, never more than the compressed
//! bytes could hold; the stream must give exactly the declared length and end at the
//! payload's end. A hostile peer can make the receiver inflate 64 KiB per frame, no more.
//!
//! zstd was measured against it, each 64 KiB frame on its own as here, on the far link's
//! real payloads (a 10,000-class AllClassesWithGeneric reply of 1,031,624 bytes and a 1 MiB
//! JSON-lines string from `BigAnswers.java`, 2026-11-28): zlib level 1 gives 76,209 and
//! 183,572 bytes (13.5:1, 5.7:1), zstd level 1 47,252 and 137,360 (21.8:1, 7.6:1), both in
//! 2-8 ms per MB. At 10 Mbit/s that is 23 and 37 ms less on the wire, against a class list
//! already at 0.14 s end to end (the target is 0.3 s). It would bring a C library into the
//! build (zstd-sys: minutes of C compiling, and the static musl build and the package to
//! check again), so it has not earned its place; a new frame kind can add it later.

use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::frame::MAX_DATA;

/// Frames smaller than this go out as they are: a small frame gains a few bytes at most,
/// and nearly every frame is a small command or reply.
pub const MIN_SQUEEZE: usize = 1024;

/// Bytes before the zlib stream: the original length.
pub const SQUEEZE_HEAD: usize = 4;

/// zlib's fastest level: on a class list it gives 13.5:1 against 17:1 at the default level,
/// in a twentieth of the time (2 ms per MB against 39, measured as below), so the far side's
/// CPU is never the bottleneck on any link this is worth doing on.
pub const LEVEL: u32 = 1;

/// Set to `off` to send Data frames as they are: only to measure what compression gains.
/// A far side with it off sends nothing compressed; a near side with it off says it speaks
/// protocols up to 4 (as a jdwpmux from before compression), so nothing compressed comes
/// either way.
pub const SQUEEZE_ENV: &str = "JDWPMUX_SQUEEZE";

/// Whether this side compresses what it sends (when the agreed protocol has it): always,
/// unless [`SQUEEZE_ENV`] is `off`.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(SQUEEZE_ENV).map_or(true, |v| v != "off"))
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SqueezeError {
    #[error("compressed data frame of {0} bytes is shorter than its length field")]
    Short(usize),
    #[error("compressed data frame declares {declared} bytes, at most {max}")]
    TooLong { declared: u32, max: usize },
    #[error("compressed data frame declares 0 bytes")]
    Empty,
    #[error("compressed data frame: {0}")]
    Inflate(String),
}

/// The DataZ payload for `raw`, when compressing pays: `raw` is at least [`MIN_SQUEEZE`] and
/// at most `MAX_DATA` bytes and the payload is smaller than `raw`. None: send `raw` as it is.
pub fn squeeze(raw: &[u8]) -> Option<Vec<u8>> {
    if raw.len() < MIN_SQUEEZE || raw.len() > MAX_DATA {
        return None;
    }
    let len = u32::try_from(raw.len()).ok()?;
    let mut out = Vec::with_capacity(raw.len() / 2);
    out.extend_from_slice(&len.to_be_bytes());
    let mut z = ZlibEncoder::new(out, Compression::new(LEVEL));
    z.write_all(raw).ok()?;
    let out = z.finish().ok()?;
    (out.len() < raw.len()).then_some(out)
}

/// The bytes a DataZ payload stands for, inflated under `max` (the largest Data frame).
pub fn unsqueeze(payload: &[u8], max: usize) -> Result<Vec<u8>, SqueezeError> {
    let (head, stream) = payload.split_at_checked(SQUEEZE_HEAD).ok_or(SqueezeError::Short(payload.len()))?;
    let declared = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if declared == 0 {
        return Err(SqueezeError::Empty);
    }
    if declared as usize > max {
        return Err(SqueezeError::TooLong { declared, max });
    }
    crate::ddm::zlib::inflate(stream, declared, max).map_err(|e| SqueezeError::Inflate(e.to_string()))
}

/// What a sender compressed, or a receiver inflated: shown in the far side's log when the
/// connection ends, by the benchmark, and (a near link's, over all its connections) by
/// `jdwpmux stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqueezeCount {
    /// Data frames written, and of them those sent compressed.
    pub frames: u64,
    pub squeezed: u64,
    /// Bytes of the compressed frames before and after (payloads).
    pub raw: u64,
    pub wire: u64,
}

impl SqueezeCount {
    /// One Data frame of `raw` bytes, and the payload's length on the link when it went
    /// compressed (None: it went as it was).
    pub fn data(&mut self, raw: usize, squeezed: Option<usize>) {
        self.frames += 1;
        if let Some(wire) = squeezed {
            self.squeezed += 1;
            self.raw += raw as u64;
            self.wire += wire as u64;
        }
    }

    /// Both counts together (saturating: counts, never a wrap).
    pub fn plus(self, o: SqueezeCount) -> SqueezeCount {
        SqueezeCount {
            frames: self.frames.saturating_add(o.frames),
            squeezed: self.squeezed.saturating_add(o.squeezed),
            raw: self.raw.saturating_add(o.raw),
            wire: self.wire.saturating_add(o.wire),
        }
    }
}

/// A near link's Data frames each way, over every connection it made (`jdwpmux stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkSqueeze {
    /// Data frames written to the far side, and of them those sent compressed.
    pub sent: SqueezeCount,
    /// Data frames read from the far side, and of them those that came compressed (`raw`:
    /// their bytes after inflating, `wire`: their payloads as they came).
    pub received: SqueezeCount,
}

impl LinkSqueeze {
    pub fn plus(self, o: LinkSqueeze) -> LinkSqueeze {
        LinkSqueeze { sent: self.sent.plus(o.sent), received: self.received.plus(o.received) }
    }
}

impl std::fmt::Display for SqueezeCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {} data frames compressed, {} bytes sent as {}", self.squeezed, self.frames, self.raw, self.wire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An AllClassesWithGeneric-shaped answer: what the link carries most of when it is big.
    fn class_list(n: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for i in 0..n {
            let sig = format!("Lcom/example/shop/orders/generated/OrderEventHandler{i:05};");
            b.push(1);
            b.extend_from_slice(&(0x7f00_0000_1000u64 + 8 * i as u64).to_be_bytes());
            b.extend_from_slice(&(sig.len() as u32).to_be_bytes());
            b.extend_from_slice(sig.as_bytes());
            b.extend_from_slice(&0u32.to_be_bytes());
            b.extend_from_slice(&7u32.to_be_bytes());
        }
        b
    }

    #[test]
    fn a_class_list_shrinks_and_comes_back() {
        let raw = class_list(700);
        let raw = &raw[..MAX_DATA.min(raw.len())];
        let packed = squeeze(raw).expect("a class list compresses");
        assert!(packed.len() * 8 < raw.len(), "{} of {}", packed.len(), raw.len());
        assert_eq!(unsqueeze(&packed, MAX_DATA).unwrap(), raw);
    }

    #[test]
    fn only_when_it_pays() {
        assert_eq!(squeeze(&[7u8; MIN_SQUEEZE - 1]), None, "below the threshold");
        assert!(squeeze(&[7u8; MIN_SQUEEZE]).is_some(), "at the threshold");
        assert_eq!(squeeze(&vec![7u8; MAX_DATA + 1]), None, "longer than any Data frame");
        // Bytes that do not compress (an xorshift's) go out as they are.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..8192)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(squeeze(&noise), None);
    }

    #[test]
    fn hostile_payloads_are_errors_not_allocations() {
        let good = squeeze(&[b'a'; 4096]).unwrap();
        assert_eq!(unsqueeze(&good[..3], MAX_DATA), Err(SqueezeError::Short(3)));
        let mut zero = good.clone();
        zero[..4].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(unsqueeze(&zero, MAX_DATA), Err(SqueezeError::Empty));
        // A bomb: 64 KiB + 1 declared, or honest zeros past the limit.
        let mut big = good.clone();
        big[..4].copy_from_slice(&((MAX_DATA + 1) as u32).to_be_bytes());
        assert_eq!(unsqueeze(&big, MAX_DATA), Err(SqueezeError::TooLong { declared: MAX_DATA as u32 + 1, max: MAX_DATA }));
        let mut z = ZlibEncoder::new((MAX_DATA as u32).to_be_bytes().to_vec(), Compression::best());
        z.write_all(&vec![0u8; 4 * MAX_DATA]).unwrap();
        let bomb = z.finish().unwrap();
        assert!(matches!(unsqueeze(&bomb, MAX_DATA), Err(SqueezeError::Inflate(_))), "inflates past what it declares");
        // A declared length that differs from what the stream holds, a cut stream, trailing bytes.
        let mut lie = good.clone();
        lie[..4].copy_from_slice(&4000u32.to_be_bytes());
        assert!(matches!(unsqueeze(&lie, MAX_DATA), Err(SqueezeError::Inflate(_))));
        assert!(matches!(unsqueeze(&good[..good.len() - 2], MAX_DATA), Err(SqueezeError::Inflate(_))));
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(unsqueeze(&trailing, MAX_DATA), Err(SqueezeError::Inflate(_))));
        let mut flipped = good;
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(unsqueeze(&flipped, MAX_DATA), Err(SqueezeError::Inflate(_))), "Adler-32 checked");
    }

    #[test]
    fn counts() {
        let mut c = SqueezeCount::default();
        c.data(100, None);
        c.data(60_000, Some(3_000));
        assert_eq!(c, SqueezeCount { frames: 2, squeezed: 1, raw: 60_000, wire: 3_000 });
        assert_eq!(c.to_string(), "1 of 2 data frames compressed, 60000 bytes sent as 3000");
        let sum = LinkSqueeze { sent: c, received: SqueezeCount::default() }.plus(LinkSqueeze { sent: c, received: c });
        assert_eq!(sum.sent, SqueezeCount { frames: 4, squeezed: 2, raw: 120_000, wire: 6_000 });
        assert_eq!(sum.received, c);
        let full = SqueezeCount { frames: u64::MAX, ..c };
        assert_eq!(full.plus(c).frames, u64::MAX, "saturates");
    }

    proptest! {
        /// Whatever the bytes, squeezing gives back exactly them, or declines; and what it
        /// gives is always smaller than what it was given.
        #[test]
        fn round_trip(raw in proptest::collection::vec(any::<u8>(), 0..8192), repeat in 1usize..12) {
            let raw: Vec<u8> = raw.iter().copied().cycle().take(raw.len() * repeat).take(MAX_DATA).collect();
            if let Some(packed) = squeeze(&raw) {
                prop_assert!(packed.len() < raw.len());
                prop_assert_eq!(unsqueeze(&packed, MAX_DATA).unwrap(), raw);
            }
        }

        /// Any bytes as a DataZ payload: an error or at most `max` bytes, never a panic.
        #[test]
        fn any_payload_is_bounded(payload in proptest::collection::vec(any::<u8>(), 0..2048), max in 1usize..MAX_DATA) {
            if let Ok(out) = unsqueeze(&payload, max) {
                prop_assert!(!out.is_empty() && out.len() <= max);
            }
        }
    }
}
