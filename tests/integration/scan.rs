//! Port-range scanning: fake VMs and a real JVM found by themselves, a non-JDWP port ignored,
//! late VMs found, killed ones gone, and a scanned JVM never bothered.

use std::time::Duration;

use crate::cli::Served;
use crate::support::{FakeVm, FakeVmConfig, JavaApp, PortHold};

fn has(rows: &[serde_json::Value], addr: &str) -> bool {
    rows.iter().any(|r| r["addr"] == addr && r["state"] == "ready")
}

/// An echo server: passes a JDWP handshake by accident, but is no VM.
async fn echo_server() -> (u16, tokio::task::AbortHandle) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let h = tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (port, h.abort_handle())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_finds_vms_ignores_others_and_follows_them_coming_and_going() {
    let a = FakeVm::start(FakeVmConfig { app_name: "com.example.a".into(), ..Default::default() }).await;
    let b = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let (echo, echo_task) = echo_server().await;
    // Held until the late VM listens, so that no other connection is given it meanwhile.
    let late_hold = PortHold::new();
    let late_port = late_hold.port();
    let mut args = vec!["--scan-interval".to_string(), "0.5".to_string()];
    for p in [a.addr().port(), b.addr().port(), echo, late_port] {
        args.push("--scan".into());
        args.push(format!("127.0.0.1:{p}"));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let served = Served::start(&argv);
    served.wait_log("control socket at").await;

    let (aa, ba) = (a.addr().to_string(), b.addr().to_string());
    let rows = served.list_until("both fake VMs", |r| has(r, &aa) && has(r, &ba)).await;
    assert!(rows.iter().all(|r| r["addr"] != format!("127.0.0.1:{echo}")), "the echo server was listed");
    assert_eq!(rows.iter().find(|r| r["addr"] == aa.as_str()).unwrap()["ddm"], true);

    // A VM started late on a scanned port is found.
    let late = FakeVm::try_start_on(FakeVmConfig::default(), late_port).await.unwrap();
    drop(late_hold);
    let late_addr = late.addr().to_string();
    served.list_until("the late VM", |r| has(r, &late_addr)).await;

    // A killed VM leaves the list; its port is kept for its return.
    let b_port = rows.iter().find(|r| r["addr"] == ba.as_str()).unwrap()["debugger_port"].clone();
    b.stop();
    let b_hold = PortHold::hold(b.addr().port()).await;
    served.list_until("b gone", |r| !r.iter().any(|v| v["addr"] == ba.as_str())).await;
    let b2 = FakeVm::try_start_on(FakeVmConfig::hotspot_like(), b.addr().port()).await.unwrap();
    drop(b_hold);
    let rows = served.list_until("b back", |r| has(r, &ba)).await;
    assert_eq!(rows.iter().find(|r| r["addr"] == ba.as_str()).unwrap()["debugger_port"], b_port, "same port on return");

    // The echo server was noted once, quietly (one line, not one per scan).
    let log = served.log_text();
    assert_eq!(log.matches("not a JDWP VM").count(), 1, "{log}");
    echo_task.abort();
    drop((late, b2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scanned_jvm_is_never_bothered_for_a_minute() {
    let app = JavaApp::start(false).await.unwrap();
    let p = app.port();
    let range = format!("127.0.0.1:{}-{}", p.saturating_sub(2), p + 2);
    let served = Served::start(&["--scan", &range, "--scan-interval", "0.5"]);
    served.wait_log("control socket at").await;
    let addr = app.host_port();
    served.list_until("the JVM", |r| has(r, &addr)).await;
    // A minute of scanning (about 120 scans) while the proxy holds the JVM's connection.
    let until = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!app.output().contains("Debugger failed to attach"), "{}", app.output());
    }
    let rows = served.list_until("the JVM still there", |r| has(r, &addr)).await;
    assert!(rows.iter().find(|r| r["addr"] == addr.as_str()).unwrap()["pid"].is_u64(), "a local JVM's pid is found");
    assert!(!app.output().contains("Debugger failed to attach"), "{}", app.output());
    // Found once and kept: no reconnect churn (other VMs in the range may be found too).
    let found = format!("found a VM addr={addr}");
    assert_eq!(served.log_text().matches(&found).count(), 1, "{}", served.log_text());
}
