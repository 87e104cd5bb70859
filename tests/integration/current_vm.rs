//! The current VM as a user meets it: a selection stays with the VM chosen, whatever appears
//! later under the same name; a `--select` that names several VMs is said once, in the log
//! and in `list`; a VM that cannot be reached is never the current one, and `list` says why
//! the current-VM port leads nowhere. The real binary, real JVMs found by their process.

use std::time::Duration;

use serde_json::Value;

use crate::cli::{port_of, Served};
use crate::remote::{agent, program};
use crate::support::{java_available, JavaApp, JvmSpec, PortHold, RawClient};

fn spec(marker: &str, class: &str) -> JvmSpec {
    JvmSpec { jvm: vec![format!("-D{marker}")], agent: agent(false, "127.0.0.1:0"), sources: program(class), class: class.into(), ..JvmSpec::default() }
}

fn serve(marker: &str, extra: &[&str]) -> Served {
    let mut args = vec!["--proc", "--proc-match", marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    args.extend_from_slice(extra);
    Served::start(&args)
}

fn current_pid(rows: &[Value]) -> Option<u64> {
    rows.iter().find(|r| r["current"] == true).and_then(|r| r["pid"].as_u64())
}

fn row_of(rows: &[Value], pid: u32) -> Option<&Value> {
    rows.iter().find(|r| r["pid"].as_u64() == Some(pid.into()))
}

/// Log lines that contain `needle`.
fn said(served: &Served, needle: &str) -> Vec<String> {
    served.log_text().lines().filter(|l| l.contains(needle)).map(str::to_string).collect()
}

/// A debugger on the current-VM port gets the handshake and a Version reply, and is counted
/// on the row of `pid`.
async fn attaches_to(served: &Served, current: u16, pid: u32) {
    let mut c = RawClient::connect(("127.0.0.1", current)).await.expect("the current-VM port answers the handshake");
    c.request(1, 1, 1, &[], Duration::from_secs(30)).await.expect("a Version reply through the current-VM port");
    served.list_until("the debugger counted on the selected VM's row", |r| row_of(r, pid).is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 1))).await;
    drop(c);
}

/// `jdwpmux select Clock` picks the one Clock running; a second JVM running Clock starts:
/// the first stays current (no ambiguity, no "matches none"), 8700 leads to it. When it ends,
/// `list` says the selected VM is away and 8700 leads nowhere; `select Clock` then names
/// the one left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_stays_with_its_vm_when_another_of_its_name_appears() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=sticks-{}", std::process::id());
    let mut first = JavaApp::spawn(spec(&marker, "Clock")).await.unwrap();
    let first_pid = first.pid().unwrap();
    let served = serve(&marker, &[]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.list_until("the first Clock ready", |r| row_of(r, first_pid).is_some_and(|v| v["state"] == "ready")).await;
    let (code, out, err) = served.run(&["select", "Clock"]);
    assert_eq!(code, 0, "{out}{err}");

    let second = JavaApp::spawn(spec(&marker, "Clock")).await.unwrap();
    let second_pid = second.pid().unwrap();
    let rows = served.list_until("both ready", |r| r.len() == 2 && r.iter().all(|v| v["state"] == "ready")).await;
    assert_eq!(current_pid(&rows), Some(first_pid.into()), "the selected VM stays current: {rows:?}");
    let (_, text, _) = served.run(&["list"]);
    let starred = text.lines().find(|l| l.starts_with('*')).unwrap_or_default();
    assert!(starred.contains(&first_pid.to_string()), "{text}");
    attaches_to(&served, current, first_pid).await;
    for needle in ["ambiguous", "matches none"] {
        assert!(said(&served, needle).is_empty(), "{needle:?} in the log:\n{}", served.log_text());
    }

    // The selected VM ends: nothing else takes its place unasked, and `list` says why.
    first.kill().await.unwrap();
    served.list_until("the first gone", |r| r.len() == 1 && current_pid(r).is_none()).await;
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains("no current VM") && text.contains("away") && text.contains(&first_pid.to_string()), "{text}");
    let mut c = RawClient::connect_no_handshake(("127.0.0.1", current)).await.unwrap();
    assert!(c.handshake(Duration::from_secs(30)).await.is_err(), "no current VM, no handshake");
    let line = served.wait_log("closing: no current VM").await;
    assert!(line.contains("away"), "{line}");
    let (code, _, err) = served.run(&["select", "Clock"]);
    assert_eq!(code, 0, "{err}");
    let rows = served.list_until("the second current", |r| current_pid(r) == Some(second_pid.into())).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    attaches_to(&served, current, second_pid).await;
}

