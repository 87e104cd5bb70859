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

/// A request of `kind` with no thread: suspend policy, then the modifiers' bytes.
fn global(k: u8, policy: u8, modifiers: &[&[u8]]) -> Vec<u8> {
    let mut d = vec![k, policy];
    d.extend_from_slice(&(modifiers.len() as u32).to_be_bytes());
    modifiers.iter().for_each(|m| d.extend_from_slice(m));
    d
}

fn pattern(mod_kind: u8, p: &str) -> Vec<u8> {
    let mut d = vec![mod_kind];
    d.extend_from_slice(&(p.len() as u32).to_be_bytes());
    d.extend_from_slice(p.as_bytes());
    d
}

fn count(n: i32) -> Vec<u8> {
    let mut d = vec![1];
    d.extend_from_slice(&n.to_be_bytes());
    d
}

fn exception_only(class: u64) -> Vec<u8> {
    let mut d = vec![8];
    d.extend_from_slice(&class.to_be_bytes());
    d.extend_from_slice(&[0, 1]);
    d
}

/// What JDI and jdb set at attach, each predicted while the ones before are in flight.
#[test]
fn attach_requests_are_predicted_one_after_another() {
    let mut e = Early::default();
    e.written(1, 15, 1, &[], &S8);
    e.set_replied(0, &4u32.to_be_bytes());
    let attach = [
        global(kind::CLASS_PREPARE, suspend::NONE, &[]),
        global(kind::CLASS_UNLOAD, suspend::NONE, &[]),
        global(kind::EXCEPTION, suspend::ALL, &[&exception_only(0)]),
        global(kind::THREAD_START, suspend::ALL, &[]),
        global(kind::THREAD_DEATH, suspend::ALL, &[&count(3)]),
        global(kind::CLASS_PREPARE, suspend::ALL, &[&pattern(5, "Work"), &pattern(6, "java.*"), &pattern(12, "*.java")]),
    ];
    for (i, d) in attach.iter().enumerate() {
        let want = 5 + i as u32;
        assert_eq!(e.answer(15, 1, d, &S8), Some(want.to_be_bytes().to_vec()), "request {i}");
        e.written(10 + i as u32, 15, 1, d, &S8);
    }
    for i in 0..attach.len() as u32 {
        e.set_replied(0, &(5 + i).to_be_bytes());
    }
    assert_eq!(e.answer(15, 1, &attach[0], &S8), Some(11u32.to_be_bytes().to_vec()), "the counter holds after the replies");
}

/// The class id the near side holds as lasting (java.lang.Throwable, say).
const THROWABLE: u64 = 0x42;

/// jdb's uncaught-exception request names java.lang.Throwable by id: certain when the near
/// side holds that id as a lasting class, and counted as predicted in flight.
#[test]
fn an_exception_only_of_a_lasting_class_is_answered_with_the_next_id() {
    let mut e = Early::default();
    e.written(1, 15, 1, &[], &S8);
    e.set_replied(0, &4u32.to_be_bytes());
    let lasting = |t| t == THROWABLE;
    let held = Held { line_table: &|_, _| None, lasting_class: &lasting };
    let uncaught = global(kind::EXCEPTION, suspend::ALL, &[&exception_only(THROWABLE)]);
    assert_eq!(e.answer(15, 1, &uncaught, &S8), None, "nothing held: the class may be gone");
    assert_eq!(e.answer_with(15, 1, &uncaught, &S8, &held), Some(5u32.to_be_bytes().to_vec()));
    e.written_with(2, 15, 1, &uncaught, &S8, &held);
    let other = global(kind::EXCEPTION, suspend::ALL, &[&exception_only(0x43)]);
    assert_eq!(e.answer_with(15, 1, &other, &S8, &held), None, "a class not held lasting");
    let prepare = global(kind::CLASS_PREPARE, suspend::ALL, &[&exception_only(THROWABLE)]);
    assert_eq!(e.answer_with(15, 1, &prepare, &S8, &held), None, "ExceptionOnly on ClassPrepare is refused");
    let any = global(kind::EXCEPTION, suspend::NONE, &[&exception_only(0)]);
    assert_eq!(e.answer_with(15, 1, &any, &S8, &held), Some(6u32.to_be_bytes().to_vec()), "the next one while it is in flight");
    e.set_replied(0, &5u32.to_be_bytes());
    assert_eq!(e.answer_with(15, 1, &uncaught, &S8, &held), Some(6u32.to_be_bytes().to_vec()));
}

