//! Flags and log lines that mean what they say: `--no-scan` turns off the port scan and
//! nothing else; a port probe (`nc -z`, a health check, an IDE testing the port) is nobody
//! to warn about; a VM's port is logged as a number; the open-file limit is not news at
//! every start. The real binary.

use std::time::Duration;

use crate::cli::{port_of, Served};
use crate::remote::{agent, program};
use crate::support::{java_available, FakeVm, FakeVmConfig, JavaApp, JvmSpec, RawClient};

/// The level of a plain-text log line ("2026-01-01T00:00:00Z  INFO target: message").
fn level(line: &str) -> Option<&str> {
    line.split_whitespace().nth(1)
}

fn spec(marker: &str, class: &str, address: &str) -> JvmSpec {
    JvmSpec { jvm: vec![format!("-D{marker}")], agent: agent(false, address), sources: program(class), class: class.into(), ..JvmSpec::default() }
}

/// `serve --no-scan` (no other source named) still finds the JVMs of this machine by their
/// process: the flag turns off the port scan only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_scan_keeps_the_jvms_found_by_their_process() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=noscan-{}", std::process::id());
    let app = JavaApp::spawn(spec(&marker, "Kept", "127.0.0.1:0")).await.unwrap();
    let pid = app.pid().unwrap();
    let served = Served::start(&["--no-scan", "--no-adb", "--proc-match", &marker, "--scan-interval", "0.5"]);
    served.list_until("the JVM found by its process", |r| r.len() == 1 && r[0]["pid"].as_u64() == Some(pid.into()) && r[0]["state"] == "ready").await;
    assert!(!served.log_text().contains("scanning"), "{}", served.log_text());
    // `--no-proc` is what turns the process discovery off.
    let off = Served::start(&["--no-scan", "--no-adb", "--no-proc"]);
    off.wait_log("no VMs to watch").await;
}

/// Fifty connections to the current-VM port and to a VM's own port that close before
/// sending anything (as `nc -z` does): not one warning, each said at debug level; a
/// debugger after them is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_probe_is_no_warning() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start_with(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb", "--no-proc"], &[], |c| {
        c.env("RUST_LOG", "debug");
    });
    let current = port_of(&served.wait_log("for the current VM").await);
    let rows = served.wait_ready().await;
    let own = rows[0]["debugger_port"].as_u64().unwrap() as u16;
    const PROBES: usize = 50;
    for i in 0..PROBES {
        let port = if i % 2 == 0 { current } else { own };
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
    }
    let gone = |s: &Served| {
        let text = s.log_text();
        text.lines().filter(|l| l.contains("debugger left before its handshake") || l.contains("gone before it sent anything")).count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while gone(&served) < PROBES {
        assert!(tokio::time::Instant::now() < deadline, "{} of {PROBES} probes said:\n{}", gone(&served), served.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = served.log_text();
    let warnings: Vec<&str> = text.lines().filter(|l| level(l) == Some("WARN")).collect();
    assert!(warnings.is_empty(), "warnings for port probes:\n{}", warnings.join("\n"));
    assert!(text.lines().filter(|l| l.contains("gone before it sent anything")).all(|l| level(l) == Some("DEBUG")), "{text}");
    let mut c = RawClient::connect(("127.0.0.1", current)).await.unwrap();
    c.request(1, 1, 1, &[], Duration::from_secs(20)).await.unwrap();
}

/// A JVM restarted on its port keeps its debugger port, and the line saying so names the
/// port as a number (`port=8601`, not `port=Some(8601)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_vms_port_is_logged_as_a_number() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=portnum-{}", std::process::id());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let address = format!("127.0.0.1:{port}");
    let mut app = JavaApp::spawn(spec(&marker, "Again", &address)).await.unwrap();
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let rows = served.list_until("ready", |r| r.len() == 1 && r[0]["state"] == "ready").await;
    let debugger_port = rows[0]["debugger_port"].as_u64().unwrap();
    app.kill().await.unwrap();
    served.list_until("gone", |r| r.is_empty()).await;
    let _again = JavaApp::spawn(spec(&marker, "Again", &address)).await.unwrap();
    let line = served.wait_log("it keeps its debugger port").await;
    assert!(line.contains(&format!("port={debugger_port}")) && !line.contains("Some("), "{line}");
}

/// Raising the open-file limit (soft below hard, as `prlimit` sets it here) is said at
/// debug level, not at every start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_the_open_file_limit_is_not_news() {
    let args = ["--no-scan", "--no-adb", "--no-proc"];
    let served = Served::start_wrapped(&["prlimit", "--nofile=256:4096"], &args);
    served.wait_log("no VMs to watch").await;
    assert!(!served.log_text().contains("open-file limit"), "{}", served.log_text());
    // At debug level it is there.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut child = std::process::Command::new("prlimit")
        .args(["--nofile=256:4096", crate::cli::BIN, "serve", "--base-port", "0", "--current-port", "0", "--control"])
        .arg(dir.path().join("c.sock"))
        .args(args)
        .env("RUST_LOG", "debug")
        .env_remove("JDWPMUX_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.contains("raised the open-file limit")) {
            break l.to_string();
        }
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "{text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(level(&line), Some("DEBUG"), "{line}");
}
