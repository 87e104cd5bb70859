//! The THST line of `Display for Chunk` against a plain reference, and its stack buffer.

use std::collections::BTreeMap;

use super::super::threads::{ThreadEntry, ThreadState, ThreadStatus, ThstLayout};
use super::*;

fn thst(states: &[u8]) -> Chunk {
    let entry = |(i, s): (usize, &u8)| ThreadEntry {
        tid: i as u32,
        state: ThreadState(*s),
        suspended: None,
        sys_tid: None,
        utime: None,
        stime: None,
        daemon: None,
    };
    Chunk::ThstReply(ThreadStatus { layout: ThstLayout::Document, threads: states.iter().enumerate().map(entry).collect() })
}

/// The line as first written: counts in a map, one `write!` per piece.
fn reference(states: &[u8]) -> String {
    let mut counts = BTreeMap::new();
    states.iter().for_each(|s| *counts.entry(*s).or_insert(0) += 1);
    let noun = if states.len() == 1 { "thread" } else { "threads" };
    let mut out = format!("THST {} {noun}", states.len());
    for (i, (s, n)) in counts.iter().enumerate() {
        out += &format!("{}{n} {}", if i == 0 { ": " } else { ", " }, ThreadState(*s));
    }
    out
}

#[test]
fn thread_summaries() {
    let cases: [(&[u8], &str); 5] = [
        (&[], "THST 0 threads"),
        (&[4], "THST 1 thread: 1 waiting"),
        (&[1, 5, 5, 5, 5, 5, 5, 5], "THST 8 threads: 1 running, 7 initializing"),
        (&[9, 0, 1, 4, 4, 255], "THST 6 threads: 1 state0, 1 running, 2 waiting, 1 state9, 1 state255"),
        (&[8, 7, 6, 5, 4, 3, 2, 1], "THST 8 threads: 1 running, 1 sleeping, 1 monitor, 1 waiting, 1 initializing, 1 starting, 1 native, 1 vmwait"),
    ];
    for (states, want) in cases {
        assert_eq!(thst(states).to_string(), want);
        assert_eq!(reference(states), want);
    }
}

#[test]
fn long_summaries_match_the_reference() {
    // Every state once (too long for one piece), and 70,000 threads of a few states.
    let all: Vec<u8> = (0..=255).rev().collect();
    let many: Vec<u8> = (0..70_000u32).map(|i| [2, 7, 1][i as usize % 3]).collect();
    for states in [all, many] {
        let line = thst(&states).to_string();
        assert_eq!(line, reference(&states));
    }
    assert!(thst(&(0..=255).collect::<Vec<u8>>()).to_string().ends_with(", 1 state254, 1 state255"));
}

#[test]
fn gather_refuses_what_does_not_fit() {
    let mut g = Gather::default();
    assert!(g.write_str(&"x".repeat(190)).is_ok());
    assert!(g.write_num(123).is_err());
    assert!(g.write_num(12).is_ok());
    assert_eq!(g.as_str().len(), 192);
    assert!(g.write_str("y").is_err());
    let mut g = Gather::default();
    g.write_num(0).unwrap();
    g.write_num(usize::MAX).unwrap();
    assert_eq!(g.as_str(), format!("0{}", usize::MAX));
}
