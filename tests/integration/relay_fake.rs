//! The relay against the in-repo DDM-aware fake VM: DDM detection, id rewriting under load,
//! DDM routing, held events, and commands the proxy must keep from the VM.

use std::time::Duration;

use jdwpmux::settings::{DdmMode, Settings};

use crate::harness::{soon, wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::{FakeVm, FakeVmConfig, Packet, RawClient};

fn has_ddm(vm: &FakeVm) -> bool {
    vm.received().iter().any(|p| p.is_ddm())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helo_marks_a_ddm_vm_and_reads_pid_and_app() {
    let vm = FakeVm::start(FakeVmConfig::default().with_modern_helo(6)).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(true));
    assert_eq!(info.status.pid, Some(4242));
    assert_eq!(info.status.app.as_deref(), Some("com.example.fake"));
    assert_eq!(vm.helo_count(), 1);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_that_is_not_android_never_sees_a_ddm_packet() {
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(false));
    // A debugger's own DDM command is answered by the proxy, not passed on.
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    let r = dbg.request(7, DDM_SET, DDM_CMD, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NOT_IMPLEMENTED));
    let r = dbg.request(8, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    assert!(!has_ddm(&vm), "a DDM packet reached a non-DDM VM");
    assert!(vm.forbidden().is_empty());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddm_always_probes_and_a_jdwp_error_means_not_ddm() {
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Always).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(false));
    assert!(has_ddm(&vm), "--ddm always sends HELO");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddm_never_leaves_even_an_android_vm_alone() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Never).await;
    assert_eq!(proxy.ready(0).await.status.ddm, Some(false));
    assert!(!has_ddm(&vm));
    proxy.stop().await;
}

