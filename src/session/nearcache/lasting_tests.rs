//! The near cache's lasting classes: what class lists, ClassesBySignature and ClassPrepare
//! teach, and what makes it forget them (unit tests, then a property test).

use bytes::Bytes;
use proptest::prelude::*;

use super::table::{Lookup, NearCache};
use super::tests::{hit, jstring, learn, ready, ty, SIZES};

#[test]
fn signatures_seen_before_a_type_is_kept_spare_it_on_other_unloads() {
    let mut c = ready(1 << 20);
    // ClassesBySignature("LSeen;") answers type 5; a ClassPrepare event names type 6.
    let Lookup::Watch(key) = c.lookup(1, 2, &jstring("LSeen;")) else { panic!("ClassesBySignature is watched") };
    c.sent(30, 1, key);
    let mut answer = 1u32.to_be_bytes().to_vec();
    answer.push(1);
    answer.extend_from_slice(&ty(5));
    answer.extend_from_slice(&7u32.to_be_bytes());
    assert!(!c.replied(30, 1, 1, 2, 0, &answer), "nothing of it is answered near");
    assert_eq!(c.counts().misses, 0, "watching ClassesBySignature is no miss");
    c.saw_signature(6, b"LPrepared;");
    learn(&mut c, 1, 2, 4, &ty(5), b"fields of Seen");
    learn(&mut c, 2, 2, 4, &ty(6), b"fields of Prepared");
    learn(&mut c, 3, 2, 4, &ty(7), b"fields of a type never named");
    c.unloaded(b"LOther;");
    assert!(hit(&mut c, 2, 4, &ty(5)).is_some());
    assert!(hit(&mut c, 2, 4, &ty(6)).is_some());
    assert!(hit(&mut c, 2, 4, &ty(7)).is_none());
    c.unloaded(b"LSeen;");
    assert!(hit(&mut c, 2, 4, &ty(5)).is_none());
    assert!(hit(&mut c, 2, 4, &ty(6)).is_some());
}

#[test]
fn a_classes_by_signature_answer_of_another_debugger_or_an_error_teaches_nothing() {
    let mut c = ready(1 << 20);
    let Lookup::Watch(key) = c.lookup(1, 2, &jstring("LSeen;")) else { panic!() };
    c.sent(30, 1, key.clone());
    let mut answer = 1u32.to_be_bytes().to_vec();
    answer.push(1);
    answer.extend_from_slice(&ty(5));
    answer.extend_from_slice(&7u32.to_be_bytes());
    c.replied(30, 2, 1, 2, 0, &answer);
    c.sent(31, 1, key);
    c.replied(31, 1, 1, 2, 41, &answer);
    learn(&mut c, 1, 2, 4, &ty(5), b"fields");
    c.unloaded(b"LOther;");
    assert!(hit(&mut c, 2, 4, &ty(5)).is_none(), "its signature was never learnt");
    let long = vec![b'L'; super::table::MAX_SIGNATURE_LEN + 1];
    c.saw_signature(9, &long);
    learn(&mut c, 2, 2, 4, &ty(9), b"fields");
    c.unloaded(b"LOther;");
    assert!(hit(&mut c, 2, 4, &ty(9)).is_none(), "a signature too long is not remembered");
}

/// One class of an AllClasses answer (with a generic signature for AllClassesWithGeneric).
fn listed(out: &mut Vec<u8>, t: u64, sig: &str, generic: Option<&str>) {
    out.push(1);
    out.extend_from_slice(&ty(t));
    out.extend_from_slice(&jstring(sig));
    if let Some(g) = generic {
        out.extend_from_slice(&jstring(g));
    }
    out.extend_from_slice(&7u32.to_be_bytes());
}

/// An AllClasses answer (AllClassesWithGeneric with `generic`) naming these classes.
fn all_classes(classes: &[(u64, &str)], generic: bool) -> Vec<u8> {
    let mut a = (classes.len() as u32).to_be_bytes().to_vec();
    for (t, sig) in classes {
        listed(&mut a, *t, sig, generic.then_some(""));
    }
    a
}

/// Asks `cmd` (1/3 AllClasses or 1/20 AllClassesWithGeneric) and hands back the answer.
fn list_classes(c: &mut NearCache, proxy_id: u32, cmd: u8, answer: &[u8]) {
    let Lookup::Watch(key) = c.lookup(1, cmd, &[]) else { panic!("AllClasses is watched") };
    c.sent(proxy_id, 1, key);
    assert!(!c.replied(proxy_id, 1, 1, cmd, 0, answer), "nothing of it is answered near");
}

const JAVA: &[(u64, &str)] = &[(5, "Ljava/lang/Throwable;"), (6, "LWork;"), (7, "[I"), (8, "Ljava/lang/invoke/LambdaForm$MH.0x0000000800c40800;")];

#[test]
fn class_lists_teach_the_lasting_classes() {
    for (cmd, generic) in [(3, false), (20, true)] {
        let mut c = ready(1 << 20);
        list_classes(&mut c, 40, cmd, &all_classes(JAVA, generic));
        assert!(c.lasting_class(5) && c.lasting_class(7), "AllClasses {cmd}");
        assert!(!c.lasting_class(6), "a class of another package may be unloaded");
        assert!(!c.lasting_class(8), "a hidden class may be unloaded");
        assert_eq!(c.counts().misses, 0, "watching AllClasses is no miss");
    }
}

