use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::capture::reader::ConnDesc;

#[path = "../../tests/support/trace_check.rs"]
mod check;

fn conn(id: u64, leg: Leg) -> Arc<ConnDesc> {
    Arc::new(ConnDesc {
        id,
        vm: "app".into(),
        leg: Some(leg),
        client: SocketAddr::from(([127, 0, 0, 1], 40_000 + id as u16)),
        server: SocketAddr::from(([127, 0, 0, 1], 8700)),
    })
}

struct Feed {
    recs: Vec<DecodedRecord>,
}

impl Feed {
    #[allow(clippy::too_many_arguments)]
    fn packet(&mut self, c: &Arc<ConnDesc>, ms: u64, dir: Direction, id: u32, orig_id: Option<u32>, kind: PacketKind, payload: Vec<u8>) {
        let ddm = matches!(kind, PacketKind::Command { set: 0xC7, .. } | PacketKind::Reply { command: Some((0xC7, 1)), .. });
        let ddm_chunks = if ddm { crate::capture::ddm::chunk_headers(&payload) } else { vec![] };
        self.recs.push(DecodedRecord {
            time: UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms),
            conn: c.clone(),
            event: DecodedEvent::Packet(DecodedPacket {
                dir,
                id,
                orig_id,
                flags: if matches!(kind, PacketKind::Reply { .. }) { 0x80 } else { 0 },
                kind,
                length: 11 + payload.len() as u32,
                latency: None,
                near: false,
                payload: Some(payload),
                truncated: false,
                ddm_chunks,
            }),
        });
    }

    fn close(&mut self, c: &Arc<ConnDesc>, ms: u64) {
        let time = UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms);
        self.recs.push(DecodedRecord { time, conn: c.clone(), event: DecodedEvent::Close });
    }
}

fn cmd(set: u8, cmd: u8) -> PacketKind {
    PacketKind::Command { set, cmd }
}

fn ok(command: (u8, u8)) -> PacketKind {
    PacketKind::Reply { error: 0, command: Some(command) }
}

fn trace(recs: &[DecodedRecord]) -> (String, TraceCounts) {
    let mut out = Vec::new();
    let mut w = TraceWriter::new(&mut out).unwrap_or_else(|e| panic!("{e}"));
    for r in recs {
        w.add(r).unwrap_or_else(|e| panic!("{e}"));
    }
    let counts = w.finish().unwrap_or_else(|e| panic!("{e}"));
    (String::from_utf8_lossy(&out).into_owned(), counts)
}

