use std::time::{Duration, Instant};

use super::*;
use super::harness::*;
use super::super::FAR_IDS;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::packet::{Header, Packet, HEADER_LEN};
use proptest::prelude::*;

#[test]
fn a_stop_is_gathered_and_its_answers_go_before_the_event() {
    let vm = [&HANDSHAKE[..], &reply(5, b"version"), &stop_event(9, 2), &reply(6, b"\0\0\0\x04main")].concat();
    let run = drive(&near_bytes(), usize::MAX, &vm, &[4096]);
    assert_eq!(run.to_near, vm, "the near side gets every byte the VM sent it, in order, and none of jdwpmux's");
    assert_eq!(run.gathered.len(), 1);
    let (at, answers) = &run.gathered[0];
    assert_eq!(*at, HANDSHAKE.len() + reply(5, b"version").len(), "just before the event");
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (9, 2, THREAD));
    let cmds: Vec<(u8, u8)> = answers.answers.iter().map(|g| (g.key.set, g.key.cmd)).collect();
    for c in [(11, 1), (11, 4), (11, 7), (11, 6), (16, 3), (6, 5), (16, 1)] {
        assert!(cmds.contains(&c), "{c:?} gathered: {cmds:?}");
    }
    let local = answers.answers.iter().find(|g| (g.key.set, g.key.cmd) == (16, 1)).map(|g| g.reply.clone());
    assert_eq!(local, Some(vec![0, 0, 0, 1, b'I', 0, 0, 0, 7]));
}

#[test]
fn own_commands_wait_for_the_near_sides_packet_to_end() {
    let near = near_bytes();
    // The near side's second packet is cut in its middle when the VM's handshake arrives.
    let mid = HANDSHAKE.len() + cmd(5, 1, 1, &[]).len() + 5;
    let run = drive(&near, mid, &HANDSHAKE[..], &[3]);
    let sent = packets(&run.to_vm[HANDSHAKE.len()..]);
    let theirs: Vec<u8> = sent.iter().filter(|p| !FAR_IDS.contains(&Header::parse(p).map_or(0, |h| h.id))).flatten().copied().collect();
    assert_eq!([&HANDSHAKE[..], &theirs].concat(), near);
    assert_eq!(sent.len(), 3, "IDSizes went between packets");
}

#[test]
fn a_hold_past_its_time_lets_the_event_go_without_answers() {
    let now = Instant::now();
    let mut relay = Relay::new(true, Limits::default());
    relay.from_near(&HANDSHAKE[..], Instant::now());
    let outs = relay.from_vm(&HANDSHAKE[..], now);
    let Some(Out::ToVm(sizes_cmd)) = outs.last() else { panic!("IDSizes asked: {outs:?}") };
    let id = Header::parse(sizes_cmd).map(|h| h.id).unwrap_or(0);
    relay.from_vm(&reply(id, &vm_answer(1, 7)), now);
    let event = stop_event(3, 1);
    let outs = relay.from_vm(&event, now);
    assert!(outs.iter().all(|o| matches!(o, Out::ToVm(_))), "the event is held: {outs:?}");
    assert_eq!(relay.deadline(), Some(now + HOLD_TIME));
    assert!(relay.tick(now + Duration::from_millis(10)).is_empty());
    assert_eq!(relay.tick(now + HOLD_TIME), vec![Out::ToNear(event)]);
    assert_eq!(relay.deadline(), None);
}

#[test]
fn without_gathering_or_at_a_stop_that_suspends_nothing_bytes_pass() {
    let vm = [&HANDSHAKE[..], &stop_event(4, 0), &reply(5, &[1, 2, 3])].concat();
    let run = drive(&near_bytes(), usize::MAX, &vm, &[7]);
    assert_eq!(run.to_near, vm);
    assert!(run.gathered.is_empty());
    let now = Instant::now();
    let mut relay = Relay::new(false, Limits::default());
    relay.from_near(&near_bytes(), Instant::now());
    let mut got = Vec::new();
    for o in relay.from_vm(&vm, now) {
        let Out::ToNear(b) = o else { panic!("nothing of its own without gathering: {o:?}") };
        got.extend(b);
    }
    assert_eq!(got, vm);
}

