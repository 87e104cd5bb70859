//! The last lines the exec command printed on stderr, kept to a bound: what its host row
//! shows when the exec fails (`kubectl`'s "Forbidden", a missing container). Bytes come in
//! pieces; only the last `LINES` lines of at most `LINE` characters each are kept, so a
//! command that prints without end costs a fixed amount here. Pure.

use std::collections::VecDeque;

/// Lines kept.
pub const LINES: usize = 6;
/// Characters kept of a line (the rest is cut, marked with an ellipsis).
pub const LINE: usize = 400;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tail {
    lines: VecDeque<String>,
    /// The line being read (not yet ended by a newline), kept to `LINE` bytes.
    open: Vec<u8>,
    /// The open line went past `LINE`.
    cut: bool,
}

impl Tail {
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
            } else if self.open.len() < LINE * 4 {
                self.open.push(b);
            } else {
                self.cut = true;
            }
        }
    }

    fn end_line(&mut self) {
        let text = String::from_utf8_lossy(&self.open).trim_end_matches('\r').to_string();
        let mut line: String = text.chars().take(LINE).collect();
        if self.cut || text.chars().count() > LINE {
            line.push('…');
        }
        self.open.clear();
        self.cut = false;
        if line.trim().is_empty() {
            return;
        }
        if self.lines.len() == LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// Forgets what was kept (a new run of the command begins).
    pub fn clear(&mut self) {
        *self = Tail::default();
    }

    /// The kept lines (an unended last one too), joined by " / ", control characters shown
    /// as `?`; None when nothing was printed.
    pub fn said(&self) -> Option<String> {
        let mut t = self.clone();
        if !t.open.is_empty() {
            t.end_line();
        }
        (!t.lines.is_empty()).then(|| t.lines.iter().map(|l| crate::safe_text::shown(l).into_owned()).collect::<Vec<_>>().join(" / "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_whole_and_escaped() {
        let mut t = Tail::default();
        assert_eq!(t.said(), None);
        t.push(b"Error from server (Forbidden): pods \"orders\" is forbidden: User \"dev\" cannot create resource \"pods/ex");
        t.push(b"ec\" in API group \"\" in the namespace \"shop\"\n");
        assert_eq!(t.said().as_deref(), Some("Error from server (Forbidden): pods \"orders\" is forbidden: User \"dev\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"shop\""));
        t.push(b"\x1b[31mred\x1b[0m\r\n\n  \nunended");
        assert_eq!(t.said().unwrap().rsplit(" / ").take(2).collect::<Vec<_>>(), ["unended", "?[31mred?[0m"]);
        for i in 0..100 {
            t.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(t.said().unwrap(), (94..100).map(|i| format!("line {i}")).collect::<Vec<_>>().join(" / "));
        t.clear();
        assert_eq!(t.said(), None);
    }

    #[test]
    fn a_line_without_end_is_bounded() {
        let mut t = Tail::default();
        for _ in 0..10_000 {
            t.push(&[b'x'; 1000]);
        }
        assert!(t.open.len() <= LINE * 4);
        let said = t.said().unwrap();
        assert_eq!(said.chars().count(), LINE + 1);
        assert!(said.ends_with('…'));
    }
}
