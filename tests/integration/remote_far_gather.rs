//! A stop's answers gathered on the VM's host and answered near, through
//! `serve --ssh HOST --far always` with a delay relay in front of the host's sshd (10 ms each
//! way, `testkit/src/delay_link.rs`), against real peers: a test host (a network namespace with
//! Debian's sshd), a real JVM on its loopback, JDI programs compiled here.
//!
//! - The IDE-shaped stepping session (`jdi/Stepper.java`, SUSPEND_ALL and SUSPEND_EVENT_THREAD,
//!   with the threads view at every stop; on the JDK's JDI and on Eclipse's) and jdb
//!   (`remote_far_peers::jdb_transcript`) print through the far side exactly what they print
//!   run on the host against the VM.
//! - An IDE that changes the VM at a stop (`jdi/Meddler.java`: a local, a field, an array
//!   element and a static set; a method invoked; a frame popped; the class redefined and back)
//!   and reads again never reads a stale value; it checks its reads against what its own
//!   change must give, and does the same run directly on the host first.
//! - Two debuggers on one VM: the second reads the first one's change, changes a static and
//!   resumes; the first one's stop holds and it reads the second one's change.
//! - A thread that ends between a stop and the next read (`jdi/Dying.java`) is seen ended and
//!   leaves the threads view; each stop's thread, started since the last, is listed in it.
//! - A class that unloads between a stop and the next read (`jdi/Unloads.java` against
//!   `jdi/Loaders.java`) leaves every read the VM's truth and is seen gone.
//! - The String an IDE's `this.toString()` returned (`jdi/Labels.java`) is the same through
//!   the far side as directly, and its StringReference.Value is answered near at a stop of
//!   every thread (read with the invoke's reply on the host), never at a stop of one thread.
//! - After each, `jdwpmux stats --json` shows answers served from gathered answers and early
//!   answers, more than before, and no early answer that the VM's reply then contradicted.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde_json::Value;

use crate::cli::Served;
use crate::remote::{agent, port, ready, serve, SLOW};
use crate::remote_far::far_bin;
use crate::remote_far_peers::jdb_transcript;
use crate::support::delay_link::DelayLink;
use crate::support::java::javac;
use crate::support::jdi::{Jdi, Stepper, LEDGER_JAVA};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

const MEDDLER_JAVA: &str = include_str!("../../testkit/src/jdi/Meddler.java");
const DYING_JAVA: &str = include_str!("../../testkit/src/jdi/Dying.java");
const BRIEF_JAVA: &str = include_str!("../../testkit/src/jdi/Brief.java");
const UNLOADS_JAVA: &str = include_str!("../../testkit/src/jdi/Unloads.java");
const LOADERS_JAVA: &str = include_str!("../../testkit/src/jdi/Loaders.java");
const LABELS_JAVA: &str = include_str!("../../testkit/src/jdi/Labels.java");

/// One way; a round trip on the link is 20 ms more than on the veth.
const DELAY: Duration = Duration::from_millis(10);
/// Steps of the stepping session: through Ledger.work's loop and past it.
const STEPS: u32 = 13;
/// Blank lines the redefined Ledger has before its toString.
const SHIFT: usize = 3;

/// `alias` reached through a delay relay in front of `host`'s sshd: a Host of its own in the
/// ssh config (the host's key, 127.0.0.1 and the relay's port).
fn delayed(keys: &Keys, host: &TestHost, alias: &str) -> DelayLink {
    let link = DelayLink::start(SocketAddr::from((host.net.addr, 22)), DELAY).unwrap();
    keys.add_host(alias, Ipv4Addr::LOCALHOST, "id_ed25519", &format!("  Port {}\n  HostKeyAlias {}\n", link.port(), host.net.addr)).unwrap();
    link
}

/// `class` from `source` on `host`, its agent on the host's loopback port 8000.
async fn app_on(host: &TestHost, class: &str, source: &str) -> JavaApp {
    let spec = JvmSpec {
        prefix: host.prefix(),
        agent: agent(false, "8000"),
        sources: vec![(format!("{class}.java"), source.to_string())],
        class: class.into(),
        ..JvmSpec::default()
    };
    let app = JavaApp::spawn(spec).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    app
}

