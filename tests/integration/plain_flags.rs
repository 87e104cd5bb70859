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
