//! Summaries of a VM's recent packets: kept while somebody holds the ring, with command
//! names and reply latencies, and not at all once nobody does.

use std::sync::Arc;

use jdwpmux::session::recent::Party;
use jdwpmux::settings::DdmMode;

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::{FakeVm, FakeVmConfig, RawClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_vm_keeps_its_last_packets_and_stops_when_nobody_watches() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    let handle = proxy.daemon.as_ref().unwrap().registry.get(info.id).unwrap().handle;
    let ring = handle.watch_packets().await.expect("a ring");
    let again = handle.watch_packets().await.expect("a ring");
    assert!(Arc::ptr_eq(&ring, &again), "two watchers share one ring");
    drop(again);

    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(5, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    // A Resume for nothing this debugger holds is answered by the proxy.
    dbg.request(6, SET_VM, VM_RESUME, &[], SOON).await.unwrap();
    wait_until("both replies noted", || ring.since(0).iter().filter(|p| p.reply && p.conn.is_some()).count() >= 2).await.unwrap();
    let seen = ring.since(0);
    let conn = seen.iter().find(|p| p.from == Party::Debugger).and_then(|p| p.conn).expect("the debugger's command");
    let version = seen.iter().find(|p| p.from == Party::Vm && p.reply && p.id == 5).expect("the VM's reply");
    assert_eq!((version.command, version.conn, version.to), (Some((SET_VM, VM_VERSION)), Some(conn), Party::Debugger));
    assert!(version.latency_us.is_some());
    let resume = seen.iter().find(|p| p.from == Party::Proxy && p.reply && p.id == 6).expect("the proxy's answer");
    assert_eq!((resume.command, resume.error), (Some((SET_VM, VM_RESUME)), 0));
    assert!(seen.iter().all(|p| p.from != Party::Debugger || p.conn == Some(conn)));

    // Nobody holds the ring: the session lets go of it at the next packet.
    let weak = Arc::downgrade(&ring);
    drop(ring);
    dbg.request(7, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    wait_until("the session let go of the ring", || weak.strong_count() == 0).await.unwrap();
    proxy.stop().await;
}
