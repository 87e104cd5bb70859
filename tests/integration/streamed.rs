//! Large packets the proxy passes on in pieces (streamed): they arrive whole, nothing the
//! proxy says itself lands inside one, and a debugger that leaves halfway takes the rest
//! of it with it. The large packets are what VMs really send in pieces: DDM heap data (to
//! debuggers that speak DDM), and large events the proxy must read whole to split.

use std::time::Duration;

use jdwpmux::settings::DdmMode;

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::{DbgdReply, FakeVm, FakeVmConfig, Packet, RawClient};

/// VirtualMachine.Capabilities: a command the fake VM is told to answer an hour late, so
/// the test can see it arrive at the VM (the commands before it were handled) while the VM
/// sends nothing of its own in between.
const VM_CAPABILITIES: u8 = 12;
/// A vendor command set: the proxy answers NOT_IMPLEMENTED itself.
const VENDOR_SET: u8 = 0x90;

/// A DDM packet from the VM of `len` chunk bytes (a heap dump, HPDS): far above the size the
/// proxy streams from.
fn big_ddm(len: u32) -> Packet {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    Packet::ddm(0x8000_0005, &[crate::support::Chunk::new(b"HPDS", data)])
}

/// Makes `dbg` a DDM-speaking debugger (it sends FEAT), so DDM packets from the VM reach it.
async fn speak_ddm(dbg: &mut RawClient, id: u32) {
    let feat = crate::support::wire::encode_chunks(&[crate::support::Chunk::new(b"FEAT", Vec::new())]);
    let r = dbg.request(id, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
}

/// A CLASS_PREPARE event (request 0, so every debugger gets it) with a signature of `len`
/// bytes: larger than the proxy streams from, smaller than what it reads whole.
fn big_event(len: usize) -> Packet {
    let mut data = vec![SUSPEND_NONE, 0, 0, 0, 1, KIND_CLASS_PREPARE, 0, 0, 0, 0];
    data.extend_from_slice(&0x1001u64.to_be_bytes());
    data.push(1);
    data.extend_from_slice(&0x77u64.to_be_bytes());
    data.extend_from_slice(&(len as u32).to_be_bytes());
    data.extend((0..len).map(|i| b'a' + (i % 26) as u8));
    data.extend_from_slice(&7u32.to_be_bytes());
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
    speak_ddm(&mut dbg, 1).await;
    dbg.set_max_packet_len(64 << 20);
    let big = big_ddm(20 << 20);
    let data = big.data.clone();
    vm.send_packet(&big).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(p.command_of(), Some((DDM_SET, DDM_CMD)));
    assert_eq!(p.data.len(), data.len());
    assert!(p.data == data, "body corrupted in transit");
    // An event above the streaming size is read whole and delivered whole.
    let event = big_event(300_000);
    vm.send_packet(&event).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(p.command_of(), Some((SET_EVENT, EVENT_COMPOSITE)));
    assert!(p.data == event.data, "event corrupted in transit");
    dbg.request(2, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_from_the_proxy_waits_for_the_end_of_a_streamed_packet() {
    let vm = FakeVm::start(late_vm()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    speak_ddm(&mut dbg, 1).await;
    dbg.set_max_packet_len(8 << 20);
    let big = big_ddm(1 << 20);
    let bytes = big.encode();
    // The VM sends the head and the first 100 KB of the packet, then pauses.
    vm.send_raw(bytes[..100_000].to_vec()).unwrap();
    dbg.wait_for_bytes(64 * 1024, SOON).await.unwrap();
    // Meanwhile the debugger sends a command the proxy answers itself.
    dbg.send_command(2, VENDOR_SET, 1, &[]).await.unwrap();
    dbg.send_command(3, SET_VM, VM_CAPABILITIES, &[]).await.unwrap();
    vm.wait_for(|v| !v.received_commands(SET_VM, VM_CAPABILITIES).is_empty(), SOON).await.unwrap();
    assert!(vm.received().iter().all(|p| p.command_of() != Some((VENDOR_SET, 1))), "the vendor command reached the VM");
    vm.send_raw(bytes[100_000..].to_vec()).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(p.command_of(), Some((DDM_SET, DDM_CMD)), "the DDM packet comes first, whole: got id {} len {}", p.id, p.data.len());
    assert!(p.data == big.data, "the packet's body was corrupted");
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
    // A command the VM answers an hour late; the test answers it instead, with a reply far
    // above the streaming size, and stops halfway.
    first.send_command(2, SET_VM, VM_CAPABILITIES, &[]).await.unwrap();
    let asked = vm.wait_for_packet(|p| p.command_of() == Some((SET_VM, VM_CAPABILITIES)), SOON).await.unwrap();
    let reply = Packet::reply(asked.id, ERR_NONE, (0..1u32 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let bytes = reply.encode();
    vm.send_raw(bytes[..100_000].to_vec()).unwrap();
    first.wait_for_bytes(64 * 1024, SOON).await.unwrap();
    drop(first);
    vm.wait_for(|v| v.dbgd_count() == 1, SOON).await.unwrap();
    let mut second = RawClient::connect_no_handshake(port).await.unwrap();
    second.handshake(SOON).await.unwrap();
    vm.send_raw(bytes[100_000..].to_vec()).unwrap();
    // Had the rest of the reply reached it, this reply would be lost in it.
    let r = second.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let others = second.take_other_packets();
    assert!(others.is_empty(), "the second debugger got {} other packets", others.len());
    assert_eq!(vm.connections_accepted(), connections, "the VM connection was kept");
    proxy.stop().await;
}

/// A large command from a debugger: VirtualMachine.Version with a long body, which the VM
/// ignores and answers as usual.
fn big_command(id: u32, len: usize) -> Vec<u8> {
    Packet::command(id, SET_VM, VM_VERSION, (0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>()).encode()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_debuggers_command_waits_for_the_end_of_a_streamed_one() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let mut a = RawClient::connect(port).await.unwrap();
    let mut b = RawClient::connect(port).await.unwrap();
    let bytes = big_command(1, 1 << 20);
    a.send_raw(&bytes[..200_000]).await.unwrap();
    // B's command and a DDM request of the proxy's own come while A's is half sent: they
    // must not land inside it.
    b.send_command(1, SET_VM, VM_ID_SIZES, &[]).await.unwrap();
    let handle = proxy.handle(0).await;
    let feat = tokio::spawn(async move {
        use jdwpmux::ddm::{Chunk, ChunkType};
        let chunks = jdwpmux::session::Completion::Chunks;
        handle.ddm(vec![Chunk::FeatRequest], vec![ChunkType::FEAT], chunks, SOON).await.map(|a| a.state.features)
    });
    // Sent (in the proxy's table: A's command and the FEAT) before A's command goes on.
    crate::harness::soon("FEAT sent", async {
        while proxy.tables(0).await.outstanding < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    a.send_raw(&bytes[200_000..]).await.unwrap();
    assert!(feat.await.unwrap().unwrap().is_some(), "the proxy's FEAT was answered");
    assert_eq!(a.wait_reply(1, SOON).await.unwrap().error_code(), Some(ERR_NONE));
    assert_eq!(b.wait_reply(1, SOON).await.unwrap().error_code(), Some(ERR_NONE));
    let got = vm.received_commands(SET_VM, VM_VERSION);
    assert!(got.iter().any(|p| p.data.len() == 1 << 20), "A's command arrived whole");
    assert!(vm.protocol_errors().is_empty(), "{:?}", vm.protocol_errors());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_leaving_halfway_through_a_command_resets_the_vm_connection() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let mut a = RawClient::connect(port).await.unwrap();
    let mut b = RawClient::connect(port).await.unwrap();
    b.ok(1, SET_VM, VM_VERSION, &[]).await.unwrap();
    a.send_raw(&big_command(1, 1 << 20)[..200_000]).await.unwrap();
    drop(a);
    // The VM holds half a command: the proxy starts a fresh connection rather than feed it
    // the next packet as the rest. B, whose VM connection that was, is closed.
    b.expect_closed(SOON).await.unwrap();
    wait_until("reconnected", || vm.connections_accepted() >= 2 && vm.is_connected()).await.unwrap();
    let mut next = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    next.ok(1, SET_VM, VM_VERSION, &[]).await.unwrap();
    proxy.stop().await;
}
