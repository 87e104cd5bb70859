//! Compressed Data frames (DataZ): written where that pays, read back as they were, and a
//! bad one refused with the error it must give.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use tokio_util::codec::Encoder;

use super::tests::{any_frame, decode_all, frame, raw};
use super::*;
use crate::remote::protocol::frame::{Body, MAX_DATA};

/// A class list's bytes: what a big Data frame of the link mostly is.
fn compressible(len: usize) -> Bytes {
    let text: Vec<u8> = (0..).flat_map(|i| format!("\u{1}Lcom/example/orders/Handler{i:05};\0\0\0\u{7}").into_bytes()).take(len).collect();
    Bytes::from(text)
}

#[test]
fn a_big_data_frame_goes_compressed_and_decodes_to_itself() {
    let f = frame(3, 9, 4, Body::Data(compressible(MAX_DATA)));
    let mut count = crate::remote::protocol::squeeze::SqueezeCount::default();
    let mut out = BytesMut::new();
    FarCodec::encode_squeezed(&f, &mut out, &mut count).unwrap();
    let h = crate::remote::protocol::frame::Header::parse(&out).unwrap().unwrap();
    assert_eq!((h.kind, h.channel, h.seq, h.ack), (crate::remote::protocol::Kind::DataZ, 3, 9, 4));
    assert!(out.len() * 8 < MAX_DATA, "{} bytes", out.len());
    assert_eq!((count.frames, count.squeezed, count.raw, count.wire), (1, 1, MAX_DATA as u64, (out.len() - 26) as u64));
    for step in [1, 26, 27, 1000, 100_000] {
        assert_eq!(decode_all(&out, step).unwrap(), vec![f.clone()], "step {step}");
    }
}

#[test]
fn what_does_not_pay_goes_as_it_is() {
    let mut count = crate::remote::protocol::squeeze::SqueezeCount::default();
    let small = frame(1, 1, 0, Body::Data(compressible(100)));
    let ping = frame(0, 0, 0, Body::Ping(5));
    let mut x = 7u64;
    let noise = frame(1, 2, 0, Body::Data((0..4096).map(|_| { x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (x >> 56) as u8 }).collect()));
    for f in [&small, &ping, &noise] {
        let (mut plain, mut squeezed) = (BytesMut::new(), BytesMut::new());
        FarCodec.encode(f, &mut plain).unwrap();
        FarCodec::encode_squeezed(f, &mut squeezed, &mut count).unwrap();
        assert_eq!(plain, squeezed, "{f:?}");
    }
    assert_eq!((count.frames, count.squeezed), (2, 0), "two data frames, none compressed");
}

#[test]
fn a_bad_compressed_frame_is_a_payload_error() {
    let f = frame(3, 9, 4, Body::Data(compressible(8192)));
    let mut out = BytesMut::new();
    FarCodec::encode_squeezed(&f, &mut out, &mut crate::remote::protocol::squeeze::SqueezeCount::default()).unwrap();
    // The declared length one more than the stream holds.
    let declared = u32::from_be_bytes([out[26], out[27], out[28], out[29]]);
    out[26..30].copy_from_slice(&(declared + 1).to_be_bytes());
    assert!(matches!(decode_all(&out, 4096), Err(CodecError::Payload { kind: crate::remote::protocol::Kind::DataZ, .. })));
    // A DataZ frame as long as the largest Data frame is refused on its header.
    let long = raw(MAX_DATA as u32, 22, 0, 1, 1, &[]);
    assert!(matches!(decode_all(&long, 4096), Err(CodecError::Header(HeaderError::TooLong { .. }))));
    // On the link, as Data frames are.
    let link = raw(10, 22, 0, 0, 1, &[0; 10]);
    assert!(matches!(decode_all(&link, 4096), Err(CodecError::Header(HeaderError::Channel { .. }))));
}

proptest! {
    /// Any frames, written compressed where that pays, read back as they were in any cut.
    #[test]
    fn any_frames_round_trip_squeezed(frames in proptest::collection::vec(any_frame(), 1..6), big in proptest::collection::vec((1usize..MAX_DATA, 1u32.., 1u64..), 0..3), step in 1usize..5000) {
        let mut frames = frames;
        frames.extend(big.into_iter().map(|(len, ch, seq)| frame(ch, seq, 0, Body::Data(compressible(len)))));
        let mut bytes = BytesMut::new();
        let mut count = crate::remote::protocol::squeeze::SqueezeCount::default();
        for f in &frames {
            FarCodec::encode_squeezed(f, &mut bytes, &mut count).unwrap();
        }
        prop_assert_eq!(decode_all(&bytes, step).unwrap(), frames);
    }
}
