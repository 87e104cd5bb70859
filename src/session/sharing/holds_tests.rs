//! The holds table against two simulations: the VM (counts per thread, applying what the
//! proxy sends it) and each debugger alone with the VM (what it expects its counts to be).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const A: Debugger = 1;
const B: Debugger = 2;
const T1: ThreadId = 0x101;
const T2: ThreadId = 0x102;
/// A thread no debugger ever names (it stands for every thread a VM has that nobody asked about).
const QUIET: ThreadId = 0x1ff;

/// Suspend counts as a JDWP VM keeps them, for a fixed set of threads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Counts(BTreeMap<ThreadId, u32>);

impl Counts {
    fn new(threads: &[ThreadId]) -> Counts {
        Counts(threads.iter().map(|t| (*t, 0)).collect())
    }

    fn apply(&mut self, c: VmCmd) {
        match c {
            VmCmd::SuspendAll => self.0.values_mut().for_each(|n| *n += 1),
            VmCmd::ResumeAll => self.0.values_mut().for_each(|n| *n = n.saturating_sub(1)),
            VmCmd::SuspendThread(t) => *self.0.entry(t).or_default() += 1,
            VmCmd::ResumeThread(t) => {
                let n = self.0.entry(t).or_default();
                *n = n.saturating_sub(1);
            }
        }
    }

    fn get(&self, t: ThreadId) -> u32 {
        self.0.get(&t).copied().unwrap_or(0)
    }
}

#[test]
fn one_debuggers_resume_never_releases_anothers_stop() {
    let mut h = Holds::default();
    // A stops at a SUSPEND_ALL breakpoint; B, who holds nothing, resumes the VM.
    assert!(h.event(Suspended::All, &[A]).is_empty());
    assert_eq!(h.resume_all(B), vec![], "B's resume is answered by the proxy");
    assert_eq!(h.vm_count(T1), 1);
    assert_eq!(h.resume_all(A), vec![VmCmd::ResumeAll], "A's own resume reaches the VM");
    assert!(h.is_empty());
}

#[test]
fn a_stop_shared_by_two_is_released_by_the_last_holder() {
    let mut h = Holds::default();
    h.event(Suspended::All, &[A, B]);
    assert_eq!(h.debugger_count(A, T1), 1);
    assert_eq!(h.debugger_count(B, T1), 1);
    assert_eq!(h.resume_all(A), vec![]);
    assert_eq!(h.debugger_count(A, T1), 0);
    assert_eq!(h.vm_count(T1), 1, "B still holds it");
    assert_eq!(h.resume_all(B), vec![VmCmd::ResumeAll]);
}

#[test]
fn resume_all_with_only_thread_holds_resumes_those_threads() {
    let mut h = Holds::default();
    h.suspend_thread(A, T1);
    h.suspend_thread(A, T2);
    h.suspend_thread(B, T2);
    let mut got = h.resume_all(A);
    got.sort_by_key(|c| format!("{c:?}"));
    assert_eq!(got, vec![VmCmd::ResumeThread(T1), VmCmd::ResumeThread(T2)]);
    assert_eq!(h.vm_count(T2), 1, "T2 stays suspended: B suspended it too");
    assert_eq!(h.held_by(A), 0);
}

#[test]
fn a_thread_resumed_out_of_a_vm_wide_hold_is_kept_when_another_holds_it() {
    let mut h = Holds::default();
    h.suspend_all(A);
    assert_eq!(h.resume_thread(A, T1), vec![VmCmd::ResumeThread(T1)]);
    assert_eq!(h.debugger_count(A, T1), 0);
    assert_eq!(h.vm_count(T1), 0);
    h.suspend_thread(B, T1);
    // A's VM.Resume must not take B's count on T1: T1 is suspended once more first.
    assert_eq!(h.resume_all(A), vec![VmCmd::SuspendThread(T1), VmCmd::ResumeAll]);
    assert_eq!(h.vm_count(T1), 1);
    assert_eq!(h.unnamed_count(), 0);
}

#[test]
fn an_event_nobody_receives_is_undone() {
    let mut h = Holds::default();
    assert_eq!(h.event(Suspended::All, &[]), vec![VmCmd::ResumeAll]);
    assert_eq!(h.event(Suspended::Thread(T1), &[]), vec![VmCmd::ResumeThread(T1)]);
    assert!(h.is_empty());
}

#[test]
fn a_refused_suspension_is_taken_back_without_telling_the_vm() {
    let mut h = Holds::default();
    let id = h.suspend_thread(A, T1);
    assert!(h.cancel(id));
    assert!(!h.cancel(id));
    assert_eq!(h.resume_all(A), vec![]);
}

#[test]
fn leaving_releases_everything_the_debugger_held_and_nothing_else() {
    let mut h = Holds::default();
    h.suspend_all(A);
    h.suspend_all(A);
    h.suspend_thread(A, T1);
    h.event(Suspended::Thread(T2), &[A, B]);
    let got = h.leave(A);
    let mut vm = Counts::new(&[T1, T2, QUIET]);
    for c in [VmCmd::SuspendAll, VmCmd::SuspendAll, VmCmd::SuspendThread(T1), VmCmd::SuspendThread(T2)] {
        vm.apply(c);
    }
    got.iter().for_each(|c| vm.apply(*c));
    assert_eq!((vm.get(T1), vm.get(T2), vm.get(QUIET)), (0, 1, 0), "{got:?}");
    assert_eq!(h.held_by(B), 1);
}

