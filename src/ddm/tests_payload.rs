//! Whole-payload behaviour (several chunks, prefixes of huge packets, ZLIB), the JSON form
//! and encode/decode round trips of every variant, and property tests that random bytes never
//! make the decoder panic.

use std::io::Write;

use proptest::prelude::*;

use super::tests_decode::{cat, chunk, st};
use super::*;

#[test]
fn several_chunks_in_one_packet() {
    let p = cat(&[&chunk(b"THCR", &cat(&[&[0, 0, 0, 1], &st("main")])), &chunk(b"THDE", &[0, 0, 0, 2]), &chunk(b"DBGD", &[])]);
    let got: Vec<String> = decode_payload(&p, Dir::FromVm, false, None).into_iter().map(|c| c.unwrap().to_string()).collect();
    assert_eq!(got, ["THCR tid=1 name=\"main\"", "THDE tid=2", "DBGD"]);
    assert!(decode_payload(&[], Dir::FromVm, true, None).is_empty(), "empty reply packet");
}

#[test]
fn first_malformed_chunk_ends_the_packet() {
    let p = cat(&[&chunk(b"THDE", &[0, 0, 0, 2]), &chunk(b"THDE", &[0, 0, 2]), &chunk(b"DBGD", &[])]);
    let got = decode_payload(&p, Dir::FromVm, false, None);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Ok(Chunk::Thde { tid: 2 }));
    assert_eq!(got[1].as_ref().unwrap_err().to_string(), "THDE (len 3): thread id: need 4 bytes, only 3 left");
    // Framing errors too.
    let p = cat(&[&chunk(b"DBGD", &[]), b"HPS"]);
    let got = decode_payload(&p, Dir::FromVm, false, None);
    assert_eq!(got[1], Err(DdmError::ShortHeader { available: 3 }));
}

#[test]
fn huge_chunk_through_a_prefix_is_truncated() {
    // A 300 MB hprof dump of which we were shown 40 bytes.
    let mut p = b"HPDS".to_vec();
    p.extend_from_slice(&300_000_000u32.to_be_bytes());
    p.extend_from_slice(b"JAVA PROFILE 1.0.3\0");
    p.extend_from_slice(&[0; 21]);
    let got = decode_payload(&p, Dir::FromVm, false, Some(300_000_008));
    let c = got[0].as_ref().unwrap();
    assert_eq!(c.chunk_type(), ChunkType::HPDS);
    let Chunk::Truncated { declared_len, have, head, .. } = c else { panic!("{c:?}") };
    assert_eq!((*declared_len, *have, head.len()), (300_000_000, 40, 32));
    assert_eq!(c.to_string(), "HPDS truncated len=300000000 have=40 head=4a4156412050524f46494c4520312e30…");
    let v = serde_json::to_value(c).unwrap();
    assert_eq!((v["type"].as_str(), v["chunk"].as_str()), (Some("Truncated"), Some("HPDS")));
    assert!(c.encode().is_err());
    // Without the prefix hint the same bytes are an overrun.
    let err = decode_payload(&p, Dir::FromVm, false, None).remove(0).unwrap_err();
    assert_eq!(err, DdmError::ChunkOverrun { ty: ChunkType::HPDS, declared: 300_000_000, available: 40 });
}

fn zlib_chunk(ty: &[u8; 4], inner: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(inner).unwrap();
    let z = e.finish().unwrap();
    chunk(b"ZLIB", &cat(&[&(z.len() as u32).to_be_bytes(), ty, &(inner.len() as u32).to_be_bytes(), &z]))
}

