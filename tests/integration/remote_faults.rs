//! Faults on the way to an ssh host: the link cut for 10 s, sshd killed and started again,
//! the host's JVM restarted. The host's VMs show as unreachable with a note naming the host,
//! attached debuggers are closed, and everything comes back on the same local ports.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::remote::{agent, debug_once, jdb, jvm_on, one_vm, port, ready, row, OneVm, SLOW};
use crate::support::JavaApp;

fn down_with_note(rows: &[Value], host: &str, app: &str) -> bool {
    row(rows, host, app).is_some_and(|r| r["state"] == "link down" && r["note"].as_str().is_some_and(|n| n.contains(&format!("ssh link to {host} is down"))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_cut_for_ten_seconds_comes_back_on_the_same_port() {
    crate::need_test_hosts!();
    let OneVm { keys: _keys, host, app, served, port: vm_port } = one_vm("far", &[]).await;
    let mut attached = jdb(vm_port).await;
    attached.expect("> ", SLOW).await.unwrap();

    host.net.set_link(false).unwrap();
    let cut_at = tokio::time::Instant::now();
    served.list_until("unreachable, with the host named", |r| down_with_note(r, "far", "Billing")).await;
    let line = served.wait_log("lost the ssh link to far").await;
    assert!(line.contains("its VM (Billing) is unreachable") && line.contains("debuggers are closed"), "{line}");
    // The attached debugger was closed.
    attached.expect("disconnected", SLOW).await.unwrap();
    let seen_down_after = cut_at.elapsed();
    tokio::time::sleep_until(cut_at + Duration::from_secs(10)).await;
    host.net.set_link(true).unwrap();

    let rows = served.list_until("back", |r| ready(r, "far", "Billing")).await;
    assert_eq!(port(&rows, "far", "Billing"), vm_port, "the same local port");
    assert!(row(&rows, "far", "Billing").unwrap()["note"].is_null(), "{rows:?}");
    println!("link cut: seen down after {seen_down_after:?}, back {:?} after the link was restored", cut_at.elapsed() - Duration::from_secs(10));
    debug_once(vm_port, "Billing", &app).await;
    // The loss was said in that one line: the VM's session retried quietly.
    let log = served.log_text();
    let per_vm: Vec<&str> = log.lines().filter(|l| !l.contains(" DEBUG ") && (l.contains("lost the VM connection") || l.contains("VM not reachable"))).collect();
    assert!(per_vm.is_empty(), "{per_vm:#?}");
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sshd_restarted_and_the_jvm_restarted_keep_the_port() {
    crate::need_test_hosts!();
    // sshd's listener goes alone: the host's pid namespace is held by a process of its own.
    // Scans 3 s apart: the restarted JVM is mostly reached again before a scan sees it go,
    // and must still be listed as the new process once one sees it.
    let OneVm { keys, mut host, mut app, served, port: vm_port } = one_vm("svc", &["--ssh-interval", "3"]).await;
    let rows = served.list_until("ready", |r| ready(r, "svc", "Billing")).await;
    let first_pid = row(&rows, "svc", "Billing").unwrap()["pid"].clone();

    // The listening sshd alone goes: the link's own connection lives on, as on a real host.
    host.kill_sshd();
    debug_once(vm_port, "Billing", &app).await;

    // Every sshd goes (the service restarted and dropped its connections): unreachable
    // until sshd is back, then the same port.
    host.kill_all_sshd();
    served.list_until("unreachable", |r| down_with_note(r, "svc", "Billing")).await;
    host.restart_sshd(&keys).unwrap();
    let rows = served.list_until("back after sshd", |r| ready(r, "svc", "Billing")).await;
    assert_eq!(port(&rows, "svc", "Billing"), vm_port);

    // The JVM restarts (a new process on the same port): the same local port, the new pid.
    app.kill().await.unwrap();
    served.list_until("gone", |r| row(r, "svc", "Billing").is_none_or(|v| v["state"] != "ready")).await;
    let app2 = JavaApp::spawn(jvm_on(&host, Path::new("java"), "Billing", agent(false, "8000"))).await.unwrap();
    let rows = served.list_until("the new JVM", |r| ready(r, "svc", "Billing") && row(r, "svc", "Billing").is_some_and(|v| v["pid"] != first_pid)).await;
    assert_eq!(port(&rows, "svc", "Billing"), vm_port, "a restarted JVM keeps its port");
    debug_once(vm_port, "Billing", &app2).await;
    drop(served);
}