#[test]
fn a_large_reply_streams_through_in_pieces() {
    let big = reply(5, &vec![7u8; 300_000]);
    let now = Instant::now();
    let mut relay = Relay::new(true, Limits::default());
    relay.from_near(&near_bytes(), Instant::now());
    relay.from_vm(&HANDSHAKE[..], now);
    let mut got = 0;
    for piece in big.chunks(1000) {
        let outs = relay.from_vm(piece, now);
        let n: usize = outs.iter().map(|o| if let Out::ToNear(b) = o { b.len() } else { 0 }).sum();
        assert!(n >= piece.len().saturating_sub(HEADER_LEN), "each piece goes on as it comes");
        got += n;
    }
    assert_eq!(got, big.len());
}

proptest! {
    /// However the two streams are cut: the near side gets exactly the VM's bytes meant for
    /// it, in order; the VM gets exactly the near side's bytes with whole commands of
    /// jdwpmux's between its packets; the answers come just before their event.
    #[test]
    fn any_cutting_keeps_both_streams(cuts in prop::collection::vec(1usize..64, 1..8), near_cut in 0usize..80, policy in 0u8..3) {
        let vm = [&HANDSHAKE[..], &reply(5, b"v"), &stop_event(9, policy), &reply(6, b"\0\0\0\x01m"), &stop_event(10, 2)].concat();
        let near = near_bytes();
        let run = drive(&near, near_cut, &vm, &cuts);
        prop_assert_eq!(&run.to_near, &vm);
        let sent = packets(&run.to_vm[HANDSHAKE.len()..]);
        let theirs: Vec<u8> = sent.iter().filter(|p| !FAR_IDS.contains(&Header::parse(p).map_or(0, |h| h.id))).flatten().copied().collect();
        prop_assert_eq!([&HANDSHAKE[..], &theirs].concat(), near);
        let event_at = HANDSHAKE.len() + reply(5, b"v").len();
        let second_at = event_at + stop_event(9, policy).len() + reply(6, b"\0\0\0\x01m").len();
        let at: Vec<(usize, u32)> = run.gathered.iter().map(|(at, a)| (*at, a.event_id)).collect();
        if policy == 0 {
            prop_assert_eq!(at, vec![(second_at, 10)], "a stop that suspends nothing is not gathered; the next is");
        } else {
            prop_assert_eq!(at, vec![(event_at, 9)], "the second stop came while the first was held: it passes");
        }
    }
}

#[test]
fn the_answers_packet_takes_an_id_none_of_jdwpmuxs_commands_has() {
    let mut relay = Relay::new(true, Limits::default());
    let now = Instant::now();
    relay.from_near(&HANDSHAKE[..], Instant::now());
    let outs = relay.from_vm(&HANDSHAKE[..], now);
    let sent: Vec<u32> = outs
        .iter()
        .filter_map(|o| match o {
            Out::ToVm(b) if b.len() >= HEADER_LEN => Header::parse(b).map(|h| h.id),
            _ => None,
        })
        .collect();
    assert_eq!(sent, vec![*FAR_IDS.start()], "the id sizes are asked first");
    let own = relay.own_id();
    assert!(FAR_IDS.contains(&own) && !sent.contains(&own));
    // The next command of the relay's takes the id after it.
    assert_ne!(relay.own_id(), own);
}

/// A class lookup's reply: one class, tag CLASS, id 0x30, status initialized.
fn lookup_reply(id: u32) -> Vec<u8> {
    reply(id, &[&1u32.to_be_bytes()[..], &[1], &0x30u64.to_be_bytes(), &7i32.to_be_bytes()].concat())
}