#[test]
fn overlapping_requests_take_lanes_and_every_slice_ends() {
    use Direction::*;
    let (dbg, vm) = (conn(2, Leg::Debugger), conn(1, Leg::Vm));
    let mut f = Feed { recs: Vec::new() };
    let thcr = crate::ddm::encode_chunk(crate::ddm::ChunkType::THCR, &[0, 0, 0, 7, 0, 0, 0, 1, 0, b'm']);
    let helo = crate::ddm::Chunk::HeloRequest { version: 1 }.encode().unwrap_or_default();
    f.packet(&vm, 0, ToServer, 1, None, cmd(0xC7, 1), helo.clone());
    f.packet(&vm, 2, ToClient, 1, None, ok((0xC7, 1)), vec![]);
    // Three pipelined requests, answered 2, 1, 3.
    for id in 1..=3 {
        f.packet(&dbg, 10 + u64::from(id), ToServer, id, None, cmd(1, 1), vec![]);
        f.packet(&vm, 10 + u64::from(id), ToServer, 100 + id, Some(id), cmd(1, 1), vec![]);
    }
    for (ms, id) in [(20, 2), (21, 1), (22, 3)] {
        f.packet(&vm, ms, ToClient, 100 + id, Some(id), ok((1, 1)), vec![0; 30]);
        f.packet(&dbg, ms, ToClient, id, None, ok((1, 1)), vec![0; 30]);
    }
    f.packet(&vm, 30, ToClient, 0x8000_0001, None, cmd(0xC7, 1), thcr.clone());
    f.packet(&dbg, 31, ToClient, 0x8000_0001, None, cmd(0xC7, 1), thcr);
    f.packet(&dbg, 32, ToClient, 9, None, cmd(64, 100), vec![2, 0, 0, 0, 1, 2, 0, 0, 0, 9]);
    // A clock that steps back within the track, then a request never answered.
    f.packet(&dbg, 5, ToServer, 4, None, cmd(11, 6), vec![0; 16]);
    f.packet(&dbg, 40, ToServer, 5, None, cmd(1, 9), vec![]);
    f.close(&dbg, 50);
    let (text, counts) = trace(&f.recs);
    let t = check::check_trace(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(counts, TraceCounts { slices: 6, unanswered: 2, instants: 3, tracks: 4 });
    assert_eq!(t.processes.values().collect::<Vec<_>>(), ["VM app"]);
    let mut names: Vec<&str> = t.threads.values().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "debugger #2 127.0.0.1:40002",
            "debugger #2 127.0.0.1:40002 (overlap 1)",
            "debugger #2 127.0.0.1:40002 (overlap 2)",
            "proxy: own requests, DDM from the VM"
        ]
    );
    let track = |s: &check::Slice| t.threads[&(s.pid, s.tid)].clone();
    let version: Vec<(f64, f64, String)> = t
        .slices
        .iter()
        .filter(|s| s.name == "VirtualMachine.Version")
        .map(|s| (s.start, s.end, track(s)))
        .collect();
    assert_eq!(version.len(), 3, "{text}");
    let on_lane = |lane: &str| version.iter().filter(|v| v.2.ends_with(lane)).count();
    assert_eq!((on_lane(":40002"), on_lane("(overlap 1)"), on_lane("(overlap 2)")), (1, 1, 1));
    let first = t.slices.iter().find(|s| s.name == "VirtualMachine.Version" && s.args["id"] == 1).unwrap_or_else(|| panic!("{text}"));
    assert_eq!((first.start, first.end), (11_000.0, 21_000.0));
    assert_eq!((first.args["bytes"].as_u64(), first.args["reply_bytes"].as_u64()), (Some(11), Some(41)));
    assert_eq!(first.args["error"], "NONE");
    let helo = t.slices.iter().find(|s| s.name == "DDM.Chunk").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(track(helo), "proxy: own requests, DDM from the VM");
    assert_eq!(helo.args["chunks"][0], "HELO version=1");
    let late = t.slices.iter().find(|s| s.name == "ThreadReference.Frames").unwrap_or_else(|| panic!("{text}"));
    assert!(late.start >= 22_000.0, "clamped to the track's last time: {late:?}");
    assert_eq!(late.args["unanswered"], true);
    let instants: Vec<(&str, String)> = t.instants.iter().map(|i| (i.2.as_str(), t.threads[&(i.0, i.1)].clone())).collect();
    assert!(instants.contains(&("DDM THCR", "proxy: own requests, DDM from the VM".into())), "{instants:?}");
    assert!(instants.contains(&("DDM THCR", "debugger #2 127.0.0.1:40002".into())), "{instants:?}");
    assert!(instants.contains(&("Event.Composite BREAKPOINT", "debugger #2 127.0.0.1:40002".into())), "{instants:?}");
    let thcr = t.instants.iter().find(|i| i.2 == "DDM THCR").map(|i| i.3["chunks"][0].clone());
    assert_eq!(thcr, Some(serde_json::json!("THCR tid=7 name=\"m\"")));
}

#[test]
fn too_many_outstanding_requests_become_instants() {
    let dbg = conn(2, Leg::Debugger);
    let mut f = Feed { recs: Vec::new() };
    for id in 0..(MAX_LANES as u32 + 3) {
        f.packet(&dbg, 1, Direction::ToServer, id, None, cmd(1, 1), vec![]);
    }
    let (text, counts) = trace(&f.recs);
    let t = check::check_trace(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((counts.slices, counts.unanswered, counts.instants), (MAX_LANES as u64, MAX_LANES as u64, 3));
    assert_eq!(t.threads.len(), MAX_LANES);
}

#[test]
fn an_empty_capture_is_an_empty_trace() {
    let (text, counts) = trace(&[]);
    assert_eq!(counts, TraceCounts::default());
    let t = check::check_trace(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.slices.is_empty());
}
