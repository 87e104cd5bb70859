//! Table-driven decode tests for chunks the VM sends (unsolicited or as replies), with bytes
//! written out by hand from the spec, including every historical length of the HELO reply.

use super::tests_decode::{cat, check, st};
use super::*;

fn blob(data: &[u8]) -> Blob {
    Blob { len: data.len() as u32, head: data[..data.len().min(32)].to_vec() }
}

fn seg(heap_id: u32, offset: u32, length_units: u32, runs: &[(u8, u16)]) -> HeapSegment {
    let runs = runs.iter().map(|&(s, units)| Run { state: HeapState(s), units }).collect();
    HeapSegment { heap_id, unit_size: 8, address: 0x10000, offset, length_units, runs }
}

/// (reply?, type, data, decoded, log line).
type Row = (bool, &'static [u8; 4], Vec<u8>, Chunk, &'static str);

#[test]
fn chunks_from_the_vm() {
    use Chunk::*;
    let thcr = cat(&[&[0, 0, 0, 12], &st("main")]);
    let fail = cat(&[&[0, 0, 0, 1], &st("bad \"x\"")]);
    let feat = cat(&[&[0, 0, 0, 2], &st("hprof-heap-dump"), &st("view-hierarchy")]);
    let vulw = cat(&[&[0, 0, 0, 1], &st("com.x/Main")]);
    let hpds: Vec<u8> = b"JAVA PROFILE 1.0.3\0".iter().copied().chain(0..40).collect();
    #[rustfmt::skip]
    let thst_doc = vec![0, 0, 0, 3,  0, 0, 0, 1, 1, 0,  0, 0, 0, 2, 4, 1,  0, 0, 0, 3, 4, 0];
    #[rustfmt::skip]
    let thst_real = vec![
        4, 18, 0, 2,
        0, 0, 0, 1,  1,  0, 0, 0x10, 0x01,  0, 0, 0, 7,  0, 0, 0, 2,  0,
        0, 0, 0, 2,  9,  0, 0, 0x10, 0x02,  0, 0, 0, 0,  0, 0, 0, 0,  1,
    ];
    #[rustfmt::skip]
    let hpif = vec![
        0, 0, 0, 1,  0, 0, 0, 1,  0, 0, 1, 0x90, 0x00, 0xc7, 0x9c, 0x00,  3,
        0, 0x10, 0, 0,  0, 0, 0x40, 0,  0, 0, 0x30, 0,  0, 0, 0, 12,
    ];
    #[rustfmt::skip]
    let stkl = cat(&[&[0, 0, 0, 0,  0, 0, 0, 1,  0, 0, 0, 2],
        &st("java.lang.Thread"), &st("sleep"), &st("Thread.java"), &[0, 0, 0, 0x7b],
        &st("Main"), &st("main"), &[0, 0, 0, 0], &[0xff, 0xff, 0xff, 0xff]]);
    #[rustfmt::skip]
    let artt = vec![0, 0, 0, 1,  0, 0, 0, 1,  0, 0, 0, 9,  0, 0, 0, 1,  0, 0, 0, 1,
        0, 0, 0, 0, 0, 0, 0, 100,  0, 0, 0, 0, 0, 0, 0x03, 0xe8];
    // The design document's heap: 8-byte units at 0x10000, 0x400 units in one chunk.
    #[rustfmt::skip]
    let hpsg = vec![0, 0, 0, 1,  8,  0, 1, 0, 0,  0, 0, 0, 0,  0, 0, 4, 0,
        0x01, 0xff, 0x01, 0xff, 0x12, 0xff, 0x00, 0xff];
    #[rustfmt::skip]
    let hpso = vec![0, 0, 0, 1,  8,  0, 1, 0, 0,  0, 0, 3, 0,  0, 0, 1, 0,  0x81, 0x7f, 0x01, 0x7f];
    #[rustfmt::skip]
    let nhsg = vec![0, 0, 0, 0,  8,  0, 1, 0, 0,  0, 0, 0, 0,  0, 0, 0, 3,  0x39, 0x01, 0x00, 0x00];
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        (false, b"APNM", st("com.x"), Apnm { app_name: "com.x".into(), user_id: None, package_name: None },
            "APNM app=\"com.x\""),
        (false, b"APNM", cat(&[&st("com.x"), &[0, 0, 0, 10]]),
            Apnm { app_name: "com.x".into(), user_id: Some(10), package_name: None }, "APNM app=\"com.x\" user=10"),
        (false, b"APNM", cat(&[&st("x:svc"), &[0, 0, 0, 0], &st("com.x")]),
            Apnm { app_name: "x:svc".into(), user_id: Some(0), package_name: Some("com.x".into()) },
            "APNM app=\"x:svc\" user=0 pkg=\"com.x\""),
        (false, b"WAIT", vec![0], Wait { reason: 0 }, "WAIT reason=0 (debugger)"),
        (false, b"WAIT", vec![3], Wait { reason: 3 }, "WAIT reason=3"),
        (false, b"THCR", thcr, Thcr { tid: 12, name: "main".into() }, "THCR tid=12 name=\"main\""),
        (false, b"THNM", cat(&[&[0, 0, 0, 12], &st("a\tb")]), Thnm { tid: 12, name: "a\tb".into() },
            "THNM tid=12 name=\"a\\tb\""),
        (false, b"THDE", vec![0, 0, 0, 12], Thde { tid: 12 }, "THDE tid=12"),
        (false, b"THST", thst_doc, ThstReply(ThreadStatus { layout: ThstLayout::Document, threads: vec![
            ThreadEntry { tid: 1, state: ThreadState(1), suspended: Some(false), sys_tid: None, utime: None, stime: None, daemon: None },
            ThreadEntry { tid: 2, state: ThreadState(4), suspended: Some(true), sys_tid: None, utime: None, stime: None, daemon: None },
            ThreadEntry { tid: 3, state: ThreadState(4), suspended: Some(false), sys_tid: None, utime: None, stime: None, daemon: None },
        ]}), "THST 3 threads: 1 running, 2 waiting"),
        (false, b"THST", thst_real, ThstReply(ThreadStatus {
            layout: ThstLayout::Real { header_len: 4, bytes_per_entry: 18 }, threads: vec![
            ThreadEntry { tid: 1, state: ThreadState(1), suspended: None, sys_tid: Some(4097), utime: Some(7), stime: Some(2), daemon: Some(false) },
            ThreadEntry { tid: 2, state: ThreadState(9), suspended: None, sys_tid: Some(4098), utime: Some(0), stime: Some(0), daemon: Some(true) },
        ]}), "THST 2 threads: 1 running, 1 state9"),
        (false, b"THST", vec![0, 0, 0, 0], ThstReply(ThreadStatus { layout: ThstLayout::Document, threads: vec![] }),
            "THST 0 threads"),
        (true, b"STKL", stkl, StklReply(StackTrace { future: 0, tid: 1, frames: vec![
            StackFrame { class: "java.lang.Thread".into(), method: "sleep".into(), file: Some("Thread.java".into()), line: 123 },
            StackFrame { class: "Main".into(), method: "main".into(), file: None, line: -1 },
        ]}), "STKL tid=1 depth=2 top=\"java.lang.Thread.sleep(Thread.java:123)\""),
        (true, b"HPIF", hpif, HpifReply { heaps: vec![HeapInfo { heap_id: 1, timestamp_ms: 1_718_000_000_000,
            reason: 3, max_bytes: 0x10_0000, size_bytes: 0x4000, allocated_bytes: 0x3000, objects: 12 }] },
            "HPIF 1 heap: heap=1 size=16384 alloc=12288 objects=12 max=1048576"),
        (false, b"HPSG", hpsg, Hpsg(seg(1, 0, 0x400, &[(1, 256), (1, 256), (0x12, 256), (0, 256)])),
            "HPSG heap=1 unit=8 addr=0x10000 off=0x0 units=1024 runs=4 free=256"),
        (false, b"HPSO", hpso, Hpso(seg(1, 0x300, 0x100, &[(0x81, 128), (1, 128)])),
            "HPSO heap=1 unit=8 addr=0x10000 off=0x300 units=256 runs=2 free=0"),
        (false, b"NHSG", nhsg, Nhsg(seg(0, 0, 3, &[(0x39, 2), (0, 1)])),
            "NHSG heap=0 unit=8 addr=0x10000 off=0x0 units=3 runs=2 free=1"),
        (false, b"HPST", vec![0, 0, 0, 1], Hpst { heap_id: 1 }, "HPST heap=1"),
        (false, b"HPEN", vec![0, 0, 0, 1], Hpen { heap_id: 1 }, "HPEN heap=1"),
        (false, b"NHST", vec![0, 0, 0, 0], Nhst { heap_id: 0 }, "NHST heap=0"),
        (false, b"NHEN", vec![0, 0, 0, 0], Nhen { heap_id: 0 }, "NHEN heap=0"),
        (true, b"HPDU", vec![0], HpduReply { result: 0 }, "HPDU result=0"),
        (false, b"HPDS", hpds.clone(), Hpds(blob(&hpds)),
            "HPDS len=59 head=4a4156412050524f46494c4520312e30…"),
        (true, b"REAQ", vec![1], ReaqReply { enabled: true }, "REAQ on"),
        (true, b"REAL", vec![1, 2, 3], Real(blob(&[1, 2, 3])), "REAL len=3 head=010203"),
        (true, b"NHGT", vec![], Nhgt(blob(&[])), "NHGT len=0"),
        (true, b"MPRE", vec![0], MpreReply { result: 0 }, "MPRE result=0"),
        (false, b"MPSE", vec![b'*'], Mpse(blob(b"*")), "MPSE len=1 head=2a"),
        (false, b"SPSE", vec![], Spse(blob(&[])), "SPSE len=0"),
        (true, b"MPRQ", vec![2], MprqReply { mode: 2 }, "MPRQ mode=2 (sampling)"),
        (true, b"VULW", vulw, VulwReply { windows: vec!["com.x/Main".into()] }, "VULW 1: \"com.x/Main\""),
        (true, b"VURT", vec![7], VurtReply(blob(&[7])), "VURT len=1 head=07"),
        (true, b"VUOP", vec![], VuopReply(blob(&[])), "VUOP len=0"),
        (true, b"FEAT", feat, FeatReply { features: vec!["hprof-heap-dump".into(), "view-hierarchy".into()] },
            "FEAT 2: \"hprof-heap-dump\", \"view-hierarchy\""),
        (true, b"FEAT", vec![0, 0, 0, 0], FeatReply { features: vec![] }, "FEAT 0"),
        (false, b"STAG", b"A_GO".to_vec(), Stag { stage: BootStage::A_GO }, "STAG stage=A_GO"),
        (false, b"ARTT", artt, Artt { version: 1, timings: vec![CmdTiming { id: 9, cmd_set: 1, cmd: 1,
            start_ns: 100, duration_ns: 1000 }] }, "ARTT version=1 timings=1 total=1000ns max=1000ns"),
        (true, b"FAIL", fail, Fail { code: 1, message: "bad \"x\"".into() }, "FAIL code=1 msg=\"bad \\\"x\\\"\""),
        (false, b"TEST", vec![0xde, 0xad], Test(blob(&[0xde, 0xad])), "TEST len=2 head=dead"),
        // Empty chunks in replies.
        (true, b"DBGD", vec![], Dbgd, "DBGD"),
        (true, b"HPGC", vec![], Hpgc, "HPGC"),
        (true, b"THEN", vec![], EmptyReply { ty: ChunkType::THEN }, "THEN (empty reply)"),
        (true, b"HELO", vec![], EmptyReply { ty: ChunkType::HELO }, "HELO (empty reply)"),
    ];
    for (reply, ty, data, want, line) in &rows {
        check(Dir::FromVm, *reply, ty, data, want, line);
    }
}

