//! A `top`-like table of a VM's threads as known from THCR/THNM/THST/THDE
//! ([`ClientData::threads`](crate::ddm::ClientData)), plus the line that goes above it.
//!
//! Columns: TID, SYSTID, NAME, STATE, SUSPENDED, UTIME, STIME, DAEMON, sorted by tid. Numbers
//! are right-aligned. STATE is the design document's name for 1..=8 and the bare number for
//! anything else. What the VM never told us is `-`: SUSPENDED only comes with the document's
//! THST layout, SYSTID/UTIME/STIME (CPU time in the VM's clock ticks) and DAEMON only with
//! the layout real VMs send. NAME takes the width the other columns leave (names longer than
//! that end in `…`; widths count characters). Thread names come from the VM, so control
//! characters are shown as `?`.

use std::fmt::Write;

use crate::ddm::ThreadInfo;

use super::units::{printable, truncate};

const HEADERS: [&str; 8] = ["TID", "SYSTID", "NAME", "STATE", "SUSPENDED", "UTIME", "STIME", "DAEMON"];
const NAME_COL: usize = 2;
/// Columns whose values are numbers, aligned right.
const RIGHT: [bool; 8] = [true, true, false, false, false, true, true, false];
/// The NAME column never gets narrower than its header, even if the line overflows `width`.
const MIN_NAME: usize = 4;

fn num(n: Option<u32>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn yes_no(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
    .to_string()
}

fn row(tid: u32, t: &ThreadInfo) -> [String; 8] {
    let state = match t.state {
        Some(s) => s.name().map_or_else(|| s.0.to_string(), str::to_string),
        None => "-".to_string(),
    };
    [
        tid.to_string(),
        num(t.sys_tid),
        t.name.as_deref().map_or_else(|| "-".to_string(), printable),
        state,
        yes_no(t.suspended),
        num(t.utime),
        num(t.stime),
        yes_no(t.daemon),
    ]
}

/// The table for terminals `width` characters wide: a header row, one row per thread, each
/// line ending in a newline and without trailing spaces.
pub fn threads_table<'a>(threads: impl IntoIterator<Item = (&'a u32, &'a ThreadInfo)>, width: usize) -> String {
    let mut sorted: Vec<(&u32, &ThreadInfo)> = threads.into_iter().collect();
    sorted.sort_by_key(|(tid, _)| **tid);
    let mut rows: Vec<[String; 8]> = sorted.iter().map(|(tid, t)| row(**tid, t)).collect();

    let mut widths = HEADERS.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let others: usize = widths.iter().enumerate().filter(|(i, _)| *i != NAME_COL).map(|(_, w)| w).sum();
    let room = width.saturating_sub(others + HEADERS.len() - 1);
    widths[NAME_COL] = widths[NAME_COL].min(room).max(MIN_NAME);
    for r in &mut rows {
        r[NAME_COL] = truncate(&r[NAME_COL], widths[NAME_COL]);
    }

    let mut out = String::new();
    let header = HEADERS.map(str::to_string);
    for cells in std::iter::once(&header).chain(rows.iter()) {
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            let _ = match (i, RIGHT[i]) {
                (0, _) => write!(out, "{cell:>w$}"),
                (7, _) => write!(out, " {cell}"), // last column: no padding
                (_, true) => write!(out, " {cell:>w$}"),
                (_, false) => write!(out, " {cell:<w$}"),
            };
        }
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no threads known)\n");
    }
    out
}

