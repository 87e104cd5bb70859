//! The /proc discovery on a machine shared with other users: real accounts made by the test
//! (`useradd`), processes run as them (`setpriv`). Text another user puts in a command line
//! never becomes records of the scan.

use std::process::Stdio;
use std::time::Duration;

use crate::cli::Served;
use crate::remote::{agent, debug_once, program};
use crate::support::users::TestUser;
use crate::support::{JavaApp, JvmSpec};

/// This test's row of `app` on this machine.
pub fn row<'a>(rows: &'a [serde_json::Value], app: &str) -> Option<&'a serde_json::Value> {
    rows.iter().find(|r| r["host"] == "local" && r["app"] == app)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
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
