use super::compose::*;
use super::plan::Gathered;
use super::relay::Answers;
use super::store::Store;
use super::Key;
use crate::jdwp::events::{suspend, IdSizes};
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const THIS: u64 = 0x500;
const CLASS: u64 = 0x600;
const ARR: u64 = 0x700;
const STR: u64 = 0x800;

fn id(v: u64) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// A command naming `owner` and a list of 8-byte field ids.
fn fields_cmd(owner: u64, fields: &[u64]) -> Vec<u8> {
    let mut d = id(owner);
    d.extend_from_slice(&(fields.len() as u32).to_be_bytes());
    fields.iter().for_each(|f| d.extend_from_slice(&id(*f)));
    d
}

/// A GetValues reply of tagged values.
fn tagged_reply(values: &[Vec<u8>]) -> Vec<u8> {
    let mut d = (values.len() as u32).to_be_bytes().to_vec();
    values.iter().for_each(|v| d.extend_from_slice(v));
    d
}

fn int(v: i32) -> Vec<u8> {
    [&[b'I'][..], &v.to_be_bytes()].concat()
}

fn obj(tag: u8, v: u64) -> Vec<u8> {
    [&[tag][..], &id(v)].concat()
}

fn array_cmd(first: i32, len: i32) -> Vec<u8> {
    [id(ARR), first.to_be_bytes().to_vec(), len.to_be_bytes().to_vec()].concat()
}

fn locals_cmd(slots: &[(u32, u8)]) -> Vec<u8> {
    let mut d = [id(0x51), id(0x99)].concat();
    d.extend_from_slice(&(slots.len() as u32).to_be_bytes());
    for (s, b) in slots {
        d.extend_from_slice(&s.to_be_bytes());
        d.push(*b);
    }
    d
}

/// What the far side reads at a stop: `this`'s three fields (an int, a string, itself), one
/// static, an int array's head of 5, and two locals (an int and the string).
fn values() -> (Values, Vec<u64>) {
    let mut v = Values::default();
    let mut ids = Vec::new();
    ids.extend(v.learn(9, 2, &fields_cmd(THIS, &[1, 2, 3]), &tagged_reply(&[int(7), obj(b's', STR), obj(b'L', THIS)]), &S8));
    ids.extend(v.learn(2, 6, &fields_cmd(CLASS, &[9]), &tagged_reply(&[int(-1)]), &S8));
    let ints: Vec<u8> = [&[b'I'][..], &5u32.to_be_bytes(), &[0, 0, 0, 10, 0, 0, 0, 11, 0, 0, 0, 12, 0, 0, 0, 13, 0, 0, 0, 14]].concat();
    ids.extend(v.learn(13, 2, &array_cmd(0, 5), &ints, &S8));
    ids.extend(v.learn(16, 1, &locals_cmd(&[(1, b'I'), (2, b'L')]), &tagged_reply(&[int(3), obj(b's', STR)]), &S8));
    (v, ids)
}

#[test]
fn field_lists_in_any_order_are_composed_from_the_values_read() {
    let (v, ids) = values();
    assert_eq!(ids.iter().filter(|i| **i == STR).count(), 2, "the string was written twice");
    assert_eq!(ids.iter().filter(|i| **i == THIS).count(), 1);
    let (reply, objects) = v.compose(9, 2, &fields_cmd(THIS, &[3, 1]), &S8).expect("composed");
    assert_eq!(reply, tagged_reply(&[obj(b'L', THIS), int(7)]));
    assert_eq!(objects, vec![THIS]);
    assert_eq!(v.compose(9, 2, &fields_cmd(THIS, &[1, 4]), &S8), None, "a field not read");
    assert_eq!(v.compose(9, 2, &fields_cmd(THIS + 1, &[1]), &S8), None, "another object");
    assert_eq!(v.compose(9, 2, &fields_cmd(THIS, &[]), &S8), None, "an empty list is the VM's");
    assert_eq!(v.compose(2, 6, &fields_cmd(CLASS, &[9]), &S8).map(|r| r.0), Some(tagged_reply(&[int(-1)])));
    assert_eq!(v.compose(2, 6, &fields_cmd(THIS, &[1]), &S8), None, "statics are read through their type");
}

#[test]
fn an_array_sub_range_keeps_the_region_tag_and_bare_elements() {
    let (v, _) = values();
    let (reply, objects) = v.compose(13, 2, &array_cmd(1, 3), &S8).expect("inside the head");
    assert_eq!(reply, [&[b'I'][..], &3u32.to_be_bytes(), &[0, 0, 0, 11, 0, 0, 0, 12, 0, 0, 0, 13]].concat());
    assert!(objects.is_empty());
    assert!(v.compose(13, 2, &array_cmd(0, 5), &S8).is_some());
    assert_eq!(v.compose(13, 2, &array_cmd(3, 3), &S8), None, "past what was read");
    assert_eq!(v.compose(13, 2, &array_cmd(2, 0), &S8), None, "empty");
    assert_eq!(v.compose(13, 2, &array_cmd(-1, 1), &S8), None, "INVALID_INDEX is the VM's");
    assert_eq!(v.compose(13, 2, &array_cmd(0, -1), &S8), None, "the rest: the VM knows the length");
}

#[test]
fn locals_are_found_by_slot_and_signature_byte() {
    let (v, _) = values();
    let (reply, objects) = v.compose(16, 1, &locals_cmd(&[(2, b'L')]), &S8).expect("one local alone");
    assert_eq!(reply, tagged_reply(&[obj(b's', STR)]));
    assert_eq!(objects, vec![STR]);
    assert_eq!(v.compose(16, 1, &locals_cmd(&[(1, b'J')]), &S8), None, "read as a long: another JVMTI call");
}

