//! The plan's reading of objects against a scripted VM: the fields of `this` through its
//! class chain, the statics of the frame's class, strings and array heads of what those
//! hold; each asked once, within the bounds, whatever order the replies come in.

use std::collections::HashMap;

use super::known::Known;
use super::plan::*;
use super::values::STATIC;
use super::Key;
use crate::jdwp::events::{kind, suspend, IdSizes};
use crate::jdwp::reader::Reader;
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const THREAD: u64 = 0x0102;
const FRAME: u64 = 0xF1;
const THIS: u64 = 0x77;
/// The stopped method's class, `this`'s type; its superclass; java.lang.Object.
const CLASS: u64 = 0x30;
const SUPER: u64 = 0x31;
const OBJECT: u64 = 0x32;
const NAME: u64 = 0x501;
const LOCAL_TEXT: u64 = 0x503;
const NUMBERS: u64 = 0x504;
const TABLE: u64 = 0x505;

/// A VM stopped in an instance method of CLASS (a class of `tag`, its `this` THIS) with
/// locals `text` (a string) and `numbers` (an int[250]).
struct Vm {
    tag: u8,
    this: u64,
    /// Each class's (field id, static) and superclass.
    classes: HashMap<u64, (Vec<(u64, bool)>, u64)>,
    /// Each field's tagged value.
    fields: HashMap<u64, Vec<u8>>,
}

fn tagged(tag: u8, id: u64) -> Vec<u8> {
    [&[tag][..], &id.to_be_bytes()].concat()
}

impl Vm {
    fn new(tag: u8, this: u64) -> Vm {
        let mut classes = HashMap::new();
        classes.insert(CLASS, (vec![(0xA1, false), (0xA2, true), (0xA5, false)], SUPER));
        classes.insert(SUPER, (vec![(0xA3, false), (0xA4, true)], OBJECT));
        classes.insert(OBJECT, (vec![], 0));
        let mut fields = HashMap::new();
        fields.insert(0xA1, tagged(b's', NAME)); // this.name
        fields.insert(0xA2, tagged(b's', NAME)); // a static holding the same string
        fields.insert(0xA3, tagged(b'[', TABLE)); // this.table, declared by the superclass
        fields.insert(0xA4, vec![b'I', 0, 0, 0, 9]); // a static int of the superclass
        fields.insert(0xA5, tagged(b'L', 0)); // a null field
        Vm { tag, this, classes, fields }
    }

    fn id(r: &mut Reader<'_>) -> u64 {
        r.id(8, "id").unwrap()
    }

    /// Tagged values for `n` field ids read from `r`.
    fn field_values(&self, r: &mut Reader<'_>) -> Vec<u8> {
        let n = r.u32("n").unwrap();
        let mut d = n.to_be_bytes().to_vec();
        for _ in 0..n {
            d.extend_from_slice(&self.fields[&Vm::id(r)]);
        }
        d
    }

