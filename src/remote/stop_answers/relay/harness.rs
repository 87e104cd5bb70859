//! The far relay's test harness: packets as bytes, a relay driven through a script of the
//! near side's and the VM's bytes cut anywhere, and what it sent each way.

use std::time::Instant;

use super::*;
use super::super::FAR_IDS;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::packet::{Header, Packet};

pub(crate) const THREAD: u64 = 0x51;

pub(crate) fn cmd(id: u32, set: u8, c: u8, data: &[u8]) -> Vec<u8> {
    Packet::command(id, set, c, data).as_bytes().to_vec()
}

pub(crate) fn reply(id: u32, data: &[u8]) -> Vec<u8> {
    Packet::reply(id, 0, data).as_bytes().to_vec()
}

/// Packets of a stream (no handshake), whole.
pub(crate) fn packets(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some(h) = Header::parse(b) {
        let len = h.length as usize;
        v.push(b[..len].to_vec());
        b = &b[len..];
    }
    assert!(b.is_empty(), "a stream ends at a packet boundary");
    v
}

pub(crate) fn stop_event(id: u32, policy: u8) -> Vec<u8> {
    let mut d = vec![policy, 0, 0, 0, 1, 2];
    d.extend_from_slice(&7u32.to_be_bytes());
    d.extend_from_slice(&THREAD.to_be_bytes());
    d.push(1);
    d.extend_from_slice(&[0; 16]);
    d.extend_from_slice(&5u64.to_be_bytes());
    cmd(id, 64, 100, &d)
}

/// What a HotSpot VM with 8-byte ids would answer to the commands the plan sends.
pub(crate) fn vm_answer(set: u8, c: u8) -> Vec<u8> {
    match (set, c) {
        (1, 7) => [8u32; 5].iter().flat_map(|s| s.to_be_bytes()).collect(),
        (11, 1) => b"\0\0\0\x04main".to_vec(),
        (11, 4) => vec![0, 0, 0, 1, 0, 0, 0, 1],
        (11, 7) => vec![0, 0, 0, 1],
        (11, 6) => [&[0u8, 0, 0, 1][..], &0xF1u64.to_be_bytes(), &[1], &0x30u64.to_be_bytes(), &0x40u64.to_be_bytes(), &5u64.to_be_bytes()].concat(),
        (16, 3) => [&[b'L'][..], &0u64.to_be_bytes()].concat(),
        (6, 5) => [&[0u8, 0, 0, 1, 0, 0, 0, 1][..], &0u64.to_be_bytes(), b"\0\0\0\x01n\0\0\0\x01I\0\0\0\0", &20u32.to_be_bytes(), &1i32.to_be_bytes()].concat(),
        (16, 1) => vec![0, 0, 0, 1, b'I', 0, 0, 0, 7],
        // A class at the top of its chain, with no fields, interfaces or methods.
        (3, 1) => 0u64.to_be_bytes().to_vec(),
        (2, 10) | (2, 14) => vec![0, 0, 0, 0],
        // One method with code, `work`.
        (2, 15) => [&1u32.to_be_bytes()[..], &0x60u64.to_be_bytes(), b"\0\0\0\x04work\0\0\0\x04(I)I\0\0\0\0", &0i32.to_be_bytes()].concat(),
        (2, 7) => b"\0\0\0\x0bLedger.java".to_vec(),
        (6, 1) => [&0i64.to_be_bytes()[..], &9i64.to_be_bytes(), &1u32.to_be_bytes(), &0i64.to_be_bytes(), &20i32.to_be_bytes()].concat(),
        // The class looked up: Ledger, id 0x30.
        (1, 2) => [&1u32.to_be_bytes()[..], &[1], &0x30u64.to_be_bytes(), &7i32.to_be_bytes()].concat(),
        (2, 13) => b"\0\0\0\x08LLedger;\0\0\0\0".to_vec(),
        (2, 1) => b"\0\0\0\x08LLedger;".to_vec(),
        (10, 1) => b"\0\0\0\x0eLedger(ann, 0)".to_vec(),
        _ => Vec::new(),
    }
}