#[test]
fn the_budget_spends_each_id_at_most_as_often_as_it_was_written() {
    let mut b = Budget::default();
    b.add(&[STR, STR, THIS, 0]);
    assert!(!b.spend(&[THIS, THIS]), "two of one written once");
    assert_eq!(b.left(THIS), 1, "a refused spend takes nothing");
    assert!(b.spend(&[STR, THIS]));
    assert!(b.spend(&[STR, 0]), "null is never counted");
    assert!(!b.spend(&[STR]));
    assert!(b.spend(&[]));
}

#[test]
fn unknown_tags_and_short_replies_are_not_learned() {
    let mut v = Values::default();
    assert!(v.learn(9, 2, &fields_cmd(THIS, &[1]), &tagged_reply(&[vec![b'Q', 0, 0, 0, 0]]), &S8).is_empty());
    assert!(v.learn(9, 2, &fields_cmd(THIS, &[1, 2]), &tagged_reply(&[int(1)]), &S8).is_empty());
    assert!(v.learn(13, 2, &array_cmd(0, 2), &[b'I', 0, 0, 0, 2, 0, 0, 0, 1], &S8).is_empty());
    assert!(v.is_empty());
}

fn stop(answers: Vec<Gathered>) -> Answers {
    Answers { event_id: 3, suspend_policy: suspend::ALL, thread: 0x51, answers, absent: vec![] }
}

#[test]
fn the_store_serves_composed_answers_within_the_budget_and_only_while_valid() {
    let g = |set, cmd, data: Vec<u8>, reply: Vec<u8>| Gathered { key: Key::new(set, cmd, data), reply };
    let mut s = Store::default();
    s.arrived(
        stop(vec![
            g(9, 2, fields_cmd(THIS, &[1, 2]), tagged_reply(&[int(7), obj(b's', STR)])),
            g(16, 1, locals_cmd(&[(2, b'L')]), tagged_reply(&[obj(b's', STR)])),
        ]),
        S8,
        [],
    );
    s.event(3);
    assert_eq!(s.budget_of(STR), 2);
    assert_eq!(s.lookup(9, 2, &fields_cmd(THIS, &[2, 1])), Some(tagged_reply(&[obj(b's', STR), int(7)])));
    assert!(s.lookup(9, 2, &fields_cmd(THIS, &[2])).is_some());
    assert_eq!(s.lookup(9, 2, &fields_cmd(THIS, &[2])), None, "the string's two counts are spent");
    assert!(s.lookup(9, 2, &fields_cmd(THIS, &[1])).is_some(), "an int alone still is");
    s.command(9, 3, &[]);
    assert_eq!(s.lookup(9, 2, &fields_cmd(THIS, &[1])), None, "a field written");
}

proptest! {
    /// Any list of the read fields, in any order with repeats, composes to the tagged values
    /// in that order, naming each object as often as it is listed.
    #[test]
    fn composed_replies_are_the_values_in_the_order_asked(picks in proptest::collection::vec(0usize..3, 1..12)) {
        let (v, _) = values();
        let all = [int(7), obj(b's', STR), obj(b'L', THIS)];
        let fields: Vec<u64> = picks.iter().map(|p| *p as u64 + 1).collect();
        let (reply, objects) = v.compose(9, 2, &fields_cmd(THIS, &fields), &S8).expect("all read");
        let want: Vec<Vec<u8>> = picks.iter().map(|p| all[*p].clone()).collect();
        prop_assert_eq!(reply, tagged_reply(&want));
        prop_assert_eq!(objects.len(), picks.iter().filter(|p| **p > 0).count());
    }

    /// Any range inside the head composes to exactly the elements of that range.
    #[test]
    fn array_ranges_inside_the_head_are_exact(first in 0i32..5, len in 1i32..6) {
        let (v, _) = values();
        let got = v.compose(13, 2, &array_cmd(first, len), &S8);
        if first + len <= 5 {
            let elems: Vec<u8> = (first..first + len).flat_map(|i| (10 + i).to_be_bytes()).collect();
            prop_assert_eq!(got.map(|g| g.0), Some([&[b'I'][..], &(len as u32).to_be_bytes(), &elems].concat()));
        } else {
            prop_assert_eq!(got, None);
        }
    }

    /// Whatever is asked, in whatever order, no id is handed out more often than it was
    /// written in the gathered replies.
    #[test]
    fn never_more_ids_than_the_vm_wrote(asks in proptest::collection::vec(proptest::collection::vec(0usize..3, 1..4), 0..20)) {
        let (v, written) = values();
        let mut s = Store::default();
        let g = |set, cmd, data: Vec<u8>, reply: Vec<u8>| Gathered { key: Key::new(set, cmd, data), reply };
        s.arrived(stop(vec![
            g(9, 2, fields_cmd(THIS, &[1, 2, 3]), tagged_reply(&[int(7), obj(b's', STR), obj(b'L', THIS)])),
            g(16, 1, locals_cmd(&[(1, b'I'), (2, b'L')]), tagged_reply(&[int(3), obj(b's', STR)])),
        ]), S8, []);
        s.event(3);
        let mut given: std::collections::HashMap<u64, usize> = Default::default();
        for picks in asks {
            let fields: Vec<u64> = picks.iter().map(|p| *p as u64 + 1).collect();
            if let Some(reply) = s.lookup(9, 2, &fields_cmd(THIS, &fields)) {
                let (same, objects) = v.compose(9, 2, &fields_cmd(THIS, &fields), &S8).expect("composable");
                prop_assert_eq!(reply, same);
                for o in objects { *given.entry(o).or_default() += 1; }
            }
        }
        for (o, n) in given {
            prop_assert!(n <= written.iter().filter(|w| **w == o).count(), "{o:#x} given {n} times");
        }
    }
}
