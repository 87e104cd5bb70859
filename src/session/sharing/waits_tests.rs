//! The waits table: what an invoke waits for, read from real command layouts, and kept in
//! step with the holds through any sequence of suspensions, resumes, replies and departures.

use proptest::prelude::*;

use super::*;
use crate::session::sharing::holds::Suspended;
use crate::jdwp::reader::put_id;

const A: Debugger = 1;
const B: Debugger = 2;
const C: Debugger = 3;
const T1: ThreadId = 0x101;
const T2: ThreadId = 0x102;
const INVOKE: (u8, u8) = (9, 6);

fn sizes(object: usize, reference_type: usize) -> IdSizes {
    IdSizes { field: 8, method: 8, object, reference_type, frame: 8 }
}

#[test]
fn the_thread_is_read_after_the_class_or_the_object() {
    for (object, reference_type) in [(8, 8), (4, 8), (8, 4), (2, 3)] {
        let s = sizes(object, reference_type);
        for (set, cmd) in INVOKES {
            let first = if (set, cmd) == (9, 6) { object } else { reference_type };
            let mut data = Vec::new();
            put_id(&mut data, 0x77, first);
            put_id(&mut data, T1, object);
            data.extend_from_slice(&[0; 12]);
            assert_eq!(invoke_thread(set, cmd, &data, &s), Some(T1), "{set}/{cmd} with sizes {object}/{reference_type}");
            assert_eq!(invoke_thread(set, cmd, &data[..first + object - 1], &s), None, "cut short");
        }
    }
    assert_eq!(invoke_thread(11, 3, &[0; 16], &sizes(8, 8)), None, "not an invoke");
    assert!(is_invoke(3, 4) && !is_invoke(16, 4) && !is_invoke(11, 3));
}

#[test]
fn an_invoke_waits_only_for_another_debuggers_hold_on_its_thread() {
    let mut holds = Holds::default();
    let mut waits = Waits::default();
    // A stopped T1 alone: its invoke runs.
    holds.event(Suspended::Thread(T1), &[A]);
    assert!(waits.sent(A, 10, INVOKE, T1, &holds, 0).is_none());
    // B suspends every thread: A's next invoke on T1 waits for B, B's own on T2 does not wait.
    holds.suspend_all(B);
    let w = waits.sent(A, 11, INVOKE, T1, &holds, 5).cloned().unwrap();
    assert_eq!((w.thread, w.holders.iter().copied().collect::<Vec<_>>()), (T1, vec![B]));
    assert!(waits.sent(B, 1, INVOKE, T2, &holds, 5).is_none());
    assert_eq!(waits.of(A).count(), 1);
    assert_eq!(waits.of(B).count(), 0);
    // B resumes: the wait is over before the reply comes; the reply then finds nothing.
    holds.resume_all(B);
    assert!(waits.holds_changed(&holds));
    assert!(waits.is_empty());
    assert_eq!(waits.answered(A, 11), None);
}

#[test]
fn a_wait_ends_with_its_reply_or_its_debugger() {
    let mut holds = Holds::default();
    let mut waits = Waits::default();
    holds.event(Suspended::All, &[A]);
    holds.suspend_all(B);
    holds.suspend_thread(C, T1);
    let w = waits.sent(A, 7, INVOKE, T1, &holds, 0).cloned().unwrap();
    assert_eq!(w.holders.iter().copied().collect::<Vec<_>>(), vec![B, C]);
    waits.sent(A, 8, INVOKE, T1, &holds, 0);
    // C leaves: A still waits for B.
    holds.leave(C);
    assert!(waits.holds_changed(&holds));
    assert!(waits.of(A).all(|w| w.holders.iter().eq([B].iter())));
    assert_eq!(waits.answered(A, 7).map(|w| w.thread), Some(T1));
    assert!(waits.leave(A));
    assert!(waits.is_empty());
}

#[test]
fn a_stop_two_debuggers_share_does_not_make_an_invoke_wait() {
    // One SUSPEND_ALL event given to both: one suspension, which the call takes off.
    let mut holds = Holds::default();
    holds.event(Suspended::All, &[A, B]);
    assert!(Waits::default().sent(A, 1, INVOKE, T1, &holds, 0).is_none());
}