/// Served through the far side over the delayed link, and the VM's local port once ready.
async fn served_far(keys: &Keys, alias: &str, far: &str, class: &str) -> (Served, u16) {
    let served = serve(keys, &[alias], &["--far", "always", "--far-path", far]);
    served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let rows = served.list_until(&format!("{class} ready"), |r| ready(r, alias, class)).await;
    let p = port(&rows, alias, class);
    (served, p)
}

/// The JDI programs of this file, compiled once.
struct Programs {
    dir: tempfile::TempDir,
}

impl Programs {
    async fn compile() -> Programs {
        let dir = tempfile::tempdir().unwrap();
        let sources = [("Meddler.java", MEDDLER_JAVA), ("Dying.java", DYING_JAVA), ("Unloads.java", UNLOADS_JAVA), ("Labels.java", LABELS_JAVA)];
        crate::support::jdi::javac_jdi(dir.path(), &sources).await.unwrap();
        Programs { dir }
    }

    /// Runs `class` (under `prefix`: on the host, or here) against 127.0.0.1:`port` with
    /// `args`; what it printed, once it said "done" and exited with 0.
    async fn run(&self, prefix: &[String], class: &str, port: u16, args: &[String]) -> String {
        let java = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"];
        let mut words = prefix.iter().map(String::as_str).chain(java);
        let mut cmd = tokio::process::Command::new(words.next().unwrap_or("java"));
        cmd.args(words).arg(self.dir.path()).args([class, "127.0.0.1", &port.to_string()]).args(args);
        let run = cmd.stdin(std::process::Stdio::null()).kill_on_drop(true).output();
        let out = tokio::time::timeout(Duration::from_secs(240), run).await.unwrap_or_else(|_| panic!("{class} {args:?} did not end within 240 s")).unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && text.ends_with("done\n"),
            "{class} {args:?} failed ({}):\n{text}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }
}

/// Ledger's class file as the app runs it, and one redefined: SHIFT blank lines before its
/// toString, which says "Ledger2(".
async fn ledger_class_files() -> (tempfile::TempDir, [String; 2]) {
    let dir = tempfile::tempdir().unwrap();
    let (orig, new) = (dir.path().join("orig"), dir.path().join("new"));
    std::fs::create_dir_all(&orig).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    javac(&orig, &[("Ledger.java", LEDGER_JAVA)]).await.unwrap();
    let anchor = "    @Override\n    public String toString() {";
    assert!(LEDGER_JAVA.contains(anchor) && LEDGER_JAVA.contains("\"Ledger(\""), "Ledger.java changed: update this test");
    let changed = LEDGER_JAVA.replace(anchor, &format!("{}{anchor}", "\n".repeat(SHIFT))).replace("\"Ledger(\"", "\"Ledger2(\"");
    javac(&new, &[("Ledger.java", &changed)]).await.unwrap();
    let files = [orig.join("Ledger.class"), new.join("Ledger.class")].map(|p| p.display().to_string());
    (dir, files)
}

/// The near side's figures of the (only) VM, from `jdwpmux stats --json`.
fn near_figures(served: &Served) -> Value {
    let (code, out, err) = served.run(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let near = report["vms"].as_array().and_then(|vms| vms.iter().find(|v| v["near"].is_object())).map(|v| v["near"].clone());
    near.unwrap_or_else(|| panic!("no near figures: {out}"))
}

/// The near side's figures after each part, checked at the end so that every part runs and
/// a missing figure does not hide a stale answer: answers served from a stop's gathered
/// answers (`gathered`) and answers given before the VM's reply (`early`) grew in each part,
/// and no early answer's VM reply differed (`early_differed` 0).
#[derive(Default)]
struct NearChecks {
    last: (u64, u64),
    wrong: Vec<String>,
}

impl NearChecks {
    fn after(&mut self, served: &Served, part: &str) {
        let near = near_figures(served);
        let count = |name: &str| near[name].as_u64();
        let (Some(gathered), Some(early), Some(differed)) = (count("gathered"), count("early"), count("early_differed")) else {
            self.wrong.push(format!("after {part}: no `gathered`, `early` or `early_differed` among the near figures: {near}"));
            return;
        };
        if differed != 0 {
            self.wrong.push(format!("after {part}: {differed} early answers the VM's reply contradicted: {near}"));
        }
        if gathered <= self.last.0 {
            self.wrong.push(format!("{part}: no answer served from a stop's gathered answers ({} before, {gathered} now)", self.last.0));
        }
        if early <= self.last.1 {
            self.wrong.push(format!("{part}: no answer given early ({} before, {early} now)", self.last.1));
        }
        self.last = (gathered, early);
    }

    fn assert_all(&self) {
        assert!(self.wrong.is_empty(), "the near side's figures:\n{}", self.wrong.join("\n"));
    }
}

/// `a` and `b` are the same text; else the first lines where they differ.
fn assert_same(what: &str, direct: &str, through: &str) {
    if direct == through {
        return;
    }
    let (al, bl): (Vec<&str>, Vec<&str>) = (direct.lines().collect(), through.lines().collect());
    let at = al.iter().zip(&bl).position(|(x, y)| x != y).unwrap_or(al.len().min(bl.len()));
    let from = at.saturating_sub(3);
    panic!(
        "{what}: through the far side differs from directly at line {}:\n--- directly\n{}\n--- through the far side\n{}",
        at + 1,
        al[from..al.len().min(at + 5)].join("\n"),
        bl[from..bl.len().min(at + 5)].join("\n")
    );
}

/// The cases of Meddler each ended well.
fn assert_cases(text: &str, cases: &[&str]) {
    for c in cases {
        assert!(text.lines().any(|l| l == format!("ok {c}")), "case {c} did not end well:\n{text}");
    }
}

/// Stepping, changing at a stop and two debuggers, on Ledger through the far side over the
/// delayed link; each against what the same program sees or expects directly on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_gather_stops_answered_near_are_the_vms_truth() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "fargather").unwrap();
    let alias = "fargather-slow";
    let link = delayed(&keys, &host, alias);
    let mut app = app_on(&host, "Ledger", LEDGER_JAVA).await;
    let stepper = Stepper::compile().await.unwrap();
    let programs = Programs::compile().await;
    let (_classes, [orig, new]) = ledger_class_files().await;
    let on_host = host.prefix();

    // Directly on the host, first: what the stepping shows, and that the meddling's own
    // expectations hold against the VM itself (one debugger only: a plain agent takes one).
    let mut direct = Vec::new();
    for policy in ["all", "thread"] {
        direct.push(stepper.run(&on_host, 8000, policy, STEPS).await.unwrap());
    }
    assert!(direct[0].contains("hit Ledger.work:") && direct[0].contains("policy=2") && direct[1].contains("policy=1"), "{}", direct[0]);
    assert!(direct[0].contains("thread ledger-worker") && direct[0].contains("local int sum = 100"), "{}", direct[0]);
    let view = "  thread view ledger-worker suspendCount=1 suspended=true";
    assert!(direct[0].contains(view) && direct[0].contains("  thread view Reference Handler suspendCount=1"), "{}", direct[0]);
    let direct_eclipse = stepper.run_on(Jdi::Eclipse, &on_host, 8000, "all", STEPS).await.unwrap();
    assert!(direct_eclipse.contains("hit Ledger.work:") && direct_eclipse.contains("local int sum = 100"), "{direct_eclipse}");
    let direct_jdb = jdb_transcript(&on_host, 8000).await;
    assert!(direct_jdb.starts_with("Breakpoint hit: Ledger.work(), line=") && direct_jdb.contains("owner: \"ann\""), "{direct_jdb}");
    let alone = ["set", "invoke", "pop", "redefine"];
    let meddle = |policy: &str, cases: &[&str]| -> Vec<String> {
        let mut a = vec![policy.to_string(), orig.clone(), new.clone(), SHIFT.to_string()];
        a.extend(cases.iter().map(|c| c.to_string()));
        a
    };
    for policy in ["all", "thread"] {
        let text = programs.run(&on_host, "Meddler", 8000, &meddle(policy, &alone)).await;
        assert_cases(&text, &alone);
    }

    let (served, vm_port) = served_far(&keys, alias, &far.path, "Ledger").await;
    let turns_before = link.turns();
    // (a) The stepping session and jdb print what they printed directly.
    for (policy, seen) in ["all", "thread"].into_iter().zip(&direct) {
        let through = stepper.run(&[], vm_port, policy, STEPS).await.unwrap();
        assert_same(&format!("the stepping session with SUSPEND {policy}"), seen, &through);
    }
    let through_eclipse = stepper.run_on(Jdi::Eclipse, &[], vm_port, "all", STEPS).await.unwrap();
    assert_same("the stepping session on Eclipse's JDI", &direct_eclipse, &through_eclipse);
    assert_same("jdb", &direct_jdb, &jdb_transcript(&[], vm_port).await);
    assert!(link.turns() > turns_before, "the sessions did not go through the delayed link");
    let mut near = NearChecks::default();
    near.after(&served, "the stepping sessions");

    // (b) Changes at a stop, then reads: never stale.
    for policy in ["all", "thread"] {
        let text = programs.run(&[], "Meddler", vm_port, &meddle(policy, &alone)).await;
        assert_cases(&text, &alone);
        near.after(&served, &format!("changes at a stop with SUSPEND {policy}"));
    }

    // (d) Two debuggers on one VM: one's change is the other's truth.
    for policy in ["all", "thread"] {
        let text = programs.run(&[], "Meddler", vm_port, &meddle(policy, &["second", "set"])).await;
        assert_cases(&text, &["second", "set"]);
        near.after(&served, &format!("two debuggers with SUSPEND {policy}"));
    }

    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    let log = served.log_text();
    assert!(!log.contains("ssh forwards") && !log.contains("lost the VM connection"), "{log}");
    let far_log = std::fs::read_to_string(far.far_dir().join("far.log")).unwrap_or_default();
    assert!(!far_log.contains("ERROR"), "{far_log}");
    near.assert_all();
    drop(served);
    drop(link);
}

/// A thread that ends between a stop and the next read is seen ended through the far side
/// over the delayed link, as directly on the host; with SUSPEND_ALL and SUSPEND_EVENT_THREAD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_gather_a_thread_ending_after_a_stop_is_seen_ended() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "fardeath").unwrap();
    let alias = "fardeath-slow";
    let link = delayed(&keys, &host, alias);
    let mut app = app_on(&host, "Brief", BRIEF_JAVA).await;
    let programs = Programs::compile().await;
    let policies = ["all".to_string(), "thread".to_string()];
    let cases = ["thread-death all", "thread-death thread"];
    let direct = programs.run(&host.prefix(), "Dying", 8000, &policies).await;
    assert_cases(&direct, &cases);