/// A HELO reply with every optional field, and the byte offsets where each field ends.
fn full_helo() -> (Vec<u8>, [usize; 7]) {
    #[rustfmt::skip]
    let base = cat(&[
        &[0, 0, 0, 1,  0, 0, 0x12, 0x67,  0, 0, 0, 11,  0, 0, 0, 11],
        &[0, b'D', 0, b'a', 0, b'l', 0, b'v', 0, b'i', 0, b'k', 0, b' ', 0, b'v', 0, b'1', 0, b'.', 0, b'0'],
        &[0, b'c', 0, b'o', 0, b'm', 0, b'.', 0, b'e', 0, b'x', 0, b'a', 0, b'm', 0, b'p', 0, b'l', 0, b'e'],
    ]);
    let parts: [Vec<u8>; 6] =
        [vec![0, 0, 0, 10], st("arm64-v8a"), st("-Xcheck:jni"), vec![1], st("com.example"), b"A_GO".to_vec()];
    let mut ends = [base.len(); 7];
    let mut all = base;
    for (i, p) in parts.iter().enumerate() {
        all.extend_from_slice(p);
        ends[i + 1] = all.len();
    }
    (all, ends)
}

#[test]
fn helo_reply_of_every_historical_length() {
    let (all, ends) = full_helo();
    for (i, &end) in ends.iter().enumerate() {
        let got = decode_chunk(ChunkType::HELO, &all[..end], Dir::FromVm, true).unwrap();
        let Chunk::HeloReply(h) = &got else { panic!("{got:?}") };
        assert_eq!((h.version, h.pid, h.vm_ident.as_str(), h.app_name.as_str()), (1, 4711, "Dalvik v1.0", "com.example"));
        let present = [
            h.user_id.is_some(),
            h.abi.is_some(),
            h.jvm_flags.is_some(),
            h.native_debuggable.is_some(),
            h.package_name.is_some(),
            h.boot_stage.is_some(),
        ];
        assert_eq!(present.iter().filter(|p| **p).count(), i, "prefix {i}");
        assert!(present[..i].iter().all(|p| *p), "fields appear in order");
        if i == 0 {
            assert_eq!(got.to_string(), "HELO version=1 pid=4711 vm=\"Dalvik v1.0\" app=\"com.example\"");
        }
        // Every prefix re-encodes to exactly its bytes.
        assert_eq!(got.encode_data().unwrap(), &all[..end]);
    }
    let full = decode_chunk(ChunkType::HELO, &all, Dir::FromVm, true).unwrap();
    assert_eq!(
        full.to_string(),
        "HELO version=1 pid=4711 vm=\"Dalvik v1.0\" app=\"com.example\" user=10 abi=\"arm64-v8a\" \
         flags=\"-Xcheck:jni\" native_debuggable=true pkg=\"com.example\" stage=A_GO"
    );
    // Bytes after the last known field are skipped and counted.
    let longer = cat(&[&all, &[9, 9, 9]]);
    let Chunk::HeloReply(h) = decode_chunk(ChunkType::HELO, &longer, Dir::FromVm, true).unwrap() else { panic!() };
    assert_eq!((h.trailing_bytes, h.boot_stage), (3, Some(BootStage::A_GO)));
}

