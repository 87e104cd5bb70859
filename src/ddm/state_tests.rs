//! Tests for `ClientData`: chunk sequences (hand-written bytes, decoded) and the state they
//! leave behind.

use super::super::tests_decode::{cat, chunk, st};
use super::super::*;
use super::*;

fn feed(state: &mut ClientData, reply: bool, payload: &[u8]) {
    for c in decode_payload(payload, Dir::FromVm, reply, None) {
        state.apply(&c.unwrap());
    }
}

fn helo(app: &str, extra: &[u8]) -> Vec<u8> {
    let name = &st(app)[4..];
    let len = (app.len() as u32).to_be_bytes();
    chunk(b"HELO", &cat(&[&[0, 0, 0, 1, 0, 0, 0, 99, 0, 0, 0, 3], &len, &[0, b'A', 0, b'R', 0, b'T'], name, extra]))
}

#[test]
fn identity_from_helo_and_apnm() {
    let mut s = ClientData::new();
    assert_eq!(s.label(), "?");
    feed(&mut s, true, &helo("<pre-initialized>", &[]));
    assert_eq!((s.pid, s.protocol_version, s.vm_ident.as_deref(), s.app_name.as_deref()), (Some(99), Some(1), Some("ART"), None));
    assert_eq!(s.label(), "pid 99");
    feed(&mut s, false, &chunk(b"APNM", &cat(&[&st("com.x"), &[0, 0, 0, 10], &st("com.x.pkg")])));
    assert_eq!((s.app_name.as_deref(), s.user_id, s.package_name.as_deref()), (Some("com.x"), Some(10), Some("com.x.pkg")));
    assert_eq!(s.label(), "com.x.pkg (pid 99)");
    // Unknown names never overwrite known ones.
    feed(&mut s, false, &chunk(b"APNM", &st("")));
    feed(&mut s, false, &chunk(b"APNM", &st("<pre-initialized>")));
    assert_eq!(s.app_name.as_deref(), Some("com.x"));
    // A full modern HELO.
    let extra = cat(&[&[0, 0, 0, 11], &st("arm64-v8a"), &st(""), &[1], &st("com.y"), b"BIND"]);
    feed(&mut s, true, &helo("com.y", &extra));
    assert_eq!((s.app_name.as_deref(), s.user_id, s.abi.as_deref()), (Some("com.y"), Some(11), Some("arm64-v8a")));
    assert_eq!((s.jvm_flags.as_deref(), s.native_debuggable), (Some(""), Some(true)));
    assert_eq!((s.package_name.as_deref(), s.boot_stage), (Some("com.y"), Some(BootStage::BIND)));
}

#[test]
fn wait_stage_features_heap_info_and_fail() {
    let mut s = ClientData::new();
    feed(&mut s, false, &chunk(b"WAIT", &[0]));
    assert!(s.is_waiting_for_debugger());
    s.clear_waiting();
    assert!(!s.is_waiting_for_debugger());
    feed(&mut s, false, &chunk(b"STAG", b"A_GO"));
    assert_eq!(s.boot_stage, Some(BootStage::A_GO));
    feed(&mut s, true, &chunk(b"FEAT", &cat(&[&[0, 0, 0, 1], &st("hprof-heap-dump")])));
    assert_eq!(s.features, Some(vec!["hprof-heap-dump".to_string()]));
    #[rustfmt::skip]
    let hpif = [0, 0, 0, 1,  0, 0, 0, 1,  0, 0, 0, 0, 0, 0, 0, 1,  1,  0, 0, 1, 0,  0, 0, 0, 0x80,  0, 0, 0, 0x40,  0, 0, 0, 2];
    feed(&mut s, true, &chunk(b"HPIF", &hpif));
    let h = s.heap_infos[&1];
    assert_eq!((h.max_bytes, h.size_bytes, h.allocated_bytes, h.objects), (256, 128, 64, 2));
    feed(&mut s, true, &chunk(b"FAIL", &cat(&[&[0, 0, 0, 5], &st("nope")])));
    assert_eq!(s.last_fail, Some(FailInfo { code: 5, message: "nope".into() }));
}

#[test]
fn thread_lifecycle() {
    let mut s = ClientData::new();
    feed(&mut s, false, &chunk(b"THCR", &cat(&[&[0, 0, 0, 1], &st("main")])));
    feed(&mut s, false, &chunk(b"THCR", &cat(&[&[0, 0, 0, 2], &st("worker")])));
    assert_eq!(s.threads[&1].state, Some(ThreadState::INITIALIZING));
    // Document layout: tid 1 running, tid 2 waiting + suspended, tid 9 not announced yet.
    #[rustfmt::skip]
    feed(&mut s, false, &chunk(b"THST", &[0, 0, 0, 3,  0, 0, 0, 1, 1, 0,  0, 0, 0, 2, 4, 1,  0, 0, 0, 9, 7, 0]));
    assert_eq!((s.threads[&1].state, s.threads[&1].suspended), (Some(ThreadState::RUNNING), Some(false)));
    assert_eq!((s.threads[&2].state, s.threads[&2].suspended), (Some(ThreadState::WAITING), Some(true)));
    assert_eq!((s.threads[&9].name.as_deref(), s.threads[&9].state), (None, Some(ThreadState::NATIVE)));
    // Real layout: adds system tid, times and daemon; keeps the suspended flag it lacks.
    #[rustfmt::skip]
    feed(&mut s, false, &chunk(b"THST", &[4, 18, 0, 1,  0, 0, 0, 2,  9,  0, 0, 0x30, 0x39,  0, 0, 0, 3,  0, 0, 0, 4,  1]));
    let t = &s.threads[&2];
    assert_eq!((t.state, t.suspended, t.sys_tid, t.utime, t.stime, t.daemon),
        (Some(ThreadState(9)), Some(true), Some(12345), Some(3), Some(4), Some(true)));
    feed(&mut s, false, &chunk(b"THNM", &cat(&[&[0, 0, 0, 2], &st("pool-1")])));
    assert_eq!(s.threads[&2].name.as_deref(), Some("pool-1"));
    feed(&mut s, false, &chunk(b"THDE", &[0, 0, 0, 1]));
    assert_eq!(s.threads.keys().copied().collect::<Vec<_>>(), vec![2, 9]);
}

