//! The stats tables' limits, counts and sorting.

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn counts_bytes_latency_and_sorting() {
    let mut t = TrafficStats::new();
    let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap_or_else(|e| panic!("{e}"));
    for i in 0..10 {
        t.command(Who::Debugger(3), Some(peer), 1, 1, 11);
        t.reply(Who::Debugger(3), 1, 1, 0, 40, ms(1 + i % 2));
    }
    t.command(Who::Debugger(3), None, 1, 3, 11);
    t.reply(Who::Debugger(3), 1, 3, 0, 100_000, ms(50));
    t.command(Who::Proxy, None, 0xC7, 1, 23);
    t.reply(Who::Proxy, 0xC7, 1, 0, 99, ms(1));
    t.command(Who::Debugger(3), None, 2, 7, 19);
    t.reply(Who::Debugger(3), 2, 7, 101, 11, ms(1));
    let r = t.report("vm", None, None);
    assert_eq!(r.sources.len(), 2);
    let d = &r.sources[0];
    assert_eq!((d.source.as_str(), d.conn, d.peer.as_deref()), ("debugger", Some(3), Some("127.0.0.1:5000")));
    assert_eq!(d.count, 12);
    assert_eq!(d.bytes_out, 10 * 11 + 11 + 19);
    let names: Vec<&str> = d.commands.iter().map(|c| c.command.as_str()).collect();
    assert_eq!(names, ["VirtualMachine.AllClasses", "VirtualMachine.Version", "ReferenceType.SourceFile"]);
    let v = &d.commands[1];
    assert_eq!((v.count, v.replies, v.bytes_in, v.total_us, v.max_us), (10, 10, 400, 15_000, 2_000));
    assert!(v.p50_us >= 1_000 && v.p50_us <= 1_125, "{v:?}");
    assert_eq!(v.p99_us, 2_000);
    assert_eq!(d.commands[2].errors, 1);
    // A class without its source file name: an answer, counted apart as routine.
    assert_eq!((d.commands[2].routine, v.routine), (1, 0));
    assert_eq!(r.sources[1].source, "proxy");
    assert_eq!(r.errors.len(), 1);
    assert_eq!((r.errors[0].code, r.errors[0].name.as_str(), r.errors[0].count), (101, "ABSENT_INFORMATION", 1));
}

#[test]
fn ddm_chunks_by_type() {
    let mut t = TrafficStats::new();
    let mut payload = crate::ddm::encode_chunk(crate::ddm::ChunkType::THCR, &[0; 12]);
    payload.extend(crate::ddm::encode_chunk(crate::ddm::ChunkType::THCR, &[0; 4]));
    payload.extend(crate::ddm::encode_chunk(crate::ddm::ChunkType::HELO, &[0; 4]));
    t.ddm_payload(&payload, None);
    // A prefix of a larger payload: the header is enough.
    let mut big = crate::ddm::encode_chunk(crate::ddm::ChunkType::HPDS, &[]);
    big[4..8].copy_from_slice(&1_000_000u32.to_be_bytes());
    t.ddm_payload(&big, Some(1_000_008));
    let r = t.report("vm", None, None);
    let rows: Vec<(&str, u64, u64)> = r.ddm_chunks.iter().map(|c| (c.chunk_type.as_str(), c.count, c.bytes)).collect();
    assert_eq!(rows, [("THCR", 2, 16), ("HELO", 1, 4), ("HPDS", 1, 1_000_000)]);
}