#[test]
fn helo_reply_cut_inside_a_field_is_an_error() {
    let (all, ends) = full_helo();
    let boundaries: Vec<usize> = ends.to_vec();
    for end in 0..all.len() {
        let got = decode_chunk(ChunkType::HELO, &all[..end], Dir::FromVm, false);
        assert_eq!(got.is_ok(), boundaries.contains(&end), "cut at {end}: {got:?}");
    }
    let expected = [
        (ends[0] + 2, "user id"),
        (ends[1] + 3, "abi"),
        (ends[1] + 6, "abi"),
        (ends[4] + 1, "package name"),
        (ends[5] + 1, "boot stage"),
    ];
    for (end, field) in expected {
        let err = decode_chunk(ChunkType::HELO, &all[..end], Dir::FromVm, true).unwrap_err();
        let root_field = match err.root() {
            DdmError::Short { field, .. } | DdmError::StringTooLong { field, .. } => *field,
            other => panic!("{other:?}"),
        };
        assert_eq!(root_field, field, "cut at {end}");
    }
    // Declared ident length larger than the chunk.
    let mut bad = all.clone();
    bad[8..12].copy_from_slice(&[0, 0, 0x10, 0]);
    let err = decode_chunk(ChunkType::HELO, &bad, Dir::FromVm, true).unwrap_err();
    assert_eq!(err.root(), &DdmError::StringTooLong {
        field: "vm ident",
        units: 0x1000,
        needed: 0x2000,
        available: all.len() - 16
    });
}
