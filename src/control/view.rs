//! How `jdwpmux list` prints VMs for people. Every text a VM, a host or a process chose
//! (its name, main class, address, a note quoting ssh) is [`shown`]: one row per VM, and
//! nothing the terminal would obey.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::registry::VmInfo;
use crate::safe_text::{shown, Shown};
use crate::session::{DebuggerInfo, HeldInfo, WaitInfo};

/// One line per VM under a header; `*` marks the current VM. A VM's note (why it cannot be
/// reached) and each debugger attached to it get a line of their own under the VM's.
pub fn table(vms: &[VmInfo]) -> String {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    table_at(vms, now_ms)
}

fn table_at(vms: &[VmInfo], now_ms: u64) -> String {
    let mut rows = vec![[
        "".to_string(),
        "PORT".to_string(),
        "HOST".to_string(),
        "WHERE".to_string(),
        "PID".to_string(),
        "APP".to_string(),
        "VM".to_string(),
        "DDM".to_string(),
        "DEBUGGERS".to_string(),
        "STATE".to_string(),
        "ADDRESS".to_string(),
    ]];
    for v in vms {
        let s = &v.status;
        let mut app = s.app.as_deref().map_or_else(|| "-".into(), |a| shown(a).into_owned());
        if s.waiting_for_debugger {
            app.push_str(" (waiting)");
        }
        if let Some(user) = &v.user {
            app.push_str(&format!(" (user {})", Shown(user)));
        }
        rows.push([
            if v.current { "*".into() } else { " ".into() },
            v.debugger_port.map_or("-".into(), |p| p.to_string()),
            shown(&v.host).into_owned(),
            v.process.as_ref().and_then(|p| p.place.as_deref()).map_or_else(|| "-".into(), |w| shown(w).into_owned()),
            s.pid.map_or("-".into(), |p| p.to_string()),
            app,
            s.vm_ident.as_deref().map_or_else(|| "-".into(), |n| shown(n).into_owned()),
            match s.ddm {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "?".into(),
            },
            if s.debuggers.is_empty() { "-".into() } else { s.debuggers.len().to_string() },
            s.state.to_string(),
            if exposed(v).is_some() { format!("{} (all addresses)", Shown(&v.addr)) } else { shown(&v.addr).into_owned() },
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if let Some(vm) = i.checked_sub(1).and_then(|k| vms.get(k)) {
            if let Some(note) = &vm.note {
                out.push_str(&format!("    ! {}\n", Shown(note)));
            }
            if let Some(w) = exposed(vm) {
                out.push_str(&format!("    ! {}\n", Shown(w)));
            }
            for d in &vm.status.debuggers {
                out.push_str(&debugger_line(d, now_ms));
            }
        }
    }
    if vms.is_empty() {
        out.push_str("(no VMs yet)\n");
    }
    out
}

/// The line under the VMs about the current-VM port: what `*` marks, or why the port
/// leads to no VM now. Nothing when no VM is listed (the table says so).
pub fn current_line(vms: &[VmInfo], port: Option<u16>, no_current: Option<&str>) -> String {
    let port = port.map_or_else(|| "the current-VM port".to_string(), |p| format!("port {p}"));
    if vms.iter().any(|v| v.current) {
        format!("* the current VM: {port} leads to it (`jdwpmux select` picks another)\n")
    } else if vms.is_empty() {
        String::new()
    } else {
        format!("no current VM ({port} leads nowhere): {}\n", Shown(no_current.unwrap_or("no VM is selected")))
    }
}

/// What is said of a VM whose agent listens on every address.
fn exposed(v: &VmInfo) -> Option<&str> {
    v.process.as_ref().and_then(|p| p.exposed.as_deref())
}

/// `    debugger 127.0.0.1:5005 for 2m05s, ddm, 3 requests, 1 suspension, 512 commands`
fn debugger_line(d: &DebuggerInfo, now_ms: u64) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = vec![format!("    debugger {} for {}", d.peer, duration(now_ms.saturating_sub(d.since_ms) / 1000))];
    if d.ddm {
        parts.push("ddm".into());
    }
    parts.push(plural(d.event_requests.into(), "request", "requests"));
    parts.push(plural(d.suspensions.into(), "suspension", "suspensions"));
    parts.push(plural(d.commands, "command", "commands"));
    let mut out = format!("{}\n", parts.join(", "));
    for w in &d.waits {
        out.push_str(&format!("      ! {}, for {}\n", wait_text(w), duration(now_ms.saturating_sub(w.since_ms) / 1000)));
    }
    for h in &d.still_held {
        out.push_str(&format!("      ! {}, for {}\n", held_text(h), duration(now_ms.saturating_sub(h.since_ms) / 1000)));
    }
    out
}

/// `thread 0x1a5 stays suspended after its resume: #2 127.0.0.1:40312 holds it`
pub fn held_text(h: &HeldInfo) -> String {
    let holders: Vec<String> = h.held_by.iter().map(|d| format!("#{} {}", d.conn, d.peer)).collect();
    let holders = if holders.is_empty() { "another debugger".to_string() } else { holders.join(" and ") };
    match h.thread {
        Some(t) => format!("thread {t:#x} stays suspended after its resume: {holders} holds it"),
        None => format!("threads stay suspended after its resume of the VM: {holders} holds the VM suspended"),
    }
}

/// `thread 0x1a5: an invoke waits for #2 127.0.0.1:40312 to resume it`
pub fn wait_text(w: &WaitInfo) -> String {
    let holders: Vec<String> = w.waits_for.iter().map(|h| format!("#{} {}", h.conn, h.peer)).collect();
    let holders = if holders.is_empty() { "another debugger".to_string() } else { holders.join(" and ") };
    format!("thread {:#x}: an invoke ({}) waits for {holders} to resume it", w.thread, Shown(&w.command))
}

/// 45s, 2m05s, 3h07m.
pub(super) fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Source;
    use crate::session::VmStatus;

    #[test]
    fn each_debugger_gets_a_line_under_its_vm() {
        let d = |port: u16, since_ms: u64, ddm: bool| DebuggerInfo {
            conn: 1,
            peer: ([127, 0, 0, 1], port).into(),
            since_ms,
            ddm,
            event_requests: 3,
            suspensions: 1,
            commands: 512,
            waits: Vec::new(),
            still_held: Vec::new(),
            live: None,
        };
        let vm = |debuggers: Vec<DebuggerInfo>| VmInfo {
            id: 0,
            host: "local".into(),
            note: None,
            process: None,
            user: None,
            addr: "127.0.0.1:8000".into(),
            source: Source::Cli,
            debugger_port: Some(8600),
            current: true,
            status: VmStatus { debuggers, ..VmStatus::default() },
        };
        let now = 1_000_000_000;
        let text = table_at(&[vm(vec![d(5005, now - 125_000, true), d(5006, now - 3_000, false)]), vm(vec![])], now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].contains("  2  "), "{text}");
        assert_eq!(lines[2], "    debugger 127.0.0.1:5005 for 2m05s, ddm, 3 requests, 1 suspension, 512 commands");
        assert_eq!(lines[3], "    debugger 127.0.0.1:5006 for 3s, 3 requests, 1 suspension, 512 commands");
        assert!(lines[4].contains(" -  "), "{text}");
        // An invoke waiting for another debugger gets a line under its debugger's.
        let mut waiting = d(5005, now - 3_000, false);
        waiting.waits.push(WaitInfo {
            thread: 0x1a5,
            command: "ObjectReference.InvokeMethod".into(),
            since_ms: now - 67_000,
            waits_for: vec![crate::session::WaitHolder { conn: 2, peer: ([127, 0, 0, 1], 5006).into() }],
        });
        let text = table_at(&[vm(vec![waiting, d(5006, now, false)])], now);
        assert_eq!(
            text.lines().nth(3),
            Some("      ! thread 0x1a5: an invoke (ObjectReference.InvokeMethod) waits for #2 127.0.0.1:5006 to resume it, for 1m07s"),
            "{text}"
        );
        // So does a resume whose threads another debugger keeps suspended.
        let mut resumed = d(5005, now, false);
        let b = crate::session::WaitHolder { conn: 2, peer: ([127, 0, 0, 1], 5006).into() };
        resumed.still_held.push(HeldInfo { thread: None, since_ms: now - 5_000, held_by: vec![b.clone()] });
        resumed.still_held.push(HeldInfo { thread: Some(0x1), since_ms: now, held_by: vec![b] });
        let text = table_at(&[vm(vec![resumed])], now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "      ! threads stay suspended after its resume of the VM: #2 127.0.0.1:5006 holds the VM suspended, for 5s");
        assert_eq!(lines[4], "      ! thread 0x1 stays suspended after its resume: #2 127.0.0.1:5006 holds it, for 0s");
        assert!(lines[0].starts_with("   PORT  HOST   WHERE  PID"), "{text}");
        let mut far = vm(vec![]);
        far.host = "staging-2".into();
        far.note = Some("the ssh link to staging-2 is down: no route to host".into());
        let text = table_at(&[far], now);
        assert!(text.lines().nth(1).is_some_and(|l| l.contains("8600  staging-2")), "{text}");
        assert_eq!(text.lines().nth(2), Some("    ! the ssh link to staging-2 is down: no route to host"), "{text}");
        // Another user's JVM, taken with --other-users, says whose it is.
        let mut theirs = vm(vec![]);
        theirs.status.app = Some("Billing".into());
        theirs.user = Some("ann".into());
        let text = table_at(&[theirs], now);
        assert!(text.lines().nth(1).is_some_and(|l| l.contains("Billing (user ann)")), "{text}");
        // An agent on every address is marked, and the line under it says who can reach it.
        let mut open = vm(vec![]);
        open.process = Some(crate::registry::ProcessInfo {
            user: None,
            other_user: false,
            agent: "*:8000".into(),
            agent_from: "command line".into(),
            suspend: false,
            waiting: false,
            listening: true,
            exposed: Some(crate::discovery::jvms::exposed::warning(None, 8000, false)),
            place: None,
        });
        let text = table_at(&[open.clone()], now);
        assert!(text.lines().nth(1).is_some_and(|l| l.ends_with("127.0.0.1:8000 (all addresses)")), "{text}");
        assert!(text.lines().nth(2).is_some_and(|l| l.starts_with("    ! its JDWP agent listens on all addresses: anyone who can reach this machine's port 8000")), "{text}");
        // A container's JVM says which container, in its own column.
        let mut boxed = open;
        if let Some(p) = boxed.process.as_mut() {
            (p.exposed, p.place) = (None, Some("container billing-api (podman)".into()));
        }
        let text = table_at(&[boxed], now);
        assert!(text.lines().next().is_some_and(|l| l.contains("HOST   WHERE                           PID")), "{text}");
        assert!(text.lines().nth(1).is_some_and(|l| l.contains("local  container billing-api (podman)  -")), "{text}");
        assert_eq!(duration(3 * 3600 + 7 * 60 + 5), "3h07m");
    }

    #[test]
    fn text_from_vms_and_hosts_keeps_one_row_per_vm() {
        let evil = "Evil\x1b]0;pwned\x07\r\n\u{9b}2J\u{202e}\0";
        let vm = VmInfo {
            id: 0,
            host: format!("h{evil}"),
            note: Some(format!("ssh said: {evil}")),
            process: None,
            user: Some(format!("ann{evil}")),
            addr: format!("127.0.0.1:{evil}"),
            source: Source::Cli,
            debugger_port: Some(8600),
            current: false,
            status: VmStatus { app: Some(evil.into()), vm_ident: Some(evil.into()), ..VmStatus::default() },
        };
        let text = table_at(&[vm.clone(), vm], 0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "a header, then a row and a note per VM: {text:?}");
        assert!(!text.chars().any(|c| c != '\n' && crate::safe_text::is_hostile(c)), "{text:?}");
        assert!(lines[1].contains("Evil?]0;pwned????2J??"), "{text:?}");
        assert_eq!(lines[2], "    ! ssh said: Evil?]0;pwned????2J??");
    }

    #[test]
    fn the_star_is_said_under_the_table_only_when_a_row_has_it() {
        let vm = |current: bool| VmInfo {
            id: 0,
            host: "local".into(),
            note: None,
            process: None,
            user: None,
            addr: "127.0.0.1:8000".into(),
            source: Source::Cli,
            debugger_port: Some(8600),
            current,
            status: VmStatus::default(),
        };
        assert!(table_at(&[vm(true)], 0).lines().nth(1).is_some_and(|l| l.starts_with('*')));
        assert_eq!(current_line(&[vm(false), vm(true)], Some(8700), None), "* the current VM: port 8700 leads to it (`jdwpmux select` picks another)\n");
        let none = current_line(&[vm(false)], Some(8700), Some("\"Main\" matches 2 VMs"));
        assert_eq!(none, "no current VM (port 8700 leads nowhere): \"Main\" matches 2 VMs\n");
        assert!(!none.contains('*'), "no star, no legend for it");
        assert_eq!(current_line(&[], Some(8700), None), "", "no VMs: the table says so");
    }
}
