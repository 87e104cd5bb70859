use super::known::Known;
use super::plan::*;
use super::Key;
use crate::jdwp::events::{kind, suspend, IdSizes};
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const THREAD: u64 = 0x0102;

/// A plan with nothing known from earlier stops, and the keys of its first commands.
fn stop(data: &[u8], limits: Limits) -> Option<(Plan, Vec<Key>)> {
    Plan::at_stop(data, S8, limits, &mut Known::default()).map(|(p, first)| (p, first.into_iter().map(|(_, k)| k).collect()))
}

/// A reply given to a plan with nothing known; the keys of the commands it leads to.
fn reply(plan: &mut Plan, n: usize, error: u16, data: &[u8]) -> Vec<Key> {
    plan.on_reply(n, error, data, &mut Known::default()).into_iter().map(|(_, k)| k).collect()
}

/// The frames and values part of the plan alone (the threads view has tests of its own).
fn frames_only() -> Limits {
    Limits { threads: 0, ..Limits::default() }
}

fn all_threads_reply(threads: &[u64]) -> Vec<u8> {
    let mut d = (threads.len() as u32).to_be_bytes().to_vec();
    threads.iter().for_each(|t| d.extend_from_slice(&t.to_be_bytes()));
    d
}

#[test]
fn a_stop_of_every_thread_reads_the_threads_view_of_the_first_threads() {
    let limits = Limits { threads: 3, ..Limits::default() };
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), limits).unwrap();
    assert_eq!(first.last(), Some(&Key::new(1, 4, vec![])), "AllThreads after the stopped thread's commands");
    let at = first.len() - 1;
    let next = reply(&mut plan, at, 0, &all_threads_reply(&[0x0101, THREAD, 0x0103, 0x0104]));
    let mut want = Vec::new();
    for t in [0x0101u64, THREAD, 0x0103] {
        for cmd in [1, 4, 7, 12] {
            let k = Key::new(11, cmd, t.to_be_bytes().to_vec());
            // The stopped thread's name, status and frame count were asked already.
            if !(t == THREAD && cmd != 12) {
                want.push(k);
            }
        }
    }
    assert_eq!(next, want, "the first 3 threads, the stopped one's asked commands not again");
    // A malformed list leads nowhere.
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), limits).unwrap();
    assert!(reply(&mut plan, first.len() - 1, 0, &[0, 0, 0, 9, 1]).is_empty());
}

#[test]
fn a_stop_of_one_thread_reads_no_threads_view() {
    let (_, first) = stop(&composite(suspend::EVENT_THREAD, kind::BREAKPOINT, THREAD), Limits::default()).unwrap();
    assert!(first.iter().all(|k| (k.set, k.cmd) != (1, 4)), "the other threads run on");
}

fn composite(policy: u8, event_kind: u8, thread: u64) -> Vec<u8> {
    let mut d = vec![policy];
    d.extend_from_slice(&1u32.to_be_bytes());
    d.push(event_kind);
    d.extend_from_slice(&7u32.to_be_bytes());
    d.extend_from_slice(&thread.to_be_bytes());
    d.push(1); // location: class tag, class, method, index
    d.extend_from_slice(&0x30u64.to_be_bytes());
    d.extend_from_slice(&0x40u64.to_be_bytes());
    d.extend_from_slice(&5u64.to_be_bytes());
    d
}

fn thread_bytes() -> Vec<u8> {
    THREAD.to_be_bytes().to_vec()
}

fn frames_reply(frames: &[(u64, u64, u64, u64)]) -> Vec<u8> {
    let mut d = (frames.len() as u32).to_be_bytes().to_vec();
    for (id, class, method, index) in frames {
        d.extend_from_slice(&id.to_be_bytes());
        d.push(1);
        d.extend_from_slice(&class.to_be_bytes());
        d.extend_from_slice(&method.to_be_bytes());
        d.extend_from_slice(&index.to_be_bytes());
    }
    d
}

fn jstr(d: &mut Vec<u8>, s: &str) {
    d.extend_from_slice(&(s.len() as u32).to_be_bytes());
    d.extend_from_slice(s.as_bytes());
}

