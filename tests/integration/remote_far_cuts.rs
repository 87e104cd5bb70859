//! Link cuts through jdwpmux on the host (`serve --ssh HOST --far always`), with real
//! components: a test host (a network namespace with Debian's sshd), real JVMs there, the
//! far side started through ssh, and JDI programs compiled here acting as an IDE would.
//!
//! - A 30 s cut while an IDE is stopped, stepping into the cut: the VM stays suspended, the
//!   step completes after, and every stop shows what a run without the cut shows.
//! - A cut with events and commands in flight both ways: every event arrives once and in
//!   order, every command gets its own reply once.
//! - A cut shorter than the hold with jdb stopped: it stays stopped, then carries on.
//! - A cut longer than the hold: within the hold the near side closes jdb with a line naming
//!   the host and lists the VM released, as the far side lets it go (a debugger leaving);
//!   the VM is served again once the host is back.

use std::time::Duration;

use tokio::time::Instant;

use crate::cli::Served;
use crate::remote::{agent, jdb, serve, SLOW};
use crate::remote_far::far_bin;
use crate::support::console::Console;
use crate::support::jdi::javac_jdi;
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

const TILL_JAVA: &str = include_str!("../../testkit/src/jdi/Till.java");
const STEP_DRIVER_JAVA: &str = include_str!("../../testkit/src/jdi/StepDriver.java");
const COUNTER_JAVA: &str = include_str!("../../testkit/src/jdi/Counter.java");
const WATCHER_JAVA: &str = include_str!("../../testkit/src/jdi/Watcher.java");

/// A JDI program compiled here, started as a debugger of `127.0.0.1:PORT`.
struct JdiTool {
    dir: tempfile::TempDir,
    class: &'static str,
}

impl JdiTool {
    async fn compile(class: &'static str, source: &str) -> JdiTool {
        let dir = tempfile::tempdir().unwrap();
        javac_jdi(dir.path(), &[(&format!("{class}.java"), source)]).await.unwrap();
        JdiTool { dir, class }
    }

    async fn attach(&self, port: u16) -> Console {
        let mut cmd = tokio::process::Command::new("java");
        cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"]).arg(self.dir.path()).args([self.class, "127.0.0.1", &port.to_string()]);
        let mut c = Console::spawn(cmd, self.class).unwrap();
        c.expect("attached", SLOW).await.unwrap();
        c
    }
}

/// `class` from `source` on `host`, its agent on the host's loopback port `port`.
async fn app_on(host: &TestHost, class: &str, source: &str, port: u16, args: &[&str]) -> JavaApp {
    let spec = JvmSpec {
        java: "java".into(),
        prefix: host.prefix(),
        agent: agent(false, &port.to_string()),
        sources: vec![(format!("{class}.java"), source.to_string())],
        class: class.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..JvmSpec::default()
    };
    let app = JavaApp::spawn(spec).await.unwrap();
    app.wait_for_output(&format!("{class} started"), SLOW).await.unwrap();
    app
}

/// The local debugger port of the VM of `host` whose agent is at `127.0.0.1:PORT`, once ready.
async fn port_of(served: &Served, host: &str, agent_port: u16) -> u16 {
    let addr = format!("127.0.0.1:{agent_port}");
    let pick = |rows: &[serde_json::Value]| -> Option<u16> {
        rows.iter()
            .find(|r| r["host"] == host && r["addr"] == addr.as_str() && r["state"] == "ready")
            .and_then(|r| r["debugger_port"].as_u64())
            .map(|p| p as u16)
    };
    let rows = served.list_until(&format!("{host}:{addr} ready"), |r| pick(r).is_some()).await;
    pick(&rows).unwrap()
}

/// Lines of the daemon's log that show a reply lost, repeated or given to another command,
/// or a VM connection that was lost.
fn bad_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("no request of that id is outstanding") || l.contains("lost the VM connection") || l.contains("VM not reachable")).collect()
}

const STEPS: usize = 10;
/// The step after which the link is cut (the IDE is stopped there when it steps into the cut).
const CUT_AT_STEP: usize = 2;
const LONG_CUT: Duration = Duration::from_secs(30);