    /// The reply (error 0) to a command of the plan.
    fn answer(&self, k: &Key) -> Vec<u8> {
        let mut r = Reader::new(&k.data);
        match (k.set, k.cmd) {
            (11, 1) => b"\0\0\0\x04main".to_vec(),
            (11, 4) => vec![0, 0, 0, 1, 0, 0, 0, 1],
            (11, 7) => vec![0, 0, 0, 1],
            (11, 6) => [&[0u8, 0, 0, 1][..], &FRAME.to_be_bytes(), &[self.tag], &CLASS.to_be_bytes(), &0x40u64.to_be_bytes(), &5u64.to_be_bytes()].concat(),
            (16, 3) => tagged(b'L', self.this),
            (6, 5) => {
                let mut d = [1u32.to_be_bytes(), 2u32.to_be_bytes()].concat();
                for (name, sig, slot) in [("text", "Ljava/lang/String;", 1i32), ("numbers", "[I", 2)] {
                    d.extend_from_slice(&0u64.to_be_bytes());
                    for s in [name, sig, ""] {
                        d.extend_from_slice(&(s.len() as u32).to_be_bytes());
                        d.extend_from_slice(s.as_bytes());
                    }
                    d.extend_from_slice(&20u32.to_be_bytes());
                    d.extend_from_slice(&slot.to_be_bytes());
                }
                d
            }
            (16, 1) => {
                let (_thread, _frame) = (Vm::id(&mut r), Vm::id(&mut r));
                let n = r.u32("n").unwrap();
                let mut d = n.to_be_bytes().to_vec();
                for _ in 0..n {
                    let slot = r.i32("slot").unwrap();
                    r.u8("sig").unwrap();
                    d.extend_from_slice(&if slot == 1 { tagged(b's', LOCAL_TEXT) } else { tagged(b'[', NUMBERS) });
                }
                d
            }
            (9, 1) => tagged(CLASS_TAG, CLASS),
            (2, 14) => {
                let (fields, _) = &self.classes[&Vm::id(&mut r)];
                let mut d = (fields.len() as u32).to_be_bytes().to_vec();
                for (id, is_static) in fields {
                    d.extend_from_slice(&id.to_be_bytes());
                    d.extend_from_slice(&[0, 0, 0, 1, b'f', 0, 0, 0, 1, b'I', 0, 0, 0, 0]);
                    d.extend_from_slice(&(if *is_static { STATIC | 1 } else { 2 }).to_be_bytes());
                }
                d
            }
            (3, 1) => self.classes[&Vm::id(&mut r)].1.to_be_bytes().to_vec(),
            (9, 2) | (2, 6) => {
                Vm::id(&mut r);
                self.field_values(&mut r)
            }
            (10, 1) => b"\0\0\0\x05hello".to_vec(),
            (13, 1) => (if Vm::id(&mut r) == NUMBERS { 250i32 } else { 3 }).to_be_bytes().to_vec(),
            (13, 2) => {
                Vm::id(&mut r);
                let (_first, n) = (r.i32("first").unwrap(), r.i32("length").unwrap());
                let mut d = vec![b'I'];
                d.extend_from_slice(&n.to_be_bytes());
                d.extend(std::iter::repeat_n(0u8, 4 * n as usize));
                d
            }
            other => panic!("the plan asked {other:?}"),
        }
    }
}

const CLASS_TAG: u8 = 1;

/// Runs a plan against `vm`, with what earlier stops left in `known`: `pick` chooses which
/// outstanding command is answered next, `fail` which answers are errors. Returns every
/// command sent to the VM and the plan.
fn run_known(vm: &Vm, limits: Limits, known: &mut Known, mut pick: impl FnMut(usize) -> usize, mut fail: impl FnMut(&Key) -> bool) -> (Vec<Key>, Plan) {
    let mut composite = vec![suspend::ALL, 0, 0, 0, 1, kind::BREAKPOINT, 0, 0, 0, 7];
    composite.extend_from_slice(&THREAD.to_be_bytes());
    composite.extend_from_slice(&[&[1u8][..], &CLASS.to_be_bytes(), &0x40u64.to_be_bytes(), &5u64.to_be_bytes()].concat());
    let (mut plan, first) = Plan::at_stop(&composite, S8, limits, known).unwrap();
    let mut all: Vec<Key> = first.iter().map(|(_, k)| k.clone()).collect();
    let mut pending: Vec<(usize, Key)> = first;
    while !pending.is_empty() {
        let (n, key) = pending.remove(pick(pending.len()) % pending.len());
        let next = if fail(&key) { plan.on_reply(n, 20, &[], known) } else { plan.on_reply(n, 0, &vm.answer(&key), known) };
        assert!(next.iter().all(|(m, _)| *m < plan.issued()), "positions of issued commands");
        all.extend(next.iter().map(|(_, k)| k.clone()));
        pending.extend(next);
        assert!(all.len() < 1000, "the plan ends");
    }
    assert!(plan.done());
    (all, plan)
}

