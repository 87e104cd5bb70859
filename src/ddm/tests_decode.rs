//! Table-driven decode tests for chunks going to the VM (requests) and for chunks whose
//! layout is the same both ways, plus malformed cases. Bytes are written out by hand from the
//! spec; each table row is also checked against the encoder and the Display line.

use super::*;

/// A DDM string written out by hand: u4 UTF-16 length, then UTF-16BE (ASCII input only).
pub(super) fn st(s: &str) -> Vec<u8> {
    assert!(s.is_ascii());
    let mut v = vec![0, 0, 0, s.len() as u8];
    for b in s.bytes() {
        v.extend_from_slice(&[0, b]);
    }
    v
}

/// A chunk header written out by hand.
pub(super) fn chunk(ty: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut v = ty.to_vec();
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

pub(super) fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Decodes one chunk and checks the value, the log line and (where encodable) that the
/// encoder produces exactly the hand-written bytes.
pub(super) fn check(dir: Dir, reply: bool, ty: &[u8; 4], data: &[u8], want: &Chunk, line: &str) {
    let got = decode_payload(&chunk(ty, data), dir, reply, None);
    assert_eq!(got.len(), 1, "{line}");
    let c = got[0].as_ref().unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(c, want, "{line}");
    assert_eq!(c.to_string(), line);
    assert_eq!(c.chunk_type().to_bytes(), *ty);
    if let Ok(bytes) = c.encode_data() {
        assert_eq!(bytes, data, "encoder disagrees with the hand-written bytes for {line}");
    }
    let json = serde_json::to_value(c).unwrap();
    assert!(json["type"].is_string(), "{line}: {json}");
}

fn blob(data: &[u8]) -> Blob {
    Blob { len: data.len() as u32, head: data[..data.len().min(32)].to_vec() }
}

#[test]
fn requests_to_the_vm() {
    use Chunk::*;
    let hprof = st("/sdcard/x.hprof");
    let trace = cat(&[&[0, 0x80, 0, 0, 0, 0, 0, 1], &st("/t")]);
    let vurt = cat(&[&[0, 0, 0, 1], &st("root")]);
    #[rustfmt::skip]
    let rows: Vec<(&[u8; 4], Vec<u8>, Chunk, &str)> = vec![
        (b"HELO", vec![0, 0, 0, 1], HeloRequest { version: 1 }, "HELO version=1"),
        (b"DBGD", vec![], Dbgd, "DBGD"),
        (b"THEN", vec![1], Then { enable: true }, "THEN on"),
        (b"THEN", vec![0], Then { enable: false }, "THEN off"),
        (b"THST", vec![], ThstRequest { interval_ms: None }, "THST"),
        (b"THST", vec![0, 0, 1, 0xf4], ThstRequest { interval_ms: Some(500) }, "THST interval=500ms"),
        (b"STKL", vec![0, 0, 0, 5], StklRequest { tid: 5 }, "STKL tid=5"),
        (b"HPIF", vec![1], HpifRequest { when: 1 }, "HPIF when=1 (now)"),
        (b"HPIF", vec![9], HpifRequest { when: 9 }, "HPIF when=9 (?)"),
        (b"HPSG", vec![1, 0], HpsgRequest { when: 1, what: 0 }, "HPSG when=1 what=0"),
        (b"NHSG", vec![1, 1], NhsgRequest { when: 1, what: 1 }, "NHSG when=1 what=1"),
        (b"HPGC", vec![], Hpgc, "HPGC"),
        (b"HPDU", hprof, HpduRequest { file: "/sdcard/x.hprof".into() }, "HPDU file=\"/sdcard/x.hprof\""),
        (b"HPDS", vec![], HpdsRequest, "HPDS"),
        (b"REAE", vec![1], Reae { enable: true }, "REAE on"),
        (b"REAQ", vec![], ReaqRequest, "REAQ"),
        (b"REAL", vec![], RealRequest, "REAL"),
        (b"NHGT", vec![], NhgtRequest, "NHGT"),
        (b"MPRS", trace, Mprs { buffer_size: 0x80_0000, flags: 1, file: "/t".into() },
            "MPRS buffer=8388608 flags=0x1 file=\"/t\""),
        (b"MPRE", vec![], MpreRequest, "MPRE"),
        (b"MPSS", vec![0, 0x80, 0, 0, 0, 0, 0, 0], Mpss { buffer_size: 0x80_0000, flags: 0 },
            "MPSS buffer=8388608 flags=0x0"),
        (b"SPSS", vec![0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8],
            Spss { buffer_size: 0x80_0000, flags: 0, interval_us: 1000 },
            "SPSS buffer=8388608 flags=0x0 interval=1000us"),
        (b"MPSE", vec![], MpseRequest, "MPSE"),
        (b"SPSE", vec![], SpseRequest, "SPSE"),
        (b"MPRQ", vec![], MprqRequest, "MPRQ"),
        (b"VULW", vec![], VulwRequest, "VULW"),
        (b"VURT", vurt.clone(), Vurt { op: 1, rest: blob(&vurt[4..]) },
            "VURT op=1 len=12 head=000000040072006f006f0074"),
        (b"VUOP", vec![0, 0, 0, 2], Vuop { op: 2, rest: blob(&[]) }, "VUOP op=2 len=0"),
        (b"VUGL", vec![0, 0, 0, 1], Vugl { enable: true }, "VUGL on"),
        (b"FEAT", vec![], FeatRequest, "FEAT"),
        (b"EXIT", vec![0, 0, 0, 3], Exit { status: 3 }, "EXIT status=3"),
        (b"EXIT", vec![0xff, 0xff, 0xff, 0xff], Exit { status: -1 }, "EXIT status=-1"),
        // Layouts that do not depend on direction, seen going to the VM.
        (b"DTRC", vec![1, 2], Dtrc(blob(&[1, 2])), "DTRC len=2 head=0102"),
        (b"TEST", vec![], Test(blob(&[])), "TEST len=0"),
        (b"ABCD", vec![10, 11], Unknown { ty: ChunkType::from_bytes(*b"ABCD"), len: 2, head: vec![10, 11] },
            "Unknown ABCD len=2 head=0a0b"),
    ];
    for (ty, data, want, line) in &rows {
        check(Dir::ToVm, false, ty, data, want, line);
    }
}

#[test]
fn unknown_type_with_odd_bytes_and_long_data() {
    let data: Vec<u8> = (0..40).collect();
    let want = Chunk::Unknown { ty: ChunkType(0x00ff_4142), len: 40, head: (0..32).collect() };
    let line = "Unknown \\x00\\xffAB len=40 head=000102030405060708090a0b0c0d0e0f…";
    check(Dir::FromVm, false, &[0, 0xff, b'A', b'B'], &data, &want, line);
}

/// (type, direction, reply?, data, the innermost error).
type MalformedRow = (&'static [u8; 4], Dir, bool, Vec<u8>, DdmError);

fn malformed_rows() -> Vec<MalformedRow> {
    use DdmError::*;
    let (to, from) = (Dir::ToVm, Dir::FromVm);
    #[rustfmt::skip]
    let rows = vec![
        (b"HELO", to, false, vec![0, 0], Short { field: "server version", needed: 4, available: 2 }),
        (b"HELO", to, false, vec![0, 0, 0, 1, 9], Trailing { after: "the last field", trailing: 1 }),
        (b"THEN", to, false, vec![], Short { field: "enable", needed: 1, available: 0 }),
        (b"THST", to, false, vec![0, 0, 1], Short { field: "interval", needed: 4, available: 3 }),
        (b"HPSG", to, false, vec![1], Short { field: "what", needed: 1, available: 0 }),
        (b"HPDU", to, false, vec![0, 0, 0, 9, 0, b'x'],
            StringTooLong { field: "file", units: 9, needed: 18, available: 2 }),
        (b"HPDU", to, false, vec![0xff, 0xff, 0xff, 0xff],
            StringTooLong { field: "file", units: u32::MAX, needed: 2 * u64::from(u32::MAX), available: 0 }),
        (b"DBGD", to, false, vec![0], Trailing { after: "the last field", trailing: 1 }),
        (b"FEAT", to, false, vec![0], Trailing { after: "the last field", trailing: 1 }),
        (b"MPRS", to, false, vec![0, 0, 0, 1, 0, 0, 0, 0], Short { field: "file", needed: 4, available: 0 }),
        (b"SPSS", to, false, vec![0; 11], Short { field: "interval", needed: 4, available: 3 }),
        (b"VURT", to, false, vec![0, 0], Short { field: "op", needed: 4, available: 2 }),
        (b"VUGL", to, false, vec![1], Short { field: "enable", needed: 4, available: 1 }),
        (b"EXIT", to, false, vec![0, 0, 0], Short { field: "status", needed: 4, available: 3 }),
        (b"THCR", from, false, vec![0, 0, 0, 1, 0, 0, 0, 5, 0, b'm'],
            StringTooLong { field: "thread name", units: 5, needed: 10, available: 2 }),
        (b"THCR", from, false, vec![0, 0, 0, 1], Short { field: "thread name", needed: 4, available: 0 }),
        (b"THDE", from, false, vec![0, 0, 0, 1, 0], Trailing { after: "the last field", trailing: 1 }),
        (b"WAIT", from, false, vec![], Short { field: "reason", needed: 1, available: 0 }),
        (b"STAG", from, false, vec![b'A', b'_'], Short { field: "stage", needed: 4, available: 2 }),
        (b"FAIL", from, true, vec![0, 0, 0, 1, 0, 0, 0, 3, 0, b'x'],
            StringTooLong { field: "message", units: 3, needed: 6, available: 2 }),
        (b"APNM", from, false, cat(&[&st("a"), &[0, 0]]), Short { field: "user id", needed: 4, available: 2 }),
        (b"HPIF", from, true, vec![0, 0, 0, 2, 0, 0, 0, 1],
            CountTooLarge { field: "heap count", count: 2, needed: 58, available: 4 }),
        (b"FEAT", from, true, vec![0xff, 0, 0, 0],
            CountTooLarge { field: "count", count: 0xff00_0000, needed: 4 * 0xff00_0000, available: 0 }),
        (b"VULW", from, true, cat(&[&[0, 0, 0, 2], &st("a"), &[0, 0, 0]]),
            Short { field: "window name", needed: 4, available: 3 }),
        (b"ARTT", from, false, vec![0, 0, 0, 1, 0, 0, 0, 1, 0],
            CountTooLarge { field: "timing count", count: 1, needed: 28, available: 1 }),
        (b"HPSG", from, false, cat(&[&[0, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[1, 1]]),
            RunMismatch { expected: 256, found: 2 }),
        (b"HPSO", from, false, vec![0, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1],
            OddRunData { len: 1 }),
        (b"NHSG", from, false, vec![0, 0, 0, 1], Short { field: "allocation unit", needed: 1, available: 0 }),
        (b"THST", from, false, vec![0, 0, 0, 1, 0, 0, 0, 1, 1],
            ThstLayout { len: 9, doc_count: 1, doc_needed: 10, header_len: 0, bytes_per_entry: 0,
                         real_count: 1, real_needed: 0 }),
        (b"ZLIB", from, false, vec![0, 0, 0, 2, b'T', b'E', b'S', b'T', 0, 0, 0, 1, 0xff, 0xff],
            ZlibCorrupt { consumed: 0, total: 2, msg: String::new() }),
        (b"ZLIB", from, false, vec![0, 0, 0, 0, b'T', b'E', b'S', b'T', 0xff, 0, 0, 0],
            ZlibTooLarge { declared: 0xff00_0000, cap: MAX_INFLATED_LEN }),
    ];
    rows
}

#[test]
fn malformed_chunks_are_errors_naming_the_chunk() {
    for (ty, dir, reply, data, want) in malformed_rows() {
        let got = decode_payload(&chunk(ty, &data), dir, reply, None);
        assert_eq!(got.len(), 1);
        let err = got[0].as_ref().expect_err(&format!("{}", ChunkType::from_bytes(*ty)));
        match (err.root(), &want) {
            // The inflater's message text is not ours to pin down.
            (DdmError::ZlibCorrupt { total, .. }, DdmError::ZlibCorrupt { total: t, .. }) => assert_eq!(total, t),
            (root, want) => assert_eq!(root, want),
        }
        assert_eq!(err.chunk_type(), Some(ChunkType::from_bytes(*ty)));
        let text = err.to_string();
        let prefix = format!("{} (len {}): ", ChunkType::from_bytes(*ty), data.len());
        assert!(text.starts_with(&prefix), "{text}");
    }
}

#[test]
fn error_text_has_the_numbers() {
    let got = decode_payload(&chunk(b"THCR", &[0, 0, 0, 1, 0, 0, 0, 5, 0, b'm']), Dir::FromVm, false, None);
    let text = got[0].as_ref().unwrap_err().to_string();
    assert_eq!(text, "THCR (len 10): thread name: string of 5 UTF-16 units needs 10 bytes, only 2 left");
}