fn var_table(vars: &[(u64, &str, &str, u32, i32)]) -> Vec<u8> {
    let mut d = 1u32.to_be_bytes().to_vec();
    d.extend_from_slice(&(vars.len() as u32).to_be_bytes());
    for (start, name, sig, len, slot) in vars {
        d.extend_from_slice(&start.to_be_bytes());
        jstr(&mut d, name);
        jstr(&mut d, sig);
        jstr(&mut d, "");
        d.extend_from_slice(&len.to_be_bytes());
        d.extend_from_slice(&slot.to_be_bytes());
    }
    d
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn a_stop_first_asks_the_threads_name_status_count_and_frames_as_jdi_does() {
    let (plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    let t = thread_bytes();
    assert_eq!(
        first,
        vec![
            Key::new(11, 1, t.clone()),
            Key::new(11, 4, t.clone()),
            Key::new(11, 7, t.clone()),
            Key::new(11, 6, cat(&[&t, &0i32.to_be_bytes(), &(-1i32).to_be_bytes()])),
            Key::new(11, 6, cat(&[&t, &0i32.to_be_bytes(), &1i32.to_be_bytes()])),
        ]
    );
    assert_eq!(plan.thread(), THREAD);
    assert_eq!(plan.suspend_policy(), suspend::ALL);
    assert!(!plan.done());
}

/// A composite of one event of `event_kind` with the body that kind carries after its
/// location (an exception and its catch location, a return value, a field and its object).
fn composite_of(policy: u8, event_kind: u8) -> Vec<u8> {
    let mut d = composite(policy, event_kind, THREAD);
    let location = [&[1u8][..], &[0; 24]].concat();
    let object = [&[b'L'][..], &[0; 8]].concat();
    match event_kind {
        kind::EXCEPTION => d.extend_from_slice(&[&object[..], &location].concat()),
        kind::METHOD_EXIT_WITH_RETURN_VALUE => d.extend_from_slice(&[b'I', 0, 0, 0, 42]),
        kind::FIELD_ACCESS => d.extend_from_slice(&[&[1u8][..], &[0; 16], &object].concat()),
        kind::FIELD_MODIFICATION => d.extend_from_slice(&[&[1u8][..], &[0; 16], &object, &[b'Z', 1]].concat()),
        _ => {}
    }
    d
}

#[test]
fn stops_of_every_location_kind_and_both_policies_are_gathered() {
    for k in STOP_KINDS {
        for policy in [suspend::EVENT_THREAD, suspend::ALL] {
            let (plan, _) = stop(&composite_of(policy, *k), frames_only()).unwrap_or_else(|| panic!("kind {k} policy {policy}"));
            assert_eq!(plan.thread(), THREAD);
        }
    }
}

#[test]
fn nothing_is_gathered_when_nothing_is_suspended_or_no_thread_stopped() {
    assert!(stop(&composite(suspend::NONE, kind::BREAKPOINT, THREAD), frames_only()).is_none());
    // A thread start suspends its thread but stands at no location an IDE shows.
    let mut start = vec![suspend::ALL];
    start.extend_from_slice(&1u32.to_be_bytes());
    start.push(kind::THREAD_START);
    start.extend_from_slice(&3u32.to_be_bytes());
    start.extend_from_slice(&THREAD.to_be_bytes());
    assert!(stop(&start, frames_only()).is_none());
    assert!(stop(&[2, 0, 0], frames_only()).is_none(), "a malformed composite");
}

#[test]
fn the_frames_lead_to_this_and_the_variable_table_of_the_top_frame() {
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::SINGLE_STEP, THREAD), frames_only()).unwrap();
    let next = reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5), (0xF2, 0x31, 0x41, 9)]));
    let t = thread_bytes();
    assert_eq!(
        next,
        vec![
            Key::new(16, 3, cat(&[&t, &0xF1u64.to_be_bytes()])),
            Key::new(6, 5, cat(&[&0x30u64.to_be_bytes(), &0x40u64.to_be_bytes()])),
            // The declaring class's fields and superclass, for its statics.
            Key::new(2, 14, 0x30u64.to_be_bytes().to_vec()),
            Key::new(3, 1, 0x30u64.to_be_bytes().to_vec()),
        ]
    );
    assert_eq!(plan.issued(), first.len() + 4);
}

