//! Android VMs reached over plain TCP: an adb forward (`adb forward tcp:PORT jdwp:PID`)
//! named with --vm, said with `android:`, found by a scan; and a VM whose Version reply
//! reveals Android. None of them gets a non-DDM packet from the proxy before a debugger
//! sends one.

use std::net::SocketAddr;
use std::time::Duration;

use jdwpmux::settings::{DdmMode, Settings};

use crate::cli::Served;
use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::fake_adb::FakeAdb;
use crate::support::{FakeVm, FakeVmConfig, Packet, RawClient};

const SERIAL: &str = "emulator-5554";
const PID: u32 = 4242;

/// A fake adb server with a device whose process PID is a fake VM, and a forward to it.
async fn forwarded_vm() -> (FakeAdb, FakeVm, SocketAddr) {
    let adb = FakeAdb::start().await.unwrap();
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    adb.add_device(SERIAL);
    adb.set_vm(SERIAL, PID, vm.addr());
    let forward = adb.forward_jdwp(SERIAL, PID).await.unwrap();
    (adb, vm, forward)
}

fn non_ddm(packets: &[Packet]) -> Vec<String> {
    packets.iter().filter(|p| !p.is_ddm()).map(|p| format!("{:?} id {}", p.command_of(), p.id)).collect()
}

