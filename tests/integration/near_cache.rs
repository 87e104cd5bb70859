//! The near cache on a real HotSpot JVM with JDI programs: class data a first debugger read is
//! answered near to a second one (nothing of it reaches the VM, the values are the same, the
//! stats and the capture say so); after a RedefineClasses a third debugger gets the VM's new
//! answers, not the kept ones.

use std::path::Path;

use jdwpmux::session::nearcache::commands::ABSENT_KEPT;
use jdwpmux::remote::stop_answers::FAR_IDS;
use jdwpmux::session::nearcache::immutable;
use jdwpmux::settings::{CaptureSettings, DdmMode, NearCacheMode};
use serde_json::Value;
use tokio::process::Command;

use crate::harness::Proxy;
use crate::support::console::Console;
use crate::support::java::javac;
use crate::support::jdi::SLOW;
use crate::support::tap::Tap;
use crate::support::{java_available, JavaApp, Packet};

/// ReferenceType.SourceDebugExtension.
const SOURCE_DEBUG_EXTENSION: (u8, u8) = (2, 12);

const CLASS_DATA_JAVA: &str = include_str!("../../testkit/src/jdi/ClassData.java");

/// The debuggee: keeps `Shape` loaded and calls it until the file named by its argument appears.
const HELD_JAVA: &str = r#"public class Held {
    public static void main(String[] args) throws Exception {
        java.io.File stop = new java.io.File(args[0]);
        Shape<String> s = new Shape<>();
        System.out.println("Held started " + s.size());
        System.out.flush();
        while (!stop.exists()) {
            Shape.work(1);
            Thread.sleep(50);
        }
    }
}
"#;

/// The class whose data is read; `// work` marks the lines of `work`'s statements.
const SHAPE_V1: &str = r#"import java.util.AbstractList;

public class Shape<T> extends AbstractList<T> implements Runnable, java.io.Serializable {
    int width;
    static long count;
    T item;

    public T get(int i) { return item; }

    public int size() { return width; }

    public void run() { count++; }

    static int work(int n) {
        int k = n * 2; // work
        return k + 1; // work
    }
}
"#;

/// The same class with `work`'s body changed (what RedefineClasses may change): its line
/// table, variables and bytecodes differ.
const SHAPE_V2: &str = r#"import java.util.AbstractList;

public class Shape<T> extends AbstractList<T> implements Runnable, java.io.Serializable {
    int width;
    static long count;
    T item;

    public T get(int i) { return item; }

    public int size() { return width; }

    public void run() { count++; }

    static int work(int n) {

        int k = n * 2; // work
        int m = k + 3; // work

        return m + 1; // work
    }
}
"#;

/// The "data lines work ..." line a source's `work` gives.
fn work_lines(source: &str) -> String {
    let lines: Vec<String> =
        source.lines().enumerate().filter(|(_, l)| l.ends_with("// work")).map(|(i, _)| (i + 1).to_string()).collect();
    format!("data lines work {}", lines.join(" "))
}

/// Starts a ClassData program attached to the proxy's `port`.
async fn attach(dir: &Path, name: &str, port: u16) -> Console {
    let mut cmd = Command::new("java");
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(dir)
        .args(["ClassData", "127.0.0.1", &port.to_string()]);
    let mut c = Console::spawn(cmd, &format!("JDI program {name}")).expect("start java");
    c.expect("attached", SLOW).await.expect("attached");
    c
}

/// Asks for Shape's data; the "data ..." lines it printed for this asking.
async fn show(c: &mut Console) -> Vec<String> {
    show_class(c, "Shape").await
}

/// Asks for a class's data; the "data ..." lines it printed for this asking.
async fn show_class(c: &mut Console, class: &str) -> Vec<String> {
    let before = c.output().len();
    c.send(&format!("show {class}")).await.expect("send");
    c.expect(&format!("shown {class}"), SLOW).await.expect("shown");
    let out = c.output();
    assert!(!out[before..].contains("failed"), "{out}");
    out[before..].lines().filter(|l| l.starts_with("data ")).map(str::to_string).collect()
}

/// The commands among `sent` whose answers the near cache may give.
fn cacheable(sent: &[Packet]) -> Vec<(u8, u8)> {
    sent.iter().filter_map(Packet::command_of).filter(|(s, c)| immutable(*s, *c).is_some()).collect()
}