#[derive(Default)]
pub(crate) struct Run {
    pub(crate) to_near: Vec<u8>,
    pub(crate) to_vm: Vec<u8>,
    /// Where in `to_near` each set of answers came, and the answers.
    pub(crate) gathered: Vec<(usize, Answers)>,
}

/// What the relay gave, into `run`: bytes each way, and where each set of answers came.
pub(crate) fn record(outs: Vec<Out>, run: &mut Run) {
    for o in outs {
        match o {
            Out::ToNear(b) => run.to_near.extend_from_slice(&b),
            Out::ToVm(b) => run.to_vm.extend_from_slice(&b),
            Out::Gathered(a) => run.gathered.push((run.to_near.len(), a)),
        }
    }
}

/// The VM reads the whole commands that came since `seen` (after the near side's
/// handshake) and queues its answers to the relay's own ids.
pub(crate) fn answer_own(run: &Run, seen: &mut usize, queue: &mut Vec<u8>) {
    let after_hs = run.to_vm.get(HANDSHAKE.len()..).unwrap_or(&[]);
    let mut b = &after_hs[(*seen).min(after_hs.len())..];
    while let Some(h) = Header::parse(b) {
        if b.len() < h.length as usize {
            break;
        }
        if FAR_IDS.contains(&h.id) {
            queue.extend_from_slice(&reply(h.id, &vm_answer(h.cmd_set(), h.cmd())));
        }
        *seen += h.length as usize;
        b = &b[h.length as usize..];
    }
}

/// Drives a relay: the near side sends `near` (cut at `near_cut`), the VM sends its handshake
/// and, once everything so far is answered, `vm_script` (cut into pieces of the sizes in
/// `cuts`, in turn), answering jdwpmux's own commands after what it had queued.
pub(crate) fn drive(near: &[u8], near_cut: usize, vm_script: &[u8], cuts: &[usize]) -> Run {
    let now = Instant::now();
    let mut relay = Relay::new(true, Limits::default());
    let mut run = Run::default();
    let mut vm_queue: Vec<u8> = Vec::new();
    let mut vm_input_seen = 0usize;
    let mut take = |outs: Vec<Out>, run: &mut Run, vm_queue: &mut Vec<u8>| {
        record(outs, run);
        answer_own(run, &mut vm_input_seen, vm_queue);
    };
    let cut = near_cut.min(near.len());
    let outs = relay.from_near(&near[..cut], Instant::now());
    take(outs, &mut run, &mut vm_queue);
    let mut phases = vec![&vm_script[..HANDSHAKE.len()], &vm_script[HANDSHAKE.len()..]].into_iter();
    let mut turn = 0;
    let mut near_rest = Some(&near[cut..]);
    while let Some(phase) = if vm_queue.is_empty() { phases.next() } else { Some(&[][..]) } {
        vm_queue.extend_from_slice(phase);
        if vm_queue.is_empty() {
            continue;
        }
        let n = cuts[turn % cuts.len()].clamp(1, vm_queue.len());
        turn += 1;
        let piece: Vec<u8> = vm_queue.drain(..n).collect();
        let outs = relay.from_vm(&piece, now);
        take(outs, &mut run, &mut vm_queue);
        if let Some(rest) = near_rest.take() {
            let outs = relay.from_near(rest, Instant::now());
            take(outs, &mut run, &mut vm_queue);
        }
        assert!(turn < 100_000, "the exchange ends");
    }
    if let Some(rest) = near_rest {
        let outs = relay.from_near(rest, Instant::now());
        take(outs, &mut run, &mut vm_queue);
    }
    run
}

pub(crate) fn near_bytes() -> Vec<u8> {
    [&HANDSHAKE[..], &cmd(5, 1, 1, &[]), &cmd(6, 11, 1, &THREAD.to_be_bytes())].concat()
}

