use super::early::*;
use crate::jdwp::events::{kind, suspend, IdSizes};
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const T: u64 = 0x77;

/// A step request as JDI's `StepRequest` sends it: Step, a class exclusion, Count(1).
fn step(thread: u64, size: u32, depth: u32) -> Vec<u8> {
    let mut d = vec![kind::SINGLE_STEP, suspend::EVENT_THREAD];
    d.extend_from_slice(&3u32.to_be_bytes());
    d.push(10);
    d.extend_from_slice(&thread.to_be_bytes());
    d.extend_from_slice(&size.to_be_bytes());
    d.extend_from_slice(&depth.to_be_bytes());
    d.push(6);
    d.extend_from_slice(&6u32.to_be_bytes());
    d.extend_from_slice(b"java.*");
    d.push(1);
    d.extend_from_slice(&1u32.to_be_bytes());
    d
}

/// A connection whose last Set got `last` and where a breakpoint stopped thread `T`.
fn stopped_after(last: u32) -> Early {
    let mut e = Early::default();
    e.written(0, 15, 1, &[], &S8);
    e.set_replied(0, &last.to_be_bytes());
    e.event(suspend::ALL, [(kind::BREAKPOINT, Some(T))]);
    e
}

#[test]
fn resume_and_clear_are_answered_with_an_empty_reply() {
    let e = Early::default();
    assert_eq!(e.answer(1, 9, &[], &S8), Some(vec![]));
    assert_eq!(e.answer(1, 9, &[0], &S8), None, "a Resume with data is not one libjdwp would take");
    assert_eq!(e.answer(15, 2, &[kind::BREAKPOINT, 0, 0, 0, 9], &S8), Some(vec![]));
    assert_eq!(e.answer(15, 2, &[5, 0, 0, 0, 9], &S8), None, "USER_DEFINED: INVALID_EVENT_TYPE");
    assert_eq!(e.answer(15, 2, &[kind::BREAKPOINT, 0, 0, 9], &S8), None, "short");
    assert_eq!(e.answer(11, 3, &T.to_be_bytes(), &S8), None, "a thread no stop named");
    assert_eq!(e.answer(11, 2, &T.to_be_bytes(), &S8), None, "not in the table");
    let e = stopped_after(1);
    assert_eq!(e.answer(11, 3, &T.to_be_bytes(), &S8), Some(vec![]), "the stopped thread");
    assert_eq!(e.answer(11, 3, &T.to_be_bytes()[1..], &S8), None, "an id of another size");
}

#[test]
fn a_step_request_gets_the_next_id_of_the_counter() {
    let e = stopped_after(41);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), Some(42u32.to_be_bytes().to_vec()));
    assert_eq!(e.answer(15, 1, &step(T, 1, 3), &S8), None, "depth out of range");
    assert_eq!(e.answer(15, 1, &step(T, 2, 1), &S8), None, "size out of range");
    assert_eq!(e.answer(15, 1, &step(0x99, 1, 1), &S8), None, "a thread no stop named");
    let mut bp = step(T, 1, 1);
    bp[0] = kind::BREAKPOINT;
    assert_eq!(e.answer(15, 1, &bp, &S8), None, "only step requests");
}

#[test]
fn the_counter_is_unknown_until_a_set_reply_and_after_a_failed_one() {
    let mut e = Early::default();
    e.event(suspend::ALL, [(kind::BREAKPOINT, Some(T))]);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None, "no Set reply seen yet");
    e.written(0, 15, 1, &[], &S8);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None, "a Set in flight");
    e.set_replied(0, &7u32.to_be_bytes());
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), Some(8u32.to_be_bytes().to_vec()));
    e.written(0, 15, 1, &[], &S8);
    e.set_replied(103, &[]);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None, "a failed Set may have taken an id");
    e.written(0, 15, 1, &[], &S8);
    e.set_lost();
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None);
}

