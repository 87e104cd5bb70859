use super::validity::*;
use crate::jdwp::events::{suspend, IdSizes};
use proptest::prelude::*;
use Answer::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const STOPPED: u64 = 0x51;

/// The table written out independently of `rule`: for each happening, the answers it keeps.
fn expected_kept(h: Happening) -> Vec<Answer> {
    use Happening as H;
    let all = Answer::ALL.to_vec();
    match h {
        H::Anchor | H::Read => all,
        H::Suspend => all.into_iter().filter(|a| *a != SuspendCount).collect(),
        H::SetLocals { stopped: false } => all.into_iter().filter(|a| !matches!(a, StringValue | ArrayLength)).collect(),
        H::Event | H::ResumeAll | H::Invoke | H::PopFrames | H::ForceEarlyReturn | H::Redefine | H::Other => vec![],
        H::ResumeThread { stopped: true } => vec![],
        H::ResumeThread { stopped: false } => vec![ThreadStatus, FrameCount, Frames, ThisObject, ObjectType, Locals, VariableTable],
        H::SetLocals { stopped: true } => vec![
            ThreadName, ThreadStatus, FrameCount, Frames, VariableTable, ObjectFields, Statics, ArrayValues, Threads, OtherStatus,
            OtherFrameCount, SuspendCount,
        ],
        H::SetFields => vec![
            ThreadStatus, FrameCount, Frames, ThisObject, ObjectType, Locals, VariableTable, Threads, OtherStatus, OtherFrameCount,
            SuspendCount,
        ],
    }
}

fn happenings() -> Vec<Happening> {
    use Happening as H;
    vec![
        H::Anchor, H::Event, H::ResumeThread { stopped: true }, H::ResumeThread { stopped: false }, H::ResumeAll, H::Suspend,
        H::Invoke, H::SetLocals { stopped: true }, H::SetLocals { stopped: false }, H::SetFields, H::PopFrames,
        H::ForceEarlyReturn, H::Redefine, H::Read, H::Other,
    ]
}

#[test]
fn every_row_of_the_table_is_as_written_and_says_why() {
    for h in happenings() {
        let kept = expected_kept(h);
        for a in Answer::ALL {
            let r = rule(a, h);
            assert_eq!(r.keep, kept.contains(&a), "{a:?} after {h:?}: {}", r.why);
            assert!(r.why.len() > 20, "{a:?} after {h:?} has a reason");
        }
    }
}

fn cmd_with_thread(thread: u64) -> Vec<u8> {
    let mut d = thread.to_be_bytes().to_vec();
    d.extend_from_slice(&[0; 8]);
    d
}

#[test]
fn commands_are_classified_one_by_one() {
    use Happening as H;
    let c = |set, cmd, data: &[u8]| classify(set, cmd, data, &S8, STOPPED);
    let mine = cmd_with_thread(STOPPED);
    let other = cmd_with_thread(STOPPED + 1);
    assert_eq!(c(11, 3, &mine), H::ResumeThread { stopped: true });
    assert_eq!(c(11, 3, &other), H::ResumeThread { stopped: false });
    assert_eq!(c(11, 3, &[1, 2]), H::ResumeThread { stopped: true }, "an unreadable thread counts as the stopped one");
    assert_eq!(c(1, 9, &[]), H::ResumeAll);
    assert_eq!(c(11, 2, &other), H::Suspend);
    assert_eq!(c(1, 8, &[]), H::Suspend);
    for (set, cmd) in [(3, 3), (3, 4), (5, 1), (9, 6)] {
        assert_eq!(c(set, cmd, &mine), H::Invoke, "({set}, {cmd})");
    }
    assert_eq!(c(16, 2, &mine), H::SetLocals { stopped: true });
    assert_eq!(c(16, 2, &other), H::SetLocals { stopped: false });
    for (set, cmd) in [(9, 3), (3, 2), (13, 3)] {
        assert_eq!(c(set, cmd, &mine), H::SetFields, "({set}, {cmd})");
    }
    assert_eq!(c(16, 4, &other), H::PopFrames, "popping another thread's frames drops too");
    assert_eq!(c(11, 14, &other), H::ForceEarlyReturn);
    assert_eq!(c(1, 18, &[]), H::Redefine);
    for (set, cmd) in [(11, 1), (11, 4), (11, 6), (11, 7), (16, 1), (16, 3), (9, 1), (9, 2), (2, 6), (13, 2), (6, 5), (15, 1), (15, 2), (10, 1)] {
        assert_eq!(c(set, cmd, &mine), H::Read, "({set}, {cmd})");
    }
    // Commands with effects not judged here: each drops everything.
    for (set, cmd) in [(1, 6), (1, 10), (1, 14), (11, 10), (11, 11), (16, 5), (199, 1), (0xC7, 1), (64, 100), (2, 20), (11, 16)] {
        assert_eq!(c(set, cmd, &mine), H::Other, "({set}, {cmd})");
    }
}

#[test]
fn no_command_that_writes_or_runs_is_ever_a_read() {
    let writes = [(1, 6), (1, 8), (1, 9), (1, 10), (1, 14), (1, 18), (3, 2), (3, 3), (3, 4), (5, 1), (9, 3), (9, 6), (11, 2), (11, 3), (11, 10), (11, 11), (11, 14), (13, 3), (16, 2), (16, 4)];
    for (set, cmd) in writes {
        assert!(!is_read(set, cmd), "({set}, {cmd})");
    }
    for set in 0..=255u8 {
        for cmd in 0..=255u8 {
            let h = classify(set, cmd, &[], &S8, STOPPED);
            assert_eq!(h == Happening::Read, is_read(set, cmd));
            if h == Happening::Other {
                assert!(Answer::ALL.iter().all(|a| !rule(*a, h).keep));
            }
        }
    }
}

