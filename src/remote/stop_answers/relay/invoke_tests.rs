//! The far side's relay and an invoke's returned String: read before the invoke's reply
//! goes on, between the near side's packets, within the bounds of the other holds.

use std::time::Instant;

use super::*;
use super::harness::{after_sizes, cmd, packets, past_sizes, record, reply, ToVm, THREAD};
use super::super::FAR_IDS;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::packet::{Header, Packet};

/// An invoke's reply: the returned value (`tag`, `id`) and no exception.
fn invoke_reply(id: u32, tag: u8, value: u64) -> Vec<u8> {
    reply(id, &[&[tag][..], &value.to_be_bytes(), b"L", &0u64.to_be_bytes()].concat())
}

/// ObjectReference.InvokeMethod of toString() on `this` (0x40), thread THREAD, no arguments.
fn invoke_cmd(id: u32, set: u8, c: u8) -> Vec<u8> {
    let mut d = 0x40u64.to_be_bytes().to_vec();
    d.extend_from_slice(&THREAD.to_be_bytes());
    d.extend_from_slice(&0x30u64.to_be_bytes());
    d.extend_from_slice(&0x60u64.to_be_bytes());
    d.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2]);
    cmd(id, set, c, &d)
}

#[test]
fn an_invokes_string_is_read_before_its_reply_goes_on() {
    // ObjectReference, ClassType and InterfaceType invokes alike.
    for (set, c) in [(9u8, 6u8), (3, 3), (5, 1)] {
        let near = [invoke_cmd(5, set, c), cmd(6, 1, 1, &[])].concat();
        let vm = [invoke_reply(5, b's', 0x5A), reply(6, b"version")].concat();
        let run = after_sizes(&near, &vm);
        assert_eq!(run.to_near, vm, "every byte the VM sent the near side, in order");
        assert_eq!(run.gathered.len(), 1, "({set}, {c}): {:?}", run.gathered);
        let (at, answers) = &run.gathered[0];
        assert_eq!(*at, 0, "before the invoke's reply");
        assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (5, 0, 0), "nothing of a stop");
        assert_eq!(answers.answers.len(), 1);
        let g = &answers.answers[0];
        assert_eq!((g.key.set, g.key.cmd, &g.key.data[..]), (10, 1, &0x5Au64.to_be_bytes()[..]));
        assert_eq!(g.reply, b"\0\0\0\x0eLedger(ann, 0)".to_vec());
    }
}

#[test]
fn an_invokes_string_is_asked_between_the_near_sides_packets() {
    let mut t = ToVm::past_sizes();
    t.near(&invoke_cmd(5, 9, 6));
    // The reply comes while the near side's next command is half written.
    let next = cmd(6, 11, 1, &THREAD.to_be_bytes());
    t.near(&next[..7]);
    t.vm(&invoke_reply(5, b's', 0x5A));
    t.near(&next[7..]);
    let kinds = t.kinds();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert_eq!(&kinds[1..3], &[(5, 9, 6), (6, 11, 1)], "the near side's packets whole and in order");
    assert!(FAR_IDS.contains(&kinds[3].0) && (kinds[3].1, kinds[3].2) == (10, 1), "then the string's value: {kinds:?}");
}

#[test]
fn an_invoke_that_failed_or_returned_no_string_passes_untouched() {
    let threw = reply(5, &[&[b's'][..], &0x5Au64.to_be_bytes(), b"L", &0x77u64.to_be_bytes()].concat());
    for vm in [invoke_reply(5, b'L', 0x5A), invoke_reply(5, b's', 0), invoke_reply(5, b'I', 7), Packet::reply(5, 20, &[]).as_bytes().to_vec(), threw] {
        let run = after_sizes(&invoke_cmd(5, 9, 6), &vm);
        assert_eq!(run.to_near, vm);
        assert!(run.gathered.is_empty(), "{vm:?}: {:?}", run.gathered);
    }
    // A string returned to a command that is no invoke (ClassType.NewInstance among them).
    for (set, c) in [(3u8, 4u8), (9, 2)] {
        let vm = invoke_reply(5, b's', 0x5A);
        let run = after_sizes(&invoke_cmd(5, set, c), &vm);
        assert_eq!(run.to_near, vm);
        assert!(run.gathered.is_empty(), "({set}, {c}): {:?}", run.gathered);
    }
    // Without gathering, nothing is read.
    let now = Instant::now();
    let mut r = Relay::new(false, Limits::default());
    r.from_near(HANDSHAKE, now);
    r.from_vm(HANDSHAKE, now);
    r.from_near(&invoke_cmd(5, 9, 6), now);
    let outs = r.from_vm(&invoke_reply(5, b's', 0x5A), now);
    assert_eq!(outs, vec![Out::ToNear(invoke_reply(5, b's', 0x5A))]);
}

#[test]
fn a_huge_string_is_not_kept_and_the_reply_goes_on() {
    // Past the plan's kept bytes (read, not kept), and past MAX_OWN_REPLY (skipped unread).
    for len in [Limits::default().bytes + 1, MAX_OWN_REPLY + 1] {
        let now = Instant::now();
        let (mut relay, mut run) = past_sizes(now);
        let sent = run.to_vm.len();
        record(relay.from_near(&invoke_cmd(5, 9, 6), now), &mut run);
        record(relay.from_vm(&invoke_reply(5, b's', 0x5A), now), &mut run);
        assert!(run.to_near.is_empty(), "the reply is held while the string is read");
        let own = packets(&run.to_vm[sent..]).iter().filter_map(|p| Header::parse(p)).find(|h| FAR_IDS.contains(&h.id)).map(|h| h.id).expect("the string asked");
        let mut value = (len as u32 - 4).to_be_bytes().to_vec();
        value.resize(len, b'x');
        let big = reply(own, &value);
        for piece in big.chunks(64 * 1024) {
            record(relay.from_vm(piece, now), &mut run);
        }
        assert!(run.gathered.is_empty(), "{len} bytes: no answer");
        assert_eq!(run.to_near, invoke_reply(5, b's', 0x5A), "the reply goes on, alone");
    }
}

#[test]
fn an_invokes_reply_held_past_its_time_goes_on_without_the_string() {
    let now = Instant::now();
    let (mut relay, mut run) = past_sizes(now);
    record(relay.from_near(&invoke_cmd(5, 9, 6), now), &mut run);
    record(relay.from_vm(&invoke_reply(5, b's', 0x5A), now), &mut run);
    assert!(run.to_near.is_empty());
    assert_eq!(relay.deadline(), Some(now + HOLD_TIME));
    record(relay.tick(now + HOLD_TIME), &mut run);
    assert!(run.gathered.is_empty());
    assert_eq!(run.to_near, invoke_reply(5, b's', 0x5A));
}