#[test]
fn a_resume_that_leaves_threads_held_by_another_is_kept_until_it_holds_again_or_they_go() {
    let mut holds = Holds::default();
    let mut waits = Waits::default();
    // A and B stop T1 each; A resumes it: B still holds it.
    holds.event(Suspended::Thread(T1), &[A]);
    holds.suspend_thread(B, T1);
    holds.resume_thread(A, T1);
    let h = waits.resumed(A, Some(T1), &holds, 5).cloned().unwrap();
    assert_eq!((h.thread, h.holders.iter().copied().collect::<Vec<_>>()), (Some(T1), vec![B]));
    // A stops it again: nothing to tell.
    holds.suspend_thread(A, T1);
    assert!(waits.holds_changed(&holds));
    assert_eq!(waits.held_of(A).count(), 0);
    // B suspends the VM, A resumes the VM holding nothing: every thread stays, for B.
    holds.resume_thread(A, T1);
    holds.suspend_all(B);
    assert!(waits.resumed(B, None, &holds, 0).is_none(), "B holds what it would resume");
    let h = waits.resumed(A, None, &holds, 6).cloned().unwrap();
    assert_eq!((h.thread, h.holders.iter().copied().collect::<Vec<_>>()), (None, vec![B]));
    assert_eq!(waits.held_of(A).count(), 1);
    // B resumes: nothing holds A's threads any more.
    holds.resume_all(B);
    holds.resume_thread(B, T1);
    assert!(waits.holds_changed(&holds));
    assert!(waits.is_empty());
    // A resume that leaves nothing held is not kept; a departure ends the rest.
    assert!(waits.resumed(A, Some(T2), &holds, 0).is_none());
    holds.suspend_thread(C, T2);
    waits.resumed(A, Some(T2), &holds, 0);
    assert!(waits.leave(A) && waits.is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    SuspendAll(Debugger),
    SuspendThread(Debugger, ThreadId),
    Event(bool, Vec<Debugger>, ThreadId),
    ResumeAll(Debugger),
    ResumeThread(Debugger, ThreadId),
    Invoke(Debugger, u32, ThreadId),
    Reply(Debugger, u32),
    Leave(Debugger),
}

fn op() -> impl Strategy<Value = Op> {
    let d = prop_oneof![Just(A), Just(B), Just(C)];
    let t = prop_oneof![Just(T1), Just(T2)];
    prop_oneof![
        d.clone().prop_map(Op::SuspendAll),
        (d.clone(), t.clone()).prop_map(|(d, t)| Op::SuspendThread(d, t)),
        (any::<bool>(), proptest::sample::subsequence(vec![A, B, C], 1..=3), t.clone()).prop_map(|(all, to, t)| Op::Event(all, to, t)),
        d.clone().prop_map(Op::ResumeAll),
        (d.clone(), t.clone()).prop_map(|(d, t)| Op::ResumeThread(d, t)),
        (d.clone(), 0..4u32, t).prop_map(|(d, id, t)| Op::Invoke(d, id, t)),
        (d.clone(), 0..4u32).prop_map(|(d, id)| Op::Reply(d, id)),
        d.prop_map(Op::Leave),
    ]
}

proptest! {
    /// Whatever happens, every wait listed is one the holds explain (another debugger holds
    /// its thread, whose count keeps the call from running), and a reply or a departure ends it.
    #[test]
    fn every_wait_shown_is_real(ops in proptest::collection::vec(op(), 0..40)) {
        let mut holds = Holds::default();
        let mut waits = Waits::default();
        for o in ops {
            match o {
                Op::SuspendAll(d) => { holds.suspend_all(d); }
                Op::SuspendThread(d, t) => { holds.suspend_thread(d, t); }
                Op::Event(all, to, t) => {
                    holds.event(if all { Suspended::All } else { Suspended::Thread(t) }, &to);
                }
                Op::ResumeAll(d) => {
                    holds.resume_all(d);
                    waits.resumed(d, None, &holds, 0);
                }
                Op::ResumeThread(d, t) => {
                    holds.resume_thread(d, t);
                    waits.resumed(d, Some(t), &holds, 0);
                }
                Op::Invoke(d, id, t) => {
                    let expect = blockers(&holds, d, t);
                    let got = waits.sent(d, id, INVOKE, t, &holds, 0).map(|w| w.holders.clone()).unwrap_or_default();
                    prop_assert_eq!(got, expect);
                }
                Op::Reply(d, id) => {
                    waits.answered(d, id);
                    prop_assert!(waits.answered(d, id).is_none());
                }
                Op::Leave(d) => {
                    holds.leave(d);
                    waits.leave(d);
                    prop_assert_eq!(waits.of(d).count(), 0);
                }
            }
            waits.holds_changed(&holds);
            for d in [A, B, C] {
                for w in waits.of(d) {
                    prop_assert!(!w.holders.is_empty() && !w.holders.contains(&d));
                    prop_assert!(holds.vm_count(w.thread) >= 2);
                    for h in &w.holders {
                        prop_assert!(holds.debugger_count(*h, w.thread) > 0);
                    }
                }
                // A resumed thread is shown held only while d holds it not and another does.
                for h in waits.held_of(d) {
                    prop_assert!(!h.holders.is_empty() && !h.holders.contains(&d));
                    match h.thread {
                        Some(t) => {
                            prop_assert_eq!(holds.debugger_count(d, t), 0);
                            prop_assert!(holds.vm_count(t) > 0);
                        }
                        None => {
                            prop_assert_eq!(holds.held_by(d), 0);
                            prop_assert!(holds.unnamed_count() > 0);
                        }
                    }
                }
            }
        }
    }
}