/// As [`run_known`] with nothing known from earlier stops.
fn run(vm: &Vm, limits: Limits, pick: impl FnMut(usize) -> usize, fail: impl FnMut(&Key) -> bool) -> (Vec<Key>, Plan) {
    run_known(vm, limits, &mut Known::default(), pick, fail)
}

fn key(set: u8, cmd: u8, parts: &[&[u8]]) -> Key {
    Key::new(set, cmd, parts.concat())
}

fn ids(ids: &[u64]) -> Vec<u8> {
    let mut d = (ids.len() as u32).to_be_bytes().to_vec();
    ids.iter().for_each(|i| d.extend_from_slice(&i.to_be_bytes()));
    d
}

/// The keys sorted, without repeats.
fn sorted(keys: &[Key]) -> Vec<Key> {
    let mut s = keys.to_vec();
    s.sort_by(|a, b| (a.set, a.cmd, &a.data).cmp(&(b.set, b.cmd, &b.data)));
    s.dedup();
    s
}

fn big() -> Limits {
    Limits { commands: 1000, bytes: 1 << 20, top_frames: 1, threads: 0, absent: false, objects: true }
}

#[test]
fn this_fields_statics_strings_and_array_heads_are_read_through_the_class_chain() {
    let vm = Vm::new(CLASS_TAG, THIS);
    let (all, plan) = run(&vm, big(), |_| 0, |_| false);
    let b = |v: u64| v.to_be_bytes();
    let want = [
        key(9, 1, &[&b(THIS)]),
        key(2, 14, &[&b(CLASS)]),
        key(3, 1, &[&b(CLASS)]),
        key(2, 14, &[&b(SUPER)]),
        key(3, 1, &[&b(SUPER)]),
        key(2, 14, &[&b(OBJECT)]),
        key(3, 1, &[&b(OBJECT)]),
        // Every instance field of `this`, its class's then its superclass's.
        key(9, 2, &[&b(THIS), &ids(&[0xA1, 0xA5, 0xA3])]),
        // Every static of the frame's class and its superclass, asked of the frame's class.
        key(2, 6, &[&b(CLASS), &ids(&[0xA2, 0xA4])]),
        key(10, 1, &[&b(NAME)]),
        key(10, 1, &[&b(LOCAL_TEXT)]),
        key(13, 1, &[&b(NUMBERS)]),
        key(13, 2, &[&b(NUMBERS), &0i32.to_be_bytes(), &100i32.to_be_bytes()]),
        key(13, 1, &[&b(TABLE)]),
        key(13, 2, &[&b(TABLE), &0i32.to_be_bytes(), &3i32.to_be_bytes()]),
    ];
    for k in &want {
        assert_eq!(all.iter().filter(|a| *a == k).count(), 1, "{k:?} asked once: {all:?}");
    }
    assert_eq!(sorted(&all).len(), all.len(), "no command twice");
    let got = plan.gathered();
    assert_eq!(got.len(), all.len(), "every reply kept");
    for g in &got {
        assert_eq!(g.reply, vm.answer(&g.key), "{:?}", g.key);
    }
}

#[test]
fn a_method_of_an_interface_reads_its_statics_without_a_superclass_and_a_static_method_no_this() {
    let vm = Vm::new(2, 0);
    let (all, _) = run(&vm, big(), |_| 0, |_| false);
    assert!(!all.iter().any(|k| (k.set, k.cmd) == (3, 1)), "an interface has no superclass to ask: {all:?}");
    assert!(!all.iter().any(|k| (k.set, k.cmd) == (9, 1) || (k.set, k.cmd) == (9, 2)), "no this");
    assert!(all.contains(&key(2, 6, &[&CLASS.to_be_bytes(), &ids(&[0xA2])])), "{all:?}");
}