/// As [`cacheable`], of the debuggers' commands alone: not the proxy's own reads of a
/// class or a stop (under `FAR_IDS`, by the session's relay for a local VM).
fn debuggers_cacheable(sent: &[Packet]) -> Vec<(u8, u8)> {
    let theirs: Vec<Packet> = sent.iter().filter(|p| !FAR_IDS.contains(&p.id)).cloned().collect();
    cacheable(&theirs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_data_is_answered_near_across_debuggers_and_fresh_after_a_redefine() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let app = JavaApp::launch(Path::new("java"), &[("Held.java", HELD_JAVA), ("Shape.java", SHAPE_V1)], "Held", &["{dir}/stop"], false)
        .await
        .expect("start the JVM");
    app.wait_for_output("Held started", SLOW).await.expect("Held started");
    let tap = Tap::start(app.addr()).await;
    let files = tempfile::tempdir().expect("tempdir");
    let capture = files.path().join("near.jsonl");
    let mut settings = Proxy::settings(&[tap.addr()], DdmMode::Auto);
    settings.near_cache = NearCacheMode::Always;
    // Three debuggers share the VM here, whatever the single-debugger runs set.
    settings.max_debuggers = 8;
    settings.capture =
        Some(CaptureSettings { path: capture.clone(), format: None, max_bytes: None, snaplen: jdwpmux::capture::DEFAULT_SNAPLEN });
    let proxy = Proxy::with(settings).await;
    let port = proxy.ready(0).await.debugger_port.expect("a debugger port");
    let jdi = tempfile::tempdir().expect("tempdir");
    crate::support::jdi::javac_jdi(jdi.path(), &[("ClassData.java", CLASS_DATA_JAVA)]).await.expect("javac ClassData");
    let v2 = tempfile::tempdir().expect("tempdir");
    javac(v2.path(), &[("Shape.java", SHAPE_V2)]).await.expect("javac Shape v2");

    // The proxy asked for ClassUnload events of its own, so it may keep class data.
    let unload_watch = tap.sent_to_vm().iter().any(|p| p.command_of() == Some((15, 1)) && p.data.first() == Some(&9));
    assert!(unload_watch, "no ClassUnload request from the proxy");

    // A reads everything from the VM.
    let mut a = attach(jdi.path(), "A", port).await;
    let from_a = tap.sent_to_vm().len();
    let seen_a = show(&mut a).await;
    // Read from the VM: by A, or by the proxy ahead of A's commands (a class's first).
    let asked_a = cacheable(&tap.sent_to_vm()[from_a..]);
    assert!(asked_a.len() >= 10, "A's class data went to the VM: {asked_a:?}");
    let asked_by_a = debuggers_cacheable(&tap.sent_to_vm()[from_a..]);
    assert!(seen_a.contains(&work_lines(SHAPE_V1)), "{seen_a:?}");

    // B, a second JDI connection, asks the same: answered near, the same values.
    let from_b = tap.sent_to_vm().len();
    let mut b = attach(jdi.path(), "B", port).await;
    let seen_b = show(&mut b).await;
    // Shape has no SourceDebugExtension: the VM answers ABSENT_INFORMATION, and an error
    // is never kept (the VM is asked each time). Everything else is answered near.
    let asked_b = cacheable(&tap.sent_to_vm()[from_b..]);
    assert!(asked_b.iter().all(|c| *c == SOURCE_DEBUG_EXTENSION), "B's class data reached the VM: {asked_b:?}");
    assert!(asked_a.contains(&SOURCE_DEBUG_EXTENSION));
    assert_eq!(seen_b, seen_a, "B saw other values than A");
    let stats = proxy.handle(0).await.stats().await.expect("stats");
    let near = stats.near.clone().expect("near figures");
    println!("A sent {} cacheable commands to the VM ({} with the proxy's reads); B: {} (of them near: {near:?})", asked_by_a.len(), asked_a.len(), asked_b.len());
    assert!(near.served as usize >= asked_by_a.len(), "{near:?} for {} of A's", asked_by_a.len());
    assert!(near.hit_rate > 0.0 && near.hit_rate < 1.0, "{near:?}");
    let text = jdwpmux::stats::StatsReport { vms: vec![stats], links: Vec::new() }.to_text();
    assert!(text.contains(&format!("answered near: {} of", near.served)), "{text}");

    // B redefines Shape; C, a new JDI connection, gets the VM's new line table, variables
    // and bytecodes, not the kept ones.
    let v2_class = v2.path().join("Shape.class");
    b.send(&format!("redefine Shape {}", v2_class.display())).await.expect("send");
    b.expect("redefined Shape", SLOW).await.expect("redefined");
    let from_c = tap.sent_to_vm().len();
    let mut c = attach(jdi.path(), "C", port).await;
    let seen_c = show(&mut c).await;
    assert!(seen_c.contains(&work_lines(SHAPE_V2)), "C got the old line table: {seen_c:?}");
    assert!(seen_c.iter().any(|l| l.starts_with("data vars work") && l.contains(" m:I")), "{seen_c:?}");
    let bytecodes = |seen: &[String]| seen.iter().find(|l| l.starts_with("data bytecodes work")).cloned();
    assert_ne!(bytecodes(&seen_c), bytecodes(&seen_a), "C got the old bytecodes");
    let asked_c = cacheable(&tap.sent_to_vm()[from_c..]);
    for cmd in [(2, 15), (6, 1), (6, 3)] {
        assert!(asked_c.contains(&cmd), "{cmd:?} of the redefined class did not reach the VM: {asked_c:?}");
    }
    // What the redefinition did not touch is the same for C as for A.
    for prefix in ["data sig ", "data superclass ", "data interfaces", "data field "] {
        let pick = |seen: &[String]| seen.iter().filter(|l| l.starts_with(prefix)).cloned().collect::<Vec<_>>();
        assert_eq!(pick(&seen_c), pick(&seen_a), "{prefix}");
    }

    for (d, name) in [(&mut a, "A"), (&mut b, "B"), (&mut c, "C")] {
        d.send("exit").await.expect("send");
        d.expect("bye", SLOW).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let served = proxy.handle(0).await.stats().await.and_then(|s| s.near).map_or(0, |n| n.served);
    std::fs::write(app.dir().join("stop"), b"").expect("stop file");
    proxy.stop().await;

    // Every near answer is in the capture, on the debugger leg, marked.
    let text = std::fs::read_to_string(&capture).expect("capture");
    let marked: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["near"] == Value::Bool(true))
        .collect();
    // On the VM leg: the proxy's reads of a class, taken in from the VM connection's stream
    // (read by the session's relay for this local VM), never a reply.
    let (marked, reads): (Vec<Value>, Vec<Value>) = marked.into_iter().partition(|v| v["conn"]["leg"] == "debugger");
    assert!(reads.iter().all(|v| v["conn"]["leg"] == "vm" && v["reply"] == Value::Bool(false)), "{reads:?}");
    assert_eq!(marked.len() as u64, served, "near answers in the capture");
    // Each with the VM's error code: none, or ABSENT_INFORMATION of what a class file lacks.
    let absent = |v: &Value| v["error"] == 101 && ABSENT_KEPT.iter().any(|(_, _, name, _)| v["command"] == *name);
    assert!(marked.iter().all(|v| v["reply"] == Value::Bool(true) && (v["error"] == 0 || absent(v))), "{marked:?}");
}

/// The debuggee of the unload test: loads `Gone` through a class loader of its own, lets go
/// of both when the `release` file appears, then collects until `stop` appears.
const UNLOADS_JAVA: &str = r#"public class Unloads {
    public static void main(String[] args) throws Exception {
        java.io.File dir = new java.io.File(args[0]);
        java.io.File release = new java.io.File(args[0], "release");
        java.io.File stop = new java.io.File(args[0], "stop");
        ClassLoader l = new java.net.URLClassLoader(new java.net.URL[] { dir.toURI().toURL() }, null);
        Object o = l.loadClass("Gone").getDeclaredConstructor().newInstance();
        System.out.println("Unloads loaded " + o.getClass().getName());
        System.out.flush();
        while (!release.exists()) Thread.sleep(50);
        o = null;
        l = null;
        System.out.println("Unloads released");
        System.out.flush();
        while (!stop.exists()) {
            System.gc();
            Thread.sleep(100);
        }
    }
}
"#;