    let (served, vm_port) = served_far(&keys, alias, &far.path, "Brief").await;
    let turns_before = link.turns();
    let through = programs.run(&[], "Dying", vm_port, &policies).await;
    assert_cases(&through, &cases);
    assert!(link.turns() > turns_before, "the session did not go through the delayed link");
    let mut near = NearChecks::default();
    near.after(&served, "a thread ending after a stop");
    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    near.assert_all();
    drop(served);
    drop(link);
}

/// A class that unloads between a stop and the next read: `Unloads` stops in Staying.hold
/// (a class of its own loader) with SUSPEND_ALL and SUSPEND_EVENT_THREAD, reads the views,
/// asks for ClassUnload events (suspend NONE) and sets `Loaders.drop`; while the stopped
/// thread stays suspended the debuggee's other thread drops the loader of Passing and calls
/// System.gc() until the class unloads; then the same views are read again, through the far
/// side over the delayed link and directly on the host, and both print the same. Bounded:
/// the program gives up 30 s after the loader was dropped ("NO-UNLOAD").
///
/// What of the stop may still be served is the gathered answers' validity table
/// (`remote::stop_answers::validity`): with SUSPEND_EVENT_THREAD only the stopped thread's frames, locals,
/// `this`, status and variable tables are admitted at all (fields, statics, strings and
/// arrays are not: other threads run); with SUSPEND_ALL the cue (ClassType.SetValues) and
/// the other thread resumed alone (ThreadReference.Resume of a thread not the stopped one)
/// each drop fields, statics, strings and arrays and keep the stopped thread's frames and
/// locals; the ClassUnload event, like any event after the stop (the debugger's and
/// jdwpmux's own unload request's alike reach the store), drops the rest, so every read
/// after it goes to the VM. That last row is caution here, not need: all a stop gathers is
/// reachable from the stopped frame, and a class unloads only once nothing reaches it, so
/// no answer kept past the event would be false (the reads after equal the reads before
/// either way). What an unload does make false is class data kept across stops by the near
/// cache (here Passing's Method.IsObsolete, asked before the unload, which JDI asks the VM
/// each time): jdwpmux's own ClassUnload event, in the same composite as the debugger's,
/// drops what the cache keeps of that signature, so the program reads Passing refused after
/// the unload, as the VM refuses it; a cache that kept it would answer "false".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_gather_a_class_unloading_after_a_stop_leaves_the_reads_true() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farunload").unwrap();
    let alias = "farunload-slow";
    let link = delayed(&keys, &host, alias);
    let mut app = app_on(&host, "Loaders", LOADERS_JAVA).await;
    let programs = Programs::compile().await;
    let policies = ["all".to_string(), "thread".to_string()];
    let cases = ["class-unload all", "class-unload thread"];
    let direct = programs.run(&host.prefix(), "Unloads", 8000, &policies).await;
    assert_cases(&direct, &cases);

    let (served, vm_port) = served_far(&keys, alias, &far.path, "Loaders").await;
    let turns_before = link.turns();
    let through = programs.run(&[], "Unloads", vm_port, &policies).await;
    assert_cases(&through, &cases);
    assert_same("the class-unload session", &direct, &through);
    assert!(link.turns() > turns_before, "the session did not go through the delayed link");
    let mut near = NearChecks::default();
    near.after(&served, "a class unloaded after a stop");
    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    near.assert_all();
    drop(served);
    drop(link);
}