#[test]
fn plan_keeps_threads_whose_count_must_stay() {
    // Unnamed threads 2 -> 1; T1 3 -> 3 (pre-suspended), T2 1 -> 0.
    let got = plan(2, 1, &[(T1, 3, 3), (T2, 1, 0)]);
    assert_eq!(got, vec![VmCmd::SuspendThread(T1), VmCmd::ResumeAll]);
    let mut vm = Counts(BTreeMap::from([(T1, 3), (T2, 1), (QUIET, 2)]));
    got.iter().for_each(|c| vm.apply(*c));
    assert_eq!((vm.get(T1), vm.get(T2), vm.get(QUIET)), (3, 0, 1));
}

#[derive(Debug, Clone)]
enum Op {
    SuspendAll(Debugger),
    ResumeAll(Debugger),
    SuspendThread(Debugger, ThreadId),
    ResumeThread(Debugger, ThreadId),
    /// An event suspended all or one thread; its parts went to the debuggers in the mask.
    Event(Option<ThreadId>, u8),
    Leave(Debugger),
}

const DEBUGGERS: [Debugger; 3] = [1, 2, 3];
const THREADS: [ThreadId; 3] = [T1, T2, 0x103];

fn op() -> impl Strategy<Value = Op> {
    let d = prop::sample::select(DEBUGGERS.to_vec());
    let t = prop::sample::select(THREADS.to_vec());
    prop_oneof![
        1 => d.clone().prop_map(Op::SuspendAll),
        3 => d.clone().prop_map(Op::ResumeAll),
        2 => (d.clone(), t.clone()).prop_map(|(d, t)| Op::SuspendThread(d, t)),
        3 => (d.clone(), t.clone()).prop_map(|(d, t)| Op::ResumeThread(d, t)),
        2 => (prop::option::of(t), 0u8..8).prop_map(|(t, m)| Op::Event(t, m)),
        1 => d.prop_map(Op::Leave),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Whatever the debuggers do, in any order: each sees the counts it would see alone with
    /// the VM, the VM's counts are what the holds say, and so a thread runs exactly when no
    /// debugger holds it.
    #[test]
    fn every_debugger_sees_a_vm_of_its_own(ops in prop::collection::vec(op(), 1..60)) {
        let all: Vec<ThreadId> = THREADS.iter().copied().chain([QUIET]).collect();
        let mut vm = Counts::new(&all);
        let mut alone: BTreeMap<Debugger, Counts> = DEBUGGERS.iter().map(|d| (*d, Counts::new(&all))).collect();
        let mut h = Holds::default();
        for op in &ops {
            let sent = match *op {
                Op::SuspendAll(d) => {
                    h.suspend_all(d);
                    alone.get_mut(&d).unwrap().apply(VmCmd::SuspendAll);
                    vec![VmCmd::SuspendAll]
                }
                Op::SuspendThread(d, t) => {
                    h.suspend_thread(d, t);
                    alone.get_mut(&d).unwrap().apply(VmCmd::SuspendThread(t));
                    vec![VmCmd::SuspendThread(t)]
                }
                Op::ResumeAll(d) => {
                    alone.get_mut(&d).unwrap().apply(VmCmd::ResumeAll);
                    h.resume_all(d)
                }
                Op::ResumeThread(d, t) => {
                    alone.get_mut(&d).unwrap().apply(VmCmd::ResumeThread(t));
                    h.resume_thread(d, t)
                }
                Op::Event(t, mask) => {
                    let (scope, own) = match t {
                        None => (Suspended::All, VmCmd::SuspendAll),
                        Some(t) => (Suspended::Thread(t), VmCmd::SuspendThread(t)),
                    };
                    vm.apply(own);
                    let to: Vec<Debugger> = DEBUGGERS.iter().copied().filter(|d| mask & (1 << (d - 1)) != 0).collect();
                    for d in &to {
                        alone.get_mut(d).unwrap().apply(own);
                    }
                    h.event(scope, &to)
                }
                Op::Leave(d) => {
                    alone.insert(d, Counts::new(&all));
                    h.leave(d)
                }
            };
            for c in &sent {
                vm.apply(*c);
            }
            for t in &all {
                prop_assert_eq!(vm.get(*t), h.vm_count(*t), "VM count of {:#x} after {:?}: sent {:?}", t, op, sent);
                for d in DEBUGGERS {
                    prop_assert_eq!(alone[&d].get(*t), h.debugger_count(d, *t), "debugger {} on {:#x} after {:?}", d, t, op);
                }
                let held = DEBUGGERS.iter().any(|d| alone[d].get(*t) > 0);
                prop_assert_eq!(vm.get(*t) > 0, held, "thread {:#x} runs iff nobody holds it", t);
            }
            prop_assert_eq!(vm.get(QUIET), h.unnamed_count());
        }
        for d in DEBUGGERS {
            for c in h.leave(d) {
                vm.apply(c);
            }
        }
        prop_assert!(h.is_empty(), "holds left after every debugger left");
        prop_assert!(all.iter().all(|t| vm.get(*t) == 0), "VM left suspended: {:?}", vm);
    }
}