const GONE_JAVA: &str = r#"public class Gone {
    int x;

    public int twice(int n) {
        return 2 * n;
    }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unloaded_class_is_dropped_by_its_signature() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let app = JavaApp::launch(Path::new("java"), &[("Unloads.java", UNLOADS_JAVA), ("Gone.java", GONE_JAVA)], "Unloads", &["{dir}"], false)
        .await
        .expect("start the JVM");
    app.wait_for_output("Unloads loaded Gone", SLOW).await.expect("Gone loaded");
    let mut settings = Proxy::settings(&[app.addr()], DdmMode::Auto);
    settings.near_cache = NearCacheMode::Always;
    let proxy = Proxy::with(settings).await;
    let port = proxy.ready(0).await.debugger_port.expect("a debugger port");
    let jdi = tempfile::tempdir().expect("tempdir");
    crate::support::jdi::javac_jdi(jdi.path(), &[("ClassData.java", CLASS_DATA_JAVA)]).await.expect("javac ClassData");

    let mut a = attach(jdi.path(), "A", port).await;
    a.send("show Gone").await.expect("send");
    a.expect("shown Gone", SLOW).await.expect("shown");
    let kept = proxy.tables(0).await.near_answers;
    assert!(kept >= 10, "Gone's data was not kept: {kept}");

    // The app lets Gone go and collects: the VM's ClassUnload event for the proxy's request
    // drops Gone's answers; java.lang.Object's (its superclass) stay.
    std::fs::write(app.dir().join("release"), b"").expect("release file");
    app.wait_for_output("Unloads released", SLOW).await.expect("released");
    let deadline = tokio::time::Instant::now() + SLOW;
    while proxy.tables(0).await.near_answers > kept - 10 {
        assert!(tokio::time::Instant::now() < deadline, "Gone's answers were not dropped: {:?}", proxy.tables(0).await);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let left = proxy.tables(0).await.near_answers;
    assert!(left > 0, "the VM's facts and Object's answers stay");
    // No debugger owns the proxy's request: A saw nothing of it and goes on.
    a.send("exit").await.expect("send");
    a.expect("bye", SLOW).await.expect("bye");
    std::fs::write(app.dir().join("stop"), b"").expect("stop file");
    proxy.stop().await;
}

