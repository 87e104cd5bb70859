//! The result table: one row per figure, a column per path, the ratio the target is judged
//! on, the target, and PASS / FAIL (or "info" for figures without a target).

use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// No target, or nothing to judge (n/a).
    Info,
}

impl Verdict {
    pub fn of(ok: Option<bool>) -> Verdict {
        match ok {
            Some(true) => Verdict::Pass,
            Some(false) => Verdict::Fail,
            None => Verdict::Info,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Info => "",
        }
    }
}

pub const COLUMNS: [&str; 4] = ["direct", "socat", "socat -b65536", "jdwpmux"];

#[derive(Debug, Clone)]
pub struct Row {
    pub metric: String,
    pub cells: [String; 4],
    pub ratio: String,
    pub target: String,
    pub verdict: Verdict,
}

impl Row {
    pub fn new(metric: &str, cells: [String; 4]) -> Row {
        Row { metric: metric.into(), cells, ratio: String::new(), target: String::new(), verdict: Verdict::Info }
    }

    /// A row with a figure in the jdwpmux column only.
    pub fn proxy_only(metric: &str, value: String) -> Row {
        Row::new(metric, [String::new(), String::new(), String::new(), value])
    }

    pub fn judged(mut self, ratio: String, target: &str, ok: Option<bool>) -> Row {
        self.ratio = ratio;
        self.target = target.into();
        self.verdict = Verdict::of(ok);
        self
    }
}

#[derive(Debug, Default)]
pub struct Table {
    pub rows: Vec<Row>,
    /// Section titles, inserted before the row with the given index.
    pub sections: Vec<(usize, String)>,
    /// Other paths in the four columns, from the row with the given index on (a section
    /// that compares other things than the relays of `COLUMNS`, such as ssh transports);
    /// the next section without its own returns to `COLUMNS`.
    pub columns: Vec<(usize, [String; 4])>,
}

impl Table {
    pub fn section(&mut self, title: &str) {
        self.sections.push((self.rows.len(), title.into()));
    }

    /// Names the four columns of the section just begun (after [`Table::section`]).
    pub fn columns(&mut self, names: [&str; 4]) {
        self.columns.push((self.rows.len(), names.map(String::from)));
    }

    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    pub fn render(&self) -> String {
        let head = ["metric", COLUMNS[0], COLUMNS[1], COLUMNS[2], COLUMNS[3], "ratio", "target", "result"];
        let cells = |r: &Row| -> [String; 8] {
            [
                r.metric.clone(),
                r.cells[0].clone(),
                r.cells[1].clone(),
                r.cells[2].clone(),
                r.cells[3].clone(),
                r.ratio.clone(),
                r.target.clone(),
                r.verdict.text().into(),
            ]
        };
        let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
        for (_, names) in &self.columns {
            for (i, n) in names.iter().enumerate() {
                w[i + 1] = w[i + 1].max(n.chars().count());
            }
        }
        for r in &self.rows {
            for (i, c) in cells(r).iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |out: &mut String, c: &[String]| {
            let mut s = String::new();
            for (i, v) in c.iter().enumerate() {
                let pad = w[i].saturating_sub(v.chars().count());
                if i == 0 || i >= 6 {
                    let _ = write!(s, "{v}{}", " ".repeat(pad));
                } else {
                    let _ = write!(s, "{}{v}", " ".repeat(pad));
                }
                if i + 1 < c.len() {
                    s.push_str(" | ");
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        let mut out = String::new();
        line(&mut out, &head.map(String::from));
        let total: usize = w.iter().sum::<usize>() + 3 * (w.len() - 1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        let default = COLUMNS.map(String::from);
        let mut shown = &default;
        for (i, r) in self.rows.iter().enumerate() {
            for (_, t) in self.sections.iter().filter(|(at, _)| *at == i) {
                out.push_str(&format!("[{t}]\n"));
            }
            if self.sections.iter().any(|(at, _)| *at == i) {
                let names = self.columns.iter().rev().find(|(at, _)| *at == i).map_or(&default, |(_, n)| n);
                if names != shown {
                    let mut c = vec!["(columns)".to_string()];
                    c.extend(names.iter().cloned());
                    c.extend([String::new(), String::new(), String::new()]);
                    line(&mut out, &c);
                    shown = names;
                }
            }
            line(&mut out, &cells(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_rows_with_verdicts() {
        let mut t = Table::default();
        t.section("latency");
        t.push(Row::new("µs per round trip", ["10.0".into(), "20.0".into(), "21.0".into(), "19.0".into()]).judged(
            "0.95".into(),
            "<= 1.00",
            Some(true),
        ));
        t.push(Row::proxy_only("startup ms", "12".into()).judged(String::new(), "<= 50", Some(false)));
        t.push(Row::proxy_only("list", "n/a".into()));
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("metric"));
        assert_eq!(lines[2], "[latency]");
        assert!(lines[3].contains("PASS") && lines[3].contains("0.95"));
        assert!(lines[4].ends_with("FAIL"));
        assert!(!lines[5].contains("PASS") && !lines[5].contains("FAIL"));
        assert_eq!(t.count(Verdict::Fail), 1);
        assert_eq!(t.count(Verdict::Pass), 1);
        // Columns line up: every '|' of the two judged rows sits at the same place.
        let bars = |l: &str| l.char_indices().filter(|(_, c)| *c == '|').map(|(i, _)| l[..i].chars().count()).collect::<Vec<_>>();
        assert_eq!(bars(lines[3]), bars(lines[4]));
    }

    #[test]
    fn a_section_can_name_its_own_columns() {
        let mut t = Table::default();
        t.section("relays");
        t.push(Row::new("a", ["1".into(), "2".into(), "3".into(), "4".into()]));
        t.section("ssh");
        t.columns(["ssh -L (plain forward)", "ssh -W", "", "jdwpmux --ssh"]);
        t.push(Row::new("b", ["5".into(), "6".into(), String::new(), "7".into()]));
        t.section("ssh, more");
        t.columns(["ssh -L (plain forward)", "ssh -W", "", "jdwpmux --ssh"]);
        t.push(Row::proxy_only("c", "8".into()));
        t.section("relays again");
        t.push(Row::proxy_only("d", "9".into()));
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        let named: Vec<usize> = (0..lines.len()).filter(|i| lines[*i].starts_with("(columns)")).collect();
        assert_eq!(named.len(), 2, "once for ssh (same names after), once back to the relays:\n{s}");
        assert_eq!(lines[named[0] - 1], "[ssh]");
        assert!(lines[named[0]].contains("ssh -L (plain forward)") && lines[named[0]].contains("jdwpmux --ssh"));
        assert_eq!(lines[named[1] - 1], "[relays again]");
        assert!(lines[named[1]].contains("socat -b65536"));
        assert!(!s.contains("[relays]\n(columns)"), "the first section keeps the header's names");
    }
}