#[test]
fn requests_libjdwp_may_refuse_are_not_predicted() {
    let mut e = Early::default();
    e.written(1, 15, 1, &[], &S8);
    e.set_replied(0, &4u32.to_be_bytes());
    let mut thread_only = vec![3];
    thread_only.extend_from_slice(&T.to_be_bytes());
    let refused = [
        ("ClassMatch on ThreadStart", global(kind::THREAD_START, suspend::NONE, &[&pattern(5, "x")])),
        ("ClassExclude on ThreadDeath", global(kind::THREAD_DEATH, suspend::NONE, &[&pattern(6, "x")])),
        ("a count of 0", global(kind::CLASS_PREPARE, suspend::NONE, &[&count(0)])),
        ("a thread id", global(kind::THREAD_START, suspend::NONE, &[&thread_only])),
        ("an exception class id", global(kind::EXCEPTION, suspend::ALL, &[&exception_only(0x42)])),
        ("ExceptionOnly on ClassPrepare", global(kind::CLASS_PREPARE, suspend::ALL, &[&exception_only(0)])),
        ("SourceNameMatch on ThreadStart", global(kind::THREAD_START, suspend::NONE, &[&pattern(12, "x")])),
        ("suspend policy 3", global(kind::CLASS_PREPARE, 3, &[])),
        ("a breakpoint", global(kind::BREAKPOINT, suspend::ALL, &[])),
        ("a method entry", global(kind::METHOD_ENTRY, suspend::ALL, &[])),
    ];
    for (why, d) in &refused {
        assert_eq!(e.answer(15, 1, d, &S8), None, "{why}");
        let mut cut = global(kind::CLASS_PREPARE, suspend::NONE, &[&count(1)]);
        cut.pop();
        assert_eq!(e.answer(15, 1, &cut, &S8), None, "short");
    }
}

/// A request not predicted makes the counter unknown until its reply, and after it only
/// when no other Set is in flight; a prediction the VM contradicted makes it unknown too.
#[test]
fn an_unpredicted_or_contradicted_set_stops_the_predictions() {
    let cp = global(kind::CLASS_PREPARE, suspend::NONE, &[]);
    let mut e = Early::default();
    e.written(1, 15, 1, &[], &S8);
    e.set_replied(0, &4u32.to_be_bytes());
    e.written(2, 15, 1, &cp, &S8);
    e.written(3, 15, 1, &global(kind::BREAKPOINT, suspend::ALL, &[]), &S8);
    assert_eq!(e.answer(15, 1, &cp, &S8), None, "a breakpoint in flight");
    e.written(4, 15, 1, &cp, &S8);
    e.set_replied(0, &5u32.to_be_bytes());
    e.set_replied(0, &6u32.to_be_bytes());
    assert_eq!(e.answer(15, 1, &cp, &S8), None, "one more unpredicted Set in flight");
    e.set_replied(0, &7u32.to_be_bytes());
    assert_eq!(e.answer(15, 1, &cp, &S8), Some(8u32.to_be_bytes().to_vec()));
    e.written(5, 15, 1, &cp, &S8);
    e.written(6, 15, 1, &cp, &S8);
    e.set_replied(0, &20u32.to_be_bytes());
    assert_eq!(e.answer(15, 1, &cp, &S8), None, "the VM contradicted a prediction");
    e.set_replied(0, &21u32.to_be_bytes());
    assert_eq!(e.answer(15, 1, &cp, &S8), None, "still unknown: only an unpredicted reply says the counter");
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
    e.replied(8, 0);
    assert!(!e.is_stopped(T), "another id's reply");
    e.replied(9, 0);
    assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), Some(42u32.to_be_bytes().to_vec()), "stopped again once answered");
    assert!(!e.is_stopped(OTHER), "the other threads ran for the call and may have ended");
    // Single-threaded: nothing else ran, every stopped thread comes back.
    let mut e = stopped_after(41);
    e.event(suspend::EVENT_THREAD, [(kind::BREAKPOINT, Some(OTHER))]);
    e.written(9, 3, 3, &invoke(T, 1)[..], &S8);
    e.replied(9, 0);
    assert!(e.is_stopped(T) && e.is_stopped(OTHER));
}