#[test]
fn thread_table_is_bounded() {
    let mut s = ClientData::new();
    for tid in 0..MAX_THREADS as u32 + 10 {
        s.apply(&Chunk::Thcr { tid, name: String::new() });
    }
    assert_eq!(s.threads.len(), MAX_THREADS);
    assert_eq!(s.threads_ignored, 10, "the ones past the limit are counted, for the log line");
    s.apply(&Chunk::Thde { tid: 0 });
    s.apply(&Chunk::Thcr { tid: u32::MAX, name: "late".into() });
    assert_eq!(s.threads[&u32::MAX].name.as_deref(), Some("late"));
}

/// The design document's heap at 0x10000, 0x400 units of 8 bytes, in pieces of 0x300 + 0x100.
fn hpsg_piece(offset: u32, len: u32, runs: &[u8]) -> Vec<u8> {
    let head = cat(&[&[0, 0, 0, 1, 8, 0, 1, 0, 0], &offset.to_be_bytes(), &len.to_be_bytes()]);
    chunk(b"HPSG", &cat(&[&head, runs]))
}

#[test]
fn heap_maps_complete_at_hpen() {
    let mut s = ClientData::new();
    feed(&mut s, false, &chunk(b"HPST", &[0, 0, 0, 1]));
    feed(&mut s, false, &hpsg_piece(0, 0x300, &[0x01, 0xff, 0x01, 0xff, 0x12, 0xff]));
    assert!(s.heap_maps.is_empty(), "no map before HPEN");
    // Both pieces in one packet.
    let p = cat(&[&hpsg_piece(0x300, 0x100, &[0x00, 0xff]), &chunk(b"HPEN", &[0, 0, 0, 1])]);
    feed(&mut s, false, &p);
    let map = s.heap_maps[&1].clone();
    assert_eq!(map.totals.total, Usage { units: 0x400, bytes: 0x2000 });
    assert_eq!(map.totals.free.bytes, 0x800);
    assert_eq!(map.totals.by_kind[&Kind::Array1].units, 0x100);
    assert_eq!(map.runs().last().map(|r| r.address), Some(0x11800));
    // A new cycle that has not ended leaves the last complete map in place.
    feed(&mut s, false, &chunk(b"HPST", &[0, 0, 0, 1]));
    feed(&mut s, false, &hpsg_piece(0, 0x400, &[0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff]));
    assert_eq!(s.heap_maps[&1].totals.free.units, 0x100);
    feed(&mut s, false, &chunk(b"HPEN", &[0, 0, 0, 1]));
    assert_eq!(s.heap_maps[&1].totals.free.units, 0x400);
    // Native heaps go to their own table.
    feed(&mut s, false, &chunk(b"NHST", &[0, 0, 0, 0]));
    feed(&mut s, false, &chunk(b"NHSG", &[0, 0, 0, 0, 16, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x39, 0x01]));
    feed(&mut s, false, &chunk(b"NHEN", &[0, 0, 0, 0]));
    assert_eq!(s.native_heap_maps[&0].totals.used, Usage { units: 2, bytes: 32 });
    assert_eq!(s.heap_maps.len(), 1);
    // Stray end: ignored.
    feed(&mut s, false, &chunk(b"HPEN", &[0, 0, 0, 7]));
    assert!(!s.heap_maps.contains_key(&7));
}

#[test]
fn compressed_chunks_apply_like_plain_ones() {
    let mut s = ClientData::new();
    let inner = Chunk::Thcr { tid: 4, name: "z".into() };
    s.apply(&Chunk::Compressed { compressed_len: 0, original_len: 0, inner: Box::new(inner) });
    assert_eq!(s.threads[&4].name.as_deref(), Some("z"));
}

#[test]
fn state_serializes_and_clones() {
    let mut s = ClientData::new();
    feed(&mut s, true, &helo("com.x", &[]));
    feed(&mut s, false, &chunk(b"THCR", &cat(&[&[0, 0, 0, 1], &st("main")])));
    feed(&mut s, false, &chunk(b"HPST", &[0, 0, 0, 1]));
    feed(&mut s, false, &hpsg_piece(0, 1, &[0x01, 0x00]));
    feed(&mut s, false, &chunk(b"HPEN", &[0, 0, 0, 1]));
    let snapshot = s.clone();
    let v = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(v["pid"], 99);
    assert_eq!(v["app_name"], "com.x");
    assert_eq!(v["threads"]["1"]["name"], "main");
    assert_eq!(v["threads"]["1"]["state"]["name"], "initializing");
    assert_eq!(v["heap_maps"]["1"]["totals"]["used"]["bytes"], 8);
    assert!(v.get("heaps_in_progress").is_none());
}
