//! The real binary: `serve` with the control socket, `list` and `select`, exit codes.

use std::process::Command;
use std::time::Duration;

use crate::support::{FakeVm, FakeVmConfig};

pub use crate::served::{port_of, Served, BIN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_select_through_the_binary() {
    let a = FakeVm::start(FakeVmConfig { app_name: "com.example.alpha".into(), pid: 1111, ..Default::default() }).await;
    let b = FakeVm::start(FakeVmConfig { app_name: "com.example.beta".into(), pid: 2222, ..Default::default() }).await;
    let served = Served::start(&["--vm", &a.addr().to_string(), "--vm", &b.addr().to_string()]);
    let current = port_of(&served.wait_log("for the current VM").await);
    assert!(current > 0);
    // Both VMs identified.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let listed = loop {
        let (code, out, err) = served.run(&["list", "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v.as_array().unwrap().iter().filter(|e| e["state"] == "ready").count() == 2 {
            break v;
        }
        assert!(tokio::time::Instant::now() < deadline, "VMs not ready: {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let rows = listed.as_array().unwrap();
    for key in ["addr", "pid", "app", "vm_ident", "ddm", "debugger_port", "current", "debuggers", "state"] {
        assert!(rows[0].get(key).is_some(), "missing {key} in {}", rows[0]);
    }
    assert_eq!(rows[0]["current"], true, "the first VM is current by default");
    assert_eq!(rows[1]["app"], "com.example.beta");
    assert_eq!(rows[1]["ddm"], true);

    let (code, out, _) = served.run(&["list"]);
    assert_eq!(code, 0);
    assert!(out.lines().next().unwrap().contains("PORT"), "{out}");
    assert!(out.contains("com.example.alpha") && out.contains("2222"), "{out}");

    let beta_port = rows[1]["debugger_port"].as_u64().unwrap().to_string();
    // A bare number is a pid, else the debugger port as the PORT column shows it; an app's
    // last name (`beta`, as `Billing` of `com.example.Billing`) names it too.
    for sel in ["com.example.beta", "2222", &b.addr().to_string(), &format!(":{beta_port}"), &beta_port, "com.example.b", "beta"] {
        let (code, out, err) = served.run(&["select", sel]);
        assert_eq!(code, 0, "select {sel}: {err}");
        assert!(out.contains(&b.addr().to_string()), "{out}");
        served.run(&["select", "com.example.alpha"]);
    }
    let (code, _, err) = served.run(&["select", "com.example"]);
    assert_eq!(code, 2, "ambiguous selector");
    assert!(err.contains("ambiguous") && err.contains("alpha") && err.contains("beta"), "{err}");
    let (code, _, err) = served.run(&["select", "nothing.like.it"]);
    assert_eq!(code, 2);
    assert!(err.contains("no VM matches"), "{err}");

    // The current port follows the selection.
    served.run(&["select", "com.example.beta"]);
    let mut c = crate::support::RawClient::connect(("127.0.0.1", current)).await.unwrap();
    c.request(1, 1, 1, &[], Duration::from_secs(20)).await.unwrap();
    // The first Version was the proxy's own, before it knew beta is Android.
    crate::harness::wait_until("beta has the debugger", || b.received_commands(1, 1).len() >= 2).await.unwrap();
    drop(c);
}

#[test]
fn commands_without_a_daemon_say_so_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let out = Command::new(BIN).args(["list", "--control"]).arg(&sock).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no jdwpmux daemon answers") && err.lines().count() == 1, "{err}");
}

#[test]
fn a_remote_listen_address_needs_consent() {
    let out = Command::new(BIN).args(["serve", "--listen", "0.0.0.0", "--no-scan"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_every_debugger_and_max_debuggers_refuses_with_a_log_line() {
    use crate::support::consts::*;
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--max-debuggers", "2"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let mut a = crate::support::RawClient::connect(("127.0.0.1", current)).await.unwrap();
    let mut b = crate::support::RawClient::connect(("127.0.0.1", current)).await.unwrap();
    a.ok(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_NONE, 0, 0, 0, 0]).await.unwrap();
    b.ok(1, SET_VM, VM_SUSPEND, &[]).await.unwrap();
    let mut third = crate::support::RawClient::connect_no_handshake(("127.0.0.1", current)).await.unwrap();
    third.send_raw(crate::support::wire::HANDSHAKE).await.unwrap();
    third.expect_closed(crate::harness::SOON).await.unwrap();
    served.wait_log("refusing a debugger: --max-debuggers reached").await;

    let (code, out, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    let (pa, pb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let line = |peer| out.lines().find(|l| l.contains(&format!("debugger {peer} "))).unwrap_or_else(|| panic!("no line for {peer}:\n{out}"));
    assert!(line(pa).ends_with("1 request, 0 suspensions, 1 command"), "{out}");
    assert!(line(pb).ends_with("0 requests, 1 suspension, 1 command"), "{out}");
    let (_, json, _) = served.run(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let debuggers = v[0]["debuggers"].as_array().unwrap();
    assert_eq!(debuggers.len(), 2, "{json}");
    assert_eq!(debuggers[0]["peer"], pa.to_string());
    assert_eq!((debuggers[0]["event_requests"].as_u64(), debuggers[1]["suspensions"].as_u64()), (Some(1), Some(1)));
    assert!(debuggers[0]["since_ms"].as_u64().unwrap() > 1_600_000_000_000);
}

/// One state vocabulary: a VM a debugger holds suspended (as at a breakpoint) is `stopped` in
/// `list` and its JSON, as on the page, and `ready` again once resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_vm_is_stopped_in_list_and_json() {
    use crate::support::consts::*;
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let mut dbg = crate::support::RawClient::connect(("127.0.0.1", current)).await.unwrap();
    dbg.request(1, SET_VM, VM_SUSPEND, &[], Duration::from_secs(20)).await.unwrap();
    served.list_until("stopped in the JSON", |r| r.len() == 1 && r[0]["state"] == "stopped").await;
    let (code, out, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    let row = out.lines().nth(1).unwrap_or_default();
    assert!(row.contains(" stopped ") && out.contains("1 suspension"), "{out}");
    dbg.request(2, SET_VM, VM_RESUME, &[], Duration::from_secs(20)).await.unwrap();
    served.list_until("ready once resumed", |r| r.len() == 1 && r[0]["state"] == "ready").await;
}

/// A debugger on the current-VM port while that VM cannot be reached is closed at once,
/// with a line saying why, not after the attach deadline with a bare "handshake failed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_for_an_unreachable_vm_is_closed_at_once() {
    let hold = crate::support::PortHold::new();
    let served = Served::start(&["--vm", &format!("127.0.0.1:{}", hold.port()), "--no-scan", "--no-adb", "--no-proc"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.list_until("unreachable", |r| r.len() == 1 && r[0]["state"] == "unreachable").await;
    let mut c = crate::support::RawClient::connect_no_handshake(("127.0.0.1", current)).await.unwrap();
    let asked = std::time::Instant::now();
    assert!(c.handshake(Duration::from_secs(30)).await.is_err(), "no VM, no handshake");
    assert!(asked.elapsed() < Duration::from_secs(3), "closed after {:?}", asked.elapsed());
    // It is not the current VM (it cannot be reached): the port leads to none, and says why.
    let line = served.wait_log("cannot be reached now").await;
    assert!(line.contains("INFO") && line.contains("no current VM") && line.contains("jdwpmux list"), "{line}");
}