/// ObjectReference.InvokeMethod of `thread` with no arguments and these options, as JDI
/// sends it: object, thread, class, method, arguments (none), options.
fn invoke(thread: u64, options: u32) -> Vec<u8> {
    let mut d = 0x55u64.to_be_bytes().to_vec();
    d.extend_from_slice(&thread.to_be_bytes());
    d.extend_from_slice(&0x66u64.to_be_bytes());
    d.extend_from_slice(&0x88u64.to_be_bytes());
    d.extend_from_slice(&0u32.to_be_bytes());
    d.extend_from_slice(&options.to_be_bytes());
    d
}

const OTHER: u64 = 0x78;

#[test]
fn an_invokes_reply_brings_its_thread_back_for_the_next_step() {
    let mut e = stopped_after(41);
    e.event(suspend::EVENT_THREAD, [(kind::BREAKPOINT, Some(OTHER))]);
    e.written(9, 9, 6, &invoke(T, 0), &S8);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None, "the thread runs for the call");
    e.invoke_replied(8);
    assert!(!e.is_stopped(T), "another id's reply");
    e.invoke_replied(9);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), Some(42u32.to_be_bytes().to_vec()), "stopped again once answered");
    assert!(!e.is_stopped(OTHER), "the other threads ran for the call and may have ended");
    // Single-threaded: nothing else ran, every stopped thread comes back.
    let mut e = stopped_after(41);
    e.event(suspend::EVENT_THREAD, [(kind::BREAKPOINT, Some(OTHER))]);
    e.written(9, 3, 3, &invoke(T, 1)[..], &S8);
    e.invoke_replied(9);
    assert!(e.is_stopped(T) && e.is_stopped(OTHER));
}

#[test]
fn what_runs_while_an_invoke_is_out_stays_unknown_after_its_reply() {
    // A thread resumed meanwhile is not brought back.
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(10, 11, 3, &T.to_be_bytes(), &S8);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
    // Nor after a VirtualMachine.Resume, or a VM's death.
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(10, 1, 9, &[], &S8);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.event(suspend::NONE, [(kind::VM_DEATH, None)]);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
    // An invoke on a thread not known stopped brings nothing; nor does a cut-short one, or
    // one whose id was used again (its reply went unseen).
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(0x99, 1), &S8);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1)[..12], &S8);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(9, 1, 1, &[], &S8);
    e.invoke_replied(9);
    assert!(!e.is_stopped(T));
}

#[test]
fn a_resume_or_an_invoke_forgets_the_stopped_threads() {
    let mut e = stopped_after(3);
    e.written(0, 11, 1, &T.to_be_bytes(), &S8);
    e.written(0, 16, 2, &[0; 20], &S8);
    assert!(e.is_stopped(T), "reads and written values keep it suspended");
    e.written(0, 11, 3, &0x99u64.to_be_bytes(), &S8);
    assert!(e.is_stopped(T), "another thread resumed");
    e.written(0, 11, 3, &T.to_be_bytes(), &S8);
    assert!(!e.is_stopped(T));
    for (set, cmd) in [(1, 9), (9, 6), (3, 3), (11, 10), (64, 1)] {
        let mut e = stopped_after(3);
        e.written(0, set, cmd, &[], &S8);
        assert!(!e.is_stopped(T), "({set}, {cmd})");
    }
    let mut e = stopped_after(3);
    e.event(suspend::NONE, [(kind::VM_DEATH, None)]);
    assert!(!e.is_stopped(T));
    let mut e = Early::default();
    e.event(suspend::NONE, [(kind::CLASS_PREPARE, Some(T))]);
    assert!(!e.is_stopped(T), "an event that suspended nothing");
}