#[test]
fn a_class_lookups_reply_comes_after_the_class_data_jdi_asks_next() {
    let near = [&HANDSHAKE[..], &cmd(5, 1, 2, b"\0\0\0\x08LLedger;"), &cmd(6, 1, 1, &[])].concat();
    let vm = [&HANDSHAKE[..], &lookup_reply(5), &reply(6, b"version")].concat();
    let run = drive(&near, usize::MAX, &vm, &[4096]);
    assert_eq!(run.to_near, vm, "every byte the VM sent the near side, in order");
    assert_eq!(run.gathered.len(), 1, "{:?}", run.gathered);
    let (at, answers) = &run.gathered[0];
    assert_eq!(*at, HANDSHAKE.len(), "just before the lookup's reply");
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (5, 0, 0), "nothing of a stop");
    let mut cmds: Vec<(u8, u8)> = answers.answers.iter().map(|g| (g.key.set, g.key.cmd)).collect();
    cmds.sort();
    assert_eq!(cmds, vec![(2, 7), (2, 10), (2, 13), (2, 14), (2, 15), (3, 1), (6, 1)]);
    assert!(answers.answers.iter().all(|g| g.key.data.starts_with(&0x30u64.to_be_bytes())));
    let table = answers.answers.iter().find(|g| (g.key.set, g.key.cmd) == (6, 1)).map(|g| g.key.data.clone());
    assert_eq!(table, Some([0x30u64.to_be_bytes(), 0x60u64.to_be_bytes()].concat()), "work's line table");
}

/// A ClassPrepare request (suspend policy EVENT_THREAD) with one ClassMatch pattern.
fn prepare_request(pattern: &str) -> Vec<u8> {
    let mut d = vec![8, 1, 0, 0, 0, 1, 5];
    d.extend_from_slice(&(pattern.len() as u32).to_be_bytes());
    d.extend_from_slice(pattern.as_bytes());
    d
}

#[test]
fn a_prepare_request_for_one_class_reads_it_before_what_follows_the_request() {
    // jdb: the ClassPrepare request of `stop at Ledger:33`, then allClasses().
    let near = [cmd(5, 15, 1, &prepare_request("Ledger")), cmd(6, 1, 20, &[])].concat();
    let vm = [reply(5, &9u32.to_be_bytes()), reply(6, b"the classes")].concat();
    let run = after_sizes(&near, &vm);
    assert_eq!(run.to_near, vm, "every byte the VM sent the near side, in order");
    assert_eq!(run.gathered.len(), 1, "{:?}", run.gathered);
    let (at, answers) = &run.gathered[0];
    assert_eq!(*at, 0, "before the request's reply");
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (5, 0, 0), "nothing of a stop");
    let mut cmds: Vec<(u8, u8)> = answers.answers.iter().map(|g| (g.key.set, g.key.cmd)).collect();
    cmds.sort();
    assert_eq!(cmds, vec![(1, 2), (2, 7), (2, 10), (2, 13), (2, 14), (2, 15), (3, 1), (6, 1)]);
    let lookup = answers.answers.iter().find(|g| (g.key.set, g.key.cmd) == (1, 2)).map(|g| g.key.data.clone());
    assert_eq!(lookup, Some(b"\0\0\0\x08LLedger;".to_vec()));
    // A pattern, or another kind of request: nothing is read.
    for d in [prepare_request("Ledger*"), prepare_request("*.Ledger"), [&[4u8, 0, 0, 0, 0, 0][..]].concat()] {
        let vm = reply(5, &9u32.to_be_bytes());
        let run = after_sizes(&cmd(5, 15, 1, &d), &vm);
        assert_eq!(run.to_near, vm);
        assert!(run.gathered.is_empty(), "{d:?}: {:?}", run.gathered);
    }
}

#[test]
fn a_reply_to_another_command_or_a_failed_lookup_is_not_held() {
    // Id 5 looked up a class but the VM refused; id 6 was no lookup though its reply parses as one.
    let near = [&HANDSHAKE[..], &cmd(5, 1, 2, b"\0\0\0\x01L"), &cmd(6, 1, 1, &[])].concat();
    let refused = Packet::reply(5, 100, &[]).as_bytes().to_vec();
    let vm = [&HANDSHAKE[..], &refused, &lookup_reply(6)].concat();
    let run = drive(&near, usize::MAX, &vm, &[7]);
    assert_eq!(run.to_near, vm);
    assert!(run.gathered.is_empty(), "{:?}", run.gathered);
}

