//! A synthetic session written through `Capture` in both formats and read back.

use super::*;

#[tokio::test]
async fn pcapng_round_trip_gives_identical_packets() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("s.pcapng");
    let s = Session::build();
    let summary = write(&path, Format::Pcapng, &s.records).await;
    assert_eq!(
        (
            summary.dropped,
            summary.records_written,
            summary.write_error
        ),
        (0, s.records.len() as u64, None)
    );
    let got = read_capture(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.warnings, Vec::<String>::new());
    assert_eq!(got.records.len(), s.expected.len());
    for (g, e) in got.records.iter().zip(&s.expected) {
        assert_eq!(g, e);
    }
    let lines: Vec<String> = got
        .records
        .iter()
        .map(crate::capture::format_line)
        .collect();
    assert!(
        lines[6].ends_with("#1 dbg 127.0.0.1:50000 -> proxy  id=5 VirtualMachine.Version len=11"),
        "{}",
        lines[6]
    );
    assert!(lines[8].contains("proxy <- vm 127.0.0.1:8701  reply id=1000 VirtualMachine.Version error=NONE orig_id=5 len=41 latency=250µs"), "{}", lines[8]);
}

#[tokio::test]
async fn jsonl_lines_parse_and_read_back() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("s.jsonl");
    let s = Session::build();
    write(&path, Format::Jsonl, &s.records).await;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let values: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(values.len(), s.records.len());
    for v in &values {
        for f in ["time", "conn", "kind"] {
            assert!(v.get(f).is_some(), "{f} missing in {v}");
        }
        if v["kind"] == "packet" {
            for f in ["dir", "id", "flags", "reply", "length", "truncated"] {
                assert!(v.get(f).is_some(), "{f} missing in {v}");
            }
            let want: &[&str] = if v["reply"] == true {
                &["error", "error_name", "latency_us"]
            } else {
                &["cmd_set", "cmd", "command"]
            };
            for f in want {
                assert!(v.get(*f).is_some(), "{f} missing in {v}");
            }
        }
    }
    assert_eq!(values.iter().filter(|v| v["kind"] == "body").count(), 2);
    assert_eq!(
        values.iter().filter(|v| v.get("chunks").is_some()).count(),
        6
    );
    assert_eq!(values.iter().filter(|v| v["truncated"] == true).count(), 1);
    let back = read_capture(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.warnings, Vec::<String>::new());
    assert_eq!(back.records, without_payload(s.expected));
}

/// A near answer (no VM packet behind it) reads back marked, from both formats, and
/// `decode` says so.
#[tokio::test]
async fn a_near_reply_reads_back_marked() {
    use Direction::*;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut s = Session { records: Vec::new(), expected: Vec::new(), clock: 0 };
    let a = conn(1, Leg::Debugger, 50_000, DBG_PORT);
    s.open(&a);
    s.handshake(&a, ToServer);
    s.handshake(&a, ToClient);
    let signature = PacketKind::Command { set: 2, cmd: 1 };
    s.packet(&a, ToServer, 7, None, signature, vec![0, 0, 0, 0, 0, 0, 0, 5], None, 1);
    s.near_reply(&a, 7, (2, 1), b"\0\0\0\x08LShape;".to_vec());
    s.close(&a);
    for (name, format) in [("n.pcapng", Format::Pcapng), ("n.jsonl", Format::Jsonl)] {
        let path = dir.path().join(name);
        write(&path, format, &s.records).await;
        let got = read_capture(&path).unwrap_or_else(|e| panic!("{e}"));
        let near: Vec<&DecodedPacket> = got
            .records
            .iter()
            .filter_map(|r| match &r.event {
                DecodedEvent::Packet(p) if p.near => Some(p),
                _ => None,
            })
            .collect();
        assert_eq!(near.len(), 1, "{name}");
        assert_eq!((near[0].id, near[0].kind), (7, PacketKind::Reply { error: 0, command: Some((2, 1)) }), "{name}");
        let line = got.records.iter().map(crate::capture::format_line).find(|l| l.contains("reply id=7")).unwrap_or_default();
        assert!(line.contains("ReferenceType.Signature error=NONE") && line.ends_with(" near"), "{name}: {line}");
        if format == Format::Pcapng {
            assert_eq!(got.records.len(), s.expected.len());
            for (g, e) in got.records.iter().zip(&s.expected) {
                assert_eq!(g, e);
            }
        }
    }
}