#[test]
fn visible_locals_lead_to_get_values_of_all_and_of_each_in_slot_order() {
    let (mut plan, _) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5)]));
    let table = var_table(&[
        (0, "this", "LStep;", 20, 0),
        (0, "n", "I", 20, 2),
        (0, "s", "Ljava/lang/String;", 20, 1),
        (6, "later", "J", 10, 3), // not yet in scope at 5
    ]);
    let next = reply(&mut plan, 6, 0, &table);
    let prefix = cat(&[&thread_bytes(), &0xF1u64.to_be_bytes()]);
    let values = |slots: &[(i32, u8)]| {
        let mut d = prefix.clone();
        d.extend_from_slice(&(slots.len() as u32).to_be_bytes());
        for (slot, sig) in slots {
            d.extend_from_slice(&slot.to_be_bytes());
            d.push(*sig);
        }
        Key::new(16, 1, d)
    };
    assert_eq!(next, vec![values(&[(1, b'L'), (2, b'I')]), values(&[(1, b'L')]), values(&[(2, b'I')])]);
}

#[test]
fn this_leads_to_its_type_and_a_null_this_to_nothing() {
    let (mut plan, _) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5)]));
    let this = cat(&[b"L", &0x77u64.to_be_bytes()]);
    assert_eq!(reply(&mut plan, 5, 0, &this), vec![Key::new(9, 1, 0x77u64.to_be_bytes().to_vec())]);
    let (mut plan, _) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5)]));
    assert!(reply(&mut plan, 5, 0, &cat(&[b"L", &0u64.to_be_bytes()])).is_empty());
}

#[test]
fn only_successful_replies_are_kept_and_each_position_counts_once() {
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    reply(&mut plan, 0, 0, b"\0\0\0\x04main");
    reply(&mut plan, 0, 0, b"\0\0\0\x05other");
    reply(&mut plan, 1, 13, &[]); // THREAD_NOT_SUSPENDED, say
    reply(&mut plan, 2, 0, &3u32.to_be_bytes());
    reply(&mut plan, 3, 0, &frames_reply(&[]));
    assert!(!plan.done());
    reply(&mut plan, 4, 0, &frames_reply(&[]));
    reply(&mut plan, 99, 0, &[]);
    assert!(plan.done());
    let got = plan.gathered();
    assert_eq!(got.len(), 4);
    assert_eq!(got[0], Gathered { key: first[0].clone(), reply: b"\0\0\0\x04main".to_vec() });
    assert!(got.iter().all(|g| g.key.cmd != 4), "the refused Status is not kept");
}

#[test]
fn a_plan_stays_within_its_command_and_byte_bounds() {
    let limits = Limits { commands: 6, bytes: 10, top_frames: 1, threads: 0, absent: false, objects: true };
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), limits).unwrap();
    assert_eq!(first.len(), 5);
    let next = reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5)]));
    assert_eq!(next.len(), 1, "the sixth command, no seventh");
    reply(&mut plan, 0, 0, b"\0\0\0\x04main"); // 8 bytes: kept
    reply(&mut plan, 1, 0, &[0, 0, 0, 1, 0, 0, 0, 1]); // 8 more: over 10, dropped
    let kept: usize = plan.gathered().iter().map(|g| g.reply.len()).sum();
    assert_eq!(kept, 8);
}

#[test]
fn visible_locals_follow_jdi_a_later_scope_hides_an_earlier_one_of_one_name() {
    let vars = |v: &[(u64, &str, &str, u32, i32)]| {
        v.iter().map(|(c, n, s, l, slot)| Variable { code_index: *c, name: n.to_string(), signature: s.to_string(), length: *l, slot: *slot }).collect::<Vec<_>>()
    };
    let v = vars(&[(0, "i", "I", 30, 4), (10, "i", "J", 5, 2), (0, "this$0", "LOuter;", 30, 1), (0, "zero", "I", 0, 5)]);
    assert_eq!(visible_locals(&v, 12), vec![Local { slot: 2, sig_byte: b'J' }]);
    assert_eq!(visible_locals(&v, 15), vec![Local { slot: 4, sig_byte: b'I' }], "the inner scope ends at 14");
    assert_eq!(visible_locals(&v, 0), vec![Local { slot: 4, sig_byte: b'I' }]);
    let edge = vars(&[(u64::MAX, "x", "I", 2, 1)]);
    assert!(visible_locals(&edge, 3).is_empty(), "a scope past the end of the index space");
}

#[test]
fn replies_that_do_not_parse_end_their_branch_only() {
    assert!(parse_frames(&[0, 0, 0, 1, 9], &S8).is_none());
    assert!(parse_frames(&[0xFF, 0xFF, 0xFF, 0xFF], &S8).is_none());
    assert!(parse_variable_table(&[0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF]).is_none());
    let (mut plan, _) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), frames_only()).unwrap();
    assert!(reply(&mut plan, 3, 0, &[1, 2, 3]).is_empty());
    assert_eq!(plan.issued(), 5);
}