/// The relay's own commands never land inside a packet of the near side's: a ClassPrepare
/// request followed, in the same read, by the head of another command.
#[test]
fn a_prepare_requests_lookup_waits_for_the_near_sides_packet_to_end() {
    let mut t = ToVm::past_sizes();
    let next = cmd(6, 1, 20, &[]);
    t.near(&[cmd(5, 15, 1, &prepare_request("Ledger")), next[..5].to_vec()].concat());
    t.near(&next[5..]);
    let kinds = t.kinds();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert_eq!(&kinds[1..3], &[(5, 15, 1), (6, 1, 20)], "the near side's packets whole and in order");
    assert!(FAR_IDS.contains(&kinds[3].0) && (kinds[3].1, kinds[3].2) == (1, 2), "then the lookup: {kinds:?}");
}

/// Resumes in `bytes`: whole VirtualMachine.Resume commands of jdwpmux's own, none else.
fn resumes(bytes: &[u8]) -> usize {
    let all = packets(bytes);
    for p in &all {
        let h = Header::parse(p).expect("a header");
        assert!(!h.is_reply() && (h.cmd_set(), h.cmd()) == (1, 9) && FAR_IDS.contains(&h.id), "{p:?}");
    }
    all.len()
}

#[test]
fn letting_go_resumes_what_the_agent_still_counts_suspended_vm_wide() {
    let now = Instant::now();
    // Not gathering: the count is kept either way, events streamed or read whole.
    for gather in [false, true] {
        let mut r = Relay::new(gather, Limits::default());
        r.from_vm(HANDSHAKE, now);
        r.from_near(HANDSHAKE, now);
        assert_eq!(resumes(&r.let_go()), 0, "nothing suspended");
        // Two suspend-all events (one split inside its policy byte's packet), one of policy
        // EVENT_THREAD, and a VirtualMachine.Suspend; one Resume.
        let all = stop_event(0x10, 2);
        r.from_vm(&all[..HEADER_LEN], now);
        r.from_vm(&all[HEADER_LEN..], now);
        r.from_vm(&stop_event(0x11, 1), now);
        r.from_near(&cmd(3, 1, 8, &[]), now);
        r.from_near(&cmd(4, 1, 9, &[]), now);
        r.from_vm(&stop_event(0x12, 2), now);
        assert_eq!(resumes(&r.let_go()), 2, "gather={gather}");
    }
}

#[test]
fn letting_go_in_the_middle_of_the_near_sides_packet_sends_nothing() {
    let now = Instant::now();
    let mut r = Relay::new(false, Limits::default());
    r.from_vm(HANDSHAKE, now);
    r.from_near(HANDSHAKE, now);
    r.from_vm(&stop_event(0x10, 2), now);
    let half = cmd(5, 1, 1, &[0; 8]);
    r.from_near(&half[..7], now);
    assert!(r.let_go().is_empty(), "the VM would read the resume as the rest of a command");
}

#[test]
fn a_classs_first_command_reads_its_data_before_its_reply() {
    // IntelliJ after allClasses(): Ledger (0x30) found in JDI's own list, asked about by id.
    let class = 0x30u64.to_be_bytes();
    let near = [cmd(5, 2, 10, &class), cmd(6, 1, 1, &[])].concat();
    let vm = [reply(5, &0u32.to_be_bytes()), reply(6, b"version")].concat();
    let run = after_sizes(&near, &vm);
    assert_eq!(run.to_near, vm, "every byte the VM sent the near side, in order");
    assert_eq!(run.gathered.len(), 1, "{:?}", run.gathered);
    let (at, answers) = &run.gathered[0];
    assert_eq!(*at, 0, "before the command's reply");
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (5, 0, 0), "nothing of a stop");
    let mut cmds: Vec<(u8, u8)> = answers.answers.iter().map(|g| (g.key.set, g.key.cmd)).collect();
    cmds.sort();
    assert_eq!(cmds, vec![(1, 2), (2, 1), (2, 7), (2, 10), (2, 13), (2, 14), (2, 15), (3, 1), (6, 1)]);
    // A command not about class data, or about no class: nothing is read.
    for (set, c, data) in [(2u8, 6u8, class.to_vec()), (2, 10, 0u64.to_be_bytes().to_vec()), (2, 10, vec![0, 0, 0])] {
        let vm = reply(5, &0u32.to_be_bytes());
        let run = after_sizes(&cmd(5, set, c, &data), &vm);
        assert_eq!(run.to_near, vm);
        assert!(run.gathered.is_empty(), "({set}, {c}) {data:?}: {:?}", run.gathered);
    }
}