#[test]
fn what_runs_while_an_invoke_is_out_stays_unknown_after_its_reply() {
    // A thread resumed meanwhile is not brought back.
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(10, 11, 3, &T.to_be_bytes(), &S8);
    e.replied(9, 0);
    assert!(!e.is_stopped(T));
    // Nor after a VirtualMachine.Resume, or a VM's death.
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(10, 1, 9, &[], &S8);
    e.replied(9, 0);
    assert!(!e.is_stopped(T));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.event(suspend::NONE, [(kind::VM_DEATH, None)]);
    e.replied(9, 0);
    assert!(!e.is_stopped(T));
    // A single-threaded invoke on a thread not known stopped runs that thread alone; a
    // cut-short invoke, or one whose id was used again (its reply went unseen), brings
    // nothing back.
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(0x99, 1), &S8);
    e.replied(9, 0);
    assert!(e.is_stopped(T) && !e.is_stopped(0x99));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1)[..12], &S8);
    e.replied(9, 0);
    assert!(!e.is_stopped(T));
    let mut e = stopped_after(41);
    e.written(9, 9, 6, &invoke(T, 1), &S8);
    e.written(9, 1, 1, &[], &S8);
    e.replied(9, 0);
    assert!(!e.is_stopped(T));
}

#[test]
fn a_thread_another_debugger_suspends_and_resumes_around_an_invoke_stays_stopped() {
    // One debugger stopped T (SUSPEND_ALL); another suspends the VM (granted), so the first
    // one's invoke waits; the other resumes T alone, the call runs, and its reply is in: T is
    // still stopped (the stop's suspension never went), so the next step is predicted.
    for other_resumes in [(11, 3, T.to_be_bytes().to_vec()), (1, 9, Vec::new())] {
        let mut e = stopped_after(41);
        e.written(5, 1, 8, &[], &S8);
        e.replied(5, 0);
        e.written(9, 3, 3, &invoke(T, 0), &S8);
        assert!(!e.is_stopped(T), "the thread runs for the call");
        e.written(6, other_resumes.0, other_resumes.1, &other_resumes.2, &S8);
        assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), None, "the call is out");
        e.replied(9, 0);
        assert_eq!(e.answer(15, 1, &step(T, 1, 1), &S8), Some(42u32.to_be_bytes().to_vec()), "{other_resumes:?}");
    }
    // A Suspend the VM refused adds nothing: the same Resume lets T run.
    let mut e = stopped_after(41);
    e.written(5, 1, 8, &[], &S8);
    e.replied(5, 13);
    e.written(9, 3, 3, &invoke(T, 0), &S8);
    e.written(6, 1, 9, &[], &S8);
    e.replied(9, 0);
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
    let doc = include_str!("../../../docs/near-cache.md");
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

    /// Against a model of libjdwp's counter (each Set handled in order; one of a kind the
    /// table predicts always granted the next id, any other granted or refused, a refused one
    /// taking an id or not): every prediction is the id the model's VM gives.
    #[test]
    fn predictions_match_a_model_counter(ops in proptest::collection::vec((0u8..5, any::<bool>(), any::<bool>()), 0..80)) {
        let predictable = global(kind::CLASS_PREPARE, suspend::NONE, &[]);
        let other = global(kind::BREAKPOINT, suspend::ALL, &[]);
        let mut e = Early::default();
        let mut vm_counter = 0u32;
        // The Sets written and not handled: whether predictable, the early answer given.
        let mut queue: std::collections::VecDeque<(bool, Option<u32>)> = Default::default();
        for (op, fails, takes) in ops {
            match op {
                0 | 1 => {
                    let d = if op == 0 { &predictable } else { &other };
                    let early = e.answer(15, 1, d, &S8).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                    e.written(0, 15, 1, d, &S8);
                    queue.push_back((op == 0, early));
                }
                2 | 3 => {
                    let Some((ok_always, early)) = queue.pop_front() else { continue };
                    if ok_always || !fails {
                        vm_counter += 1;
                        if let Some(g) = early {
                            prop_assert_eq!(g, vm_counter);
                        }
                        e.set_replied(0, &vm_counter.to_be_bytes());
                    } else {
                        if takes {
                            vm_counter += 1;
                        }
                        prop_assert_eq!(early, None);
                        e.set_replied(102, &[]);
                    }
                }
                _ => {
                    if queue.pop_front().is_some() {
                        // A reply never read: the model's VM granted it.
                        vm_counter += 1;
                        e.set_lost();
                    }
                }
            }
        }
    }

    /// Arbitrary bytes as a Set's data never panic and are never predicted unless they are a
    /// step request on the stopped thread.
    #[test]
    fn arbitrary_set_data_is_not_predicted(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let e = stopped_after(1);
        if e.answer(15, 1, &data, &S8).is_some() {
            let global = [kind::CLASS_PREPARE, kind::CLASS_UNLOAD, kind::THREAD_START, kind::THREAD_DEATH, kind::EXCEPTION];
            prop_assert!(global.contains(&data[0]) || (data[0] == kind::SINGLE_STEP && data.windows(8).any(|w| w == T.to_be_bytes())));
            prop_assert!(data[1] <= 2);
        }
    }
}
