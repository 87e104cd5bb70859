//! Flags and log lines that mean what they say: `--no-scan` turns off the port scan and
//! nothing else; a port probe (`nc -z`, a health check, an IDE testing the port) is nobody
//! to warn about; a VM's port is logged as a number; the open-file limit is not news at
//! every start. The real binary.

use crate::cli::Served;
use crate::remote::{agent, program};
use crate::support::{java_available, JavaApp, JvmSpec};

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
