//! A debugger leaving: a DDM-aware VM gets DBGD and is cleaned up on the kept connection; a
//! non-DDM VM has the debugger's requests cleared and VM-wide suspensions resumed, then is
//! dropped and reconnected; a lost VM closes its debugger.

use std::time::Duration;

use jdwpmux::settings::DdmMode;

use crate::harness::{soon, wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::{FakeVm, FakeVmConfig, RawClient};

const MAIN_THREAD: u64 = 0x1001;

/// Leaves breakpoints, a VM-wide suspend and two thread suspends behind.
async fn make_a_mess(dbg: &mut RawClient) {
    // EventRequest.Set: kind BREAKPOINT, suspend ALL, no modifiers; then a step request.
    for (id, kind) in [(1u32, KIND_BREAKPOINT), (2, KIND_THREAD_START)] {
        let r = dbg.request(id, SET_EVENT_REQUEST, ER_SET, &[kind, SUSPEND_ALL, 0, 0, 0, 0], SOON).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE));
    }
    dbg.request(3, SET_VM, VM_SUSPEND, &[], SOON).await.unwrap();
    for id in [4, 5] {
        dbg.request(id, SET_THREAD, THREAD_SUSPEND, &MAIN_THREAD.to_be_bytes(), SOON).await.unwrap();
    }
}

async fn cleaned_after(leave: impl FnOnce(RawClient) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    // The proxy reconnected once already: VirtualMachine.Version said Android.
    let connections = vm.connections_accepted();
    let mut dbg = RawClient::connect(port).await.unwrap();
    make_a_mess(&mut dbg).await;
    assert_eq!(vm.event_requests().len(), 2);
    assert!(vm.any_suspended());
    leave(dbg).await;
    wait_until("DBGD", || vm.dbgd_count() >= 1).await.unwrap();
    wait_until("event requests cleared", || vm.event_requests().is_empty()).await.unwrap();
    wait_until("suspensions undone", || !vm.any_suspended() && vm.suspend_count() == 0).await.unwrap();
    assert_eq!(vm.connections_accepted(), connections, "a DDM-aware VM keeps its connection");
    // The next debugger finds a clean VM.
    let mut next = soon("next debugger", async {
        loop {
            if let Ok(c) = RawClient::connect(port).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let r = next.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_sends_dbgd_and_undoes_requests_and_suspensions() {
    cleaned_after(|dbg| Box::pin(async move { drop(dbg) })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_sends_dbgd_and_undoes_requests_and_suspensions() {
    cleaned_after(|dbg| Box::pin(async move { dbg.reset().unwrap() })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_is_answered_by_the_proxy_and_cleans_up() {
    cleaned_after(|mut dbg| {
        Box::pin(async move {
            let r = dbg.request(90, SET_VM, VM_DISPOSE, &[], SOON).await.unwrap();
            assert_eq!(r.error_code(), Some(ERR_NONE));
            dbg.expect_closed(SOON).await.unwrap();
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_never_reaches_the_vm() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(1, SET_VM, VM_DISPOSE, &[], SOON).await.unwrap();
    wait_until("DBGD", || vm.dbgd_count() >= 1).await.unwrap();
    assert!(vm.received_commands(SET_VM, VM_DISPOSE).is_empty());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_ddm_vm_is_dropped_and_reconnected_when_its_debugger_leaves() {
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let mut dbg = RawClient::connect(port).await.unwrap();
    make_a_mess(&mut dbg).await;
    drop(dbg);
    wait_until("reconnected", || vm.connections_accepted() >= 2 && vm.is_connected()).await.unwrap();
    assert!(!vm.any_suspended(), "the VM reset its debugger state on close");
    assert_eq!(vm.dbgd_count(), 0);
    // Undone before the connection closed, although the VM forgets them with it: HotSpot's
    // agent keeps the pins of a VM-wide suspension across that reset
    // (`Session::settle_then_reset`).
    assert_eq!(vm.received_commands(SET_EVENT_REQUEST, ER_CLEAR).len(), 2, "the departed debugger's requests cleared first");
    assert_eq!(vm.received_commands(SET_VM, VM_RESUME).len(), 1, "its VM-wide suspension resumed first");
    assert_eq!(vm.received_commands(SET_THREAD, THREAD_RESUME).len(), 2, "and its two thread suspensions");
    let mut again = RawClient::connect(port).await.unwrap();
    assert_eq!(again.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap().error_code(), Some(ERR_NONE));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_reply_for_a_departed_debugger_goes_to_nobody() {
    let cfg = FakeVmConfig::default().with_reply_delay(SET_VM, VM_ALL_THREADS, Duration::from_millis(600));
    let vm = FakeVm::start(cfg).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let mut gone = RawClient::connect(port).await.unwrap();
    gone.send_command(4711, SET_VM, VM_ALL_THREADS, &[]).await.unwrap();
    wait_until("request forwarded", || !vm.received_commands(SET_VM, VM_ALL_THREADS).is_empty()).await.unwrap();
    drop(gone);
    let mut next = soon("next debugger", async {
        loop {
            if let Ok(c) = RawClient::connect(port).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Ask long enough for the delayed reply to have come back from the VM.
    for id in 1..=10 {
        next.request(id, SET_VM, VM_ID_SIZES, &[], SOON).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(next.take_other_packets().iter().all(|p| p.id != 4711), "a late reply leaked to the next debugger");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_vm_closes_its_debugger_and_the_proxy_reconnects() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert!(vm.drop_connection());
    dbg.expect_closed(SOON).await.unwrap();
    wait_until("reconnected", || vm.connections_accepted() >= 2 && vm.is_connected()).await.unwrap();
    proxy.ready(0).await;
    proxy.stop().await;
}