#[test]
fn zlib_chunks_are_inflated_and_decoded() {
    let inner = cat(&[&[0, 0, 0, 7], &st("worker")]);
    let p = zlib_chunk(b"THCR", &inner);
    let c = decode_payload(&p, Dir::FromVm, false, None).remove(0).unwrap();
    assert!(c.is_compressed());
    assert_eq!(c.uncompressed(), &Chunk::Thcr { tid: 7, name: "worker".into() });
    assert_eq!(c.chunk_type(), ChunkType::ZLIB);
    let Chunk::Compressed { original_len, .. } = &c else { panic!() };
    assert_eq!(*original_len as usize, inner.len());
    assert!(c.to_string().starts_with("THCR tid=7 name=\"worker\" [zlib "), "{c}");
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!((v["type"].as_str(), v["inner"]["type"].as_str()), (Some("ZLIB"), Some("THCR")));
    // Encoder output decodes to the same thing.
    let again = decode_payload(&c.encode().unwrap(), Dir::FromVm, false, None).remove(0).unwrap();
    assert_eq!(again, c);
}

#[test]
fn zlib_errors_name_both_chunks() {
    let nested = zlib_chunk(b"ZLIB", &zlib_chunk(b"THDE", &[0, 0, 0, 1])[8..]);
    let err = decode_payload(&nested, Dir::FromVm, false, None).remove(0).unwrap_err();
    assert_eq!(err.root(), &DdmError::NestedZlib);
    let bad_inner = zlib_chunk(b"THDE", &[0, 0, 1]);
    let err = decode_payload(&bad_inner, Dir::FromVm, false, None).remove(0).unwrap_err();
    assert!(err.to_string().starts_with("ZLIB (len "), "{err}");
    assert!(err.to_string().ends_with("): THDE (len 3): thread id: need 4 bytes, only 3 left"), "{err}");
}