#[test]
fn a_class_list_is_not_watched_before_unloads_are_and_a_streamed_one_teaches_nothing() {
    let mut c = NearCache::new(1 << 20);
    c.set_sizes(SIZES);
    assert_eq!(c.lookup(1, 3, &[]), Lookup::Pass);
    c.watching_unloads();
    let Lookup::Watch(key) = c.lookup(1, 3, &[]) else { panic!() };
    c.sent(41, 1, key);
    c.forget(41);
    c.replied(41, 1, 1, 3, 0, &all_classes(JAVA, false));
    assert!(!c.lasting_class(5), "a reply too large to read whole is forgotten");
    list_classes(&mut c, 42, 3, &all_classes(JAVA, false));
    c.sent(43, 1, super::table::Key { set: 1, cmd: 3, data: Bytes::new() });
    c.replied(43, 2, 1, 3, 0, &all_classes(&[(9, "Ljava/lang/Error;")], false));
    assert!(c.lasting_class(5) && !c.lasting_class(9), "another debugger's reply under that id teaches nothing");
}

#[test]
fn a_streamed_class_list_teaches_the_classes_wholly_in_its_prefix() {
    let mut c = ready(1 << 20);
    let Lookup::Watch(key) = c.lookup(1, 20, &[]) else { panic!() };
    c.sent(44, 1, key);
    assert_eq!(c.streamed(44), Some(1), "its prefix may still be read");
    let a = all_classes(&[(5, "Ljava/lang/Throwable;"), (7, "[I")], true);
    c.streamed_class_list(44, 0, &a[..a.len() - 1]);
    assert!(c.lasting_class(5) && !c.lasting_class(7));
    assert!(!c.lists_classes(44), "read once");
}

#[test]
fn classes_by_signature_and_class_prepare_teach_lasting_classes() {
    let mut c = ready(1 << 20);
    let Lookup::Watch(key) = c.lookup(1, 2, &jstring("Ljava/lang/Throwable;")) else { panic!() };
    c.sent(30, 1, key);
    let mut answer = 1u32.to_be_bytes().to_vec();
    answer.push(1);
    answer.extend_from_slice(&ty(5));
    answer.extend_from_slice(&7u32.to_be_bytes());
    c.replied(30, 1, 1, 2, 0, &answer);
    assert!(c.lasting_class(5));
    c.saw_signature(6, b"Ljava/util/ArrayList;");
    c.saw_signature(7, b"LWork;");
    assert!(c.lasting_class(6) && !c.lasting_class(7));
}

#[test]
fn a_dispose_naming_a_lasting_class_forgets_it_and_an_unreadable_one_forgets_all() {
    let mut c = ready(1 << 20);
    list_classes(&mut c, 40, 3, &all_classes(&[(5, "Ljava/lang/Throwable;"), (7, "[I")], false));
    let mut body = 1u32.to_be_bytes().to_vec();
    body.extend_from_slice(&ty(5));
    body.extend_from_slice(&1u32.to_be_bytes());
    c.disposed(&body);
    assert!(!c.lasting_class(5) && c.lasting_class(7));
    c.disposed(&body[..body.len() - 1]);
    assert!(!c.lasting_class(7));
    list_classes(&mut c, 41, 3, &all_classes(&[(7, "[I")], false));
    c.disposed(&[]);
    assert!(!c.lasting_class(7), "a streamed DisposeObjects may name any");
}

#[test]
fn a_class_list_asked_before_a_dispose_teaches_nothing() {
    let mut c = ready(1 << 20);
    let Lookup::Watch(key) = c.lookup(1, 3, &[]) else { panic!() };
    c.sent(40, 1, key);
    let mut body = 1u32.to_be_bytes().to_vec();
    body.extend_from_slice(&ty(5));
    body.extend_from_slice(&1u32.to_be_bytes());
    c.disposed(&body);
    c.replied(40, 1, 1, 3, 0, &all_classes(&[(5, "Ljava/lang/Throwable;")], false));
    assert!(!c.lasting_class(5));
}

#[test]
fn a_new_connection_or_an_unload_of_a_lasting_signature_forgets_all() {
    let mut c = ready(1 << 20);
    list_classes(&mut c, 40, 3, &all_classes(JAVA, false));
    c.unloaded(b"LWork;");
    assert!(c.lasting_class(5));
    c.unloaded(b"Ljava/lang/Throwable;");
    assert!(!c.lasting_class(5) && !c.lasting_class(7), "should never come: nothing held is trusted");
    list_classes(&mut c, 41, 3, &all_classes(JAVA, false));
    c.new_connection();
    assert!(!c.lasting_class(5));
}

#[test]
fn a_malformed_class_list_teaches_what_came_before_the_error() {
    let mut c = ready(1 << 20);
    let mut a = all_classes(&[(5, "Ljava/lang/Throwable;")], false);
    a[..4].copy_from_slice(&3u32.to_be_bytes());
    // A second class whose signature runs past the end, then one that would be lasting.
    a.push(1);
    a.extend_from_slice(&ty(6));
    a.extend_from_slice(&1000u32.to_be_bytes());
    a.extend_from_slice(b"Ljava/lang/Error;");
    listed(&mut a, 7, "Ljava/lang/Object;", None);
    list_classes(&mut c, 40, 3, &a);
    assert!(c.lasting_class(5));
    assert!(!c.lasting_class(6) && !c.lasting_class(7));
}

proptest! {
    /// Any bytes as an AllClasses or AllClassesWithGeneric reply: no panic.
    #[test]
    fn any_class_list_reply_is_read_without_a_panic(data in proptest::collection::vec(any::<u8>(), 0..200), cmd in prop_oneof![Just(3u8), Just(20u8)]) {
        let mut c = ready(1 << 20);
        list_classes(&mut c, 40, cmd, &data);
        prop_assert_eq!(c.len(), 0);
    }
}
