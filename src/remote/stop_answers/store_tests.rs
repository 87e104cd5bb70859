use super::plan::Gathered;
use super::relay::Answers;
use super::store::Store;
use super::Key;
use crate::jdwp::events::{suspend, IdSizes};
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const THREAD: u64 = 0x51;
const EVENT: u32 = 40;

fn t() -> Vec<u8> {
    THREAD.to_be_bytes().to_vec()
}

fn locals_key() -> Key {
    Key::new(16, 1, [&t()[..], &[0; 8], &[0, 0, 0, 1, 0, 0, 0, 1, b'I']].concat())
}

fn answers(policy: u8) -> Answers {
    Answers {
        event_id: EVENT,
        suspend_policy: policy,
        thread: THREAD,
        answers: vec![
            Gathered { key: Key::new(11, 1, t()), reply: b"\0\0\0\x04main".to_vec() },
            Gathered { key: Key::new(11, 6, [&t()[..], &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]].concat()), reply: vec![0, 0, 0, 0] },
            Gathered { key: locals_key(), reply: vec![0, 0, 0, 1, b'I', 0, 0, 0, 7] },
            // A command no row covers is never served, even when gathered.
            Gathered { key: Key::new(1, 1, Vec::new()), reply: b"v".to_vec() },
        ],
        absent: vec![],
    }
}

fn frames(s: &mut Store) -> Option<Vec<u8>> {
    s.lookup(11, 6, &[&t()[..], &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]].concat())
}

#[test]
fn answers_are_served_by_exact_bytes_after_their_event_only() {
    let mut s = Store::default();
    s.arrived(answers(suspend::ALL), S8, []);
    assert_eq!(frames(&mut s), None, "the debugger has not seen the stop");
    s.event(EVENT);
    assert_eq!(frames(&mut s), Some(vec![0, 0, 0, 0]));
    assert_eq!(frames(&mut s), Some(vec![0, 0, 0, 0]), "frames name no object: served again");
    assert_eq!(s.lookup(11, 6, &[&t()[..], &[0, 0, 0, 0, 0, 0, 0, 1]].concat()), None, "other bytes: the VM's");
    assert_eq!(s.lookup(1, 1, &[]), None);
    assert_eq!(s.lookup(11, 1, &t()), Some(b"\0\0\0\x04main".to_vec()));
}

#[test]
fn an_object_id_is_given_out_no_more_times_than_the_vm_wrote_it() {
    let obj = 0xAB_u64;
    let this_key = Key::new(16, 3, [&t()[..], &[0; 8]].concat());
    let this_reply = [&[b'L'][..], &obj.to_be_bytes()].concat();
    let mut a = answers(suspend::ALL);
    a.answers.push(Gathered { key: this_key.clone(), reply: this_reply.clone() });
    let mut s = Store::default();
    s.arrived(a, S8, []);
    s.event(EVENT);
    assert_eq!(s.budget_of(obj), 1);
    let k = locals_key();
    assert!(s.lookup(k.set, k.cmd, &k.data).is_some());
    assert!(s.lookup(k.set, k.cmd, &k.data).is_some(), "an int names no object: served again");
    assert_eq!(s.lookup(this_key.set, this_key.cmd, &this_key.data), Some(this_reply));
    assert_eq!(s.lookup(this_key.set, this_key.cmd, &this_key.data), None, "the VM counted one");
    assert_eq!(s.budget_of(obj), 0);
}

#[test]
fn a_local_written_or_the_thread_resumed_is_asked_of_the_vm() {
    let mut s = Store::default();
    s.arrived(answers(suspend::ALL), S8, []);
    s.event(EVENT);
    s.command(16, 2, &[&t()[..], &[0; 8], &[0, 0, 0, 1]].concat());
    let k = locals_key();
    assert_eq!(s.lookup(k.set, k.cmd, &k.data), None, "a stale local is never served");
    assert!(frames(&mut s).is_some(), "frames stay");
    s.command(11, 3, &t());
    assert_eq!(frames(&mut s), None);
    assert!(s.is_empty(), "nothing is kept that cannot be served");
}

#[test]
fn a_later_event_or_a_command_in_flight_drops_them() {
    let mut s = Store::default();
    s.arrived(answers(suspend::ALL), S8, []);
    s.event(EVENT);
    s.event(EVENT + 1);
    assert_eq!(frames(&mut s), None);
    let mut s = Store::default();
    s.arrived(answers(suspend::ALL), S8, [(1, 9)]);
    s.event(EVENT);
    assert_eq!(frames(&mut s), None, "a resume in flight may have run after the reading");
    let mut s = Store::default();
    s.arrived(answers(suspend::ALL), S8, [(1, 1), (15, 1)]);
    s.event(EVENT);
    assert!(frames(&mut s).is_some(), "reads in flight change nothing");
}

#[test]
fn a_stop_of_one_thread_never_serves_its_name() {
    let mut s = Store::default();
    s.arrived(answers(suspend::EVENT_THREAD), S8, []);
    s.event(EVENT);
    assert_eq!(s.lookup(11, 1, &t()), None);
    assert!(frames(&mut s).is_some());
}