/// One sample of every variant, with the direction it is decoded in.
fn samples() -> Vec<(Dir, Chunk)> {
    use Chunk::*;
    let (to, from) = (Dir::ToVm, Dir::FromVm);
    let b = |d: &[u8]| Blob { len: d.len() as u32, head: d.to_vec() };
    let segment = HeapSegment {
        heap_id: 1,
        unit_size: 8,
        address: 0x10000,
        offset: 0,
        length_units: 300,
        runs: vec![Run { state: HeapState(1), units: 256 }, Run { state: HeapState(0), units: 44 }],
    };
    let helo = HeloInfo {
        version: 1,
        pid: 42,
        vm_ident: "ART".into(),
        app_name: "a".into(),
        user_id: Some(0),
        abi: Some("x86_64".into()),
        jvm_flags: Some(String::new()),
        native_debuggable: Some(false),
        package_name: Some("p".into()),
        boot_stage: Some(BootStage::BIND),
        trailing_bytes: 0,
    };
    let entry = ThreadEntry { tid: 1, state: ThreadState(2), suspended: Some(true), sys_tid: None, utime: None, stime: None, daemon: None };
    let real = ThreadEntry { suspended: None, sys_tid: Some(5), utime: Some(1), stime: Some(2), daemon: Some(true), ..entry };
    vec![
        (to, HeloRequest { version: 1 }),
        (from, HeloReply(Box::new(helo))),
        (to, Dbgd),
        (from, Apnm { app_name: "a".into(), user_id: Some(3), package_name: Some("p".into()) }),
        (from, Wait { reason: 0 }),
        (to, Then { enable: true }),
        (from, Thcr { tid: 1, name: "main".into() }),
        (from, Thnm { tid: 1, name: "renamed ☃".into() }),
        (from, Thde { tid: 1 }),
        (to, ThstRequest { interval_ms: Some(250) }),
        (to, ThstRequest { interval_ms: None }),
        (from, ThstReply(ThreadStatus { layout: ThstLayout::Document, threads: vec![entry] })),
        (from, ThstReply(ThreadStatus { layout: ThstLayout::Real { header_len: 5, bytes_per_entry: 19 }, threads: vec![real] })),
        (to, StklRequest { tid: 1 }),
        (from, StklReply(StackTrace { future: 0, tid: 1, frames: vec![StackFrame { class: "C".into(), method: "m".into(), file: Some("C.java".into()), line: 3 }] })),
        (to, HpifRequest { when: 3 }),
        (from, HpifReply { heaps: vec![HeapInfo { heap_id: 1, timestamp_ms: 5, reason: 1, max_bytes: 9, size_bytes: 8, allocated_bytes: 7, objects: 6 }] }),
        (to, HpsgRequest { when: 1, what: 1 }),
        (from, Hpsg(segment.clone())),
        (from, Hpso(segment.clone())),
        (to, NhsgRequest { when: 1, what: 0 }),
        (from, Nhsg(segment)),
        (from, Hpst { heap_id: 1 }),
        (from, Hpen { heap_id: 1 }),
        (from, Nhst { heap_id: 0 }),
        (from, Nhen { heap_id: 0 }),
        (to, Hpgc),
        (to, HpduRequest { file: "/f".into() }),
        (from, HpduReply { result: 1 }),
        (to, HpdsRequest),
        (from, Hpds(b(b"JAVA"))),
        (to, Reae { enable: false }),
        (to, ReaqRequest),
        (from, ReaqReply { enabled: false }),
        (to, RealRequest),
        (from, Real(b(&[1]))),
        (to, NhgtRequest),
        (from, Nhgt(b(&[2]))),
        (to, Mprs { buffer_size: 1, flags: 2, file: "/t".into() }),
        (to, MpreRequest),
        (from, MpreReply { result: 0 }),
        (to, Mpss { buffer_size: 1, flags: 2 }),
        (to, Spss { buffer_size: 1, flags: 2, interval_us: 3 }),
        (to, MpseRequest),
        (from, Mpse(b(&[3]))),
        (to, SpseRequest),
        (from, Spse(b(&[4]))),
        (to, MprqRequest),
        (from, MprqReply { mode: 1 }),
        (to, VulwRequest),
        (from, VulwReply { windows: vec!["w".into()] }),
        (to, Vurt { op: 1, rest: b(&[5]) }),
        (from, VurtReply(b(&[6]))),
        (to, Vuop { op: 2, rest: b(&[]) }),
        (from, VuopReply(b(&[7]))),
        (to, Vugl { enable: true }),
        (to, FeatRequest),
        (from, FeatReply { features: vec!["f".into(), "g".into()] }),
        (from, Stag { stage: BootStage::A_GO }),
        (from, Artt { version: 1, timings: vec![CmdTiming { id: 1, cmd_set: 2, cmd: 3, start_ns: 4, duration_ns: 5 }] }),
        (to, Exit { status: -7 }),
        (from, Fail { code: 2, message: "no".into() }),
        (to, Dtrc(b(&[8]))),
        (from, Test(b(&[9]))),
        (from, Compressed { compressed_len: 0, original_len: 0, inner: Box::new(Thde { tid: 3 }) }),
        (from, EmptyReply { ty: ChunkType::MPRE }),
        (from, Unknown { ty: ChunkType::from_bytes(*b"QQQQ"), len: 1, head: vec![1] }),
        (from, Truncated { ty: ChunkType::HPDS, declared_len: 100, have: 1, head: vec![1] }),
    ]
}

