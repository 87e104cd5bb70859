use bytes::BytesMut;

use super::*;
use crate::jdwp::packet::Header;
use crate::jdwp::events::suspend;
use crate::remote::stop_answers::relay::harness::{cmd, packets, reply, stop_event, vm_answer, THREAD};
use crate::remote::stop_answers::relay::HOLD_TIME;
use crate::remote::stop_answers::FAR_IDS;

/// A session's VM socket with the relay between: what went to the VM, what the session's
/// decoder got, and how much of what went to the VM was answered.
struct Wire {
    stops: LocalStops,
    vm_out: BytesMut,
    input: BytesMut,
    answered: usize,
}

impl Wire {
    fn start() -> Wire {
        let mut vm_out = BytesMut::new();
        let stops = LocalStops::start(LOCAL_LIMITS, &mut vm_out);
        Wire { stops, vm_out, input: BytesMut::new(), answered: 0 }
    }

    /// The VM answers the relay's own commands sent since last time, as a HotSpot VM would.
    fn vm_answers_own(&mut self) {
        let mut replies = Vec::new();
        for p in packets(&self.vm_out[self.answered..]) {
            self.answered += p.len();
            let Some(h) = Header::parse(&p) else { continue };
            if FAR_IDS.contains(&h.id) {
                replies.extend_from_slice(&reply(h.id, &vm_answer(h.cmd_set(), h.cmd())));
            }
        }
        if !replies.is_empty() {
            self.stops.vm_sent(&replies, &mut self.vm_out, &mut self.input);
        }
    }

    fn vm(&mut self, b: &[u8]) {
        self.stops.vm_sent(b, &mut self.vm_out, &mut self.input);
    }

    fn session(&mut self, b: &[u8]) {
        self.stops.session_wrote(b, &mut self.vm_out);
        self.stops.take_pending(&mut self.input);
    }

    /// (id, set, cmd) of what went to the VM.
    fn sent(&self) -> Vec<(u32, u8, u8)> {
        packets(&self.vm_out).iter().filter_map(|p| Header::parse(p)).map(|h| (h.id, h.cmd_set(), h.cmd())).collect()
    }
}

#[test]
fn bytes_that_are_not_a_stop_pass_unchanged_and_the_relays_replies_stay_out() {
    let mut w = Wire::start();
    let first = w.sent();
    assert_eq!(first.len(), 1, "the id sizes are asked at once");
    assert_eq!((first[0].1, first[0].2), (1, 7));
    assert!(FAR_IDS.contains(&first[0].0));
    let version = cmd(5, 1, 1, &[]);
    // Cut anywhere, the session's command reaches the VM whole and unchanged.
    w.session(&version[..4]);
    w.session(&version[4..]);
    assert_eq!(&w.vm_out[w.vm_out.len() - version.len()..], &version[..]);
    w.vm_answers_own();
    assert!(w.input.is_empty(), "the reply to the relay's own IDSizes never reaches the session");
    let answer = reply(5, b"\0\0\0\x02vm");
    w.vm(&answer[..3]);
    w.vm(&answer[3..]);
    assert_eq!(&w.input[..], &answer[..]);
}

#[test]
fn a_stop_comes_to_the_session_with_its_answers_before_the_event() {
    let mut w = Wire::start();
    w.vm_answers_own();
    let event = stop_event(0x44, suspend::ALL);
    w.vm(&event);
    assert!(w.input.is_empty(), "the event is held while its answers are read");
    assert!(w.stops.holding());
    for _ in 0..20 {
        w.vm_answers_own();
    }
    assert!(!w.stops.holding());
    let got = packets(&w.input);
    assert_eq!(got.len(), 2, "the answers, then the event");
    let h = Header::parse(&got[0]).expect("a header");
    assert!(inband::is_answers(&h));
    let answers = inband::answers(&got[0][crate::jdwp::packet::HEADER_LEN..]).expect("readable answers");
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (0x44, suspend::ALL, THREAD));
    assert!(answers.answers.iter().any(|g| (g.key.set, g.key.cmd) == (11, 6)), "the thread's frames are among them");
    assert!(!answers.answers.iter().any(|g| (g.key.set, g.key.cmd) == (1, 4)), "no threads view read locally");
    assert_eq!(got[1], event);
}

#[test]
fn a_stop_whose_reading_takes_too_long_goes_on_without_answers() {
    let mut w = Wire::start();
    w.vm_answers_own();
    let event = stop_event(0x45, suspend::ALL);
    w.vm(&event);
    assert!(w.stops.holding());
    let mut out = BytesMut::new();
    w.stops.tick(Instant::now(), &mut out);
    assert!(w.stops.holding(), "not before its deadline");
    w.stops.tick(Instant::now() + HOLD_TIME, &mut out);
    assert!(!w.stops.holding());
    assert!(w.stops.take_pending(&mut w.input));
    assert_eq!(&w.input[..], &event[..]);
}

#[test]
fn a_command_the_session_writes_during_a_hold_reaches_the_vm_at_once() {
    let mut w = Wire::start();
    w.vm_answers_own();
    w.vm(&stop_event(0x46, suspend::ALL));
    let status = cmd(9, 11, 4, &THREAD.to_be_bytes());
    let before = w.vm_out.len();
    w.session(&status);
    assert!(w.vm_out[before..].windows(status.len()).any(|s| s == &status[..]));
}