/// A relay past both handshakes and its id sizes, then each (command, reply) in turn: the
/// command from the near side, its reply from the VM, the relay's own commands answered
/// until none is left. Everything the relay gave after the id sizes.
fn one_by_one(exchanges: &[(Vec<u8>, Vec<u8>)]) -> Run {
    let now = Instant::now();
    let mut relay = Relay::new(true, Limits::default());
    let mut run = Run::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    record(relay.from_near(&HANDSHAKE[..], now), &mut run);
    record(relay.from_vm(&HANDSHAKE[..], now), &mut run);
    answer_own(&run, &mut seen, &mut pending);
    record(relay.from_vm(&std::mem::take(&mut pending), now), &mut run);
    answer_own(&run, &mut seen, &mut pending);
    let mut run = Run { to_vm: run.to_vm, ..Run::default() };
    for (command, reply) in exchanges {
        record(relay.from_near(command, now), &mut run);
        answer_own(&run, &mut seen, &mut pending);
        let mut input = reply.clone();
        while !input.is_empty() {
            record(relay.from_vm(&input, now), &mut run);
            answer_own(&run, &mut seen, &mut pending);
            input = std::mem::take(&mut pending);
        }
    }
    run
}

/// The relay's own commands in what went to the VM (after the near side's handshake).
fn own_commands(to_vm: &[u8]) -> usize {
    packets(&to_vm[HANDSHAKE.len().min(to_vm.len())..]).iter().filter(|p| Header::parse(p).is_some_and(|h| FAR_IDS.contains(&h.id))).count()
}

#[test]
fn a_class_is_read_once_however_often_it_is_looked_up_until_a_redefinition() {
    // JDI's ClassType.setValue looks the value's class up by name each time (UTF8Test: once
    // for every string it sets): Ledger (0x30) is read at the first lookup only, and not
    // again at a first command about it by id.
    let lookup = |id| (cmd(id, 1, 2, b"\0\0\0\x08LLedger;"), lookup_reply(id));
    let first = own_commands(&one_by_one(&[]).to_vm);
    let once = one_by_one(&[lookup(5)]);
    let reads = own_commands(&once.to_vm) - first;
    assert!(reads > 0 && once.gathered.len() == 1, "{reads} commands, {:?}", once.gathered);
    let by_id = (cmd(8, 2, 10, &0x30u64.to_be_bytes()), reply(8, &0u32.to_be_bytes()));
    let run = one_by_one(&[lookup(5), lookup(6), lookup(7), by_id.clone()]);
    let vm: Vec<u8> = [lookup(5).1, lookup(6).1, lookup(7).1, by_id.1].concat();
    assert_eq!(run.to_near, vm, "every byte the VM sent the near side, in order");
    assert_eq!(run.gathered.len(), 1, "{:?}", run.gathered);
    assert_eq!(own_commands(&run.to_vm) - first, reads, "the class data read once");
    // A RedefineClasses may change what was read: the next lookup reads it again.
    let redefine = (cmd(6, 1, 18, &[0, 0, 0, 0]), reply(6, &[]));
    let run = one_by_one(&[lookup(5), redefine, lookup(7)]);
    assert_eq!(run.gathered.len(), 2, "{:?}", run.gathered);
    assert_eq!(own_commands(&run.to_vm) - first, 2 * reads);
}