/// Near answers of StringReference.Value so far, from the near figures' command rows.
fn string_values_near(served: &Served) -> u64 {
    let near = near_figures(served);
    let rows = near["commands"].as_array().cloned().unwrap_or_default();
    rows.iter().filter(|r| r["command"] == "StringReference.Value").filter_map(|r| r["count"].as_u64()).sum()
}

/// An IDE's `this.toString()` at each stop (`jdi/Labels.java`, which reads nothing else):
/// through the far side over the delayed link it prints what it prints directly on the
/// host; with SUSPEND_ALL each String's value is answered near (read on the host with the
/// invoke's reply), with SUSPEND_EVENT_THREAD none is (the other threads run, and the
/// String, which nothing but the agent holds, may be collected); no answer differed from a
/// reply of the VM's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_gather_an_invokes_string_is_answered_near_at_a_stop_of_every_thread() {
    crate::need_test_hosts!();
    const HITS: u64 = 5;
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farlabel").unwrap();
    let alias = "farlabel-slow";
    let link = delayed(&keys, &host, alias);
    let mut app = app_on(&host, "Ledger", LEDGER_JAVA).await;
    let programs = Programs::compile().await;
    let args = |policy: &str| vec![policy.to_string(), HITS.to_string()];
    let mut direct = Vec::new();
    for policy in ["all", "thread"] {
        direct.push(programs.run(&host.prefix(), "Labels", 8000, &args(policy)).await);
    }
    assert!(direct[0].contains("label 1 policy=2 Ledger(ann, 0)") && direct[1].contains("policy=1"), "{}", direct[0]);

    let (served, vm_port) = served_far(&keys, alias, &far.path, "Ledger").await;
    let turns_before = link.turns();
    let through = programs.run(&[], "Labels", vm_port, &args("all")).await;
    assert_same("toString at stops of SUSPEND all", &direct[0], &through);
    assert!(link.turns() > turns_before, "the session did not go through the delayed link");
    let after_all = string_values_near(&served);
    assert!(after_all >= HITS, "{after_all} StringReference.Value answered near of {HITS} toString() results: {}", near_figures(&served));
    let through = programs.run(&[], "Labels", vm_port, &args("thread")).await;
    assert_same("toString at stops of SUSPEND thread", &direct[1], &through);
    assert_eq!(string_values_near(&served), after_all, "a stop of one thread serves no invoke's String: {}", near_figures(&served));
    let near = near_figures(&served);
    assert_eq!(near["early_differed"].as_u64(), Some(0), "{near}");
    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    let far_log = std::fs::read_to_string(far.far_dir().join("far.log")).unwrap_or_default();
    assert!(!far_log.contains("ERROR"), "{far_log}");
    drop(served);
    drop(link);
}