/// The line above the table, e.g. `com.example (pid 1234): 12 threads` (no newline).
pub fn threads_header(app: Option<&str>, pid: Option<u32>, count: usize) -> String {
    let who = match (app.map(printable), pid) {
        (Some(app), Some(pid)) => format!("{app} (pid {pid})"),
        (Some(app), None) => app,
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "unknown VM".to_string(),
    };
    format!("{who}: {count} thread{}", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::ddm::ThreadState;

    fn real(name: &str, state: u8, sys: u32, ut: u32, st: u32, daemon: bool) -> ThreadInfo {
        ThreadInfo {
            name: Some(name.to_string()),
            state: Some(ThreadState(state)),
            suspended: None,
            sys_tid: Some(sys),
            utime: Some(ut),
            stime: Some(st),
            daemon: Some(daemon),
        }
    }

    fn sample() -> BTreeMap<u32, ThreadInfo> {
        let mut m = BTreeMap::new();
        m.insert(1, real("main", 1, 4321, 1234, 56, false));
        m.insert(2, real("Signal Catcher", 8, 4325, 0, 1, true));
        m.insert(12, real("Binder:4321_2", 7, 4400, 3, 12345, true));
        // Only the document's THST so far: suspended known, CPU times not.
        let doc = ThreadInfo {
            name: Some("worker\x1b[31m".into()),
            state: Some(ThreadState(4)),
            suspended: Some(true),
            ..Default::default()
        };
        m.insert(9, doc);
        // Announced by THCR with no name yet and an unnamed state number.
        m.insert(30, ThreadInfo { state: Some(ThreadState(42)), ..Default::default() });
        m
    }

    #[test]
    fn wide_terminal_shows_whole_names() {
        let want = "\
TID SYSTID NAME           STATE   SUSPENDED UTIME STIME DAEMON
  1   4321 main           running -          1234    56 no
  2   4325 Signal Catcher vmwait  -             0     1 yes
  9      - worker?[31m    waiting yes           -     - -
 12   4400 Binder:4321_2  native  -             3 12345 yes
 30      - -              42      -             -     - -
";
        assert_eq!(threads_table(&sample(), 120), want);
    }

    #[test]
    fn narrow_terminal_truncates_names() {
        let t = threads_table(&sample(), 56);
        let want = "\
TID SYSTID NAME     STATE   SUSPENDED UTIME STIME DAEMON
  1   4321 main     running -          1234    56 no
  2   4325 Signal … vmwait  -             0     1 yes
  9      - worker?… waiting yes           -     - -
 12   4400 Binder:… native  -             3 12345 yes
 30      - -        42      -             -     - -
";
        assert_eq!(t, want);
        assert!(t.lines().all(|l| l.chars().count() <= 56));
        // Too narrow for anything: NAME keeps its header width and lines overflow.
        let tiny = threads_table(&sample(), 10);
        assert!(tiny.starts_with("TID SYSTID NAME STATE"), "{tiny}");
        assert!(tiny.contains(" Sig… "), "{tiny}");
    }

    #[test]
    fn sorted_from_a_slice_and_empty() {
        let a = ThreadInfo { name: Some("b".into()), ..Default::default() };
        let b = ThreadInfo { name: Some("a".into()), suspended: Some(false), ..Default::default() };
        let list = [(7u32, a), (3u32, b)];
        let want = "\
TID SYSTID NAME STATE SUSPENDED UTIME STIME DAEMON
  3      - a    -     no            -     - -
  7      - b    -     -             -     - -
";
        assert_eq!(threads_table(list.iter().map(|(t, i)| (t, i)), 80), want);
        let empty = BTreeMap::new();
        assert_eq!(
            threads_table(&empty, 80),
            "TID SYSTID NAME STATE SUSPENDED UTIME STIME DAEMON\n(no threads known)\n"
        );
    }

    #[test]
    fn headers() {
        let cases = [
            (Some("com.example"), Some(1234), 12, "com.example (pid 1234): 12 threads"),
            (Some("app\n"), None, 1, "app?: 1 thread"),
            (None, Some(7), 0, "pid 7: 0 threads"),
            (None, None, 2, "unknown VM: 2 threads"),
        ];
        for (app, pid, n, want) in cases {
            assert_eq!(threads_header(app, pid, n), want);
        }
    }
}