proptest! {
    /// Whatever the VM answers, in whatever order: no panic, the bounds hold, every issued
    /// command is answered once, and the plan ends.
    #[test]
    fn any_replies_in_any_order_keep_the_bounds(
        replies in prop::collection::vec((any::<u16>(), prop::collection::vec(any::<u8>(), 0..64), any::<bool>()), 0..64),
        top in 1usize..3,
        commands in 1usize..40,
        bytes in 0usize..400,
    ) {
        let limits = Limits { commands, bytes, top_frames: top, threads: 0, absent: false, objects: true };
        let (mut plan, first) = stop(&composite(suspend::EVENT_THREAD, kind::BREAKPOINT, THREAD), limits).unwrap();
        let mut pending: Vec<usize> = (0..first.len()).collect();
        let mut script = replies.into_iter();
        while let Some(n) = pending.pop() {
            let (error, data, frames) = script.next().unwrap_or((0, Vec::new(), false));
            // Now and then a well-formed Frames or variable table, so the later steps run.
            let data = if frames && n == 3 { frames_reply(&[(1, 2, 3, 4), (5, 6, 7, 8)]) }
                else if frames { var_table(&[(0, "a", "I", 9, 1)]) } else { data };
            let before = plan.issued();
            let next = reply(&mut plan, n, error, &data);
            prop_assert_eq!(plan.issued(), before + next.len());
            pending.extend(before..plan.issued());
        }
        prop_assert!(plan.done());
        prop_assert!(plan.issued() <= commands);
        let kept: usize = plan.gathered().iter().map(|g| g.reply.len()).sum();
        prop_assert!(kept <= bytes);
    }
}

#[test]
fn a_class_lookup_asks_the_class_data_of_each_class_found() {
    let found = |classes: &[(u8, u64)]| {
        let mut d = (classes.len() as u32).to_be_bytes().to_vec();
        for (tag, id) in classes {
            d.push(*tag);
            d.extend_from_slice(&id.to_be_bytes());
            d.extend_from_slice(&7i32.to_be_bytes());
        }
        d
    };
    let first = |d: &[u8]| Plan::at_classes(d, S8, Limits::default(), &mut Known::default()).map(|(p, f)| (p, f.into_iter().map(|(_, k)| k).collect::<Vec<_>>()));
    let (plan, keys) = first(&found(&[(1, 0x30), (2, 0x31)])).unwrap();
    assert_eq!((plan.thread(), plan.suspend_policy()), (0, suspend::NONE));
    let of = |id: u64| keys.iter().filter(|k| k.data == id.to_be_bytes()).map(|k| (k.set, k.cmd)).collect::<Vec<_>>();
    assert_eq!(of(0x30), vec![(2, 15), (2, 7), (2, 14), (2, 13), (2, 10), (3, 1)], "a class: its superclass too");
    assert_eq!(of(0x31), vec![(2, 15), (2, 7), (2, 14), (2, 13), (2, 10)], "an interface has no superclass to ask");
    assert!(first(&found(&[])).is_none(), "no class");
    assert!(first(&found(&[(1, 0x30)])[..12]).is_none(), "cut short");
    let many: Vec<(u8, u64)> = (0..20).map(|i| (1, 0x100 + i)).collect();
    let (_, keys) = first(&found(&many)).unwrap();
    assert_eq!(keys.iter().filter(|k| (k.set, k.cmd) == (3, 1)).count(), LOOKUP_CLASSES, "bounded");
}

