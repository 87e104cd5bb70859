//! The stopped threads' counts: the two-debugger cases by hand, and against a model of
//! libjdwp that handles what was written at any later time, in order, and replies after.

use std::collections::{HashMap, VecDeque};

use proptest::prelude::*;

use super::*;

const T: u64 = 0x11;
const U: u64 = 0x12;

#[test]
fn a_stop_held_by_two_outlives_one_resume() {
    let mut s = Stopped::default();
    s.event(true, [T]);
    s.suspend_written(1, None);
    assert_eq!(s.count(T), Some(1), "a suspension counts once granted");
    s.replied(1, 0);
    s.resume_written(20, None);
    assert!(s.is_stopped(T));
    s.resume_written(21, Some(T));
    assert!(!s.is_stopped(T) && s.count(T).is_none());
    // Refused: nothing added.
    s.event(false, [T]);
    s.suspend_written(2, Some(T));
    s.replied(2, 15);
    s.resume_written(20, None);
    assert!(!s.is_stopped(T));
}

#[test]
fn an_invoke_keeps_its_thread_at_zero_and_gives_back_at_its_reply() {
    let mut s = Stopped::default();
    s.event(true, [T, U]);
    s.invoke_written(7, T, false);
    assert!(!s.is_stopped(T), "running the call");
    assert_eq!(s.count(T), Some(0));
    assert!(s.count(U).is_none(), "U ran for the call");
    // A Resume of T at zero, with the call out: it may come after the call's suspension.
    s.resume_written(21, Some(T));
    assert!(s.count(T).is_none());
    s.replied(7, 0);
    assert!(!s.is_stopped(T));
    // Single-threaded: U never ran; a refused invoke gives back what was taken.
    let mut s = Stopped::default();
    s.event(true, [T, U]);
    s.invoke_written(8, T, true);
    assert!(s.is_stopped(U) && !s.is_stopped(T));
    s.replied(8, 15);
    assert!(s.is_stopped(T) && s.is_stopped(U));
    // An id used again: the invoke was answered unseen, T may have left its callback.
    s.invoke_written(9, T, true);
    s.id_written(9);
    assert!(!s.is_stopped(T));
}

#[test]
fn a_thread_stopped_while_a_suspend_is_out_gets_nothing_from_it() {
    let mut s = Stopped::default();
    s.event(true, [T]);
    s.suspend_written(1, None);
    s.resume_written(20, None);
    s.event(false, [T]);
    s.replied(1, 0);
    assert_eq!(s.count(T), Some(1), "T stopped again after the resume; the suspend may have come before");
}

/// What libjdwp does, as far as a thread's count and its callback go.
#[derive(Debug, Clone, Copy)]
enum Cmd {
    Suspend(Option<u64>),
    Resume(Option<u64>),
    Invoke(u64, bool),
}

/// What the VM sends, in order on one connection.
#[derive(Debug, Clone, Copy)]
enum Sent {
    Reply(u32, u16),
    /// A stop of this thread (every thread suspended with it: `all`), the n-th time it left
    /// a callback before.
    Stop(u64, bool, u32),
}

#[derive(Debug, Default)]
struct Vm {
    count: HashMap<u64, u32>,
    /// Threads inside a stop's callback.
    in_event: HashMap<u64, bool>,
    /// How often each thread left a callback.
    left: HashMap<u64, u32>,
    /// Invokes accepted and not run, by thread: (id, single).
    pending: HashMap<u64, (u32, bool)>,
    /// Written, not handled yet.
    queue: VecDeque<(u32, Cmd)>,
    /// Sent, not read yet.
    stream: VecDeque<Sent>,
}

const THREADS: [u64; 2] = [T, U];

impl Vm {
    fn c(&self, t: u64) -> u32 {
        self.count.get(&t).copied().unwrap_or(0)
    }

    fn suspend(&mut self, t: Option<u64>) {
        for x in THREADS {
            if t.is_none_or(|t| t == x) {
                *self.count.entry(x).or_default() += 1;
            }
        }
    }

    fn resume(&mut self, t: Option<u64>) {
        for x in THREADS {
            if t.is_none_or(|t| t == x) && self.c(x) > 0 {
                *self.count.entry(x).or_default() -= 1;
            }
        }
        self.settle();
    }

