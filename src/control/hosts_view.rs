//! How `jdwpmux list` prints the `--ssh` hosts for people: one row per host with its link
//! state, the JVMs its last scan found and how long ago that was, and under a row why the
//! host is down or refused (with what to do) or that it runs no JVM to debug. Text from ssh
//! and host names is [`Shown`].

use std::time::{SystemTime, UNIX_EPOCH};

use crate::remote::status::{HostRow, HostState};
use crate::safe_text::Shown;

pub fn table(hosts: &[HostRow]) -> String {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    table_at(hosts, now_ms)
}

fn table_at(hosts: &[HostRow], now_ms: u64) -> String {
    let mut rows: Vec<[String; 4]> = vec![["HOST".into(), "LINK".into(), "JVMS".into(), "LAST SCAN".into()]];
    for h in hosts {
        rows.push([
            Shown(&h.host).to_string(),
            h.state.to_string(),
            if h.last_scan_ms.is_some() { h.jvms.to_string() } else { "-".into() },
            h.last_scan_ms.map_or_else(|| "never".into(), |t| format!("{} ago", super::view::duration(now_ms.saturating_sub(t) / 1000))),
        ]);
    }
    let widths: Vec<usize> = (0..4).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        let Some(h) = i.checked_sub(1).and_then(|k| hosts.get(k)) else { continue };
        let why = match h.state {
            HostState::Down | HostState::Refused | HostState::Busy => h.reason.as_deref(),
            _ => h.note.as_deref(),
        };
        if let Some(why) = why {
            out.push_str(&format!("    ! {}\n", Shown(why)));
        }
    }
    if hosts.is_empty() {
        out.push_str("(no --ssh hosts)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::status::LinkState;

    #[test]
    fn a_row_per_host_and_why_under_it() {
        let now = 1_000_000;
        let up = HostRow::new("build", "build").with_link(&LinkState::Up).scanned(2, now - 3_000);
        let empty = HostRow::new("idle", "idle").with_link(&LinkState::Up).scanned(0, now - 65_000);
        let key = HostRow::new("new\x1b[2J", "new").with_link(&LinkState::Down { reason: "ssh refused new: connect once with `ssh new`\r\n".into(), refused: true });
        let text = table_at(&[up, empty, key, HostRow::new("slow", "slow")], now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "HOST     LINK        JVMS  LAST SCAN", "{text}");
        assert_eq!(lines[1], "build    up          2     3s ago");
        assert_eq!(lines[2], "idle     up          0     1m05s ago");
        assert_eq!(lines[3], "    ! no JVM with a JDWP agent");
        assert_eq!(lines[4], "new?[2J  refused     -     never");
        assert_eq!(lines[5], "    ! ssh refused new: connect once with `ssh new`??");
        assert_eq!(lines[6], "slow     connecting  -     never");
        assert_eq!(lines.len(), 7);
        assert_eq!(table_at(&[], now), "HOST  LINK  JVMS  LAST SCAN\n(no --ssh hosts)\n");
    }
}