/// The IDE stops at `Till.work`'s breakpoint and steps `STEPS` times; with `cut`, the link
/// to the host is cut while it is stopped after step `CUT_AT_STEP - 1`, the next step is sent
/// into the cut, and the link comes back after `LONG_CUT`. Returns every stop's lines.
async fn step_through(ide: &JdiTool, port: u16, app: &JavaApp, cut: Option<(&TestHost, &Served)>) -> Vec<String> {
    let mut c = ide.attach(port).await;
    c.send("go Till work go").await.unwrap();
    c.expect_all(&["going", "stopped 0"], SLOW).await.unwrap();
    for n in 1..=STEPS {
        match cut {
            Some((host, served)) if n == CUT_AT_STEP => {
                let before = app.ticks_seen();
                host.net.set_link(false).unwrap();
                let cut_at = Instant::now();
                c.send("step").await.unwrap();
                let line = served.wait_cut(&host.alias).await;
                assert!(line.contains("its VMs are held by jdwpmux there"), "{line}");
                tokio::time::sleep_until(cut_at + LONG_CUT).await;
                assert!(!c.output().contains(&format!("stopped {n}")), "the step completed during the cut:\n{}", c.output());
                assert_eq!(app.ticks_seen(), before, "the VM ran during the cut: it saw its debugger go");
                assert!(!app.output().contains("tick"), "the VM ran during the cut:\n{}", app.output());
                host.net.set_link(true).unwrap();
                let up = Instant::now();
                c.expect(&format!("stopped {n}"), SLOW).await.unwrap();
                println!("the step sent into a {LONG_CUT:?} cut completed {:?} after the link came back", up.elapsed());
                // The link's return is noticed as it happens, not at the next timed attempt.
                served.wait_log(&format!("the network changed: trying {} again now", host.alias)).await;
                let log = served.log_text();
                let steps = ["lost the ssh link", "lost the link to jdwpmux", "the network changed", "using jdwpmux", "connected to the far side"];
                for l in log.lines().filter(|l| steps.iter().any(|s| l.contains(s))) {
                    println!("  {l}");
                }
            }
            _ => {
                c.send("step").await.unwrap();
                c.expect(&format!("stopped {n}"), SLOW).await.unwrap();
            }
        }
    }
    let out = c.output();
    assert!(!out.contains("error"), "{out}");
    assert!(!app.output().contains("tick"), "the VM ran while stopped:\n{}", app.output());
    c.send("finish").await.unwrap();
    c.expect("finished", SLOW).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    c.quit_with("exit").await.unwrap();
    out.lines().filter(|l| l.starts_with("stop ")).map(str::to_string).collect()
}