    /// Threads at zero run: a pending invoke first (then suspended again and answered),
    /// else out of the callback.
    fn settle(&mut self) {
        loop {
            let Some(x) = THREADS.into_iter().find(|x| self.c(*x) == 0 && self.in_event.get(x) == Some(&true)) else { return };
            match self.pending.remove(&x) {
                Some((id, single)) => {
                    self.suspend(if single { Some(x) } else { None });
                    self.stream.push_back(Sent::Reply(id, 0));
                }
                None => {
                    self.in_event.insert(x, false);
                    *self.left.entry(x).or_default() += 1;
                }
            }
        }
    }

    fn handle(&mut self) {
        let Some((id, cmd)) = self.queue.pop_front() else { return };
        match cmd {
            Cmd::Suspend(t) => {
                self.suspend(t);
                self.stream.push_back(Sent::Reply(id, 0));
            }
            Cmd::Resume(t) => {
                self.resume(t);
                self.stream.push_back(Sent::Reply(id, 0));
            }
            Cmd::Invoke(t, single) => {
                if self.in_event.get(&t) == Some(&true) && !self.pending.contains_key(&t) && self.c(t) > 0 {
                    self.pending.insert(t, (id, single));
                    self.resume(if single { Some(t) } else { None });
                } else {
                    self.stream.push_back(Sent::Reply(id, 15));
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A running thread stops at an event: SUSPEND_ALL or its own thread.
    Stop(usize, bool),
    Write(Cmd),
    Handle,
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    let t = prop_oneof![Just(T), Just(U)];
    let ot = prop_oneof![Just(None), Just(Some(T)), Just(Some(U))];
    prop_oneof![
        (0..2usize, any::<bool>()).prop_map(|(i, all)| Op::Stop(i, all)),
        ot.clone().prop_map(|t| Op::Write(Cmd::Suspend(t))),
        ot.prop_map(|t| Op::Write(Cmd::Resume(t))),
        (t, any::<bool>()).prop_map(|(t, single)| Op::Write(Cmd::Invoke(t, single))),
        Just(Op::Handle),
        Just(Op::Handle),
        Just(Op::Read),
        Just(Op::Read),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Whatever is written, handled late or early (in order), and read (in order): a thread
    /// the table calls stopped has not left its stop's callback since the stop the table
    /// read, so it cannot have ended; and its count is at least the table's.
    #[test]
    fn a_thread_called_stopped_never_left_its_callback(ops in proptest::collection::vec(op(), 0..60)) {
        let mut vm = Vm::default();
        let mut s = Stopped::default();
        // Of each thread: how often it had left a callback before the stop the table read.
        let mut told: HashMap<u64, u32> = HashMap::new();
        let mut id = 0u32;
        for o in ops {
            match o {
                Op::Stop(i, all) => {
                    let t = THREADS[i];
                    // Only a running thread meets an event.
                    if vm.c(t) == 0 && vm.in_event.get(&t) != Some(&true) {
                        vm.suspend(if all { None } else { Some(t) });
                        vm.in_event.insert(t, true);
                        let left = vm.left.get(&t).copied().unwrap_or(0);
                        vm.stream.push_back(Sent::Stop(t, all, left));
                    }
                }
                Op::Write(cmd) => {
                    id += 1;
                    s.id_written(id);
                    match cmd {
                        Cmd::Suspend(t) => s.suspend_written(id, t),
                        Cmd::Resume(t) => s.resume_written(id, t),
                        Cmd::Invoke(t, single) => s.invoke_written(id, t, single),
                    }
                    vm.queue.push_back((id, cmd));
                }
                Op::Handle => vm.handle(),
                Op::Read => match vm.stream.pop_front() {
                    Some(Sent::Reply(id, error)) => s.replied(id, error),
                    Some(Sent::Stop(t, all, left)) => {
                        told.insert(t, left);
                        s.event(all, [t]);
                    }
                    None => {}
                },
            }
            for t in THREADS {
                if s.is_stopped(t) {
                    let left = vm.left.get(&t).copied().unwrap_or(0);
                    prop_assert!(told.get(&t) == Some(&left) && vm.in_event.get(&t) == Some(&true), "{t:#x}: {vm:?} {s:?}");
                    // Once every command written is handled (what an invoke out gives back is
                    // in the VM's count already, not yet in the table's).
                    if vm.queue.is_empty() {
                        prop_assert!(vm.c(t) >= s.count(t).unwrap_or(0), "{t:#x}: {vm:?} {s:?}");
                    }
                }
            }
        }
    }
}
