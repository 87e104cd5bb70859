use super::early::{Early, Held};
use super::early_breakpoint::*;
use crate::jdwp::events::{kind, suspend, IdSizes};
use proptest::prelude::*;

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const CLASS: u64 = 0x41;
const METHOD: u64 = 0x7f00_1234;

/// A breakpoint request as JDI's `BreakpointRequest` sends it: LocationOnly, then `extra`.
fn breakpoint(policy: u8, class: u64, method: u64, index: u64, extra: &[&[u8]]) -> Vec<u8> {
    let mut d = vec![kind::BREAKPOINT, policy];
    d.extend_from_slice(&(1 + extra.len() as u32).to_be_bytes());
    d.push(7);
    d.push(1);
    d.extend_from_slice(&class.to_be_bytes());
    d.extend_from_slice(&method.to_be_bytes());
    d.extend_from_slice(&index.to_be_bytes());
    extra.iter().for_each(|m| d.extend_from_slice(m));
    d
}

/// A LineTable reply: start, end, and one line per (index, line).
fn line_table(start: i64, end: i64, lines: &[(i64, i32)]) -> Vec<u8> {
    let mut d = start.to_be_bytes().to_vec();
    d.extend_from_slice(&end.to_be_bytes());
    d.extend_from_slice(&(lines.len() as u32).to_be_bytes());
    for (i, l) in lines {
        d.extend_from_slice(&i.to_be_bytes());
        d.extend_from_slice(&l.to_be_bytes());
    }
    d
}

/// The near side holds `table` for (CLASS, METHOD) alone.
fn holding(table: Vec<u8>) -> impl Fn(u64, u64) -> Option<Vec<u8>> {
    move |c, m| (c == CLASS && m == METHOD).then(|| table.clone())
}

#[test]
fn a_breakpoint_within_a_held_line_table_is_certain() {
    let held = holding(line_table(0, 40, &[(0, 20), (4, 21), (12, 22)]));
    for at in [0, 4, 39, 40] {
        assert!(certain(&breakpoint(suspend::ALL, CLASS, METHOD, at, &[]), &S8, &held), "index {at}");
    }
    let count = [1u8, 0, 0, 0, 1];
    assert!(certain(&breakpoint(suspend::EVENT_THREAD, CLASS, METHOD, 4, &[&count]), &S8, &held));
    assert!(certain(&breakpoint(suspend::NONE, CLASS, METHOD, 4, &[]), &S8, &held));
}

#[test]
fn anything_libjdwp_could_refuse_is_not() {
    let held = holding(line_table(0, 40, &[(0, 20)]));
    let why: &[(Vec<u8>, &str)] = &[
        (breakpoint(suspend::ALL, CLASS, METHOD, 41, &[]), "past the method's code"),
        (breakpoint(suspend::ALL, CLASS, METHOD + 1, 4, &[]), "a method whose line table is not held"),
        (breakpoint(suspend::ALL, CLASS + 1, METHOD, 4, &[]), "another class"),
        (breakpoint(3, CLASS, METHOD, 4, &[]), "no such suspend policy"),
        (breakpoint(suspend::ALL, CLASS, METHOD, 4, &[&[1, 0, 0, 0, 0]]), "a count of 0"),
        (breakpoint(suspend::ALL, CLASS, METHOD, 4, &[&[3, 0, 0, 0, 0, 0, 0, 0, 9]]), "a thread filter names an id"),
        (breakpoint(suspend::ALL, CLASS, METHOD, 4, &[&[7, 1, 0, 0, 0, 0, 0, 0, 0, 0x41, 0, 0, 0, 0, 0x7f, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 4]]), "two locations"),
        (breakpoint(suspend::ALL, 0, METHOD, 4, &[]), "a null class"),
    ];
    for (d, what) in why {
        assert!(!certain(d, &S8, &held), "{what}");
    }
    let mut step = breakpoint(suspend::ALL, CLASS, METHOD, 4, &[]);
    step[0] = kind::SINGLE_STEP;
    assert!(!certain(&step, &S8, &held), "not a breakpoint");
    let full = breakpoint(suspend::ALL, CLASS, METHOD, 4, &[]);
    assert!(!certain(&full[..full.len() - 1], &S8, &held), "short");
    let mut long = full.clone();
    long.push(0);
    assert!(!certain(&long, &S8, &held), "trailing bytes");
    let native = holding(line_table(-1, -1, &[]));
    assert!(!certain(&breakpoint(suspend::ALL, CLASS, METHOD, 0, &[]), &S8, &native), "a native method has no code");
    assert!(!certain(&full, &S8, &|_, _| None), "no line table held");
}

#[test]
fn line_tables_are_read_strictly() {
    assert_eq!(code_range(&line_table(0, 40, &[(0, 20), (4, 21)])), Some((0, 40)));
    assert_eq!(code_range(&line_table(-1, -1, &[])), None);
    assert_eq!(code_range(&line_table(10, 5, &[])), None, "end before start");
    let t = line_table(0, 40, &[(0, 20)]);
    assert_eq!(code_range(&t[..t.len() - 1]), None);
}

/// The early table answers a certain breakpoint with the next request id, and counts it.
#[test]
fn the_early_table_predicts_a_certain_breakpoint_and_its_successor() {
    let tables = holding(line_table(0, 40, &[(0, 20)]));
    let held = Held { line_table: &tables, lasting_class: &|_| false };
    let mut e = Early::default();
    e.written(0, 15, 1, &[], &S8);
    e.set_replied(0, &7u32.to_be_bytes());
    let bp = breakpoint(suspend::ALL, CLASS, METHOD, 4, &[]);
    assert_eq!(e.answer(15, 1, &bp, &S8), None, "without the line tables: no breakpoint is certain");
    assert_eq!(e.answer_with(15, 1, &bp, &S8, &held), Some(8u32.to_be_bytes().to_vec()));
    e.written_with(1, 15, 1, &bp, &S8, &held);
    let far = breakpoint(suspend::ALL, CLASS, METHOD, 99, &[]);
    assert_eq!(e.answer_with(15, 1, &bp, &S8, &held), Some(9u32.to_be_bytes().to_vec()), "the next one while the first is in flight");
    e.written_with(2, 15, 1, &far, &S8, &held);
    assert_eq!(e.answer_with(15, 1, &bp, &S8, &held), None, "an uncertain Set in flight");
}

proptest! {
    /// A request is certain only when it names the held (class, method) at an index within
    /// the held table's range; any bytes at all are read without a panic.
    #[test]
    fn certain_only_within_the_held_code(start in 0i64..1000, len in 0i64..1000, index in 0u64..3000, policy in 0u8..5, class in prop_oneof![Just(CLASS), any::<u64>()], noise in proptest::collection::vec(any::<u8>(), 0..64)) {
        let held = holding(line_table(start, start + len, &[(start, 1)]));
        let d = breakpoint(policy, class, METHOD, index, &[]);
        let inside = (start as u64..=(start + len) as u64).contains(&index);
        prop_assert_eq!(certain(&d, &S8, &held), inside && policy <= 2 && class == CLASS);
        let _ = certain(&noise, &S8, &held);
        let _ = breakpoint_place(&noise, &S8);
        let _ = code_range(&noise);
    }
}