/// A jdwpmux for one test host whose far side keeps to a folder of the test's own (test
/// hosts share this machine's file system; see `remote_far`).
fn far_bin() -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jdwpmux");
    let far_dir = dir.path().join("far");
    let bin = env!("CARGO_BIN_EXE_jdwpmux");
    std::fs::write(&path, format!("#!/bin/sh\nexec {bin} \"$@\" --dir {}\n", far_dir.display())).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = path.display().to_string();
    (dir, path)
}

/// Through jdwpmux on the host, with `--near-cache` left at auto: a second JDI program's
/// class data is answered near, the same values, and `jdwpmux stats` says how many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_data_is_answered_near_through_jdwpmux_on_the_host() {
    use crate::remote::{one_vm, OneVm};
    crate::need_test_hosts!();
    let (_far_dir, far) = far_bin();
    let OneVm { keys: _keys, host: _host, app: _app, served, port } = one_vm("farnear", &["--far", "always", "--far-path", &far]).await;
    served.wait_log("using jdwpmux on farnear").await;
    let jdi = tempfile::tempdir().expect("tempdir");
    crate::support::jdi::javac_jdi(jdi.path(), &[("ClassData.java", CLASS_DATA_JAVA)]).await.expect("javac ClassData");
    let mut a = attach(jdi.path(), "A", port).await;
    let seen_a = show_class(&mut a, "Billing").await;
    let mut b = attach(jdi.path(), "B", port).await;
    let seen_b = show_class(&mut b, "Billing").await;
    assert!(seen_a.iter().any(|l| l.starts_with("data lines tick")), "{seen_a:?}");
    assert_eq!(seen_b, seen_a, "B saw other values than A");

    let (code, out, err) = served.run(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let near = report["vms"].as_array().and_then(|vms| vms.iter().find(|v| v["near"].is_object())).map(|v| v["near"].clone());
    let near = near.unwrap_or_else(|| panic!("no near figures: {out}"));
    // B asked everything A asked, and Version and IDSizes came from the proxy's own asking.
    let served_near = near["served"].as_u64().unwrap_or(0);
    assert!(served_near >= 12, "{near}");
    let (code, text, err) = served.run(&["stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains(&format!("answered near: {served_near} of")), "{text}");
    for (d, name) in [(&mut a, "A"), (&mut b, "B")] {
        d.send("exit").await.expect("send");
        d.expect("bye", SLOW).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    drop(served);
}
