//! The resume tables step by step, and a property test of the whole protocol: two sides
//! sending numbered frames through the real codec over a stream that is cut at any byte, in
//! any interleaving of sends, deliveries, acks, cuts and reconnects; at the end every frame
//! has arrived exactly once, in order, and no side ever held more than its bound.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

use super::*;
use crate::remote::protocol::codec::FarCodec;
use crate::remote::protocol::frame::{Kind, HEADER_LEN};

fn data(n: u8, len: usize) -> Body {
    Body::Data(Bytes::from(vec![n; len]))
}

#[test]
fn outbound_numbers_keeps_and_releases() {
    let mut out = Outbound::new(1000);
    assert_eq!(out.push(1, data(1, 74)).unwrap(), 1);
    assert_eq!(out.push(1, data(2, 74)).unwrap(), 2);
    assert_eq!(out.push(2, data(3, 74)).unwrap(), 3);
    assert_eq!((out.sent(), out.acked(), out.unacked_frames(), out.unacked_bytes()), (3, 0, 3, 300));
    assert_eq!(out.ack(2).unwrap(), 2);
    assert_eq!((out.acked(), out.unacked_frames(), out.unacked_bytes()), (2, 1, 100));
    // An older ack that arrives late changes nothing.
    assert_eq!(out.ack(1).unwrap(), 0);
    assert_eq!(out.acked(), 2);
    assert!(matches!(out.ack(4), Err(ResumeError::AckAhead { ack: 4, sent: 3 })));
    assert_eq!(out.unacked_frames(), 1, "a refused ack releases nothing");
}

#[test]
fn outbound_is_bounded_but_never_stuck() {
    let mut out = Outbound::new(250);
    out.push(1, data(1, 74)).unwrap();
    out.push(1, data(2, 74)).unwrap();
    assert!(!out.has_room(100));
    let err = out.push(1, data(3, 74)).unwrap_err();
    assert_eq!(err.to_string(), "100 bytes do not fit: 200 of 250 unacknowledged bytes held");
    assert_eq!(out.sent(), 2, "a refused push takes no number");
    out.ack(2).unwrap();
    // An empty table takes one frame larger than the whole limit.
    assert_eq!(out.push(1, data(4, 1000)).unwrap(), 3);
    assert!(!out.has_room(1));
    // A frame that must go out whatever the room goes past the limit.
    assert_eq!(out.push_beyond(1, data(5, 10)).unwrap(), 4);
    assert_eq!(out.unacked_bytes(), 1062);
    out.ack(4).unwrap();
    // A frame the encoder would refuse is never numbered.
    out.ack(3).unwrap();
    assert!(matches!(out.push(1, Body::Data(Bytes::new())), Err(ResumeError::Frame(_))));
    assert_eq!(out.sent(), 4);
    assert!(matches!(out.push_beyond(1, Body::Data(Bytes::new())), Err(ResumeError::Frame(_))));
    assert_eq!(out.sent(), 4);
}

#[test]
fn resume_replays_what_the_other_side_lacks() {
    let mut out = Outbound::new(10_000);
    for n in 1..=5 {
        out.push(7, data(n, 10)).unwrap();
    }
    out.ack(1).unwrap();
    // The other side got 3 (its ack of 2 and 3 were lost with the link).
    let replay: Vec<u64> = out.resume(3).unwrap().map(|(seq, ch, _)| {
        assert_eq!(ch, 7);
        seq
    }).collect();
    assert_eq!(replay, vec![4, 5]);
    assert_eq!(out.acked(), 3);
    // It cannot have less than it acknowledged, nor more than was sent.
    assert!(matches!(out.resume(2), Err(ResumeError::PeerBehind { peer_last: 2, acked: 3 })));
    assert!(matches!(out.resume(6), Err(ResumeError::AckAhead { ack: 6, sent: 5 })));
    assert_eq!(out.resume(5).unwrap().count(), 0);
}