#[test]
fn a_threads_status_and_frame_count_are_the_stopped_ones_or_anothers() {
    let of = |set, cmd, t: u64| Answer::of_command(set, cmd, &t.to_be_bytes(), &S8, STOPPED);
    assert_eq!(of(11, 4, STOPPED), Some(ThreadStatus));
    assert_eq!(of(11, 4, STOPPED + 1), Some(OtherStatus));
    assert_eq!(of(11, 7, STOPPED), Some(FrameCount));
    assert_eq!(of(11, 7, STOPPED + 1), Some(OtherFrameCount));
    assert_eq!(of(11, 12, STOPPED), Some(SuspendCount));
    assert_eq!(of(11, 1, STOPPED + 1), Some(ThreadName), "a name is a field: the same rows for any thread");
    assert_eq!(Answer::of_command(1, 4, &[], &S8, STOPPED), Some(Threads));
    assert_eq!(Answer::of_command(11, 4, &[1], &S8, STOPPED), Some(ThreadStatus), "unreadable: the stopped thread's rows");
    // Another thread resumed alone: the stopped thread's status holds, the other's does not.
    let resumed = classify(11, 3, &cmd_with_thread(STOPPED + 1), &S8, STOPPED);
    assert!(rule(ThreadStatus, resumed).keep && !rule(OtherStatus, resumed).keep && !rule(Threads, resumed).keep);
}

#[test]
fn what_a_stop_that_suspends_one_thread_admits() {
    for a in [ThreadStatus, FrameCount, Frames, ThisObject, ObjectType, Locals, VariableTable] {
        assert!(a.admitted(suspend::EVENT_THREAD).is_ok(), "{a:?}");
    }
    for a in [ThreadName, ObjectFields, Statics, ArrayValues, StringValue, ArrayLength, Threads, OtherStatus, OtherFrameCount, SuspendCount] {
        assert!(a.admitted(suspend::EVENT_THREAD).is_err(), "{a:?}");
        assert!(a.admitted(suspend::ALL).is_ok(), "{a:?}");
    }
    assert!(Answer::ALL.iter().all(|a| a.admitted(suspend::NONE).is_err()));
}

#[test]
fn answers_serve_only_after_their_stop_and_until_the_next_event() {
    let mut live = Live::new(suspend::ALL, []);
    assert!(!live.serves(Frames), "the debugger has not seen the stop yet");
    live.observe(Happening::Read);
    live.observe(Happening::Anchor);
    assert!(Answer::ALL.iter().all(|a| live.serves(*a)));
    live.observe(Happening::Suspend);
    live.observe(Happening::SetLocals { stopped: true });
    assert!(live.serves(Frames) && !live.serves(Locals) && !live.serves(ThisObject));
    live.observe(Happening::Anchor);
    assert!(live.spent(), "a second stop is an event like any other");
}

#[test]
fn a_stop_of_one_thread_serves_its_frames_not_the_heap() {
    let mut live = Live::new(suspend::EVENT_THREAD, []);
    live.observe(Happening::Anchor);
    assert!(live.serves(Frames) && live.serves(Locals) && live.serves(ThreadStatus));
    assert!(!live.serves(ThreadName) && !live.serves(ObjectFields) && !live.serves(Statics));
    live.observe(Happening::ResumeThread { stopped: false });
    assert!(live.serves(Frames));
    live.observe(Happening::ResumeThread { stopped: true });
    assert!(live.spent());
}

#[test]
fn commands_in_flight_when_the_answers_arrive_count_as_since() {
    let live = Live::new(suspend::ALL, [Happening::Read, Happening::SetFields]);
    let mut live2 = live.clone();
    live2.observe(Happening::Anchor);
    assert!(!live2.serves(ObjectFields) && live2.serves(Frames));
    let mut resumed = Live::new(suspend::ALL, [classify(1, 9, &[], &S8, STOPPED)]);
    resumed.observe(Happening::Anchor);
    assert!(resumed.spent());
}

fn any_happening() -> impl Strategy<Value = Happening> {
    prop::sample::select(happenings())
}

proptest! {
    /// Once dropped, an answer stays dropped; an event after the stop, a resume of all or an
    /// invoke leaves nothing; reads and suspensions alone keep everything admitted but the
    /// suspend counts, which a suspension changes.
    #[test]
    fn dropping_is_for_good(seq in prop::collection::vec(any_happening(), 0..24), all in any::<bool>()) {
        let policy = if all { suspend::ALL } else { suspend::EVENT_THREAD };
        let mut live = Live::new(policy, []);
        live.observe(Happening::Anchor);
        let mut was: Vec<bool> = Answer::ALL.iter().map(|a| live.serves(*a)).collect();
        for h in &seq {
            live.observe(*h);
            for (i, a) in Answer::ALL.iter().enumerate() {
                prop_assert!(!live.serves(*a) || was[i], "{:?} came back after {:?}", a, h);
                was[i] = live.serves(*a);
            }
            if matches!(h, Happening::Event | Happening::ResumeAll | Happening::Invoke | Happening::Anchor | Happening::Other) {
                prop_assert!(live.spent());
            }
        }
        if seq.iter().all(|h| matches!(h, Happening::Read | Happening::Suspend)) {
            let suspended = seq.contains(&Happening::Suspend);
            for a in Answer::ALL {
                let counts = a == Answer::SuspendCount && suspended;
                prop_assert_eq!(live.serves(a), a.admitted(policy).is_ok() && !counts);
            }
        }
    }
}