/// What a reply to each command must look like, so a misrouted reply is caught.
fn check_reply(cmd: u8, reply: &Packet) {
    assert_eq!(reply.error_code(), Some(ERR_NONE), "cmd {cmd} id {}", reply.id);
    match cmd {
        VM_VERSION => assert!(String::from_utf8_lossy(&reply.data).contains("Dalvik"), "id {}", reply.id),
        VM_ID_SIZES => assert_eq!(reply.data.len(), 20, "id {}", reply.id),
        VM_ALL_THREADS => assert_eq!(&reply.data[..4], &[0, 0, 0, 3], "id {}", reply.id),
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_ids_and_a_thousand_pipelined_requests_come_back_to_their_own_ids() {
    // Version replies are delayed so replies come back out of order.
    let cfg = FakeVmConfig::default().with_reply_delay(SET_VM, VM_VERSION, Duration::from_millis(30));
    let vm = FakeVm::start(cfg).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    // The proxy's own ids also start at 1: the debugger's 1, 2, 3 collide with them.
    let cmds = [VM_VERSION, VM_ID_SIZES, VM_ALL_THREADS];
    for id in 1..=1000u32 {
        dbg.send_command(id, SET_VM, cmds[id as usize % 3], &[]).await.unwrap();
    }
    let mut seen = std::collections::HashSet::new();
    soon("1000 replies", async {
        while seen.len() < 1000 {
            let p = dbg.read_packet(SOON).await.unwrap();
            assert!(p.is_reply(), "unexpected command {:?}", p.command_of());
            assert!((1..=1000).contains(&p.id), "foreign id {}", p.id);
            assert!(seen.insert(p.id), "id {} answered twice", p.id);
            check_reply(cmds[p.id as usize % 3], &p);
        }
    })
    .await;
    // The VM saw unique ids throughout each connection.
    let ids: Vec<(u64, u32)> = vm.received_by_connection().iter().filter(|(_, p)| !p.is_reply()).map(|(c, p)| (*c, p.id)).collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "the proxy reused an outstanding id");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddm_pushes_never_reach_a_plain_debugger_but_reach_a_ddm_speaking_one() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;

    let mut plain = RawClient::connect(port).await.unwrap();
    plain.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    vm.send_ddm(&[(*b"THCR", crate::support::ddm::thcr_payload(77, "pushed"))]).unwrap();
    // The push went out before this reply on the same connection, so it has been routed.
    plain.request(2, SET_VM, VM_ID_SIZES, &[], SOON).await.unwrap();
    assert!(plain.take_other_packets().iter().all(|p| !p.is_ddm()), "a plain debugger got DDM");
    drop(plain);

    let mut ddms = soon("attach again", async {
        loop {
            if let Ok(c) = RawClient::connect(port).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let feat = crate::support::wire::encode_chunks(&[crate::support::Chunk::new(b"FEAT", Vec::new())]);
    let r = ddms.request(0x4000_0001, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
    assert_eq!(r.id, 0x4000_0001);
    assert!(r.chunks().unwrap().iter().any(|c| c.is(b"FEAT")), "FEAT reply relayed");
    vm.send_ddm(&[(*b"THCR", crate::support::ddm::thcr_payload(78, "copied"))]).unwrap();
    let p = ddms.read_packet(SOON).await.unwrap();
    assert!(p.is_ddm() && p.chunks().unwrap()[0].is(b"THCR"), "a DDM-speaking debugger gets pushes");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_sent_before_any_debugger_is_held_and_delivered_first() {
    let cfg = FakeVmConfig { startup_event: Some(SUSPEND_ALL), ..FakeVmConfig::hotspot_like() };
    let vm = FakeVm::start(cfg).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    wait_until("VM_START sent", || vm.suspend_count() > 0 || vm.any_suspended()).await.unwrap();
    let mut dbg = RawClient::connect(port).await.unwrap();
    let first = dbg.read_packet(SOON).await.unwrap();
    assert_eq!(first.command_of(), Some((SET_EVENT, EVENT_COMPOSITE)));
    assert_eq!(first.data[5], KIND_VM_START, "VM_START is delivered");
    let r = dbg.request(1, SET_VM, VM_RESUME, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_a_vm_cannot_take_are_answered_by_the_proxy() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    for (i, (set, cmd)) in [(0x80u8, 1u8), (0xFE, 3), (1, 0), (1, 0x80), (SET_THREAD, 0xFF)].into_iter().enumerate() {
        let r = dbg.request(i as u32 + 1, set, cmd, &[], SOON).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NOT_IMPLEMENTED), "set {set} cmd {cmd}");
    }
    // A reply packet from the debugger is dropped; the connection goes on.
    dbg.send_packet(&Packet::reply(99, 0, Vec::new())).await.unwrap();
    let r = dbg.request(50, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    assert!(vm.forbidden().is_empty(), "forbidden packets reached the VM: {:?}", vm.forbidden());
    assert!(vm.received().iter().all(|p| !p.is_reply()), "a debugger reply reached the VM");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_max_debuggers_1_a_second_debugger_and_an_empty_current_port_are_refused_after_the_handshake() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::with(Settings { max_debuggers: 1, ..Proxy::settings(&[vm.addr()], DdmMode::Auto) }).await;
    let port = proxy.vm_port(0).await;
    let mut first = RawClient::connect(port).await.unwrap();
    first.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    let mut second = RawClient::connect_no_handshake(port).await.unwrap();
    second.send_raw(crate::support::wire::HANDSHAKE).await.unwrap();
    second.expect_closed(SOON).await.unwrap();
    // The first one is untouched.
    first.request(2, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    proxy.stop().await;

    let empty = Proxy::start(&[], DdmMode::Auto).await;
    let mut c = RawClient::connect_no_handshake(empty.current_addr()).await.unwrap();
    c.send_raw(crate::support::wire::HANDSHAKE).await.unwrap();
    c.expect_closed(SOON).await.unwrap();
    empty.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_held_past_the_bound_are_dropped_with_a_warning() {
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let sent = jdwpmux::session::MAX_HELD_EVENTS + 8;
    // Request 0: events nobody asked for (VM_START), which wait for the next debugger.
    for _ in 0..sent {
        vm.send_event_composite(SUSPEND_NONE, KIND_VM_START, 0, 0x1001).unwrap();
    }
    // Every one is routed (held or dropped) before the debugger comes.
    let handle = proxy.handle(0).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let t = handle.tables().await.expect("session running");
        if t.held_events + t.held_dropped as usize == sent {
            assert_eq!(t.held_events, jdwpmux::session::MAX_HELD_EVENTS);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "events not all routed: {t:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut dbg = RawClient::connect(port).await.unwrap();
    let mut events = 0;
    let r = dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    for p in dbg.take_other_packets() {
        if p.command_of() == Some((SET_EVENT, EVENT_COMPOSITE)) {
            events += 1;
        }
    }
    assert_eq!(events, jdwpmux::session::MAX_HELD_EVENTS, "held up to the bound, no more");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apnm_before_the_handshake_echo_is_kept() {
    let cfg = FakeVmConfig { early_apnm: true, app_name: "com.example.early".into(), ..Default::default() };
    let vm = FakeVm::start(cfg).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(true));
    assert_eq!(info.status.app.as_deref(), Some("com.example.early"));
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    assert_eq!(dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap().error_code(), Some(ERR_NONE));
    proxy.stop().await;
}