#[test]
fn inbound_takes_only_the_next_frame() {
    let mut inn = Inbound::default();
    inn.take(1).unwrap();
    inn.take(2).unwrap();
    assert!(matches!(inn.take(2), Err(ResumeError::Again { seq: 2, last: 2 })));
    let gap = inn.take(5).unwrap_err();
    assert_eq!(gap.to_string(), "frame 5 came after frame 2: frames 3 to 4 are missing");
    assert_eq!(inn.last(), 2);
    assert_eq!(inn.unacked(), 2);
    inn.told(1);
    assert_eq!(inn.unacked(), 1);
    inn.told(9);
    assert_eq!(inn.unacked(), 0, "told never passes what was taken");
}

#[test]
fn a_refused_frame_changes_nothing() {
    let mut r = Resume::new(Outbound::new(10_000));
    r.send(1, data(1, 5)).unwrap();
    // In order but acking more than was sent: refused, and not taken.
    let bad = Frame { channel: 1, seq: 1, ack: 9, body: data(2, 5) };
    assert!(matches!(r.receive(&bad), Err(ResumeError::AckAhead { .. })));
    assert_eq!(r.inn.last(), 0);
    // Out of order with a good ack: refused, and the ack not taken.
    let bad = Frame { channel: 1, seq: 2, ack: 1, body: data(2, 5) };
    assert!(matches!(r.receive(&bad), Err(ResumeError::Gap { .. })));
    assert_eq!(r.out.acked(), 0);
    let good = Frame { channel: 1, seq: 1, ack: 1, body: data(2, 5) };
    assert_eq!(r.receive(&good).unwrap(), Received::Deliver);
    assert_eq!((r.inn.last(), r.out.acked(), r.out.unacked_frames()), (1, 1, 0));
    let ack = Frame { channel: 0, seq: 0, ack: 1, body: Body::Ack };
    assert_eq!(r.receive(&ack).unwrap(), Received::Link);
}

#[test]
fn frames_going_out_carry_the_current_ack() {
    let mut r = Resume::new(Outbound::new(10_000));
    r.receive(&Frame { channel: 3, seq: 1, ack: 0, body: data(1, 5) }).unwrap();
    assert_eq!(r.inn.unacked(), 1);
    let f = r.send(3, data(2, 5)).unwrap();
    assert_eq!((f.seq, f.ack), (1, 1));
    assert_eq!(r.inn.unacked(), 0);
    r.receive(&Frame { channel: 3, seq: 2, ack: 0, body: data(3, 5) }).unwrap();
    assert_eq!(r.link(Body::Ack).ack, 2);
    let replay = r.reconnect(0).unwrap();
    assert_eq!(replay.iter().map(|f| (f.seq, f.ack)).collect::<Vec<_>>(), vec![(1, 2)]);
}

/// One side of the simulated session.
struct Side {
    resume: Resume,
    /// Bytes of the current connection read but not yet a whole frame.
    partial: BytesMut,
    /// The Hello of the current connection came: replay is done, new frames go straight out.
    linked: bool,
    /// Payloads pushed, in order, and payloads delivered from the other side, in order.
    pushed: Vec<Bytes>,
    delivered: Vec<Bytes>,
}

impl Side {
    fn new(limit: usize) -> Side {
        Side { resume: Resume::new(Outbound::new(limit)), partial: BytesMut::new(), linked: false, pushed: Vec::new(), delivered: Vec::new() }
    }
}

struct World {
    sides: [Side; 2],
    /// Bytes in flight from side i to the other.
    wire: [BytesMut; 2],
    up: bool,
    limit: usize,
}

#[derive(Debug, Clone)]
enum Op {
    Send { from: usize, len: usize },
    Deliver { to: usize, bytes: usize },
    Ack { from: usize },
    Cut,
    Connect,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..2, 1usize..200).prop_map(|(from, len)| Op::Send { from, len }),
        4 => (0usize..2, 1usize..400).prop_map(|(to, bytes)| Op::Deliver { to, bytes }),
        1 => (0usize..2).prop_map(|from| Op::Ack { from }),
        1 => Just(Op::Cut),
        1 => Just(Op::Connect),
    ]
}