#[test]
fn a_class_found_has_its_source_debug_extension_read_and_its_absence_kept_for_a_near_side_of_6() {
    let found = [&1u32.to_be_bytes()[..], &[1], &0x30u64.to_be_bytes(), &7i32.to_be_bytes()].concat();
    let with = Limits { absent: true, ..Limits::default() };
    let mut known = Known::default();
    let (mut plan, first) = Plan::at_classes(&found, S8, with, &mut known).unwrap();
    let sde = first.iter().find(|(_, k)| (k.set, k.cmd) == (2, 12)).map(|(n, _)| *n).expect("SourceDebugExtension asked");
    let source = first.iter().find(|(_, k)| (k.set, k.cmd) == (2, 7)).map(|(n, _)| *n).expect("SourceFile asked");
    let methods = first.iter().find(|(_, k)| (k.set, k.cmd) == (2, 15)).map(|(n, _)| *n).expect("methods asked");
    plan.on_reply(sde, 101, &[], &mut known);
    plan.on_reply(source, 101, &[], &mut known);
    // Another error is not kept: the VM is asked again.
    plan.on_reply(methods, 21, &[], &mut known);
    let (gathered, absent) = plan.gathered_all();
    assert!(gathered.is_empty());
    let id = 0x30u64.to_be_bytes().to_vec();
    assert_eq!(absent, vec![Key::new(2, 12, id.clone()), Key::new(2, 7, id)]);
    // A near side of protocol 5 and older reads no absent list: nothing is asked for it.
    let (mut plan, first) = Plan::at_classes(&found, S8, Limits::default(), &mut known).unwrap();
    assert!(first.iter().all(|(_, k)| (k.set, k.cmd) != (2, 12)), "{first:?}");
    let source = first.iter().find(|(_, k)| (k.set, k.cmd) == (2, 7)).map(|(n, _)| *n).unwrap_or(0);
    plan.on_reply(source, 101, &[], &mut known);
    assert_eq!(plan.gathered_all().1, Vec::<Key>::new());
}

/// A MethodsWithGeneric reply: (id, name, modifiers) each, signature "()V", no generic one.
fn methods_reply(methods: &[(u64, &str, i32)]) -> Vec<u8> {
    let mut d = (methods.len() as u32).to_be_bytes().to_vec();
    for (id, name, mods) in methods {
        d.extend_from_slice(&id.to_be_bytes());
        d.extend_from_slice(&(name.len() as u32).to_be_bytes());
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(b"\0\0\0\x03()V\0\0\0\0");
        d.extend_from_slice(&mods.to_be_bytes());
    }
    d
}

#[test]
fn the_methods_of_a_class_found_lead_to_their_line_tables_and_not_a_superclasss() {
    let mut known = Known::default();
    let (mut plan, first) = Plan::at_prepare("LLedger;", S8, Limits::default(), &mut known);
    assert_eq!(first.iter().map(|(_, k)| (k.set, k.cmd, k.data.clone())).collect::<Vec<_>>(), vec![(1, 2, b"\0\0\0\x08LLedger;".to_vec())]);
    let found = [&1u32.to_be_bytes()[..], &[1], &0x30u64.to_be_bytes(), &7i32.to_be_bytes()].concat();
    let next = plan.on_reply(first[0].0, 0, &found, &mut known);
    let at = |set: u8, cmd: u8, next: &[(usize, Key)]| next.iter().find(|(_, k)| (k.set, k.cmd) == (set, cmd)).map(|(n, _)| *n);
    let methods = at(2, 15, &next).expect("the class's methods");
    let superclass = at(3, 1, &next).expect("its superclass");
    // work and main have code; a native and an abstract method have none.
    let reply = methods_reply(&[(0x60, "work", 0), (0x61, "main", 9), (0x62, "hash", 0x0100), (0x63, "run", 0x0400)]);
    let tables = plan.on_reply(methods, 0, &reply, &mut known);
    let asked: Vec<Vec<u8>> = tables.iter().filter(|(_, k)| (k.set, k.cmd) == (6, 1)).map(|(_, k)| k.data.clone()).collect();
    assert_eq!(asked, vec![[0x30u64.to_be_bytes(), 0x60u64.to_be_bytes()].concat(), [0x30u64.to_be_bytes(), 0x61u64.to_be_bytes()].concat()]);
    // The superclass gets class data, but no line tables: the breakpoint is in the class found.
    let up = plan.on_reply(superclass, 0, &0x20u64.to_be_bytes(), &mut known);
    let up_methods = at(2, 15, &up).expect("the superclass's methods");
    let none = plan.on_reply(up_methods, 0, &reply, &mut known);
    assert!(none.iter().all(|(_, k)| (k.set, k.cmd) != (6, 1)), "{none:?}");
    // Bounded: a class of many methods has the first LOOKUP_METHODS read.
    let (mut plan, first) = Plan::at_prepare("LBig;", S8, Limits::default(), &mut Known::default());
    let next = plan.on_reply(first[0].0, 0, &found, &mut Known::default());
    let many: Vec<(u64, String, i32)> = (0..200).map(|i| (0x1000 + i, format!("m{i}"), 0)).collect();
    let many: Vec<(u64, &str, i32)> = many.iter().map(|(i, n, m)| (*i, n.as_str(), *m)).collect();
    let tables = plan.on_reply(at(2, 15, &next).unwrap_or(0), 0, &methods_reply(&many), &mut Known::default());
    assert_eq!(tables.iter().filter(|(_, k)| (k.set, k.cmd) == (6, 1)).count(), LOOKUP_METHODS);
}