proptest! {
    /// Whatever passes, an answer is served only when every happening since its reading
    /// (in flight included) keeps it, and only its own bytes.
    #[test]
    fn never_served_after_what_drops_it(
        ops in prop::collection::vec((0u8..4, 1u8..20, 1u8..20, any::<bool>()), 0..30),
        all in any::<bool>(),
    ) {
        let policy = if all { suspend::ALL } else { suspend::EVENT_THREAD };
        let mut s = Store::default();
        s.arrived(answers(policy), S8, []);
        let mut live = super::validity::Live::new(policy, []);
        for (op, set, cmd, mine) in ops {
            let data = if mine { t() } else { (THREAD + 1).to_be_bytes().to_vec() };
            match op {
                0 => { s.event(EVENT); live.observe(super::validity::Happening::Anchor); }
                1 => { s.event(EVENT + 1); live.observe(super::validity::Happening::Event); }
                2 => { s.command(set, cmd, &data); live.observe(super::validity::classify(set, cmd, &data, &S8, THREAD)); }
                _ => {
                    for g in answers(policy).answers {
                        let got = s.lookup(g.key.set, g.key.cmd, &g.key.data);
                        if let Some(reply) = got {
                            let a = super::validity::Answer::of(g.key.set, g.key.cmd);
                            prop_assert!(a.is_some_and(|a| live.serves(a)));
                            prop_assert_eq!(reply, g.reply);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn string_values_and_array_lengths_serve_while_every_thread_is_suspended_and_nothing_was_written() {
    let s_key = Key::new(10, 1, 0x77u64.to_be_bytes().to_vec());
    let l_key = Key::new(13, 1, 0x78u64.to_be_bytes().to_vec());
    let with = |policy| {
        let mut a = answers(policy);
        a.answers.push(Gathered { key: s_key.clone(), reply: b"\0\0\0\x02hi".to_vec() });
        a.answers.push(Gathered { key: l_key.clone(), reply: vec![0, 0, 0, 3] });
        let mut s = Store::default();
        s.arrived(a, S8, []);
        s.event(EVENT);
        s
    };
    let mut s = with(suspend::ALL);
    assert_eq!(s.lookup(10, 1, &s_key.data), Some(b"\0\0\0\x02hi".to_vec()));
    assert_eq!(s.lookup(10, 1, &s_key.data), Some(b"\0\0\0\x02hi".to_vec()), "names no object: served again");
    assert_eq!(s.lookup(13, 1, &l_key.data), Some(vec![0, 0, 0, 3]));
    s.command(9, 3, &[]);
    assert_eq!(s.lookup(10, 1, &s_key.data), None, "a reference written: the string may be collected");
    assert_eq!(s.lookup(13, 1, &l_key.data), None);
    let mut s = with(suspend::EVENT_THREAD);
    assert_eq!(s.lookup(10, 1, &s_key.data), None, "other threads run");
}

/// The threads view: the list is served within each thread id's budget, and another
/// thread's status goes to the VM once that thread (or any) is resumed.
#[test]
fn the_threads_view_is_served_until_a_thread_may_run() {
    let other = 0x52u64;
    let list = [&2u32.to_be_bytes()[..], &THREAD.to_be_bytes(), &other.to_be_bytes()].concat();
    let status = [0, 0, 0, 2, 0, 0, 0, 1].to_vec();
    let mut a = answers(suspend::ALL);
    a.answers.push(Gathered { key: Key::new(1, 4, Vec::new()), reply: list.clone() });
    a.answers.push(Gathered { key: Key::new(11, 4, other.to_be_bytes().to_vec()), reply: status.clone() });
    a.answers.push(Gathered { key: Key::new(11, 4, t()), reply: status.clone() });
    a.answers.push(Gathered { key: Key::new(11, 12, other.to_be_bytes().to_vec()), reply: vec![0, 0, 0, 1] });
    let mut s = Store::default();
    s.arrived(a, S8, []);
    s.event(EVENT);
    assert_eq!(s.lookup(1, 4, &[]), Some(list), "the VM wrote each thread id once");
    assert_eq!(s.lookup(1, 4, &[]), None, "a second list would give the ids once more than the VM did");
    assert_eq!(s.lookup(11, 12, &other.to_be_bytes()), Some(vec![0, 0, 0, 1]));
    // A suspension changes the counts, not the statuses.
    s.command(11, 2, &other.to_be_bytes());
    assert_eq!(s.lookup(11, 12, &other.to_be_bytes()), None);
    assert_eq!(s.lookup(11, 4, &other.to_be_bytes()), Some(status.clone()));
    // The other thread resumed alone: its status is the VM's again; the stopped one's holds.
    s.command(11, 3, &other.to_be_bytes());
    assert_eq!(s.lookup(11, 4, &other.to_be_bytes()), None);
    assert_eq!(s.lookup(11, 4, &t()), Some(status));
}

#[test]
fn a_stop_of_one_thread_serves_no_threads_view() {
    let mut a = answers(suspend::EVENT_THREAD);
    a.answers.push(Gathered { key: Key::new(1, 4, Vec::new()), reply: [&1u32.to_be_bytes()[..], &THREAD.to_be_bytes()].concat() });
    let mut s = Store::default();
    s.arrived(a, S8, []);
    s.event(EVENT);
    assert_eq!(s.lookup(1, 4, &[]), None);
}