#[test]
fn departed_debuggers_fold_into_earlier_ones() {
    let mut t = TrafficStats::new();
    t.command(Who::Debugger(1_000_000), None, 1, 1, 11);
    for conn in 0..1000u64 {
        for cmd in 1..=8u8 {
            t.command(Who::Debugger(conn), None, 1, cmd, 11);
            t.reply(Who::Debugger(conn), 1, cmd, 0, 20, ms(1));
        }
        t.debugger_left(conn);
    }
    // The one still attached, the last KEPT_DEPARTED to leave, and "earlier debuggers".
    assert_eq!(t.sources.len(), 1 + KEPT_DEPARTED + 1);
    let r = t.report("vm", None, None);
    let earlier = r.sources.iter().find(|s| s.source == "earlier debuggers").map(|s| s.count);
    assert_eq!(earlier, Some((1000 - KEPT_DEPARTED as u64) * 8));
    assert_eq!(r.sources.iter().map(|s| s.count).sum::<u64>(), 1000 * 8 + 1, "nothing lost");
    // A debugger that never sent anything, or leaves twice, changes nothing.
    t.debugger_left(5_000_000);
    t.debugger_left(999);
    assert_eq!(t.sources.len(), 1 + KEPT_DEPARTED + 1);
}

proptest::proptest! {
    /// Any interleaving of commands, replies and departures keeps the tables bounded and
    /// loses no count.
    #[test]
    fn comings_and_goings_stay_bounded(ops in proptest::collection::vec((0u64..100, 0u8..4, 0u8..3), 0..600)) {
        let mut t = TrafficStats::new();
        let mut sent = 0u64;
        for (conn, cmd, op) in ops {
            match op {
                0 => { t.command(Who::Debugger(conn), None, 1, cmd, 11); sent += 1; }
                1 => t.reply(Who::Debugger(conn), 1, cmd, 0, 11, ms(1)),
                _ => t.debugger_left(conn),
            }
            proptest::prop_assert!(t.sources.len() <= MAX_SOURCES);
            proptest::prop_assert!(t.departed.len() <= KEPT_DEPARTED);
            for d in &t.departed {
                proptest::prop_assert!(t.sources.iter().any(|s| s.who == Who::Debugger(*d)));
            }
        }
        let r = t.report("vm", None, None);
        proptest::prop_assert_eq!(r.sources.iter().map(|s| s.count).sum::<u64>(), sent);
    }
}

#[test]
fn tables_stay_bounded() {
    let mut t = TrafficStats::new();
    for conn in 0..(MAX_SOURCES as u64 + 10) {
        t.command(Who::Debugger(conn), None, 1, 1, 11);
        t.reply(Who::Debugger(conn), 1, 1, 0, 11, ms(1));
    }
    assert_eq!(t.sources.len(), MAX_SOURCES);
    let r = t.report("vm", None, None);
    let earlier = r.sources.iter().find(|s| s.source == "earlier debuggers");
    assert_eq!(earlier.map(|s| s.count), Some(11), "the 11 oldest were folded");
    assert_eq!(r.sources.len(), MAX_SOURCES);
    assert_eq!(r.sources.iter().map(|s| s.count).sum::<u64>(), MAX_SOURCES as u64 + 10, "nothing lost");

    for set in 0..=255u8 {
        for cmd in 1..=3u8 {
            t.command(Who::Proxy, None, set, cmd, 11);
            t.reply(Who::Proxy, set, cmd, u16::from(set) * 3 + u16::from(cmd), 11, ms(1));
        }
    }
    for ty in 0..(MAX_CHUNK_TYPES as u32 + 5) {
        t.ddm_chunk(ty, 1);
    }
    let r = t.report("vm", None, None);
    let proxy = r.sources.iter().find(|s| s.source == "proxy").map(|s| s.commands.len());
    assert_eq!(proxy, Some(MAX_COMMANDS + 1));
    assert!(r.sources.iter().flat_map(|s| &s.commands).any(|c| c.command == "other commands" && c.count > 0));
    assert_eq!(r.errors.len(), MAX_ERROR_CODES + 1);
    assert_eq!(r.errors.iter().map(|e| e.count).sum::<u64>(), 256 * 3);
    assert_eq!(r.ddm_chunks.len(), MAX_CHUNK_TYPES + 1);
    assert!(r.ddm_chunks.iter().any(|c| c.chunk_type == "????" && c.count == 5));
}