impl World {
    fn new(limit: usize) -> World {
        World { sides: [Side::new(limit), Side::new(limit)], wire: [BytesMut::new(), BytesMut::new()], up: false, limit }
    }

    fn write(&mut self, from: usize, frame: &Frame) {
        FarCodec.encode(frame, &mut self.wire[from]).unwrap();
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Send { from, len } => {
                let side = &mut self.sides[from];
                let n = side.pushed.len() as u32;
                let mut payload = n.to_be_bytes().to_vec();
                payload.resize(4 + len, from as u8);
                let bytes = Bytes::from(payload);
                // Backpressure: a side with no room does not read from its VMs.
                if !side.resume.out.has_room(HEADER_LEN + bytes.len()) {
                    return;
                }
                side.pushed.push(bytes.clone());
                let frame = side.resume.send(9, Body::Data(bytes)).unwrap();
                // Before the Hello came, a frame only waits in the table: the replay sends it.
                if self.up && side.linked {
                    self.write(from, &frame);
                }
            }
            Op::Deliver { to, bytes } => {
                let from = 1 - to;
                let n = bytes.min(self.wire[from].len());
                let chunk = self.wire[from].split_to(n);
                self.sides[to].partial.extend_from_slice(&chunk);
                while let Some(frame) = FarCodec.decode(&mut self.sides[to].partial).unwrap() {
                    self.take(to, frame);
                }
            }
            Op::Ack { from } => {
                if self.up && self.sides[from].linked {
                    let f = self.sides[from].resume.link(Body::Ack);
                    self.write(from, &f);
                }
            }
            Op::Cut => {
                // Whatever was in flight is lost, and so is half a frame read on either side.
                self.up = false;
                for i in 0..2 {
                    self.wire[i].clear();
                    self.sides[i].partial.clear();
                    self.sides[i].linked = false;
                }
            }
            Op::Connect => {
                if self.up {
                    return;
                }
                self.up = true;
                for i in 0..2 {
                    let hello = self.sides[i].resume.link(Body::Ping(0));
                    self.write(i, &hello);
                }
            }
        }
        for s in &self.sides {
            assert!(s.resume.out.unacked_bytes() <= self.limit, "{} bytes held", s.resume.out.unacked_bytes());
        }
    }

    /// A frame arrives at side `to`. The simulation's Hello is a Ping: the first link frame
    /// of a connection (the codec's Hello adds only what the session layer checks).
    fn take(&mut self, to: usize, frame: Frame) {
        let side = &mut self.sides[to];
        if !side.linked {
            assert_eq!(frame.body.kind(), Kind::Ping, "the first frame of a connection is its hello");
            side.linked = true;
            let replay = side.resume.reconnect(frame.ack).unwrap();
            for f in &replay {
                self.write(to, f);
            }
            return;
        }
        let got = side.resume.receive(&frame).unwrap();
        if let (Received::Deliver, Body::Data(b)) = (got, &frame.body) {
            side.delivered.push(b.clone());
        }
        let other = &self.sides[1 - to];
        let d = &self.sides[to].delivered;
        assert_eq!(d[..], other.pushed[..d.len()], "delivered out of order or twice");
    }

    /// A last connection that nobody cuts, until everything has arrived.
    fn finish(&mut self) {
        self.apply(&Op::Cut);
        self.apply(&Op::Connect);
        for _ in 0..10_000 {
            if self.wire.iter().all(|w| w.is_empty()) {
                break;
            }
            self.apply(&Op::Deliver { to: 0, bytes: usize::MAX });
            self.apply(&Op::Deliver { to: 1, bytes: usize::MAX });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_cuts_in_any_interleaving_deliver_every_frame_once_in_order(
        ops in proptest::collection::vec(op(), 0..120),
        limit in 300usize..3000,
    ) {
        let mut world = World::new(limit);
        world.apply(&Op::Connect);
        for op in &ops {
            world.apply(op);
        }
        world.finish();
        for i in 0..2 {
            prop_assert_eq!(&world.sides[1 - i].delivered, &world.sides[i].pushed, "from side {}", i);
        }
    }
}

#[test]
fn acks_go_out_after_a_delay_or_at_once_when_many_wait() {
    let mut r = Resume::new(Outbound::new(100_000));
    let t0 = std::time::Instant::now();
    let mut ack_at = None;
    r.receive(&Frame { channel: 1, seq: 1, ack: 0, body: data(1, 5) }).unwrap();
    assert!(r.after_delivery(&mut ack_at, t0).is_none());
    assert_eq!(ack_at, Some(t0 + ACK_DELAY));
    // A later delivery keeps the first deadline.
    r.receive(&Frame { channel: 1, seq: 2, ack: 0, body: data(2, 5) }).unwrap();
    assert!(r.after_delivery(&mut ack_at, t0 + ACK_DELAY / 2).is_none());
    assert_eq!(ack_at, Some(t0 + ACK_DELAY));
    for seq in 3..=ACK_EVERY {
        r.receive(&Frame { channel: 1, seq, ack: 0, body: data(seq as u8, 5) }).unwrap();
    }
    let ack = r.after_delivery(&mut ack_at, t0).expect("an Ack at once with ACK_EVERY waiting");
    assert_eq!((ack.body, ack.ack, ack.seq), (Body::Ack, ACK_EVERY, 0));
    assert_eq!(r.inn.unacked(), 0);
}

#[test]
fn the_ack_timer_is_armed_once_and_moved_on_never_pulled_earlier() {
    let mut t: AckTimer<u64> = AckTimer::default();
    assert_eq!(t.due(None), None, "nothing due, nothing armed");
    assert_eq!(t.due(Some(20)), Some(20), "armed at the first ack_at");
    // The reply carried the ack (ack_at cleared), the next command set it again later: the
    // timer stays where it was.
    assert_eq!(t.due(None), Some(20));
    assert_eq!(t.due(Some(25)), Some(20));
    // It fires before the ack is due: no ack, and it is armed on at ack_at.
    assert!(!t.fired(Some(25), 20));
    assert_eq!(t.due(Some(25)), Some(25));
    // Due now: the ack goes.
    assert!(t.fired(Some(25), 25));
    assert_eq!(t.due(None), None);
    // Fired with nothing due: disarmed until the next ack_at.
    assert_eq!(t.due(Some(40)), Some(40));
    assert!(!t.fired(None, 40));
    assert_eq!(t.due(None), None);
    assert_eq!(t.due(Some(70)), Some(70));
    t.reset();
    assert_eq!(t.due(None), None, "a new connection arms nothing");
}

proptest! {
    /// Whatever the order of deliveries, replies and firings, an ack is said due exactly when
    /// `ack_at` has passed at a firing, and the timer is never moved earlier than it was armed.
    #[test]
    fn the_ack_timer_fires_no_later_than_ack_at(steps in proptest::collection::vec(0u8..3, 1..200)) {
        let mut t: AckTimer<u64> = AckTimer::default();
        let (mut now, mut ack_at): (u64, Option<u64>) = (0, None);
        let mut armed: Option<u64> = None;
        for s in steps {
            now += 1;
            match s {
                0 => { ack_at.get_or_insert(now + 20); }
                1 => ack_at = None,
                _ => {
                    if let Some(at) = armed.filter(|a| *a <= now) {
                        let due = ack_at.is_some_and(|x| x <= now);
                        prop_assert_eq!(t.fired(ack_at, now), due);
                        prop_assert!(at <= now);
                        if due { ack_at = None; }
                    }
                }
            }
            let next = t.due(ack_at);
            if let (Some(before), Some(after)) = (armed, next) {
                prop_assert!(after >= before || before <= now, "moved earlier: {} -> {}", before, after);
            }
            if let Some(at) = ack_at {
                prop_assert!(next.is_some_and(|n| n <= at), "armed {:?} after ack_at {}", next, at);
            }
            armed = next;
        }
    }
}
