//! The Wireshark dissector for DDM (contrib/wireshark/jdwp_ddm.lua) in tshark, on a capture
//! of the fake DDM VM made here: every chunk of every DDM packet, both legs, both
//! directions, shows with the same summary line `jdwpmux decode` prints, and its fields
//! carry the values `decode --json` gives.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::capture::util::{capture_settings, json_lines, require_tshark, run, BIN};
use crate::harness::{Proxy, SOON};
use crate::support::consts::*;
use crate::support::ddm::{apnm_payload, thcr_payload, HeapPiece};
use crate::support::wire::{encode_chunks, put_ddm_string, zlib_chunk, BufMut};
use crate::support::{Chunk, FakeVm, FakeVmConfig, RawClient};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/wireshark/jdwp_ddm.lua");

/// THST in the design document's layout: `u4 count, {u4 tid, u1 state, u1 suspended}*`.
fn thst_document(threads: &[(u32, u8, bool)]) -> Vec<u8> {
    let mut d = Vec::new();
    d.put_u32(threads.len() as u32);
    for (tid, state, suspended) in threads {
        d.put_u32(*tid);
        d.push(*state);
        d.push(u8::from(*suspended));
    }
    d
}

/// ZLIB with the compressed length repeated first and a raw deflate stream (the other
/// layout and the other stream kind than `zlib_chunk`).
fn zlib_raw_repeated(orig: &Chunk) -> Chunk {
    use std::io::Write;
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = enc.write_all(&orig.data);
    let stream = enc.finish().unwrap_or_default();
    let mut d = Vec::new();
    d.put_u32(stream.len() as u32);
    d.extend_from_slice(&orig.ty);
    d.put_u32(orig.data.len() as u32);
    d.extend_from_slice(&stream);
    Chunk::new(b"ZLIB", d)
}

async fn ddm_request(dbg: &mut RawClient, id: u32, chunks: &[Chunk]) {
    let r = dbg.request(id, DDM_SET, DDM_CMD, &encode_chunks(chunks), SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
}

/// A DDM-speaking debugger asks for everything the fake VM answers, the VM pushes the
/// chunks it only sends on its own, and the debugger ends with EXIT.
async fn ddm_session(file: &Path) {
    let vm = FakeVm::start(FakeVmConfig::default().with_modern_helo(6)).await;
    let proxy = Proxy::with(capture_settings(&[vm.addr()], file)).await;
    let port = proxy.vm_port(0).await;
    let mut dbg = RawClient::connect(port).await.unwrap();
    let c = |ty: &[u8; 4], d: &[u8]| Chunk::new(ty, d.to_vec());
    ddm_request(&mut dbg, 1, &[c(b"HELO", &[0, 0, 0, 1])]).await;
    ddm_request(&mut dbg, 2, &[c(b"FEAT", &[])]).await;
    ddm_request(&mut dbg, 3, &[c(b"HPIF", &[1])]).await;
    ddm_request(&mut dbg, 4, &[c(b"THEN", &[1])]).await;
    ddm_request(&mut dbg, 5, &[c(b"THST", &[])]).await;
    ddm_request(&mut dbg, 6, &[c(b"HPSG", &[1, 0]), c(b"NHSG", &[1, 0])]).await;
    ddm_request(&mut dbg, 7, &[c(b"HPGC", &[])]).await;
    ddm_request(&mut dbg, 8, &[c(b"HPSG", &[1, 1]), c(b"NHSG", &[0, 0])]).await;
    ddm_request(&mut dbg, 9, &[c(b"HPGC", &[])]).await;
    ddm_request(&mut dbg, 10, &[c(b"REAE", &[1]), c(b"REAQ", &[]), c(b"REAL", &[])]).await;

    let mut fail = Vec::new();
    fail.put_u32(7);
    put_ddm_string(&mut fail, "no \"such\" thing\tat all");
    let piece = HeapPiece { heap_id: 1, alloc_unit: 8, address: 0x1000_0000, offset: 0, runs: vec![(0x01, 40), (0x00, 24), (0x19, 200)] };
    let pushes = [
        c(b"APNM", &apnm_payload("com.example.fake:remote", 10, "com.example.fake")),
        c(b"WAIT", &[0]),
        c(b"THCR", &thcr_payload(0x1004, "Binder:4242_1 ünïcode")),
        c(b"THDE", &0x1004u32.to_be_bytes()),
        c(b"THST", &thst_document(&[(1, 1, false), (2, 4, true), (3, 9, false)])),
        c(b"REAQ", &[1]),
        c(b"REAL", &[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]),
        c(b"FAIL", &fail),
        zlib_chunk(&c(b"THST", &thst_document(&[(1, 2, false), (5, 1, false)]))),
        zlib_raw_repeated(&c(b"HPSG", &piece.encode())),
    ];
    for p in &pushes {
        vm.send_ddm_chunks(std::slice::from_ref(p)).unwrap();
    }
    // The last push reached the debugger: everything before it is in the capture.
    let mut seen = 0;
    while seen < pushes.len() {
        let p = dbg.read_packet(SOON).await.unwrap();
        if p.is_ddm() && p.chunks().unwrap().iter().any(|ch| pushes.iter().any(|q| q.ty == ch.ty && q.data == ch.data)) {
            seen += 1;
        }
    }
    dbg.send_command(11, DDM_SET, DDM_CMD, &encode_chunks(&[c(b"EXIT", &(-3i32).to_be_bytes())])).await.unwrap();
    vm.wait_for(|v| v.exit_status().is_some(), SOON).await.unwrap();
    proxy.stop().await;
}

async fn tshark(file: &Path, extra: &[&str]) -> String {
    let mut cmd = tokio::process::Command::new("tshark");
    cmd.arg("-X").arg(format!("lua_script:{SCRIPT}"));
    // Heuristics first: an ephemeral port that happens to be some protocol's does not win.
    cmd.args(["-o", "tcp.try_heuristic_first:TRUE", "-r"]).arg(file).args(extra);
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "tshark failed: {err}");
    assert!(!err.contains("Lua"), "the script failed: {err}");
    out
}

