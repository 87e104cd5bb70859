//! Large packets the proxy passes on in pieces (streamed): they arrive whole, nothing the
//! proxy says itself lands inside one, and a debugger that leaves halfway takes the rest
//! of it with it.

use std::time::Duration;

use jdwpmux::settings::DdmMode;

use crate::harness::{Proxy, SOON};
use crate::support::consts::*;
use crate::support::{DbgdReply, FakeVm, FakeVmConfig, Packet, RawClient};

/// VirtualMachine.Capabilities: a command the fake VM is told to answer an hour late, so
/// the test can see it arrive at the VM (the commands before it were handled) while the VM
/// sends nothing of its own in between.
const VM_CAPABILITIES: u8 = 12;
/// A vendor command set: the proxy answers NOT_IMPLEMENTED itself.
const VENDOR_SET: u8 = 0x90;

/// An event of `len` body bytes (a THREAD_START with a long tail): far above the size the
/// proxy streams from.
fn big_event(len: u32) -> Packet {
    let mut data = vec![SUSPEND_NONE, 0, 0, 0, 1, KIND_THREAD_START, 0, 0, 0, 9];
    data.extend((0..len).map(|i| (i % 251) as u8));
    Packet::command(5, SET_EVENT, EVENT_COMPOSITE, data)
}

fn late_vm() -> FakeVmConfig {
    FakeVmConfig::default().with_reply_delay(SET_VM, VM_CAPABILITIES, Duration::from_secs(3600))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_vm_packet_is_relayed_whole_in_pieces() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    dbg.set_max_packet_len(64 << 20);
    let event = big_event(20 << 20);
    let data = event.data.clone();
    vm.send_packet(&event).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(p.command_of(), Some((SET_EVENT, EVENT_COMPOSITE)));
    assert_eq!(p.data.len(), data.len());
    assert!(p.data == data, "body corrupted in transit");
    dbg.request(2, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_from_the_proxy_waits_for_the_end_of_a_streamed_packet() {
    let vm = FakeVm::start(late_vm()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    dbg.set_max_packet_len(8 << 20);
    let event = big_event(1 << 20);
    let bytes = event.encode();
    // The VM sends the head and the first 100 KB of the event, then pauses.
    vm.send_raw(bytes[..100_000].to_vec()).unwrap();
    dbg.wait_for_bytes(64 * 1024, SOON).await.unwrap();
    // Meanwhile the debugger sends a command the proxy answers itself.
    dbg.send_command(2, VENDOR_SET, 1, &[]).await.unwrap();
    dbg.send_command(3, SET_VM, VM_CAPABILITIES, &[]).await.unwrap();
    vm.wait_for(|v| !v.received_commands(SET_VM, VM_CAPABILITIES).is_empty(), SOON).await.unwrap();
    assert!(vm.received().iter().all(|p| p.command_of() != Some((VENDOR_SET, 1))), "the vendor command reached the VM");
    vm.send_raw(bytes[100_000..].to_vec()).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(p.command_of(), Some((SET_EVENT, EVENT_COMPOSITE)), "the event comes first, whole: got id {} len {}", p.id, p.data.len());
    assert!(p.data == event.data, "the event's body was corrupted");
    let r = dbg.read_packet(SOON).await.unwrap();
    assert_eq!((r.id, r.error_code()), (2, Some(ERR_NOT_IMPLEMENTED)));
    dbg.request(4, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_debugger_never_gets_the_rest_of_a_packet_meant_for_the_last() {
    // A VM that answers neither DBGD nor the clean-up's AllThreads (its replies would land
    // inside the packet it is sending): the proxy lets the next debugger in after its
    // clean-up timeout, while the VM is still halfway through the large packet.
    let cfg = late_vm().with_reply_delay(SET_VM, VM_ALL_THREADS, Duration::from_secs(3600));
    let vm = FakeVm::start(FakeVmConfig { dbgd_reply: DbgdReply::NoReply, ..cfg }).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    // The proxy reconnected once already: VirtualMachine.Version said Android.
    let connections = vm.connections_accepted();
    let mut first = RawClient::connect(port).await.unwrap();
    first.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    let bytes = big_event(1 << 20).encode();
    vm.send_raw(bytes[..100_000].to_vec()).unwrap();
    // A command the VM receives after the event's head: the proxy has routed that head.
    first.send_command(2, SET_VM, VM_CAPABILITIES, &[]).await.unwrap();
    vm.wait_for(|v| !v.received_commands(SET_VM, VM_CAPABILITIES).is_empty(), SOON).await.unwrap();
    drop(first);
    vm.wait_for(|v| v.dbgd_count() == 1, SOON).await.unwrap();
    let mut second = RawClient::connect_no_handshake(port).await.unwrap();
    second.handshake(SOON).await.unwrap();
    vm.send_raw(bytes[100_000..].to_vec()).unwrap();
    // Had the rest of the event reached it, this reply would be lost in it.
    let r = second.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let others = second.take_other_packets();
    assert!(others.is_empty(), "the second debugger got {} other packets", others.len());
    assert_eq!(vm.connections_accepted(), connections, "the VM connection was kept");
    proxy.stop().await;
}