/// A gathering relay past the handshake and its id sizes (answered `vm_answer(1, 7)`), and
/// what it gave so far (nothing to the near side after the handshake).
pub(crate) fn past_sizes(now: Instant) -> (Relay, Run) {
    let mut relay = Relay::new(true, Limits::default());
    let mut run = Run::default();
    record(relay.from_near(&HANDSHAKE[..], now), &mut run);
    record(relay.from_vm(&HANDSHAKE[..], now), &mut run);
    let sizes = Header::parse(&run.to_vm[HANDSHAKE.len()..]).map(|h| h.id).unwrap_or(0);
    record(relay.from_vm(&reply(sizes, &vm_answer(1, 7)), now), &mut run);
    run.to_near.clear();
    (relay, run)
}

/// A relay past its handshake and its first sizes command, and what it has sent the VM so
/// far: for tests of where its own commands land among the near side's bytes.
pub(crate) struct ToVm {
    relay: Relay,
    now: Instant,
    pub(crate) sent: Vec<u8>,
}

impl ToVm {
    pub(crate) fn past_sizes() -> ToVm {
        let mut t = ToVm { relay: Relay::new(true, Limits::default()), now: Instant::now(), sent: Vec::new() };
        t.near(&HANDSHAKE[..]);
        t.vm(&HANDSHAKE[..]);
        let sizes = Header::parse(&t.sent[HANDSHAKE.len()..]).map(|h| h.id).unwrap_or(0);
        t.vm(&reply(sizes, &vm_answer(1, 7)));
        t
    }

    fn take(&mut self, outs: Vec<Out>) {
        for o in outs {
            if let Out::ToVm(b) = o {
                self.sent.extend_from_slice(&b);
            }
        }
    }

    pub(crate) fn near(&mut self, b: &[u8]) {
        let outs = self.relay.from_near(b, self.now);
        self.take(outs);
    }

    pub(crate) fn vm(&mut self, b: &[u8]) {
        let outs = self.relay.from_vm(b, self.now);
        self.take(outs);
    }

    /// (id, command set, command) of each packet sent to the VM after the handshake.
    pub(crate) fn kinds(&self) -> Vec<(u32, u8, u8)> {
        packets(&self.sent[HANDSHAKE.len()..]).iter().filter_map(|p| Header::parse(p)).map(|h| (h.id, h.cmd_set(), h.cmd())).collect()
    }
}

/// A relay past both handshakes and its id sizes, then the near side's `commands`; the VM
/// answers the relay's own commands at once and then sends `replies`. Everything sent to
/// the near side after the handshake, and where each set of answers came in it.
pub(crate) fn after_sizes(commands: &[u8], replies: &[u8]) -> Run {
    let now = Instant::now();
    let mut relay = Relay::new(true, Limits::default());
    let mut run = Run::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    let mut feed = |outs: Vec<Out>, run: &mut Run, pending: &mut Vec<u8>| {
        record(outs, run);
        answer_own(run, &mut seen, pending);
    };
    let outs = relay.from_near(&HANDSHAKE[..], now);
    feed(outs, &mut run, &mut pending);
    let outs = relay.from_vm(&HANDSHAKE[..], now);
    feed(outs, &mut run, &mut pending);
    let outs = relay.from_vm(&std::mem::take(&mut pending), now);
    feed(outs, &mut run, &mut pending);
    run.to_near.clear();
    let outs = relay.from_near(commands, now);
    feed(outs, &mut run, &mut pending);
    // The VM answers in order: the near side's first command, then the relay's own ones as
    // they come, then the rest.
    let mut rest = replies.to_vec();
    let first = Header::parse(&rest).map_or(rest.len(), |h| h.length as usize).min(rest.len());
    let head: Vec<u8> = rest.drain(..first).collect();
    let outs = relay.from_vm(&head, now);
    feed(outs, &mut run, &mut pending);
    for _ in 0..1000 {
        if pending.is_empty() {
            break;
        }
        let mine = std::mem::take(&mut pending);
        let outs = relay.from_vm(&mine, now);
        feed(outs, &mut run, &mut pending);
    }
    let outs = relay.from_vm(&rest, now);
    feed(outs, &mut run, &mut pending);
    run
}