/// `-T fields` of the frames matching `filter`: one Vec per frame, one per field, each the
/// field's values in order.
async fn fields(file: &Path, filter: &str, names: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut args = vec!["-Y", filter, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"];
    for n in names {
        args.extend(["-e", n]);
    }
    let out = tshark(file, &args).await;
    out.lines()
        .map(|l| l.split('\t').map(|f| if f.is_empty() { vec![] } else { f.split('|').map(str::to_string).collect() }).collect())
        .collect()
}

fn counted(items: impl IntoIterator<Item = String>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tshark_with_the_dissector_shows_every_ddm_chunk_as_decode_does() {
    require_tshark();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ddm.pcapng");
    ddm_session(&file).await;

    // decode: the indented lines under each DDM packet.
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("decode").arg(&file);
    let (code, text, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "{err}");
    let decoded: Vec<String> = text.lines().filter_map(|l| l.strip_prefix("    ")).map(str::to_string).collect();
    assert!(!decoded.iter().any(|l| l.starts_with("malformed")), "{text}");

    // tshark: the dissector's summary of every chunk.
    let frames = fields(&file, "ddm", &["ddm.summary"]).await;
    let dissected: Vec<String> = frames.into_iter().flat_map(|f| f.into_iter().flatten()).collect();
    assert_eq!(counted(dissected.clone()), counted(decoded.clone()), "tshark (left) and decode (right) differ");
    // Two passes (as Wireshark dissects a packet again when it is clicked): the same.
    let two = tshark(&file, &["-2", "-Y", "ddm", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "ddm.summary"]).await;
    let two: Vec<String> = two.lines().flat_map(|l| l.split('|').map(str::to_string).collect::<Vec<_>>()).collect();
    assert_eq!(counted(two), counted(decoded.clone()), "tshark -2 (left) and decode (right) differ");

    // Every type and form the issue names is in there, decoded.
    for want in [
        "HELO version=1",
        "HELO version=1 pid=4242 vm=\"Dalvik v2.1.0 (fake)\" app=\"com.example.fake\" user=0 abi=\"arm64-v8a\" flags=\"\" native_debuggable=false pkg=\"com.example.fake\" stage=A_GO",
        "APNM app=\"com.example.fake:remote\" user=10 pkg=\"com.example.fake\"",
        "WAIT reason=0 (debugger)",
        "THEN on",
        "THCR tid=4100 name=\"Binder:4242_1 ünïcode\"",
        "THDE tid=4100",
        "THST 3 threads: 1 running, 1 waiting, 1 state9",
        "THST 2 threads: 1 running, 1 sleeping [zlib ",
        "HPIF when=1 (now)",
        "HPIF 1 heap: heap=1 size=16777216 alloc=8388608 objects=12345 max=268435456",
        "HPSG when=1 what=0",
        "HPST heap=1",
        "HPEN heap=1",
        "NHST heap=2",
        "HPGC",
        "REAE on",
        "REAQ on",
        "REAL len=20 head=deadbeef0102030405060708090a0b0c…",
        "FEAT 3: \"method-trace-profiling\", \"hprof-heap-dump\", \"view-hierarchy\"",
        "FAIL code=7 msg=\"no \\\"such\\\" thing\\tat all\"",
        "HPSG heap=1 unit=8 addr=0x10000000 off=0x0 units=264 runs=3 free=24 [zlib ",
        "EXIT status=-3",
    ] {
        assert!(dissected.iter().any(|l| l == want || (want.ends_with("[zlib ") && l.starts_with(want))), "no {want:?} in\n{dissected:#?}");
    }
    for prefix in ["HPSG heap=1 unit=", "HPSO heap=1 unit=", "NHSG heap=2 unit=", "THST 3 threads: 1 running, 2 sleeping", "FEAT", "REAQ"] {
        assert!(dissected.iter().any(|l| l.starts_with(prefix)), "no {prefix:?} in\n{dissected:#?}");
    }

    // Fields carry what decode --json gives: every THCR's thread and every HELO reply's VM.
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("decode").arg(&file).arg("--json");
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "{err}");
    let chunks: Vec<Value> = json_lines(&out).into_iter().filter_map(|l| l["chunks"].as_array().cloned()).flatten().collect();
    let of = |ty: &'static str| chunks.iter().filter(move |c| c["type"] == ty);
    let json_threads = counted(of("THCR").map(|c| format!("{} {}", c["tid"], c["name"].as_str().unwrap_or_default())));
    let frames = fields(&file, "ddm.type == \"THCR\"", &["ddm.thread.tid", "ddm.thread.name"]).await;
    let shark_threads = counted(frames.iter().map(|f| format!("{} {}", f[0].join(","), f[1].join(","))));
    assert_eq!(shark_threads, json_threads);
    let helo = of("HELO").find(|c| c["pid"].is_u64()).unwrap_or_else(|| panic!("no HELO reply in {out}"));
    let frames = fields(&file, "ddm.helo.pid", &["ddm.helo.pid", "ddm.helo.app", "ddm.helo.vm", "ddm.helo.stage"]).await;
    assert!(!frames.is_empty());
    for f in &frames {
        assert_eq!(f[0], [helo["pid"].to_string()]);
        assert_eq!(f[1], [helo["app_name"].as_str().unwrap_or_default()]);
        assert_eq!(f[2], [helo["vm_ident"].as_str().unwrap_or_default()]);
        assert_eq!(f[3], [helo["boot_stage"].as_str().unwrap_or_default()]);
    }
    let layouts = fields(&file, "ddm.thst.layout", &["ddm.thst.layout"]).await;
    let layouts: Vec<String> = layouts.into_iter().flat_map(|f| f.into_iter().flatten()).collect();
    assert!(layouts.contains(&"real".to_string()) && layouts.contains(&"document".to_string()), "{layouts:?}");

    // Nothing the dissector could not read.
    let verbose = tshark(&file, &["-V"]).await;
    for bad in ["Lua Error", "Malformed", "not inflated", "Expert Info (Error"] {
        assert!(!verbose.contains(bad), "{bad} in the dissection");
    }
}
