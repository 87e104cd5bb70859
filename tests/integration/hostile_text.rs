//! Text a VM or a host chooses, through the real binary: a VM whose Version reply (name and
//! description), app name, HELO ident and thread names carry ESC, BEL, CR, LF, NUL, a C1
//! control and a bidi override; a host whose sshd answers with such text on ssh's stderr.
//!
//! Expected outcomes:
//! - `list` shows each of them with `?` in place of every such character, one row per VM
//!   under the header; `list --json` carries the exact strings;
//! - `threads` shows the thread names the same way, one row per thread;
//! - in the text log every line is a log line (a forged one never starts a line) and the
//!   fields are escaped (`vm_name=HotSpot Evil\x1b]0;...`); in the JSON log every line is
//!   JSON whose fields decode to the exact strings, and no such character is left raw;
//! - a host's words on ssh's stderr (ESC, BEL, CR, C1, bidi) become the note of its VM:
//!   `list` shows them with `?` on the note's one line, the log escaped, `list --json` exact.

use jdwpmux::safe_text::is_hostile;

use std::path::Path;

use crate::cli::Served;
use crate::remote::{agent, jvm_on, ready, serve};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{FakeThread, FakeVm, FakeVmConfig, JavaApp};

/// A terminal title, a bell, a line of its own that looks like a log line, NUL, a C1 CSI
/// that clears the screen and a right-to-left override.
const EVIL: &str = "Evil\x1b]0;pwned\x07\r\n2026-01-01T00:00:00.000000Z  INFO forged: root\0\u{9b}2J\u{202e}gnp.exe";
/// `EVIL` as `list` and `threads` show it.
const EVIL_SHOWN: &str = "Evil?]0;pwned???2026-01-01T00:00:00.000000Z  INFO forged: root??2J?gnp.exe";
/// `EVIL` as the text log writes it.
const EVIL_LOGGED: &str = r"Evil\x1b]0;pwned\x07\r\n2026-01-01T00:00:00.000000Z  INFO forged: root\x00\u{9b}2J\u{202e}gnp.exe";

fn hotspot() -> FakeVmConfig {
    FakeVmConfig {
        vm_name: format!("HotSpot {EVIL}"),
        version_description: Some(format!("described {EVIL}")),
        ..FakeVmConfig::hotspot_like()
    }
}

fn android() -> FakeVmConfig {
    let mut threads = FakeVmConfig::default().threads;
    threads[0] = FakeThread::new(0x1001, &format!("main {EVIL}"));
    // "Dalvik" in the name makes the proxy speak DDM to it.
    FakeVmConfig { vm_name: format!("Dalvik {EVIL}"), vm_ident: EVIL.into(), app_name: format!("com.evil {EVIL}"), threads, ..Default::default() }
}

/// No character a terminal obeys but the line ends.
fn assert_inert(what: &str, text: &str) {
    let bad: Vec<char> = text.chars().filter(|&c| c != '\n' && is_hostile(c)).collect();
    assert!(bad.is_empty(), "{what} holds {bad:?}:\n{text:?}");
}