/// `--select Clock` with two Clocks running names no VM: said once in the log, and `list`
/// says it under the table, through later rounds and a third JVM; no row is current and the
/// newest JVM does not stand in. `select PID` then picks one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_selection_is_said_once_and_in_list() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=ambiguous-{}", std::process::id());
    let one = JavaApp::spawn(spec(&marker, "Clock")).await.unwrap();
    let two = JavaApp::spawn(spec(&marker, "Clock")).await.unwrap();
    let served = serve(&marker, &["--select", "Clock"]);
    served.list_until("both ready", |r| r.len() == 2 && r.iter().all(|v| v["state"] == "ready")).await;
    let line = served.wait_log("ambiguous").await;
    assert!(line.contains("WARN") && line.contains("Clock"), "{line}");
    // A round later (a third JVM listed), still one line, still no current VM.
    let _third = JavaApp::spawn(spec(&marker, "Other")).await.unwrap();
    let rows = served.list_until("the third ready", |r| r.len() == 3 && r.iter().all(|v| v["state"] == "ready")).await;
    assert_eq!(current_pid(&rows), None, "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    let why = text.lines().find(|l| l.contains("no current VM")).unwrap_or_else(|| panic!("{text}"));
    assert!(why.contains("ambiguous") && why.contains(&one.pid().unwrap().to_string()) && why.contains(&two.pid().unwrap().to_string()), "{text}");
    assert_eq!(said(&served, "ambiguous").len(), 1, "{}", served.log_text());
    assert!(said(&served, "matches none").is_empty(), "{}", served.log_text());

    let pid = two.pid().unwrap();
    let (code, _, err) = served.run(&["select", &pid.to_string()]);
    assert_eq!(code, 0, "{err}");
    served.list_until("the second current", |r| current_pid(r) == Some(pid.into())).await;
}

/// The only VM cannot be reached: it is listed, but not current; `list` says why the
/// current-VM port leads nowhere, and a debugger there is closed at once with that line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_that_cannot_be_reached_is_never_the_current_one() {
    let hold = PortHold::new();
    let served = Served::start(&["--vm", &format!("127.0.0.1:{}", hold.port()), "--no-scan", "--no-adb", "--no-proc"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    let rows = served.list_until("unreachable", |r| r.len() == 1 && r[0]["state"] == "unreachable").await;
    assert_eq!(rows[0]["current"], false, "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(!text.lines().any(|l| l.starts_with('*')), "{text}");
    let why = text.lines().find(|l| l.contains("no current VM")).unwrap_or_else(|| panic!("{text}"));
    assert!(why.contains("cannot be reached"), "{text}");
    let mut c = RawClient::connect_no_handshake(("127.0.0.1", current)).await.unwrap();
    let asked = std::time::Instant::now();
    assert!(c.handshake(Duration::from_secs(30)).await.is_err(), "no VM, no handshake");
    assert!(asked.elapsed() < Duration::from_secs(3), "closed after {:?}", asked.elapsed());
    let line = served.wait_log("closing: no current VM").await;
    assert!(line.contains("cannot be reached") && line.contains("jdwpmux list"), "{line}");
}

/// A user's daemon sees root's container's JVM, which it cannot enter (a root Podman or
/// Docker container seen by a user): listed with who can reach it, never the current VM,
/// never announced as one; `list` says why the current-VM port leads nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_containers_jvm_a_user_cannot_enter_is_never_current() {
    crate::need_podman!();
    use crate::support::containers::{Container, Engine};
    let marker = format!("jdwpmux.test=unentered-{}", std::process::id());
    let rootful = Engine::rootful().unwrap();
    let cls = crate::containers::classes("Vault").await;
    let _vault = Container::run(crate::containers::spec(&rootful, "vault", &cls, "Vault", &marker)).await.unwrap();
    let user = crate::support::users::TestUser::with_home("unentered").unwrap();
    let home = user.home.clone().expect("a home");
    let own = |p: &std::path::Path| std::os::unix::fs::chown(p, Some(user.uid), Some(user.gid)).unwrap();
    let (bin, dir) = (home.join("jm"), home.join("jdwpmux"));
    for d in [&bin, &dir] {
        std::fs::create_dir_all(d).unwrap();
        own(d);
    }
    std::fs::copy(crate::cli::BIN, bin.join("jdwpmux")).unwrap();
    own(&bin.join("jdwpmux"));
    let args = ["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    let served = Served::start_bin_as(&user.prefix(), &bin.join("jdwpmux"), &dir.join("control.sock"), &args);
    let rows = served.list_until("root's container's JVM, with a note", |r| r.len() == 1 && r[0]["note"].is_string()).await;
    assert_eq!(rows[0]["state"], "unreachable", "{rows:?}");
    assert_eq!(rows[0]["current"], false, "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    let why = text.lines().find(|l| l.contains("no current VM")).unwrap_or_else(|| panic!("{text}"));
    assert!(why.contains("cannot be reached"), "{text}");
    // Said once in the log; never announced as the current VM.
    served.wait_log("no current VM: the VMs found cannot be reached").await;
    assert!(said(&served, "the current VM is").is_empty(), "{}", served.log_text());
    let (code, _, err) = served.run(&["select", "Vault"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be reached"), "{err}");
}