#[test]
fn only_vms_with_libjdwp_are_answered_early() {
    for ident in ["OpenJDK 64-Bit Server VM 17.0.9+9", "Java HotSpot(TM) 64-Bit Server VM 21.0.1+12", "Eclipse OpenJ9 VM openj9-0.41.0"] {
        assert!(libjdwp_vm(ident), "{ident}");
    }
    for ident in ["Dalvik 2.1.0", "ART 2.1.0", "Substrate VM GraalVM 25", "", "OpenJDK on Android 1.0"] {
        assert!(!libjdwp_vm(ident), "{ident}");
    }
}

#[test]
fn pending_answers_are_compared_with_the_vm_reply() {
    let mut p = Pending::default();
    let g = Given { conn: 1, set: 15, cmd: 1, data: 9u32.to_be_bytes().to_vec() };
    p.given(5, g.clone());
    p.given(6, Given { conn: 2, set: 1, cmd: 9, data: vec![] });
    assert!(p.contains(5));
    assert_eq!(p.replied(5, 0, &9u32.to_be_bytes()), Some(Verdict::Same(g.clone())));
    assert_eq!(p.replied(5, 0, &9u32.to_be_bytes()), None, "compared once");
    p.given(7, g.clone());
    assert_eq!(p.replied(7, 0, &10u32.to_be_bytes()), Some(Verdict::Differed { given: g.clone(), error: 0, data: 10u32.to_be_bytes().to_vec() }));
    p.given(8, g.clone());
    assert!(matches!(p.replied(8, 21, &[]), Some(Verdict::Differed { error: 21, .. })));
    p.given(9, g.clone());
    assert!(p.set_pending(1, 9) && !p.set_pending(2, 9) && !p.set_pending(1, 10));
    p.forget_conn(1);
    p.forget_conn(2);
    assert!(p.is_empty());
}

#[test]
fn every_row_is_a_jdwp_command_with_a_reason_and_the_docs_show_the_table() {
    for r in EARLY {
        assert!(r.name.starts_with(&crate::jdwp::names::display_command(r.set, r.cmd)), "{}", r.name);
        assert!(r.why.len() > 40, "{}", r.name);
    }
    let doc = include_str!("../../docs/near-cache.md");
    assert!(doc.contains(&markdown()), "docs/near-cache.md must contain, as it is:\n{}", markdown());
}

proptest! {
    /// Whatever the stream of commands, replies and events, a Set is predicted only with no
    /// Set in flight, and then as the last granted id plus one.
    #[test]
    fn a_prediction_is_always_the_last_id_plus_one(ops in proptest::collection::vec((0u8..6, 0u32..50), 0..60)) {
        let mut e = Early::default();
        let (mut in_flight, mut last): (usize, Option<u32>) = (0, None);
        for (op, n) in ops {
            match op {
                0 => { e.written(0, 15, 1, &[], &S8); in_flight += 1; }
                1 if in_flight > 0 => { e.set_replied(0, &n.to_be_bytes()); in_flight -= 1; last = Some(n); }
                2 if in_flight > 0 => { e.set_replied(102, &[]); in_flight -= 1; last = None; }
                3 => e.event(suspend::ALL, [(kind::SINGLE_STEP, Some(T))]),
                4 => e.written(0, 1, 9, &[], &S8),
                _ => e.written(0, 11, 6, &T.to_be_bytes(), &S8),
            }
            let got = e.answer(15, 1, &step(T, 1, 1), &S8);
            if let Some(g) = got {
                prop_assert_eq!(in_flight, 0);
                prop_assert!(e.is_stopped(T));
                prop_assert_eq!(Some(u32::from_be_bytes([g[0], g[1], g[2], g[3]])), last.map(|l| l + 1));
            }
        }
    }

    /// Arbitrary bytes as a Set's data never panic and are never predicted unless they are a
    /// step request on the stopped thread.
    #[test]
    fn arbitrary_set_data_is_not_predicted(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let e = stopped_after(1);
        if e.answer(15, 1, &data, &S8).is_some() {
            prop_assert_eq!(data[0], kind::SINGLE_STEP);
            prop_assert!(data.windows(8).any(|w| w == T.to_be_bytes()));
        }
    }
}