#[test]
fn a_class_whose_fields_cannot_be_read_leaves_its_values_unread_and_the_plan_ends() {
    let vm = Vm::new(CLASS_TAG, THIS);
    let (all, _) = run(&vm, big(), |_| 0, |k| (k.set, k.cmd) == (2, 14) && k.data == SUPER.to_be_bytes());
    assert!(!all.iter().any(|k| (k.set, k.cmd) == (9, 2) || (k.set, k.cmd) == (2, 6)), "{all:?}");
    assert!(all.contains(&key(10, 1, &[&LOCAL_TEXT.to_be_bytes()])), "the locals' strings are read still");
}

#[test]
fn a_later_stop_takes_classes_types_and_lengths_from_the_first_and_gathers_the_same() {
    let vm = Vm::new(CLASS_TAG, THIS);
    let mut known = Known::default();
    let (first_sent, first) = run_known(&vm, big(), &mut known, |_| 0, |_| false);
    let (second_sent, second) = run_known(&vm, big(), &mut known, |_| 0, |_| false);
    let unchanging = |k: &Key| matches!((k.set, k.cmd), (2, 14) | (3, 1) | (9, 1) | (13, 1));
    assert!(first_sent.iter().filter(|k| unchanging(k)).count() >= 7, "{first_sent:?}");
    assert!(!second_sent.iter().any(unchanging), "the second stop asked again: {second_sent:?}");
    assert_eq!(second_sent.len() + first_sent.iter().filter(|k| unchanging(k)).count(), first_sent.len());
    // The near side gets the same answers, the VM's own bytes, whichever way they came.
    let by_key = |g: Vec<Gathered>| {
        let mut v: Vec<(Key, Vec<u8>)> = g.into_iter().map(|g| (g.key, g.reply)).collect();
        v.sort_by(|a, b| (a.0.set, a.0.cmd, &a.0.data).cmp(&(b.0.set, b.0.cmd, &b.0.data)));
        v
    };
    assert_eq!(by_key(first.gathered()), by_key(second.gathered()));
}

#[test]
fn after_a_redefinition_the_classes_are_asked_again() {
    let vm = Vm::new(CLASS_TAG, THIS);
    let mut known = Known::default();
    run_known(&vm, big(), &mut known, |_| 0, |_| false);
    known.command(1, 18);
    let (sent, _) = run_known(&vm, big(), &mut known, |_| 0, |_| false);
    assert!(sent.contains(&key(2, 14, &[&CLASS.to_be_bytes()])) && sent.contains(&key(9, 1, &[&THIS.to_be_bytes()])), "{sent:?}");
}

proptest! {
    /// Any order of replies, any of them refused, any bounds: no command twice, the bounds
    /// hold, the plan ends; and with every reply given and room enough, the same commands
    /// whatever the order.
    #[test]
    fn any_order_and_any_refusals_keep_the_plan_whole(
        picks in prop::collection::vec(any::<usize>(), 1..64),
        refused in prop::collection::vec(any::<bool>(), 1..64),
        commands in 1usize..60,
        bytes in 0usize..4096,
    ) {
        let vm = Vm::new(CLASS_TAG, THIS);
        let (mut p, mut f) = (picks.iter().cycle(), refused.iter().cycle());
        let limits = Limits { commands, bytes, top_frames: 1, threads: 0, absent: false, objects: true };
        let (all, plan) = run(&vm, limits, |_| *p.next().unwrap(), |_| *f.next().unwrap());
        prop_assert!(all.len() <= commands);
        prop_assert_eq!(sorted(&all).len(), all.len());
        prop_assert!(plan.gathered().iter().map(|g| g.reply.len()).sum::<usize>() <= bytes);

        let mut p = picks.iter().cycle();
        let (shuffled, _) = run(&vm, big(), |_| *p.next().unwrap(), |_| false);
        let (straight, _) = run(&vm, big(), |_| 0, |_| false);
        prop_assert_eq!(sorted(&shuffled), sorted(&straight));
    }
}