/// A line the text log writes starts with its timestamp (`2026-01-02T03:04:05.678901Z`).
fn is_log_line(l: &str) -> bool {
    let b = l.as_bytes();
    b.len() > 28
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..26].into_iter().flatten().all(|i| b[i].is_ascii_digit())
        && [b[4], b[7], b[10], b[13], b[16], b[19], b[26], b[27]] == *b"--T::.Z "
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_vm_text_is_shown_as_text_in_list_threads_and_the_text_log() {
    let hs = FakeVm::start(hotspot()).await;
    let art = FakeVm::start(android()).await;
    let served = Served::start_with(&["--vm", &hs.addr().to_string(), "--vm", &art.addr().to_string(), "--no-scan", "--no-adb"], &[], identified_logged);
    let rows = served
        .list_until("both VMs ready, the app named", |v| {
            v.iter().filter(|e| e["state"] == "ready").count() == 2 && v.iter().any(|e| e["ddm"] == true)
        })
        .await;

    // JSON: exact.
    let row = |addr: String| rows.iter().find(|r| r["addr"] == addr.as_str()).cloned().unwrap();
    assert_eq!(row(hs.addr().to_string())["vm_ident"], format!("HotSpot {EVIL} 0.0-fake"));
    assert_eq!(row(art.addr().to_string())["app"], format!("com.evil {EVIL}"), "{rows:#?}");

    // The table: a header and one row per VM, every hostile character a `?`.
    let (code, out, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("list", &out);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "a header, a row per VM, the current VM's line: {out}");
    assert!(lines[3].starts_with("* the current VM: port "), "{out}");
    assert!(lines.iter().any(|l| l.contains(&format!("HotSpot {EVIL_SHOWN} 0.0-fake"))), "{out}");
    assert!(lines.iter().any(|l| l.contains(&format!("com.evil {EVIL_SHOWN}"))), "{out}");

    // The thread table: one row per thread.
    let (code, out, err) = served.run(&["threads", "4242", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("threads", &out);
    // The name is cut to the column's width.
    let main = "main Evil?]0;pwned???2026-01-01T00:00:00.000000Z";
    assert_eq!(out.lines().filter(|l| l.contains(main)).count(), 1, "{out}");
    assert!(out.lines().next().is_some_and(|l| l.starts_with(&format!("com.evil {EVIL_SHOWN} (pid 4242)"))), "{out}");
    for name in ["Signal Catcher", "HeapTaskDaemon"] {
        assert_eq!(out.lines().filter(|l| l.contains(name)).count(), 1, "{out}");
    }
    assert!(!out.lines().any(|l| l.starts_with("2026-01-01")), "{out}");

    // The text log: the VM's name and description escaped in their fields, no forged line.
    let line = served.wait_log("VM identified").await;
    let log = served.log_text();
    assert_inert("the text log", &log);
    assert!(log.lines().all(is_log_line), "a line that is no log line:\n{log}");
    assert!(!log.lines().any(|l| l.starts_with("2026-01-01T00:00:00.000000Z")), "a forged line:\n{log}");
    let identified = log.lines().find(|l| l.contains("VM identified") && l.contains("vm_name=HotSpot")).unwrap_or(&line);
    assert!(identified.contains(&format!("vm_name=HotSpot {EVIL_LOGGED} ")), "{identified}");
    // Only the description's first line is logged.
    assert!(identified.contains(r"description=described Evil\x1b]0;pwned\x07"), "{identified}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_vm_text_is_exact_and_inert_in_the_json_log() {
    let hs = FakeVm::start(hotspot()).await;
    let served = Served::start_with(&["--vm", &hs.addr().to_string(), "--no-scan", "--no-adb", "--log-format", "json"], &[], identified_logged);
    served.list_until("the VM ready", |v| v.iter().any(|e| e["state"] == "ready")).await;
    served.wait_log("VM identified").await;
    let log = served.log_text();
    assert_inert("the JSON log", &log);
    let events: Vec<serde_json::Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"))).collect();
    let identified = events.iter().find(|e| e["fields"]["message"] == "VM identified").unwrap();
    assert_eq!(identified["fields"]["vm_name"], format!("HotSpot {EVIL}"), "{identified}");
    assert_eq!(identified["fields"]["description"], format!("described {EVIL}").lines().next().unwrap(), "{identified}");
}

/// The line naming what a VM says it is (`VM identified`, with its name and description)
/// is a debug line since the start got quiet: these tests log it.
fn identified_logged(cmd: &mut std::process::Command) {
    cmd.env("RUST_LOG", "info,jdwpmux::session::proxy_requests=debug");
}

/// What the host's sshd prints on stderr for every session once it turns: a title, a bell,
/// a carriage return over the line, a C1 CSI and a right-to-left override.
const SSH_SAYS: &str = "refused: \x1b]0;pwned\x07 back\rover \u{9b}2J \u{202e}gnp";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_ssh_stderr_is_shown_as_text_in_notes_and_the_log() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let mut host = TestHost::start(&keys, "wry").unwrap();
    let app = JavaApp::spawn(jvm_on(&host, Path::new("java"), "Billing", agent(false, "8000"))).await.unwrap();
    let served = serve(&keys, &["wry"], &[]);
    served.list_until("Billing ready", |r| ready(r, "wry", "Billing")).await;

    // The host turns: every session now prints SSH_SAYS on stderr and ends. Its sessions
    // (and Billing with them) are ended, so the link is made again and fails with those words.
    let script = keys.path("says.sh");
    let printf = SSH_SAYS.replace('\x1b', "\\033").replace('\x07', "\\007").replace('\r', "\\r").replace('\u{9b}', "\\302\\233").replace('\u{202e}', "\\342\\200\\256");
    std::fs::write(&script, format!("printf '{printf}\\n' >&2\nexit 1\n")).unwrap();
    host.force(&keys, &format!("sh {}", script.display())).unwrap();
    drop(app);
    let rows = served
        .list_until("the note with the host's words", |r| r.iter().any(|v| v["note"].as_str().is_some_and(|n| n.contains("refused: "))))
        .await;
    let note = rows.iter().find_map(|v| v["note"].as_str()).unwrap();
    assert!(note.ends_with(&format!("ssh to wry: {SSH_SAYS}")), "exact in JSON: {note:?}");

    let (code, out, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("list", &out);
    let (vms, hosts) = out.split_once("\n\n").unwrap_or((&out, ""));
    let lines: Vec<&str> = vms.lines().collect();
    assert_eq!(lines.len(), 4, "a header, the VM, its note, the current-VM port's line: {out}");
    assert!(lines[3].starts_with("* the current VM") || lines[3].starts_with("no current VM"), "{out}");
    assert!(lines[2].ends_with("ssh to wry: refused: ?]0;pwned? back?over ?2J ?gnp"), "{out}");
    // The host's row says the same under it, as text.
    let lines: Vec<&str> = hosts.lines().collect();
    assert_eq!(lines.len(), 3, "a header, the host, why it is down: {out}");
    assert!(lines[1].starts_with("wry ") && lines[2].ends_with("ssh to wry: refused: ?]0;pwned? back?over ?2J ?gnp"), "{out}");

    let log = served.log_text();
    assert_inert("the log", &log);
    assert!(log.lines().all(is_log_line), "{log}");
    assert!(log.contains(r"ssh to wry: refused: \x1b]0;pwned\x07 back\rover \u{9b}2J \u{202e}gnp; trying again"), "{log}");
    drop(served);
    drop(host);
}
