//! What `stats` and `decode --stats` show: the figures of each VM as plain data (JSON for
//! scripts, and the control protocol's answer) and as text tables for people.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Figures for every VM asked about (or every VM in a capture).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsReport {
    pub vms: Vec<VmReport>,
    /// Each far link's Data frames (hosts served through jdwpmux on them); none in a
    /// capture's figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<super::LinkReport>,
}

/// One VM's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmReport {
    pub vm: String,
    /// Start of the figures (the session's start, or the first record of a capture).
    pub since: Option<String>,
    /// Seconds covered.
    pub seconds: f64,
    /// Debuggers and the proxy itself, by total reply time, longest first.
    pub sources: Vec<SourceReport>,
    /// DDM chunks by type, most frequent first.
    pub ddm_chunks: Vec<ChunkRow>,
    /// Replies with a non-zero error code, by error, most frequent first.
    pub errors: Vec<ErrorRow>,
    /// Answers from the near cache, when it is on for this VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near: Option<super::NearReport>,
}

/// One source of requests: a debugger connection, the proxy, or earlier debuggers folded
/// together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceReport {
    /// "debugger", "proxy" or "earlier debuggers".
    pub source: String,
    /// The debugger's connection number.
    pub conn: Option<u64>,
    /// The debugger's address.
    pub peer: Option<String>,
    pub count: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Sum of every reply's latency.
    pub total_us: u64,
    /// By total reply time, longest first.
    pub commands: Vec<CommandRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRow {
    /// "VirtualMachine.Version".
    pub command: String,
    pub cmd_set: u8,
    pub cmd: u8,
    pub count: u64,
    pub bytes_out: u64,
    pub replies: u64,
    pub bytes_in: u64,
    /// Replies with a non-zero error code.
    pub errors: u64,
    /// Of those, routine answers ("there is none": `stats::routine`), not trouble.
    #[serde(default)]
    pub routine: u64,
    pub total_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRow {
    pub chunk_type: String,
    pub count: u64,
    /// Data bytes the chunk headers declare.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRow {
    pub code: u16,
    pub name: String,
    pub count: u64,
}

/// "950µs", "12.3ms", "1.23s": three significant digits.
pub fn format_us(us: u64) -> String {
    if us < 1000 {
        return format!("{us}µs");
    }
    let (v, unit) = if us < 1_000_000 { (us as f64 / 1e3, "ms") } else { (us as f64 / 1e6, "s") };
    format!("{}{unit}", three_digits(v))
}

/// "999 B", "12.3 kB", "4.50 MB" (powers of 1000).
pub fn format_bytes(n: u64) -> String {
    if n < 1000 {
        return format!("{n} B");
    }
    let units = ["kB", "MB", "GB", "TB"];
    let mut v = n as f64 / 1000.0;
    let mut u = 0;
    while v >= 999.5 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    format!("{} {}", three_digits(v), units[u])
}

fn three_digits(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl SourceReport {
    /// "debugger #3 127.0.0.1:40312", "proxy".
    pub fn label(&self) -> String {
        let mut s = self.source.clone();
        if let Some(c) = self.conn {
            let _ = write!(s, " #{c}");
        }
        if let Some(p) = &self.peer {
            let _ = write!(s, " {p}");
        }
        s
    }
}

/// Right-aligned columns after a left-aligned first one.
fn table(out: &mut String, indent: &str, head: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        out.push_str(indent);
        for (i, (c, w)) in cells.zip(&widths).enumerate() {
            let pad = w.saturating_sub(c.chars().count());
            if i == 0 {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            }
        }
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
    };
    line(out, &mut head.iter().copied());
    for r in rows {
        line(out, &mut r.iter().map(String::as_str));
    }
}

fn vm_text(out: &mut String, vm: &VmReport) {
    // The VM's name may come from a capture file made anywhere: shown as text.
    let _ = write!(out, "VM {}", crate::safe_text::Shown(&vm.vm));
    if let Some(since) = &vm.since {
        let _ = write!(out, ": {:.1} s from {since}", vm.seconds);
    }
    out.push('\n');
    if vm.sources.is_empty() && vm.ddm_chunks.is_empty() {
        out.push_str("  no requests yet\n");
    }
    for s in &vm.sources {
        let _ = writeln!(
            out,
            "  {}: {} command{}, {} out, {} in, {} waiting for replies",
            s.label(),
            s.count,
            if s.count == 1 { "" } else { "s" },
            format_bytes(s.bytes_out),
            format_bytes(s.bytes_in),
            format_us(s.total_us)
        );
        let rows: Vec<Vec<String>> = s
            .commands
            .iter()
            .map(|c| {
                let lat = |v: u64| if c.replies == 0 { "-".to_string() } else { format_us(v) };
                vec![
                    c.command.clone(),
                    c.count.to_string(),
                    format_bytes(c.bytes_out),
                    format_bytes(c.bytes_in),
                    lat(c.total_us),
                    lat(c.p50_us),
                    lat(c.p90_us),
                    lat(c.p99_us),
                    lat(c.max_us),
                    c.errors.to_string(),
                ]
            })
            .collect();
        let head = ["command", "count", "out", "in", "total", "p50", "p90", "p99", "max", "errors"];
        table(out, "    ", &head, &rows);
    }
    if !vm.ddm_chunks.is_empty() {
        out.push_str("  DDM chunks:\n");
        let rows: Vec<Vec<String>> =
            vm.ddm_chunks.iter().map(|c| vec![c.chunk_type.clone(), c.count.to_string(), format_bytes(c.bytes)]).collect();
        table(out, "    ", &["type", "count", "bytes"], &rows);
    }
    if let Some(n) = &vm.near {
        let _ = writeln!(
            out,
            "  answered near: {} of {} commands it could answer ({:.1} % hit rate), {}",
            n.served,
            n.served + n.misses,
            n.hit_rate * 100.0,
            format_bytes(n.bytes)
        );
        if n.gathered + n.early + n.early_differed > 0 {
            let _ = writeln!(
                out,
                "  of them: {} gathered at a stop, {} early (before the VM's reply); early answers the VM contradicted: {}",
                n.gathered, n.early, n.early_differed
            );
        }
        let rows: Vec<Vec<String>> = n.commands.iter().map(|c| vec![c.command.clone(), c.count.to_string(), format_bytes(c.bytes)]).collect();
        table(out, "    ", &["command", "count", "bytes"], &rows);
    }
    if !vm.errors.is_empty() {
        out.push_str("  error replies:\n");
        let rows: Vec<Vec<String>> =
            vm.errors.iter().map(|e| vec![format!("{} ({})", e.name, e.code), e.count.to_string()]).collect();
        table(out, "    ", &["error", "count"], &rows);
    }
}

impl StatsReport {
    /// The text tables, one block per VM, then a line each way per far link.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if self.vms.is_empty() {
            out.push_str("no VMs\n");
        }
        for (i, vm) in self.vms.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            vm_text(&mut out, vm);
        }
        if !self.links.is_empty() {
            out.push('\n');
        }
        for l in &self.links {
            out.push_str(&l.text());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(format_us(950), "950µs");
        assert_eq!(format_us(12_345), "12.3ms");
        assert_eq!(format_us(1_234), "1.23ms");
        assert_eq!(format_us(123_456), "123ms");
        assert_eq!(format_us(1_234_567), "1.23s");
        assert_eq!(format_bytes(999), "999 B");
        assert_eq!(format_bytes(12_345), "12.3 kB");
        assert_eq!(format_bytes(4_500_000), "4.50 MB");
        assert_eq!(format_bytes(999_999), "1.00 MB");
        assert_eq!(format_bytes(u64::MAX), "18446744 TB");
    }

    #[test]
    fn far_links_follow_the_vms() {
        let mut s = crate::remote::protocol::figures::LinkFigures::default();
        s.squeezed.received.data(60_000, Some(3_000));
        let r = StatsReport { vms: Vec::new(), links: vec![super::super::LinkReport::new("build-box", s)] };
        assert_eq!(
            r.to_text(),
            "no VMs\n\nfar link to build-box: no data frames yet\nfar link from build-box: 1 of 1 data frames compressed, 60,000 bytes came as 3,000 (20.0x)\n\
             far link replay to build-box: 0 bytes in 0 frames held unacknowledged, at most 0 bytes and 0 frames (limit 0 bytes)\n"
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["links"][0]["received"]["wire_bytes"], 3_000);
        let none = serde_json::to_value(StatsReport::default()).expect("json");
        assert!(none.get("links").is_none(), "no key without far links: {none}");
        assert_eq!(serde_json::from_str::<StatsReport>(r#"{"vms": []}"#).ok(), Some(StatsReport::default()), "a report from before far links reads");
    }

    #[test]
    fn text_tables_line_up() {
        let mut t = super::super::TrafficStats::new();
        let who = super::super::Who::Debugger(3);
        let peer = "127.0.0.1:5000".parse().ok();
        t.command(who, peer, 1, 1, 11);
        t.reply(who, 1, 1, 0, 120, std::time::Duration::from_micros(90));
        t.command(who, peer, 2, 7, 19);
        t.reply(who, 2, 7, 101, 11, std::time::Duration::from_micros(3_000));
        t.ddm_chunk(u32::from_be_bytes(*b"THST"), 40);
        let r = StatsReport { vms: vec![t.report("127.0.0.1:8000", None, None)], links: Vec::new() };
        let text = r.to_text();
        let want = "\
VM 127.0.0.1:8000
  debugger #3 127.0.0.1:5000: 2 commands, 30 B out, 131 B in, 3.09ms waiting for replies
    command                   count   out     in   total     p50     p90     p99     max  errors
    ReferenceType.SourceFile      1  19 B   11 B  3.00ms  3.00ms  3.00ms  3.00ms  3.00ms       1
    VirtualMachine.Version        1  11 B  120 B    90µs    90µs    90µs    90µs    90µs       0
  DDM chunks:
    type  count  bytes
    THST      1   40 B
  error replies:
    error                     count
    ABSENT_INFORMATION (101)      1
";
        assert_eq!(text, want);
        let json = serde_json::to_string(&r).unwrap_or_default();
        let back: StatsReport = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, r);
    }
}