/// The link to the host is cut for 30 s while an IDE (JDI: a SUSPEND_ALL breakpoint, steps
/// over lines, and at each stop the frames, visible locals, `this` and its fields, statics,
/// strings, array heads and the thread's name) is stopped, and the IDE steps into the cut:
/// its step waits, the VM stays suspended throughout (the app does not tick), and when the
/// link is back the step completes and stepping goes on. Every stop shows exactly what the
/// same stepping shows on a twin VM without a cut; the daemon saw no reply lost or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_30s_cut_while_stepping_loses_nothing_and_shows_the_same_values() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farstep").unwrap();
    let (ide, twin, app) = tokio::join!(
        JdiTool::compile("StepDriver", STEP_DRIVER_JAVA),
        app_on(&host, "Till", TILL_JAVA, 8000, &[]),
        app_on(&host, "Till", TILL_JAVA, 8001, &[]),
    );
    let served = serve(&keys, &["farstep"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on farstep").await;
    let (twin_port, app_port) = (port_of(&served, "farstep", 8000).await, port_of(&served, "farstep", 8001).await);

    let without = step_through(&ide, twin_port, &twin, None).await;
    let with = step_through(&ide, app_port, &app, Some((&host, &served))).await;
    assert!(without.len() > STEPS * 8, "every stop reads frames, locals, fields and statics: {without:#?}");
    assert!(without.iter().any(|l| l.contains("local sum=")) && without.iter().any(|l| l.contains("this.items=int[][5] { 7 14 21 28 }")), "{without:#?}");
    assert_eq!(with, without, "the stops seen through the cut differ from those of a run without it");
    let bad = bad_lines(&served.log_text()).iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(bad.is_empty(), "{bad:#?}");
    drop(served);
}

/// Events and commands in flight both ways while the link is cut: the app changes a
/// watched field every few ms (a SUSPEND_NONE watchpoint: an event per change, carrying the
/// new value) and two loops of the debugger read a table's elements (each reply checked to
/// be that element). After a 10 s cut, every change arrived once and in order (each event's
/// value is the last one plus one, up to the app's final count), every command got its own
/// reply (a lost one would hang a loop), and the daemon dropped no reply to an unknown id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_cut_with_events_and_commands_in_flight_loses_and_repeats_nothing() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farflow").unwrap();
    let (watcher, app) = tokio::join!(JdiTool::compile("Watcher", WATCHER_JAVA), app_on(&host, "Counter", COUNTER_JAVA, 8000, &["{dir}"]));
    let served = serve(&keys, &["farflow"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on farflow").await;
    let port = port_of(&served, "farflow", 8000).await;
    let mut w = watcher.attach(port).await;
    w.send("watch Counter seq TABLE").await.unwrap();
    w.expect("watching", SLOW).await.unwrap();
    let flowing = status_until(&mut w, "events and commands flowing", |s| s.events >= 200 && s.commands >= 200).await;

    host.net.set_link(false).unwrap();
    let cut_at = Instant::now();
    served.wait_cut("farflow").await;
    tokio::time::sleep_until(cut_at + Duration::from_secs(10)).await;
    let during = status(&mut w).await;
    host.net.set_link(true).unwrap();
    let up = Instant::now();
    let after = status_until(&mut w, "commands answered after the cut", |s| s.commands > during.commands).await;
    println!("commands answered again {:?} after the link came back", up.elapsed());
    status_until(&mut w, "events after the cut", |s| s.events > after.events + 200 && s.commands > after.commands + 200).await;

    std::fs::write(app.dir().join("stop"), b"").unwrap();
    app.wait_for_output("done ", SLOW).await.unwrap();
    let done: i64 = app.output().split("done ").nth(1).and_then(|t| t.split_whitespace().next()).and_then(|n| n.parse().ok()).expect("the final count");
    let end = status_until(&mut w, "the last change's event", |s| s.last == done).await;
    let out = w.output();
    assert!(!out.contains("out of order") && !out.contains("wrong reply") && !out.contains("error") && !out.contains("disconnected"), "{out}");
    assert_eq!(end.bad, 0, "{out}");
    assert_eq!(end.events, end.last - end.first + 1, "an event lost or repeated: {end:?}");
    assert!(end.first <= flowing.last && during.last < done, "the changes spanned the cut: {flowing:?} {during:?} {end:?}");
    let bad = bad_lines(&served.log_text()).iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(bad.is_empty(), "{bad:#?}");
    w.quit_with("exit").await.unwrap();
    drop(served);
}

/// What the Watcher says it has seen.
#[derive(Debug, Clone, Copy)]
struct Seen {
    first: i64,
    last: i64,
    events: i64,
    commands: i64,
    bad: i64,
}

async fn status(w: &mut Console) -> Seen {
    w.send("status").await.unwrap();
    let text = w.expect("bad=", SLOW).await.unwrap();
    let rest = w.expect("\n", SLOW).await.unwrap();
    let line = format!("{}{}", text.rsplit("status ").next().unwrap_or_default(), rest);
    let field = |name: &str| -> i64 {
        line.split_whitespace().find_map(|kv| kv.strip_prefix(&format!("{name}="))).and_then(|v| v.trim().parse().ok()).unwrap_or_else(|| panic!("no {name} in {line:?}"))
    };
    Seen { first: field("first"), last: field("last"), events: field("events"), commands: field("commands"), bad: field("bad") }
}

async fn status_until(w: &mut Console, what: &str, cond: impl Fn(&Seen) -> bool) -> Seen {
    let deadline = Instant::now() + SLOW;
    loop {
        let s = status(w).await;
        if cond(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "no {what} within {SLOW:?}: {s:?}\n{}", w.output());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A row's debuggers' suspensions, summed.
fn suspensions(row: &serde_json::Value) -> u64 {
    row["debuggers"].as_array().map_or(0, |ds| ds.iter().map(|d| d["suspensions"].as_u64().unwrap_or(0)).sum())
}

/// jdb stopped at Billing.tick's breakpoint through `serve`; the app's tick count then.
pub(crate) async fn stopped_at_tick(vm_port: u16, app: &JavaApp) -> (crate::support::Jdb, Option<u64>) {
    let mut j = jdb(vm_port).await;
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Billing.tick").await.unwrap();
    j.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    (j, app.ticks_seen())
}

/// A cut shorter than the hold (`--far-hold 30`, a 12 s cut, which ssh notices: its master is
/// lost and made again) while jdb is stopped at a breakpoint: jdb stays stopped (the app does not tick, `list` shows its suspension all
/// along and no release), nothing is said released, and when the link is back jdb steps
/// and carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_cut_shorter_than_the_hold_keeps_jdb_stopped_then_it_carries_on() {
    use crate::remote::{one_vm, row, OneVm};
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host, app, served, port: vm_port } = one_vm("farshort", &["--far", "always", "--far-path", &far.path, "--far-hold", "30", "--ssh-keepalive", "2"]).await;
    served.wait_log("using jdwpmux on farshort").await;
    let (mut j, stopped) = stopped_at_tick(vm_port, &app).await;
    let held = served.list_until("jdb's suspension listed", |r| row(r, "farshort", "Billing").is_some_and(|v| suspensions(v) >= 1)).await;
    let before = suspensions(row(&held, "farshort", "Billing").unwrap());

    host.net.set_link(false).unwrap();
    let cut_at = Instant::now();
    let mut reads = 0;
    while cut_at.elapsed() < Duration::from_secs(12) {
        let (code, out, _) = served.run(&["list", "--json"]);
        if code == 0 {
            let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
            let r = row(&rows, "farshort", "Billing").expect("Billing stays listed through the cut");
            assert_eq!(suspensions(r), before, "the suspension is listed all through the cut: {r}");
            assert!(!r["note"].as_str().unwrap_or("").contains("released"), "{r}");
            reads += 1;
        }
        assert_eq!(app.ticks_seen(), stopped, "the VM ran during the cut");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(reads >= 10, "list answered {reads} times in the cut");
    let cut_line = served.wait_cut("farshort").await;
    // The master is lost too (ssh's keep-alives, 2 s here) and made again after the cut.
    served.wait_log("lost the ssh link to farshort").await;
    host.net.set_link(true).unwrap();
    let up = Instant::now();
    assert_eq!(app.ticks_seen(), stopped, "the VM stayed stopped through the cut");
    j.send("step").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    println!("jdb stepped {:?} after a 12 s cut ended; list read {reads} times during it", up.elapsed());
    j.send("clear Billing.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Billing.tick", "main[1] "], SLOW).await.unwrap();
    j.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    j.quit().await.unwrap();
    let log = served.log_text();
    assert!(!log.contains("let its VMs go") && !log.contains("ended (pid"), "{log}");
    assert_eq!(far.pids().len(), 1, "the same far side serves on");
    // The cut is said when it begins and when it ends (with its tries), not at every try.
    let back = served.wait_log("the ssh link to farshort is back after").await;
    assert!(back.contains(" INFO ") && back.contains(" tries"), "{back}");
    let since_cut: String = log.lines().skip_while(|l| *l != cut_line).collect::<Vec<_>>().join("\n");
    let warns = since_cut.lines().filter(|l| l.contains(" WARN ")).count();
    assert!(warns <= 2, "{warns} WARN lines during a 12 s cut: {since_cut}");
    drop(served);
}

/// A cut longer than the far side's hold (`--far-hold 10`) while jdb is stopped at a
/// breakpoint, and the host does not come back for a while: within the hold (counted from
/// the last word heard) the near side closes jdb's connection with one line naming the host,
/// and `list` read all through the cut shows the VM `released (the hold ran out)`, never a
/// suspension the far side has let go. The far side lets the VM go at its hold too, not the
/// 20 s of silence it took to notice a cut before (the app runs on, its breakpoint gone).
/// When the link is back, the VM is listed again through a new far side, and a new jdb
/// breaks and steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_cut_longer_than_the_hold_closes_jdb_and_lists_the_release_during_the_cut() {
    use crate::remote::{break_step_quit, one_vm, port, ready, row, OneVm};
    crate::need_test_hosts!();
    const HOLD: Duration = Duration::from_secs(10);
    let far = far_bin();
    let OneVm { keys: _keys, host, app, served, port: vm_port } = one_vm("farhold", &["--far", "always", "--far-path", &far.path, "--far-hold", "10"]).await;
    served.wait_log("using jdwpmux on farhold").await;
    let (mut j, stopped) = stopped_at_tick(vm_port, &app).await;
    served.list_until("jdb's suspension listed", |r| row(r, "farhold", "Billing").is_some_and(|v| suspensions(v) >= 1)).await;

    host.net.set_link(false).unwrap();
    let cut_at = Instant::now();
    let (mut closed, mut said, mut listed, mut ran) = (None, None, None, None);
    let mut reads = 0;
    while closed.is_none() || said.is_none() || listed.is_none() || ran.is_none() {
        assert!(cut_at.elapsed() < HOLD + SLOW, "after {:?}: jdb closed {closed:?}, said {said:?}, listed {listed:?}, ran {ran:?}\n{}", cut_at.elapsed(), served.log_text());
        // The app's ticks are read before `list`: once the far side has let the VM go, no
        // list read after may show it suspended.
        let running = app.ticks_seen() > stopped;
        if running && ran.is_none() {
            ran = Some(cut_at.elapsed());
        }
        let (code, out, _) = served.run(&["list", "--json"]);
        if code == 0 {
            let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
            let r = row(&rows, "farhold", "Billing").expect("Billing stays listed through the cut");
            reads += 1;
            if running {
                assert_eq!(suspensions(r), 0, "a suspension listed {:?} into the cut, after the far side let the VM go: {r}", cut_at.elapsed());
            }
            if r["note"].as_str().is_some_and(|n| n.starts_with("released (the hold ran out)")) && listed.is_none() {
                assert_eq!(suspensions(r), 0, "{r}");
                listed = Some(cut_at.elapsed());
                // Read after the VM's row: the host cannot be `up` beside a VM said released.
                let (_, hosts, _) = served.run(&["list", "--hosts", "--json"]);
                let hosts: Vec<serde_json::Value> = serde_json::from_str(&hosts).unwrap();
                let h = hosts.iter().find(|h| h["host"] == "farhold").unwrap_or_else(|| panic!("{hosts:?}"));
                assert_ne!(h["state"], "up", "the host listed up {:?} into the cut, its VM released: {h}", cut_at.elapsed());
            }
        }
        if said.is_none() && served.log_text().contains("jdwpmux on farhold let its VMs go") {
            said = Some(cut_at.elapsed());
        }
        if closed.is_none() && j.wait_exit(Duration::from_millis(1)).await.is_ok() {
            closed = Some(cut_at.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("a cut past a hold of {HOLD:?}: jdb closed {closed:?}, the line {said:?}, `list` said released {listed:?} ({reads} reads), the app ran {ran:?} into the cut");
    let line = served.log_text().lines().find(|l| l.contains("jdwpmux on farhold let its VMs go")).unwrap().to_string();
    assert!(line.contains("WARN") && line.contains("hold (10 s, --far-hold)") && line.contains("debuggers are disconnected"), "{line}");
    for (what, at) in [("jdb closed", closed), ("the line", said), ("the release listed", listed)] {
        assert!(at.unwrap() <= HOLD + Duration::from_secs(3), "{what} {at:?} into the cut");
    }
    assert!(ran.unwrap() <= HOLD + Duration::from_secs(4), "the far side let the VM go {ran:?} into the cut: its hold is 10 s");
    let lines = served.log_text().lines().filter(|l| l.contains("let its VMs go")).count();
    assert_eq!(lines, 1, "{}", served.log_text());
    // The cut is said (once, a WARN) before the VMs are said let go, and nothing says them
    // held after that.
    let log = served.log_text();
    let lost = log.lines().position(|l| l.contains("lost the link to jdwpmux on farhold") || l.contains("lost the ssh link to farhold"));
    let let_go = log.lines().position(|l| l.contains("let its VMs go"));
    assert!(lost.is_some_and(|a| let_go.is_some_and(|b| a < b)), "the cut said after the release:\n{log}");
    let held_after: Vec<&str> = log.lines().skip(let_go.unwrap_or(0)).filter(|l| l.contains("are held")).collect();
    assert!(held_after.is_empty(), "VMs said held after they were let go: {held_after:?}");
    app.wait_ticks_advance(SLOW).await.unwrap();
    far.wait_gone(SLOW).await;
    host.net.set_link(true).unwrap();

    let rows = served.list_until("Billing listed again", |r| ready(r, "farhold", "Billing") && row(r, "farhold", "Billing").is_some_and(|v| v["note"].is_null())).await;
    let mut again = jdb(port(&rows, "farhold", "Billing")).await;
    again.expect("> ", SLOW).await.unwrap();
    break_step_quit(&mut again, "Billing", &app).await;
    assert_eq!(far.pids().len(), 1, "a new far side serves the host");
    drop(served);
}