/// A debugger attaches to `port` and asks for the VM's version: on the VM's connection, that
/// is the first and only packet that is not DDM.
async fn a_debugger_speaks(port: u16, vm: &FakeVm) {
    let mut dbg = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    let r = dbg.request(77, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let (_, on_last) = by_connection(vm).pop().unwrap();
    let others = non_ddm(&on_last);
    assert_eq!(others.len(), 1, "the debugger's Version and nothing of the proxy's: {others:?}");
    assert!(on_last.last().is_some_and(|p| p.is_command(SET_VM, VM_VERSION)));
}


fn ready_with_ddm(rows: &[serde_json::Value]) -> bool {
    rows.len() == 1 && rows[0]["state"] == "ready" && rows[0]["ddm"] == true && rows[0]["debugger_port"].is_u64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adb_forward_named_with_vm_gets_only_ddm_until_a_debugger_speaks() {
    let (adb, vm, forward) = forwarded_vm().await;
    let settings = Settings { vms: vec![forward], adb_forwards: Some(adb.addr()), base_port: 0, current_port: 0, ..Settings::default() };
    let proxy = Proxy::with(settings).await;
    let info = proxy.ready(0).await;
    assert_eq!((info.status.ddm, info.status.app.as_deref()), (Some(true), Some("com.example.fake")));
    assert!(adb.requests().iter().any(|r| r == "host:list-forward"), "{:?}", adb.requests());
    assert_eq!(non_ddm(&vm.received()), Vec::<String>::new());
    assert_eq!(vm.connections_accepted(), 1);
    a_debugger_speaks(info.debugger_port.unwrap(), &vm).await;
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_said_to_be_android_on_the_command_line_or_in_the_config_gets_only_ddm() {
    let by_flag = FakeVm::start(FakeVmConfig::default()).await;
    let by_config = FakeVm::start(FakeVmConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jdwpmux.toml");
    std::fs::write(&config, format!("vm = [\"android:{}\"]\nno-adb = true\n", by_config.addr())).unwrap();
    let flag = format!("android:{}", by_flag.addr());
    let servers = [
        (Served::start(&["--vm", &flag, "--no-adb"]), &by_flag),
        (Served::start(&["--config", config.to_str().unwrap()]), &by_config),
    ];
    for (served, vm) in &servers {
        let rows = served.list_until("the VM ready", ready_with_ddm).await;
        assert_eq!(rows[0]["app"], "com.example.fake");
        assert_eq!(rows[0]["addr"], vm.addr().to_string());
        assert_eq!(non_ddm(&vm.received()), Vec::<String>::new());
        assert_eq!(vm.connections_accepted(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scanned_adb_forward_is_named_by_device_and_pid_and_gets_only_ddm() {
    let (adb, vm, forward) = forwarded_vm().await;
    let scan = format!("127.0.0.1:{}", forward.port());
    // No --adb: the forward list comes from the adb server adb itself would use.
    let port = adb.port().to_string();
    let served = Served::start_env(&["--scan", &scan, "--scan-interval", "0.5"], &[("ANDROID_ADB_SERVER_PORT", &port)]);
    let rows = served.list_until("the forwarded VM", ready_with_ddm).await;
    assert_eq!(rows[0]["addr"], format!("{SERIAL}:{PID}"));
    assert_eq!(rows[0]["app"], "com.example.fake");
    let (code, out, err) = served.run(&["select", &format!("{SERIAL}:{PID}")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("com.example.fake"), "{out}");
    // The scan's connection (the handshake alone) became the session's.
    assert_eq!(vm.connections_accepted(), 1);
    assert_eq!(non_ddm(&vm.received()), Vec::<String>::new());
    // Later scans (two or more in this time) leave it to its session.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(vm.connections_accepted(), 1);
    let port = rows[0]["debugger_port"].as_u64().unwrap() as u16;
    a_debugger_speaks(port, &vm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scanned_forward_to_a_vm_found_through_adb_is_left_to_adb() {
    let (adb, vm, forward) = forwarded_vm().await;
    let scan = format!("127.0.0.1:{}", forward.port());
    let served = Served::start(&["--adb", &adb.addr().to_string(), "--scan", &scan, "--scan-interval", "0.5"]);
    served.wait_log("leaving it alone").await;
    let rows = served.list_until("the VM through adb", ready_with_ddm).await;
    assert_eq!(rows[0]["addr"], format!("{SERIAL}:{PID}"));
    assert_eq!(rows[0]["source"], "adb");
    assert_eq!(vm.connections_accepted(), 1, "only the adb session connected");
    assert_eq!(non_ddm(&vm.received()), Vec::<String>::new());
}

/// Connection number and packets of each connection, in order.
fn by_connection(vm: &FakeVm) -> Vec<(u64, Vec<Packet>)> {
    let mut out: Vec<(u64, Vec<Packet>)> = Vec::new();
    for (c, p) in vm.received_by_connection() {
        match out.last_mut() {
            Some((last, list)) if *last == c => list.push(p),
            _ => out.push((c, vec![p])),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_reply_saying_android_makes_the_proxy_reconnect_and_speak_only_ddm() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(true));
    let conns = by_connection(&vm);
    assert_eq!(conns.len(), 2, "{conns:?}");
    assert!(conns[0].1.iter().all(|p| !p.is_ddm()), "identification only on the first: {:?}", non_ddm(&conns[0].1));
    assert!(conns[0].1.iter().any(|p| p.is_command(SET_VM, VM_VERSION)));
    assert_eq!(non_ddm(&conns[1].1), Vec::<String>::new());
    a_debugger_speaks(info.debugger_port.unwrap(), &vm).await;
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hotspot_taking_over_an_android_vms_port_never_gets_ddm() {
    let android = FakeVm::start(FakeVmConfig::default()).await;
    let addr = android.addr();
    let proxy = Proxy::start(&[addr], DdmMode::Auto).await;
    assert_eq!(proxy.ready(0).await.status.ddm, Some(true));
    android.stop();
    drop(android);
    let hotspot = crate::harness::soon("rebinding the port", async {
        loop {
            if let Ok(vm) = FakeVm::try_start_on(FakeVmConfig::hotspot_like(), addr.port()).await {
                return vm;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    wait_until("identified afresh", || {
        proxy.list().first().is_some_and(|v| v.status.ddm == Some(false) && v.status.state == jdwpmux::session::VmState::Ready)
    })
    .await
    .unwrap();
    assert!(hotspot.received().iter().all(|p| !p.is_ddm()), "a DDM packet reached the HotSpot");
    assert!(hotspot.received().iter().any(|p| p.is_command(SET_VM, VM_VERSION)));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scanned_vm_whose_version_says_android_is_reconnected_with_ddm_only() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let scan = format!("127.0.0.1:{}", vm.addr().port());
    let served = Served::start(&["--scan", &scan, "--no-adb", "--scan-interval", "0.5"]);
    served.list_until("the VM", ready_with_ddm).await;
    let conns = by_connection(&vm);
    assert_eq!(conns.len(), 2, "the probe, then the session: {conns:?}");
    assert!(conns[0].1.iter().all(|p| p.is_command(SET_VM, VM_VERSION)), "the probe sends Version alone");
    assert_eq!(non_ddm(&conns[1].1), Vec::<String>::new());
    served.wait_log("reconnecting to speak only DDM").await;
}
