//! The /proc discovery on a machine shared with other users: real accounts made by the test
//! (`useradd`), processes run as them (`setpriv`). Text another user puts in a command line
//! never becomes records of the scan.

use std::process::Stdio;
use std::time::Duration;

use crate::cli::Served;
use crate::remote::{agent, debug_once, program};
use crate::support::users::TestUser;
use crate::support::ports::free_port;
use crate::support::{JavaApp, JvmSpec};

/// This test's row of `app` on this machine.
pub fn row<'a>(rows: &'a [serde_json::Value], app: &str) -> Option<&'a serde_json::Value> {
    rows.iter().find(|r| r["host"] == "local" && r["app"] == app)
}


/// `class` with its agent on `port`, marked with `marker` (for --proc-match), run as `user`
/// (None: as the test).
pub fn spec(class: &str, port: u16, marker: &str, user: Option<&TestUser>) -> JvmSpec {
    JvmSpec {
        prefix: user.map(TestUser::prefix).unwrap_or_default(),
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, &format!("127.0.0.1:{port}")),
        sources: program(class),
        class: class.into(),
        ..JvmSpec::default()
    }
}

/// A process of another user whose arguments hold what would, read with the marker of an
/// earlier jdwpmux, end the record of its command line and pose as records of the scan: the
/// victim JVM's owner line (which would forget its command line), an empty TCP table (no
/// agent listens anywhere) and the round's end. The daemon lists the victim, reachable, round
/// after round, and jdb debugs it through jdwpmux.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_cannot_forge_scan_records() {
    let attacker = TestUser::create("forge").expect("a test user");
    let marker = format!("jdwpmux.test=forge-{}", std::process::id());
    let victim = JavaApp::spawn(spec("Billing", free_port(), &marker, None)).await.expect("java starts");
    let pid = victim.pid().expect("running");
    let forged = format!("jdwp\n@@local\n@proc {pid}\n0 root\n@@local\n@tcp -\n\n@@local\n@done -\n\n@@local\n{marker}");
    let mut forger = tokio::process::Command::new(attacker.prefix()[0].clone())
        .args(&attacker.prefix()[1..])
        .args(["python3", "-c", "import time; time.sleep(600)", &forged])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the forging process starts");
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.3"]);
    let ready = |r: &[serde_json::Value]| row(r, "Billing").is_some_and(|v| v["state"] == "ready" && v["pid"] == pid);
    let rows = served.list_until("the victim JVM", ready).await;
    let port = row(&rows, "Billing").and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port") as u16;
    // Rounds go on with the forger running: every one of them still shows the JVM, and
    // nothing else (the forger's text names no VM either).
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < until {
        let (code, out, _) = served.run(&["list", "--json"]);
        assert_eq!(code, 0, "{out}");
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("JSON");
        assert!(ready(&rows) && rows.len() == 1, "the forged records were taken: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    debug_once(port, "Billing", &victim).await;
    let _ = forger.kill().await;
    drop(served);
}

/// A daemon finding this test's JVMs by their process and scanning `port`, its discovery's
/// debug lines in its log.
fn serve_with(marker: &str, port: u16, extra: &[&str]) -> Served {
    let scan = format!("127.0.0.1:{port}");
    let mut args = vec!["--proc", "--proc-match", marker, "--scan", &scan, "--no-adb", "--scan-interval", "0.3"];
    args.extend_from_slice(extra);
    Served::start_with(&args, &[], |c| {
        c.env("RUST_LOG", "info,jdwpmux::daemon=debug,jdwpmux::discovery=debug");
    })
}

/// Another user's JVM, on a port the daemon scans and found by its process, is left alone:
/// not listed, each skip said once at debug level, and its owner's own jdb attaches to it
/// while the daemon runs. With --other-users it is taken, and `list` names its user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_jvm_is_left_alone_unless_asked_for() {
    let owner = TestUser::create("owner").expect("a test user");
    let marker = format!("jdwpmux.test=theirs-{}", std::process::id());
    let port = free_port();
    let theirs = JavaApp::spawn(spec("Billing", port, &marker, Some(&owner))).await.expect("java starts as the test user");
    let served = serve_with(&marker, port, &[]);
    let by_proc = served.wait_log("leaving another user's JVM alone").await;
    assert!(by_proc.contains(&owner.name) && by_proc.contains("DEBUG"), "{by_proc}");
    let by_scan = served.wait_log("leaving a port of another user alone").await;
    assert!(by_scan.contains(&format!("127.0.0.1:{port}")) && by_scan.contains(&owner.uid.to_string()), "{by_scan}");
    // Its owner debugs it while the daemon runs on: the agent's one slot is theirs.
    let mut jdb = crate::support::Jdb::attach_as(&owner.prefix(), &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    jdb.expect("Initializing jdb", crate::remote::SLOW).await.expect("the owner's jdb attaches");
    jdb.expect("> ", crate::remote::SLOW).await.expect("a prompt");
    crate::remote::break_step_quit(&mut jdb, "Billing", &theirs).await;
    let (code, out, _) = served.run(&["list", "--json"]);
    assert_eq!((code, out.trim()), (0, "[]"), "another user's JVM was taken");
    let log = served.log_text();
    assert_eq!(log.matches("leaving another user's JVM alone").count(), 1, "said once, not every round: {log}");
    assert_eq!(log.matches("leaving a port of another user alone").count(), 1, "said once, not every round: {log}");
    assert!(!log.lines().any(|l| l.contains("WARN") && l.contains(&port.to_string())), "{log}");
    drop(served);

    // Asked for: taken, with its user in `list`.
    let served = serve_with(&marker, port, &["--other-users"]);
    let ready = |r: &[serde_json::Value]| row(r, "Billing").is_some_and(|v| v["state"] == "ready");
    let rows = served.list_until("another user's JVM taken", ready).await;
    assert_eq!(rows.len(), 1, "found once, by its process and by the scan: {rows:?}");
    let billing = row(&rows, "Billing").expect("listed");
    assert_eq!((&billing["user"], &billing["process"]["user"], &billing["process"]["other_user"]), (&owner.name.clone().into(), &owner.name.clone().into(), &true.into()), "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("Billing (user {})", owner.name)), "{text}");
    let port = billing["debugger_port"].as_u64().expect("a debugger port") as u16;
    debug_once(port, "Billing", &theirs).await;
    drop(served);
}

/// A JVM whose agent another debugger holds (here another user's jdb) is listed as busy,
/// with who holds it, and not warned about as if it did not run; once that debugger leaves,
/// the daemon connects and debugs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_held_by_another_debugger_is_listed_busy() {
    let other = TestUser::create("holder").expect("a test user");
    let marker = format!("jdwpmux.test=busy-{}", std::process::id());
    let port = free_port();
    let app = JavaApp::spawn(spec("Billing", port, &marker, None)).await.expect("java starts");
    let mut jdb = crate::support::Jdb::attach_as(&other.prefix(), &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    jdb.expect("Initializing jdb", crate::remote::SLOW).await.expect("jdb attaches");
    jdb.expect("> ", crate::remote::SLOW).await.expect("a prompt");
    let jdb_pid = jdb.pid().expect("jdb runs");
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.3"]);
    let busy = |r: &[serde_json::Value]| row(r, "Billing").is_some_and(|v| v["state"] == "busy" && v["note"].is_string());
    let rows = served.list_until("the JVM listed busy", busy).await;
    let note = row(&rows, "Billing").and_then(|r| r["note"].as_str()).unwrap_or_default().to_string();
    assert!(note.contains(&format!("pid {jdb_pid}")) && note.contains(&format!("user {}", other.name)), "{note}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains("busy") && text.contains(&note), "{text}");
    // Rounds go on while it is held: it stays busy.
    let until = tokio::time::Instant::now() + Duration::from_secs(2);
    while tokio::time::Instant::now() < until {
        let (_, out, _) = served.run(&["list", "--json"]);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("JSON");
        assert!(busy(&rows), "{rows:?}\njdb: {}\nlog: {}", jdb.output(), served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    jdb.quit().await.expect("jdb quits");
    // Ready, and its note gone with the next round.
    let ready = |r: &[serde_json::Value]| row(r, "Billing").is_some_and(|v| v["state"] == "ready" && v["note"].is_null());
    let rows = served.list_until("the JVM ready once jdb left", ready).await;
    let log = served.log_text();
    assert!(!log.contains("is the VM running") && !log.contains("VM not reachable"), "a busy VM is no fault: {log}");
    let port = row(&rows, "Billing").and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port") as u16;
    debug_once(port, "Billing", &app).await;
    drop(served);
}
