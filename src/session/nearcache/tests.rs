//! The near cache against the JDWP rules it follows: what is kept, what is answered, what
//! drops it, and its byte budget (unit tests, then a model-based property test).

use std::collections::HashMap;

use bytes::Bytes;
use proptest::prelude::*;

use super::commands::{IMMUTABLE, LEFT_OUT};
use super::table::{Lookup, NearCache, ENTRY_OVERHEAD};
use crate::jdwp::events::IdSizes;
use crate::jdwp::names::display_command;
use crate::jdwp::Packet;

pub(super) const SIZES: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };

pub(super) fn ty(t: u64) -> Vec<u8> {
    t.to_be_bytes().to_vec()
}

fn method(t: u64, m: u64) -> Vec<u8> {
    let mut d = ty(t);
    d.extend_from_slice(&m.to_be_bytes());
    d
}

pub(super) fn jstring(s: &str) -> Vec<u8> {
    let mut d = (s.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(s.as_bytes());
    d
}

/// A cache that keeps everything it may: id sizes known, ClassUnload watched.
pub(super) fn ready(budget: usize) -> NearCache {
    let mut c = NearCache::new(budget);
    c.set_sizes(SIZES);
    c.watching_unloads();
    c
}

/// Asks, misses, forwards under `proxy_id`, and hands back the VM's answer.
pub(super) fn learn(c: &mut NearCache, proxy_id: u32, set: u8, cmd: u8, data: &[u8], answer: &[u8]) -> bool {
    match c.lookup(set, cmd, data) {
        Lookup::Miss(key) => {
            c.sent(proxy_id, 1, key);
            c.replied(proxy_id, 1, set, cmd, 0, answer)
        }
        other => panic!("expected a miss for {set}/{cmd}, got {other:?}"),
    }
}

pub(super) fn hit(c: &mut NearCache, set: u8, cmd: u8, data: &[u8]) -> Option<Bytes> {
    match c.lookup(set, cmd, data) {
        Lookup::Hit(b) => Some(b),
        _ => None,
    }
}

#[test]
fn every_row_names_a_real_command_and_none_is_both_in_and_out() {
    for r in IMMUTABLE {
        assert_eq!(display_command(r.set, r.cmd), r.name, "row {}/{}", r.set, r.cmd);
        assert!(!r.why.is_empty());
        assert!(!LEFT_OUT.iter().any(|(s, c, _, _)| (*s, *c) == (r.set, r.cmd)), "{} is in and out", r.name);
    }
    for (s, c, name, why) in LEFT_OUT {
        assert_eq!(display_command(*s, *c), *name);
        assert!(!why.is_empty());
    }
}

#[test]
fn what_a_class_file_lacks_is_answered_near_with_the_vms_error_until_a_redefinition() {
    let mut c = ready(1 << 20);
    // A debugger's own asking: SourceDebugExtension of class 0x30, ABSENT_INFORMATION.
    match c.lookup(2, 12, &ty(0x30)) {
        Lookup::Miss(key) => {
            c.sent(9, 1, key);
            assert!(c.replied(9, 1, 2, 12, 101, &[]));
        }
        other => panic!("expected a miss, got {other:?}"),
    }
    assert_eq!(c.lookup(2, 12, &ty(0x30)), Lookup::Refused(101));
    // Read by the VM's host for a class lookup.
    assert!(c.gathered(6, 5, &method(0x30, 0x60), 101, &[]));
    assert_eq!(c.lookup(6, 5, &method(0x30, 0x60)), Lookup::Refused(101));
    // Another error, or ABSENT_INFORMATION of a command not in the table, is not kept.
    assert!(!c.gathered(2, 12, &ty(0x31), 21, &[]));
    assert!(!c.gathered(2, 15, &ty(0x31), 101, &[]));
    match c.lookup(2, 4, &ty(0x31)) {
        Lookup::Miss(key) => {
            c.sent(10, 1, key);
            assert!(!c.replied(10, 1, 2, 4, 101, &[]));
        }
        other => panic!("expected a miss, got {other:?}"),
    }
    // An error answer is never a line table or anything else read as data.
    assert_eq!(c.peek(2, 12, &ty(0x30)), None);
    // A redefinition may add the attribute or the table: both dropped.
    c.redefine(Some(&[&1u32.to_be_bytes()[..], &ty(0x30), &0u32.to_be_bytes()].concat()));
    assert!(matches!(c.lookup(2, 12, &ty(0x30)), Lookup::Miss(_)));
    assert!(matches!(c.lookup(6, 5, &method(0x30, 0x60)), Lookup::Miss(_)));
}

#[test]
fn the_docs_show_this_table() {
    let doc = include_str!("../../../docs/near-cache.md");
    let table = super::commands::markdown();
    assert!(doc.contains(&table), "docs/near-cache.md must contain, as it is:\n{table}");
}

#[test]
fn a_second_asking_gets_the_vms_bytes_with_its_own_id() {
    let mut c = ready(1 << 20);
    let version = [jstring("Java Debug Wire Protocol"), 17u32.to_be_bytes().to_vec()].concat();
    assert!(learn(&mut c, 40, 1, 1, &[], &version));
    let vm_reply = Packet::reply(40, 0, &version);
    let answer = hit(&mut c, 1, 1, &[]).expect("kept");
    let near = Packet::reply(7, 0, &answer);
    let mut expected = vm_reply.as_bytes().to_vec();
    expected[4..8].copy_from_slice(&7u32.to_be_bytes());
    assert_eq!(near.as_bytes(), &expected[..]);
    assert_eq!(c.counts().hits, 1);
    assert_eq!(c.counts().misses, 1);
}

#[test]
fn error_replies_are_not_kept_but_what_a_class_file_lacks() {
    let mut c = ready(1 << 20);
    let Lookup::Miss(key) = c.lookup(2, 7, &ty(5)) else { panic!() };
    c.sent(3, 1, key);
    // INVALID_CLASS: the class may be another one's id next time (and it is no class file's fact).
    assert!(!c.replied(3, 1, 2, 7, 21, &[]));
    assert!(hit(&mut c, 2, 7, &ty(5)).is_none());
    assert!(c.is_empty());
}

#[test]
fn answers_about_types_wait_for_id_sizes_and_the_unload_watch() {
    let mut c = NearCache::new(1 << 20);
    assert_eq!(c.lookup(2, 1, &ty(5)), Lookup::Pass);
    c.set_sizes(SIZES);
    assert_eq!(c.lookup(2, 1, &ty(5)), Lookup::Pass, "without ClassUnload events an unload would go unseen");
    assert!(matches!(c.lookup(1, 7, &[]), Lookup::Miss(_)), "facts about the VM need neither");
    c.watching_unloads();
    assert!(matches!(c.lookup(2, 1, &ty(5)), Lookup::Miss(_)));
}

#[test]
fn commands_of_another_shape_or_not_in_the_table_pass() {
    let mut c = ready(1 << 20);
    assert_eq!(c.lookup(2, 1, &ty(5)[..7]), Lookup::Pass);
    assert_eq!(c.lookup(6, 1, &ty(5)), Lookup::Pass, "a Method command names a method too");
    assert_eq!(c.lookup(1, 1, &[0]), Lookup::Pass);
    for (s, cmd, _, _) in LEFT_OUT {
        assert_eq!(c.lookup(*s, *cmd, &ty(5)), Lookup::Pass);
    }
    assert_eq!(c.lookup(11, 6, &ty(5)), Lookup::Pass, "ThreadReference.Frames changes");
    assert_eq!(c.counts().misses, 0);
}

#[test]
fn redefine_drops_the_class_and_every_method_answer() {
    let mut c = ready(1 << 20);
    learn(&mut c, 1, 2, 5, &ty(5), b"methods of 5");
    learn(&mut c, 2, 2, 5, &ty(6), b"methods of 6");
    learn(&mut c, 3, 6, 1, &method(6, 60), b"lines");
    learn(&mut c, 4, 1, 7, &[], &SIZES.encode());
    let mut body = 1u32.to_be_bytes().to_vec();
    body.extend_from_slice(&ty(5));
    body.extend_from_slice(&[0, 0, 0, 4, 0xCA, 0xFE, 0xBA, 0xBE]);
    c.redefine(Some(&body));
    assert!(hit(&mut c, 2, 5, &ty(5)).is_none());
    assert!(hit(&mut c, 6, 1, &method(6, 60)).is_none(), "a Method command may name a subclass");
    assert_eq!(hit(&mut c, 2, 5, &ty(6)).as_deref(), Some(&b"methods of 6"[..]));
    assert!(hit(&mut c, 1, 7, &[]).is_some());
}

#[test]
fn a_redefine_that_cannot_be_read_drops_every_type() {
    let mut c = ready(1 << 20);
    learn(&mut c, 1, 2, 5, &ty(5), b"m");
    learn(&mut c, 2, 1, 7, &[], &SIZES.encode());
    c.redefine(None);
    assert!(hit(&mut c, 2, 5, &ty(5)).is_none());
    assert!(hit(&mut c, 1, 7, &[]).is_some());
    c.redefine(Some(&[0, 0, 0, 9]));
    assert!(hit(&mut c, 1, 7, &[]).is_some());
}

#[test]
fn an_answer_read_before_a_redefine_is_not_kept() {
    let mut c = ready(1 << 20);
    let Lookup::Miss(key) = c.lookup(2, 5, &ty(5)) else { panic!() };
    c.sent(9, 1, key);
    c.redefine(None);
    assert!(!c.replied(9, 1, 2, 5, 0, b"old methods"));
    assert!(hit(&mut c, 2, 5, &ty(5)).is_none());
}

#[test]
fn class_unload_drops_by_signature_and_types_of_unknown_signature() {
    let mut c = ready(1 << 20);
    learn(&mut c, 1, 2, 1, &ty(5), &jstring("LGone;"));
    learn(&mut c, 2, 2, 4, &ty(5), b"fields of Gone");
    learn(&mut c, 3, 2, 13, &ty(6), &[jstring("LStays;"), jstring("")].concat());
    learn(&mut c, 4, 2, 4, &ty(6), b"fields of Stays");
    learn(&mut c, 5, 2, 4, &ty(7), b"fields of a type never named");
    c.unloaded(b"LGone;");
    assert!(hit(&mut c, 2, 4, &ty(5)).is_none());
    assert!(hit(&mut c, 2, 1, &ty(5)).is_none());
    assert!(hit(&mut c, 2, 4, &ty(7)).is_none(), "its signature may have been LGone;");
    assert_eq!(hit(&mut c, 2, 4, &ty(6)).as_deref(), Some(&b"fields of Stays"[..]));
    c.unloaded(b"LStays;");
    assert!(hit(&mut c, 2, 4, &ty(6)).is_none());
    assert!(c.is_empty());
}

#[test]
fn dispose_of_a_type_id_drops_it_and_answers_naming_types() {
    let mut c = ready(1 << 20);
    learn(&mut c, 1, 2, 4, &ty(5), b"fields");
    learn(&mut c, 2, 3, 1, &ty(6), &ty(5));
    learn(&mut c, 3, 2, 4, &ty(8), b"other fields");
    let mut body = 1u32.to_be_bytes().to_vec();
    body.extend_from_slice(&ty(5));
    body.extend_from_slice(&1u32.to_be_bytes());
    c.disposed(&body);
    assert!(hit(&mut c, 2, 4, &ty(5)).is_none());
    assert!(hit(&mut c, 3, 1, &ty(6)).is_none(), "its answer names type 5");
    assert!(hit(&mut c, 2, 4, &ty(8)).is_some());
}

#[test]
fn a_reply_to_a_departed_debugger_or_another_command_is_not_kept() {
    let mut c = ready(1 << 20);
    let Lookup::Miss(key) = c.lookup(2, 4, &ty(5)) else { panic!() };
    c.sent(3, 1, key.clone());
    c.forget_conn(1);
    assert!(!c.replied(3, 1, 2, 4, 0, b"f"));
    c.sent(3, 1, key);
    assert!(!c.replied(3, 2, 2, 4, 0, b"f"), "the proxy id was reused by another debugger");
    assert!(c.is_empty());
    assert_eq!(c.pending(), 0);
}

#[test]
fn a_new_connection_forgets_every_answer_but_keeps_the_counts() {
    let mut c = ready(1 << 20);
    learn(&mut c, 1, 1, 7, &[], &SIZES.encode());
    assert!(hit(&mut c, 1, 7, &[]).is_some());
    c.new_connection();
    assert!(c.is_empty());
    assert_eq!(c.bytes(), 0);
    assert!(matches!(c.lookup(1, 7, &[]), Lookup::Miss(_)));
    assert_eq!(c.counts().hits, 1);
    assert_eq!(c.lookup(2, 1, &ty(5)), Lookup::Pass, "the unload watch is per connection");
}

#[test]
fn the_budget_pushes_out_the_least_recently_used() {
    let each = 8 + 100 + ENTRY_OVERHEAD;
    let mut c = ready(each * 8 * 3);
    for t in 0..3u64 {
        learn(&mut c, t as u32 + 1, 2, 4, &ty(t), &[t as u8; 100]);
    }
    assert!(hit(&mut c, 2, 4, &ty(0)).is_some());
    // Past the budget: type 1, the least recently used, goes first.
    for t in 3..30u64 {
        learn(&mut c, t as u32 + 1, 2, 4, &ty(t), &[t as u8; 100]);
        assert!(c.bytes() <= each * 24);
    }
    assert!(hit(&mut c, 2, 4, &ty(1)).is_none());
    assert!(c.counts().evicted > 0);
    // Too large a share of the budget: never kept.
    assert!(!learn(&mut c, 99, 2, 18, &ty(2), &vec![0; each * 3]));
}

/// What the property test does to the cache.
#[derive(Debug, Clone)]
enum Op {
    /// Learn (command, type, answer byte) with this proxy id; the reply is an error if set.
    Learn { cmd: u8, t: u64, fill: u8, len: usize, error: bool },
    /// Learn Signature of a type.
    Sig { t: u64, sig: u8 },
    Ask { cmd: u8, t: u64 },
    Redefine { t: u64 },
    Unload { sig: u8 },
    Dispose { t: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let cmd = prop_oneof![Just(4u8), Just(5), Just(7), Just(10)];
    prop_oneof![
        (cmd.clone(), 0..6u64, any::<u8>(), 0..300usize, prop::bool::weighted(0.2))
            .prop_map(|(cmd, t, fill, len, error)| Op::Learn { cmd, t, fill, len, error }),
        (0..6u64, 0..3u8).prop_map(|(t, sig)| Op::Sig { t, sig }),
        (cmd, 0..6u64).prop_map(|(cmd, t)| Op::Ask { cmd, t }),
        (0..6u64).prop_map(|t| Op::Redefine { t }),
        (0..3u8).prop_map(|sig| Op::Unload { sig }),
        (0..6u64).prop_map(|t| Op::Dispose { t }),
    ]
}

proptest! {
    /// Bodies of RedefineClasses and DisposeObjects, and ClassUnload signatures, as a
    /// debugger or VM may send them, malformed or not: never a panic, and a body that
    /// cannot be read drops every answer about types (what it named is unknown).
    #[test]
    fn any_bytes_in_the_commands_that_drop(body in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut c = ready(1 << 20);
        learn(&mut c, 1, 2, 4, &ty(5), b"fields");
        learn(&mut c, 2, 1, 7, &[], &SIZES.encode());
        c.redefine(Some(&body));
        c.disposed(&body);
        c.unloaded(&body);
        prop_assert!(hit(&mut c, 1, 7, &[]).is_some(), "facts about the VM stay");
        prop_assert!(c.len() <= 2);
    }

    /// Whatever happens, the cache never answers something the VM did not say last for that
    /// command, never answers after a drop that covers it, and stays within its budget.
    #[test]
    fn never_stale_and_within_budget(ops in prop::collection::vec(op(), 1..120)) {
        let budget = 4096;
        let mut c = ready(budget);
        // The model: what may still be answered, per (cmd, type); and known signatures.
        let mut model: HashMap<(u8, u64), Vec<u8>> = HashMap::new();
        let mut sigs: HashMap<u64, u8> = HashMap::new();
        let mut id = 0u32;
        for op in ops {
            id += 1;
            match op {
                Op::Learn { cmd, t, fill, len, error } => {
                    let answer = vec![fill; len];
                    if let Lookup::Miss(key) = c.lookup(2, cmd, &ty(t)) {
                        c.sent(id, 1, key);
                        let kept = c.replied(id, 1, 2, cmd, if error { 100 } else { 0 }, &answer);
                        prop_assert!(!(kept && error));
                        if kept {
                            model.insert((cmd, t), answer);
                        }
                    }
                }
                Op::Sig { t, sig } => {
                    if let Lookup::Miss(key) = c.lookup(2, 1, &ty(t)) {
                        c.sent(id, 1, key);
                        if c.replied(id, 1, 2, 1, 0, &jstring(&format!("LC{sig};"))) {
                            model.insert((1, t), jstring(&format!("LC{sig};")));
                            sigs.insert(t, sig);
                        }
                    }
                }
                Op::Ask { cmd, t } => {
                    if let Some(answer) = hit(&mut c, 2, cmd, &ty(t)) {
                        prop_assert_eq!(Some(&answer.to_vec()), model.get(&(cmd, t)), "answered what the VM did not say");
                    }
                }
                Op::Redefine { t } => {
                    let mut body = 1u32.to_be_bytes().to_vec();
                    body.extend_from_slice(&ty(t));
                    body.extend_from_slice(&0u32.to_be_bytes());
                    c.redefine(Some(&body));
                    model.retain(|(_, mt), _| *mt != t);
                }
                Op::Unload { sig } => {
                    c.unloaded(format!("LC{sig};").as_bytes());
                    // Types named with that signature, and any never named, may be gone.
                    model.retain(|(_, mt), _| sigs.get(mt).is_some_and(|s| *s != sig));
                }
                Op::Dispose { t } => {
                    let mut body = 1u32.to_be_bytes().to_vec();
                    body.extend_from_slice(&ty(t));
                    body.extend_from_slice(&1u32.to_be_bytes());
                    c.disposed(&body);
                    model.retain(|(cmd, mt), _| *mt != t && *cmd != 10);
                }
            }
            // A type whose entries are all gone forgets its signature too.
            sigs.retain(|t, _| model.keys().any(|(_, mt)| mt == t));
            prop_assert!(c.bytes() <= budget);
            prop_assert!(c.len() <= model.len(), "kept more than the model allows");
        }
    }
}