#[test]
fn only_a_prepare_request_for_one_class_by_its_exact_name_is_looked_up() {
    let request = |mods: &[&[u8]]| {
        let mut d = vec![kind::CLASS_PREPARE, 1];
        d.extend_from_slice(&(mods.len() as u32).to_be_bytes());
        mods.iter().for_each(|m| d.extend_from_slice(m));
        d
    };
    let pattern = |k: u8, p: &str| [&[k][..], &(p.len() as u32).to_be_bytes(), p.as_bytes()].concat();
    assert_eq!(prepare_signature(&request(&[&pattern(5, "a.b.Ledger")])).as_deref(), Some("La/b/Ledger;"));
    assert_eq!(prepare_signature(&request(&[&pattern(5, "Outer$Inner"), &[1, 0, 0, 0, 1]])).as_deref(), Some("LOuter$Inner;"));
    assert_eq!(prepare_signature(&request(&[&pattern(5, "Ledger"), &pattern(6, "java.*")])).as_deref(), Some("LLedger;"));
    assert_eq!(prepare_signature(&request(&[&pattern(5, "Ledger*")])), None, "a pattern");
    assert_eq!(prepare_signature(&request(&[&pattern(5, "*.Ledger")])), None, "a pattern");
    assert_eq!(prepare_signature(&request(&[&pattern(5, "A"), &pattern(5, "B")])), None, "two classes");
    assert_eq!(prepare_signature(&request(&[&pattern(6, "java.*")])), None, "no class named");
    assert_eq!(prepare_signature(&request(&[])), None);
    let mut other = request(&[&pattern(5, "Ledger")]);
    other[0] = kind::BREAKPOINT;
    assert_eq!(prepare_signature(&other), None, "not a ClassPrepare request");
    let whole = request(&[&pattern(5, "Ledger")]);
    assert_eq!(prepare_signature(&whole[..whole.len() - 1]), None, "cut short");
}

proptest! {
    /// Any bytes: no panic, and a signature only of the JNI shape `L...;`.
    #[test]
    fn prepare_requests_of_any_bytes_are_read_safely(d in proptest::collection::vec(any::<u8>(), 0..80)) {
        if let Some(s) = prepare_signature(&d) {
            prop_assert!(s.starts_with('L') && s.ends_with(';') && !s.contains('*') && !s.contains('.'));
        }
        let _ = parse_methods_with_code(&d, &S8);
        let _ = parse_lookup(&d, &S8);
    }
}

/// Without objects (a VM on this machine): the frames lead to the top frame's variable
/// table alone, its visible locals to one GetValues of all of them, and their values to
/// nothing (no strings, no arrays); nothing of `this` or the statics is asked.
#[test]
fn without_objects_a_stop_reads_the_frames_and_the_top_frames_locals_together_only() {
    let lean = Limits { objects: false, ..frames_only() };
    let (mut plan, first) = stop(&composite(suspend::ALL, kind::BREAKPOINT, THREAD), lean).unwrap();
    assert_eq!(first.len(), 5, "name, status, frame count and both frames requests: {first:?}");
    let next = reply(&mut plan, 3, 0, &frames_reply(&[(0xF1, 0x30, 0x40, 5)]));
    assert_eq!(next, vec![Key::new(6, 5, cat(&[&0x30u64.to_be_bytes(), &0x40u64.to_be_bytes()]))]);
    let table = var_table(&[(0, "n", "I", 20, 2), (0, "s", "Ljava/lang/String;", 20, 1)]);
    let next = reply(&mut plan, 5, 0, &table);
    assert_eq!(next.len(), 1, "all the locals together: {next:?}");
    assert_eq!((next[0].set, next[0].cmd), (16, 1));
    let values = cat(&[&2u32.to_be_bytes(), b"s", &0x99u64.to_be_bytes(), b"I", &7u32.to_be_bytes()]);
    assert!(reply(&mut plan, 6, 0, &values).is_empty(), "a string's value is not read");
    for n in [0, 1, 2, 4] {
        reply(&mut plan, n, 0, &[0, 0, 0, 1]);
    }
    assert!(plan.done());
}
