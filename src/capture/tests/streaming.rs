//! Reading a capture as a stream: records leave as soon as nothing earlier can still come,
//! a large packet keeps a bounded prefix of its payload, and the order is the file's.

use std::io::Read;
use std::ops::ControlFlow;

use super::*;
use crate::capture::pcapng::PcapngEncoder;
use crate::capture::reader::{read_bytes, stream_any};
use crate::capture::MAX_KEPT_PAYLOAD;

/// A reader that says how far it has been read.
struct Counting<'a> {
    inner: &'a [u8],
    pos: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos.set(self.pos.get() + n);
        Ok(n)
    }
}

/// 2,000 small round trips on one connection, with a 3 MiB reply on another in the middle,
/// streamed in 64 KiB pieces while the first connection carries on.
fn capture() -> (Vec<u8>, usize) {
    let mut s = Session { records: Vec::new(), expected: Vec::new(), clock: 0 };
    let a = conn(1, Leg::Debugger, 50_000, DBG_PORT);
    let b = conn(2, Leg::Debugger, 50_001, DBG_PORT);
    let version = PacketKind::Command { set: 1, cmd: 1 };
    let ok = |command| PacketKind::Reply { error: 0, command };
    for c in [&a, &b] {
        s.open(c);
        s.handshake(c, Direction::ToServer);
        s.handshake(c, Direction::ToClient);
    }
    let big = 3 << 20;
    let mut pieces = Vec::new();
    for id in 0..2_000u32 {
        s.packet(&a, Direction::ToServer, id, None, version, vec![], None, 1);
        s.packet(&a, Direction::ToClient, id, None, ok(Some((1, 1))), vec![7; 40], None, 1);
        if id == 500 {
            // Head now, body records interleaved with the other connection's packets.
            s.packet(&b, Direction::ToClient, 9, None, ok(None), vec![3; big], None, big / 65_536);
            let head_and_body = s.records.split_off(s.records.len() - big / 65_536);
            pieces = head_and_body;
        }
        if id > 500 && !pieces.is_empty() && id % 10 == 0 {
            s.records.push(pieces.remove(0));
        }
    }
    s.records.append(&mut pieces);
    let mut enc = PcapngEncoder::new().unwrap_or_else(|e| panic!("{e}"));
    for r in &s.records {
        enc.encode(r).unwrap_or_else(|e| panic!("{e}"));
    }
    (enc.take_output(), big)
}

#[test]
fn records_leave_early_in_file_order_with_bounded_payloads() {
    let (bytes, big) = capture();
    let whole = read_bytes(&bytes).unwrap_or_else(|e| panic!("{e}"));
    let pos = std::rc::Rc::new(std::cell::Cell::new(0));
    let reader = std::io::BufReader::with_capacity(4096, Counting { inner: &bytes, pos: pos.clone() });
    let mut got = Vec::new();
    let mut read_at_first_packet = None;
    let warnings = stream_any(reader, &mut |r| {
        if read_at_first_packet.is_none() && matches!(r.event, DecodedEvent::Packet(_)) {
            read_at_first_packet = Some(pos.get());
        }
        got.push(r);
        ControlFlow::Continue(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty() && whole.warnings.is_empty(), "{warnings:?}");
    assert_eq!(got, whole.records, "streamed and collected records are the same, in the same order");
    let first = read_at_first_packet.unwrap_or(usize::MAX);
    assert!(first < bytes.len() / 100, "first packet after {first} of {} bytes", bytes.len());
    let large = got.iter().find_map(|r| match &r.event {
        DecodedEvent::Packet(p) if p.length as usize == 11 + big => Some(p),
        _ => None,
    });
    let large = large.unwrap_or_else(|| panic!("the large reply was read"));
    assert_eq!(large.payload.as_ref().map(Vec::len), Some(MAX_KEPT_PAYLOAD));
    assert!(!large.truncated, "the capture holds it whole: only the copy kept is cut");
    let replies = got
        .iter()
        .filter(|r| r.conn.id == 1 && matches!(&r.event, DecodedEvent::Packet(p) if p.dir == Direction::ToClient))
        .count();
    assert_eq!(replies, 2_000);
}

#[test]
fn a_sink_can_stop_the_reading() {
    let (bytes, _) = capture();
    let mut n = 0;
    let reader = std::io::BufReader::new(&bytes[..]);
    stream_any(reader, &mut |_| {
        n += 1;
        if n == 10 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, 10);
}