#[test]
fn every_variant_serializes_with_its_type() {
    for (_, c) in samples() {
        let v = serde_json::to_value(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let want = match &c {
            Chunk::Unknown { .. } => "Unknown".to_string(),
            Chunk::Truncated { .. } => "Truncated".to_string(),
            Chunk::EmptyReply { .. } => "EmptyReply".to_string(),
            other => other.chunk_type().to_string(),
        };
        assert_eq!(v["type"].as_str(), Some(want.as_str()), "{v}");
        // Log lines start with the type on the wire (the inner one for ZLIB).
        let lead = match &c {
            Chunk::Unknown { .. } => "Unknown".to_string(),
            Chunk::Compressed { inner, .. } => inner.chunk_type().to_string(),
            other => other.chunk_type().to_string(),
        };
        let line = c.to_string();
        assert_eq!(line.split(' ').next(), Some(lead.as_str()), "{line}");
    }
}

#[test]
fn every_encodable_variant_round_trips() {
    let mut encoded = 0;
    for (dir, c) in samples() {
        let bytes = match c.encode() {
            Ok(b) => b,
            Err(e) => {
                assert!(matches!(c, Chunk::Truncated { .. }), "{c:?}: {e}");
                continue;
            }
        };
        encoded += 1;
        let reply = matches!(c, Chunk::EmptyReply { .. });
        let mut got = decode_payload(&bytes, dir, reply, None);
        assert_eq!(got.len(), 1, "{c:?}");
        let got = got.remove(0).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        match (&c, &got) {
            // The sample's lengths are placeholders; the encoder fills in the real ones.
            (Chunk::Compressed { inner: a, .. }, Chunk::Compressed { inner: b, .. }) => assert_eq!(a, b),
            _ => assert_eq!(got, c),
        }
    }
    assert_eq!(encoded, samples().len() - 1);
    let all: Vec<Chunk> = samples().into_iter().map(|(_, c)| c).filter(|c| c.encode().is_ok()).collect();
    assert!(encode_payload(&all).is_ok());
}

fn dir_of(to_vm: bool) -> Dir {
    if to_vm {
        Dir::ToVm
    } else {
        Dir::FromVm
    }
}

/// Everything a caller does with a decoded payload must work on whatever came out.
fn exercise(out: &[Result<Chunk, DdmError>]) {
    let mut state = ClientData::new();
    for (i, item) in out.iter().enumerate() {
        match item {
            Ok(c) => {
                let _ = c.to_string();
                assert!(serde_json::to_string(c).is_ok());
                let _ = c.encode();
                state.apply(c);
            }
            Err(e) => {
                let _ = e.to_string();
                assert_eq!(i, out.len() - 1, "an error is always last");
            }
        }
    }
    assert!(serde_json::to_string(&state).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_payloads_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        to_vm in any::<bool>(),
        reply in any::<bool>(),
        beyond in proptest::option::of(0usize..100_000),
    ) {
        let prefix = beyond.map(|b| bytes.len() + b);
        exercise(&decode_payload(&bytes, dir_of(to_vm), reply, prefix));
    }

    #[test]
    fn random_bodies_of_known_types_never_panic(
        which in 0..ChunkType::KNOWN.len(),
        body in proptest::collection::vec(any::<u8>(), 0..200),
        to_vm in any::<bool>(),
        reply in any::<bool>(),
    ) {
        let ty = ChunkType::KNOWN[which];
        let p = cat(&[&ty.to_bytes(), &(body.len() as u32).to_be_bytes(), &body]);
        let out = decode_payload(&p, dir_of(to_vm), reply, None);
        prop_assert_eq!(out.len(), 1);
        exercise(&out);
    }

    #[test]
    fn mutated_valid_chunks_never_panic(
        which in 0..70usize,
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        xor in 1..=255u8,
    ) {
        let s = samples();
        let (dir, c) = &s[which % s.len()];
        if let Ok(mut bytes) = c.encode() {
            let i = flip.index(bytes.len());
            bytes[i] ^= xor;
            exercise(&decode_payload(&bytes, *dir, false, None));
            let end = cut.index(bytes.len() + 1);
            exercise(&decode_payload(&bytes[..end], *dir, true, None));
            exercise(&decode_payload(&bytes[..end], *dir, false, Some(bytes.len())));
        }
    }
}

/// Found by fuzzing: a HELO reply with bytes after the boot stage (a newer VM's fields)
/// re-encoded without them, so decode -> encode -> decode changed `trailing_bytes`.
#[test]
fn helo_trailing_bytes_survive_a_round_trip() {
    let mut data = vec![0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]; // version, pid, no names
    data.extend_from_slice(&[0, 0, 0, 0]); // user id
    data.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1]); // abi "", flags "", native debuggable
    data.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3]); // package "", boot stage
    data.extend_from_slice(&[0xAB; 5]);
    let c = decode_chunk(ChunkType::HELO, &data, Dir::FromVm, true).unwrap();
    let Chunk::HeloReply(h) = &c else { panic!("{c:?}") };
    assert_eq!(h.trailing_bytes, 5);
    let again = decode_payload(&c.encode().unwrap(), Dir::FromVm, true, None).remove(0).unwrap();
    assert_eq!(again, c);
}
