//! Several debuggers on one VM, against the in-repo DDM-aware fake VM (whose suspend counts,
//! event requests and pins follow JDWP): each gets its own events, one's Resume never
//! releases another's stop, and one that leaves takes only its own with it.

use std::time::Duration;

use jdwpmux::settings::{DdmMode, Settings};

use crate::harness::{soon, wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::wire::{encode_chunks, read_events};
use crate::support::{Chunk, FakeVm, FakeVmConfig, Packet, RawClient};

const MAIN: u64 = 0x1001;
const OTHER: u64 = 0x1002;

/// Two debuggers, A and B, attached to a fresh fake VM through the proxy.
async fn two_debuggers(cfg: FakeVmConfig) -> (FakeVm, Proxy, RawClient, RawClient) {
    let vm = FakeVm::start(cfg).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let a = RawClient::connect(port).await.unwrap();
    let b = RawClient::connect(port).await.unwrap();
    (vm, proxy, a, b)
}

/// EventRequest.Set of `kind` with `policy` and no modifiers; returns the request id.
async fn set_request(dbg: &mut RawClient, id: u32, kind: u8, policy: u8) -> u32 {
    let r = dbg.ok(id, SET_EVENT_REQUEST, ER_SET, &[kind, policy, 0, 0, 0, 0]).await.unwrap();
    u32::from_be_bytes(r.data[..4].try_into().unwrap())
}

/// The (kind, request) pairs of an event composite, and its policy.
fn events_of(p: &Packet) -> (u8, Vec<(u8, u32)>) {
    let (policy, evs) = read_events(&p.data).expect("a well-formed composite");
    (policy, evs.into_iter().map(|(k, r, _)| (k, r)).collect())
}

/// Events `dbg` received up to now: a round trip flushes everything the VM sent before it.
async fn events_received(dbg: &mut RawClient, id: u32) -> Vec<Packet> {
    dbg.ok(id, SET_VM, VM_VERSION, &[]).await.unwrap();
    dbg.take_other_packets().into_iter().filter(Packet::is_event).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_debugger_gets_only_its_own_events_and_request_0_goes_to_all() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    let rb = set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    assert_ne!(ra, rb);

    // One composite holding both debuggers' events: each gets a part with only its own.
    vm.send_events(SUSPEND_NONE, &[(KIND_BREAKPOINT, rb, MAIN), (KIND_BREAKPOINT, ra, MAIN)]).unwrap();
    assert_eq!(events_of(&a.next_event(SOON).await.unwrap()), (SUSPEND_NONE, vec![(KIND_BREAKPOINT, ra)]));
    assert_eq!(events_of(&b.next_event(SOON).await.unwrap()), (SUSPEND_NONE, vec![(KIND_BREAKPOINT, rb)]));

    // A's event alone: A gets the VM's packet, B nothing.
    let id = vm.send_event_composite(SUSPEND_NONE, KIND_BREAKPOINT, ra, MAIN).unwrap();
    assert_eq!(a.next_event(SOON).await.unwrap().id, id);
    assert!(events_received(&mut b, 2).await.is_empty(), "B got A's event");

    // Request 0 (VM_START, VM_DEATH) reaches everybody.
    vm.send_event_composite(SUSPEND_NONE, KIND_VM_START, 0, MAIN).unwrap();
    for dbg in [&mut a, &mut b] {
        assert_eq!(events_of(&dbg.next_event(SOON).await.unwrap()).1, vec![(KIND_VM_START, 0)]);
    }

    // `list` shows both, with their peers and their one request each.
    let peers = [a.local_addr().unwrap(), b.local_addr().unwrap()];
    let info = &proxy.list()[0];
    let listed: Vec<_> = info.status.debuggers.iter().map(|d| (d.peer, d.event_requests)).collect();
    assert_eq!(listed, vec![(peers[0], 1), (peers[1], 1)]);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_debuggers_resume_never_releases_anothers_breakpoint_stop() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, ra, MAIN).unwrap();
    a.next_event(SOON).await.unwrap();
    assert_eq!(vm.suspend_count(), 1);

    // B holds nothing: its resumes are answered by the proxy and change nothing.
    b.ok(1, SET_VM, VM_RESUME, &[]).await.unwrap();
    b.ok(2, SET_THREAD, THREAD_RESUME, &MAIN.to_be_bytes()).await.unwrap();
    a.ok(2, SET_VM, VM_VERSION, &[]).await.unwrap();
    assert_eq!(vm.suspend_count(), 1, "B's resume released A's stop");
    assert_eq!(vm.thread_suspend_count(MAIN), Some(1));
    assert!(vm.received_commands(SET_VM, VM_RESUME).is_empty() && vm.received_commands(SET_THREAD, THREAD_RESUME).is_empty());
    let listed = &proxy.list()[0].status.debuggers;
    assert_eq!((listed[0].suspensions, listed[1].suspensions), (1, 0));

    // A's own resume reaches the VM.
    a.ok(3, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert!(!vm.any_suspended());

    // B suspends a thread; A's VM.Resume must not take B's count from it.
    b.ok(3, SET_THREAD, THREAD_SUSPEND, &OTHER.to_be_bytes()).await.unwrap();
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, ra, MAIN).unwrap();
    a.next_event(SOON).await.unwrap();
    assert_eq!(vm.thread_suspend_count(OTHER), Some(2));
    a.ok(4, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert_eq!((vm.thread_suspend_count(MAIN), vm.thread_suspend_count(OTHER)), (Some(0), Some(1)));
    b.ok(4, SET_THREAD, THREAD_RESUME, &OTHER.to_be_bytes()).await.unwrap();
    assert!(!vm.any_suspended());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_both_were_given_is_released_by_the_last_of_them() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    let rb = set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    // Two breakpoints on the same line: one composite, one suspension.
    vm.send_events(SUSPEND_ALL, &[(KIND_BREAKPOINT, ra, MAIN), (KIND_BREAKPOINT, rb, MAIN)]).unwrap();
    assert_eq!(events_of(&a.next_event(SOON).await.unwrap()), (SUSPEND_ALL, vec![(KIND_BREAKPOINT, ra)]));
    assert_eq!(events_of(&b.next_event(SOON).await.unwrap()), (SUSPEND_ALL, vec![(KIND_BREAKPOINT, rb)]));
    a.ok(2, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert_eq!(vm.suspend_count(), 1, "the first resume is answered by the proxy");
    b.ok(2, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert!(!vm.any_suspended(), "the last one reaches the VM");
    assert_eq!(vm.received_commands(SET_VM, VM_RESUME).len(), 1);
    proxy.stop().await;
}

/// A VM said to be Android (`--vm android:HOST:PORT`) is identified with HELO alone, so its
/// id sizes are unknown when the debuggers attach, and these two never ask them. The proxy
/// asks them itself at the first EventRequest.Set, and a composite with both debuggers'
/// events is split (it used to go whole to the owner of its first event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_split_when_only_the_proxy_asks_the_vms_id_sizes() {
    // The IDSizes reply comes late: the composite below waits for it.
    let cfg = FakeVmConfig::default().with_reply_delay(SET_VM, VM_ID_SIZES, Duration::from_millis(400));
    let vm = FakeVm::start(cfg).await;
    let mut settings = Proxy::settings(&[vm.addr()], DdmMode::Auto);
    settings.android_vms = vec![vm.addr()];
    let proxy = Proxy::with(settings).await;
    let port = proxy.vm_port(0).await;
    let mut a = RawClient::connect(port).await.unwrap();
    let mut b = RawClient::connect(port).await.unwrap();
    assert!(vm.received_commands(SET_VM, VM_ID_SIZES).is_empty(), "HELO alone before a debugger");
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    let rb = set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    assert_eq!(vm.received_commands(SET_VM, VM_ID_SIZES).len(), 1, "asked at the first Set, once");
    vm.send_events(SUSPEND_ALL, &[(KIND_BREAKPOINT, ra, MAIN), (KIND_BREAKPOINT, rb, MAIN)]).unwrap();
    assert_eq!(events_of(&a.next_event(SOON).await.unwrap()), (SUSPEND_ALL, vec![(KIND_BREAKPOINT, ra)]));
    assert_eq!(events_of(&b.next_event(SOON).await.unwrap()), (SUSPEND_ALL, vec![(KIND_BREAKPOINT, rb)]));
    a.ok(2, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert_eq!(vm.suspend_count(), 1, "B still holds the stop");
    b.ok(2, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert!(!vm.any_suspended());
    proxy.stop().await;
}

/// VirtualMachine.Version says Android before the IDSizes reply is in: the proxy reads that
/// reply before it reconnects, so the sizes are known without asking again (they used to be
/// lost when the reply came in a later read, and every composite then went whole to the
/// owner of its first event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_android_reconnect_waits_for_the_id_sizes() {
    let cfg = FakeVmConfig::default().with_reply_delay(SET_VM, VM_ID_SIZES, Duration::from_millis(300));
    let (vm, proxy, mut a, mut b) = two_debuggers(cfg).await;
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    let rb = set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    assert_eq!(vm.received_commands(SET_VM, VM_ID_SIZES).len(), 1, "asked once, at identification");
    vm.send_events(SUSPEND_NONE, &[(KIND_BREAKPOINT, ra, MAIN), (KIND_BREAKPOINT, rb, MAIN)]).unwrap();
    assert_eq!(events_of(&a.next_event(SOON).await.unwrap()).1, vec![(KIND_BREAKPOINT, ra)]);
    assert_eq!(events_of(&b.next_event(SOON).await.unwrap()).1, vec![(KIND_BREAKPOINT, rb)]);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_and_clear_all_breakpoints_touch_only_the_callers_requests() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let a1 = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    let a2 = set_request(&mut a, 2, KIND_BREAKPOINT, SUSPEND_NONE).await;
    let b1 = set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_NONE).await;
    let b2 = set_request(&mut b, 2, KIND_THREAD_START, SUSPEND_NONE).await;
    let mut clear = vec![KIND_BREAKPOINT];
    clear.extend_from_slice(&a1.to_be_bytes());
    b.ok(3, SET_EVENT_REQUEST, ER_CLEAR, &clear).await.unwrap();
    b.ok(4, SET_EVENT_REQUEST, ER_CLEAR_ALL_BREAKPOINTS, &[]).await.unwrap();
    wait_until("B's breakpoint cleared", || vm.event_requests().iter().all(|r| r.id != b1)).await.unwrap();
    let mut left: Vec<u32> = vm.event_requests().iter().map(|r| r.id).collect();
    left.sort_unstable();
    assert_eq!(left, vec![a1, a2, b2], "only B's breakpoint is gone");
    assert!(vm.received_commands(SET_EVENT_REQUEST, ER_CLEAR_ALL_BREAKPOINTS).is_empty());
    // A's breakpoints still reach A.
    vm.send_event_composite(SUSPEND_NONE, KIND_BREAKPOINT, a1, MAIN).unwrap();
    assert_eq!(events_of(&a.next_event(SOON).await.unwrap()).1, vec![(KIND_BREAKPOINT, a1)]);
    // Alone on the VM, A's ClearAllBreakpoints goes to the VM as it is.
    drop(b);
    wait_until("B gone", || proxy.list()[0].status.debuggers.len() == 1).await.unwrap();
    a.ok(3, SET_EVENT_REQUEST, ER_CLEAR_ALL_BREAKPOINTS, &[]).await.unwrap();
    assert_eq!(vm.received_commands(SET_EVENT_REQUEST, ER_CLEAR_ALL_BREAKPOINTS).len(), 1);
    proxy.stop().await;
}

/// How a debugger leaves in `leaving_takes_only_its_own`.
#[derive(Clone, Copy, Debug)]
enum Leave {
    Close,
    Reset,
    Dispose,
}

async fn leaving_takes_only_its_own(how: Leave) {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    // The proxy reconnected once before: VirtualMachine.Version said Android.
    let connections = vm.connections_accepted();
    // A stops at its breakpoint and suspends a thread; B sets requests, suspends the VM and
    // a thread, and pins an object A pins too.
    let ra = set_request(&mut a, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, ra, MAIN).unwrap();
    a.next_event(SOON).await.unwrap();
    a.ok(2, SET_THREAD, THREAD_SUSPEND, &OTHER.to_be_bytes()).await.unwrap();
    a.ok(3, SET_OBJECT, OBJECT_DISABLE_COLLECTION, &0x77u64.to_be_bytes()).await.unwrap();
    set_request(&mut b, 1, KIND_BREAKPOINT, SUSPEND_ALL).await;
    set_request(&mut b, 2, KIND_THREAD_START, SUSPEND_NONE).await;
    b.ok(3, SET_VM, VM_SUSPEND, &[]).await.unwrap();
    b.ok(4, SET_THREAD, THREAD_SUSPEND, &MAIN.to_be_bytes()).await.unwrap();
    b.ok(5, SET_OBJECT, OBJECT_DISABLE_COLLECTION, &0x77u64.to_be_bytes()).await.unwrap();
    b.ok(6, SET_OBJECT, OBJECT_DISABLE_COLLECTION, &0x78u64.to_be_bytes()).await.unwrap();
    assert_eq!(vm.event_requests().len(), 3);
    assert_eq!((vm.thread_suspend_count(MAIN), vm.thread_suspend_count(OTHER)), (Some(3), Some(3)));
    assert_eq!(vm.pins().len(), 2);
    assert_eq!(vm.received_commands(SET_OBJECT, OBJECT_DISABLE_COLLECTION).len(), 2, "one DisableCollection per object");

    match how {
        Leave::Close => drop(b),
        Leave::Reset => b.reset().unwrap(),
        Leave::Dispose => {
            b.ok(7, SET_VM, VM_DISPOSE, &[]).await.unwrap();
            b.expect_closed(SOON).await.unwrap();
        }
    }
    wait_until("B's requests cleared", || vm.event_requests().len() == 1).await.unwrap();
    wait_until("B's suspensions released", || vm.thread_suspend_count(MAIN) == Some(1)).await.unwrap();
    wait_until("B's pin given back", || vm.pins().len() == 1).await.unwrap();
    assert_eq!(vm.event_requests()[0].id, ra, "A's request stays");
    assert_eq!((vm.suspend_count(), vm.thread_suspend_count(OTHER)), (1, Some(2)), "A's stop and suspend stay");
    assert!(vm.pins().contains_key(&0x77), "A's pin stays");
    assert_eq!(vm.dbgd_count(), 0, "no DBGD while a debugger remains");
    assert!(vm.received_commands(SET_VM, VM_DISPOSE).is_empty());
    // A carries on, and its breakpoint still stops it.
    a.ok(4, SET_VM, VM_RESUME, &[]).await.unwrap();
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, ra, MAIN).unwrap();
    a.next_event(SOON).await.unwrap();
    assert_eq!(vm.suspend_count(), 1);

    // The last one leaves: DBGD, and the VM is left clean on the same connection.
    drop(a);
    wait_until("DBGD", || vm.dbgd_count() == 1).await.unwrap();
    wait_until("clean VM", || vm.event_requests().is_empty() && !vm.any_suspended() && vm.pins().is_empty()).await.unwrap();
    assert_eq!(vm.connections_accepted(), connections, "the connection was kept");
    let tables = proxy.tables(0).await;
    assert_eq!((tables.debuggers, tables.event_requests, tables.holds, tables.pins), (0, 0, 0, 0), "{how:?}: {tables:?}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_closes_takes_only_its_own_with_it() {
    leaving_takes_only_its_own(Leave::Close).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_resets_takes_only_its_own_with_it() {
    leaving_takes_only_its_own(Leave::Reset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_disposes_takes_only_its_own_with_it() {
    leaving_takes_only_its_own(Leave::Dispose).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_beats_its_set_reply_waits_for_it() {
    let cfg = FakeVmConfig::default().with_reply_delay(SET_EVENT_REQUEST, ER_SET, Duration::from_millis(800));
    let (vm, proxy, mut a, mut b) = two_debuggers(cfg).await;
    a.send_command(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0]).await.unwrap();
    vm.wait_for(|v| !v.event_requests().is_empty(), SOON).await.unwrap();
    let rid = vm.event_requests()[0].id;
    // The breakpoint is hit before the VM's reply to the Set is out.
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, rid, MAIN).unwrap();
    let first = a.read_packet(SOON).await.unwrap();
    assert!(first.is_reply() && first.id == 1, "the Set reply comes first, then the event");
    assert_eq!(events_of(&a.read_packet(SOON).await.unwrap()).1, vec![(KIND_BREAKPOINT, rid)]);
    assert!(events_received(&mut b, 1).await.is_empty());
    // The stop is A's: B's resume does not release it.
    b.ok(2, SET_VM, VM_RESUME, &[]).await.unwrap();
    assert_eq!(vm.suspend_count(), 1);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_events_keeps_only_that_debuggers_events_back() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let ra = set_request(&mut a, 1, KIND_THREAD_START, SUSPEND_NONE).await;
    let rb = set_request(&mut b, 1, KIND_THREAD_START, SUSPEND_NONE).await;
    a.ok(2, SET_VM, VM_HOLD_EVENTS, &[]).await.unwrap();
    for _ in 0..3 {
        vm.send_events(SUSPEND_NONE, &[(KIND_THREAD_START, ra, MAIN), (KIND_THREAD_START, rb, MAIN)]).unwrap();
    }
    for _ in 0..3 {
        b.next_event(SOON).await.unwrap();
    }
    assert!(events_received(&mut a, 3).await.is_empty(), "A holds its events");
    a.ok(4, SET_VM, VM_RELEASE_EVENTS, &[]).await.unwrap();
    for _ in 0..3 {
        assert_eq!(events_of(&a.next_event(SOON).await.unwrap()).1, vec![(KIND_THREAD_START, ra)]);
    }
    assert!(vm.received_commands(SET_VM, VM_HOLD_EVENTS).is_empty() && vm.received_commands(SET_VM, VM_RELEASE_EVENTS).is_empty());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_ddm_speaking_debugger_gets_its_own_replies_and_the_vms_pushes() {
    let (vm, proxy, mut a, mut b) = two_debuggers(FakeVmConfig::default()).await;
    let feat = encode_chunks(&[Chunk::new(b"FEAT", Vec::new())]);
    // Both use the same id: each gets exactly one reply, its own.
    for dbg in [&mut a, &mut b] {
        let r = dbg.request(7, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
        assert!(r.chunks().unwrap().iter().any(|c| c.is(b"FEAT")));
    }
    vm.send_ddm(&[(*b"THCR", crate::support::ddm::thcr_payload(77, "pushed"))]).unwrap();
    for dbg in [&mut a, &mut b] {
        let p = soon("push", async {
            loop {
                let p = dbg.read_packet(SOON).await.unwrap();
                if p.is_ddm() && !p.is_reply() {
                    return p;
                }
            }
        })
        .await;
        assert!(p.chunks().unwrap()[0].is(b"THCR"));
    }
    // The proxy's own DDM requests work beside them.
    let features = proxy.ddm_features(0).await;
    assert!(features.iter().any(|f| f == "hprof-heap-dump"), "{features:?}");
    for dbg in [&mut a, &mut b] {
        assert!(dbg.take_other_packets().iter().all(|p| !(p.is_reply() && p.is_ddm())), "a stray DDM reply");
    }
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_debuggers_a_newcomer_is_refused_and_the_others_go_on() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::with(Settings { max_debuggers: 3, ..Proxy::settings(&[vm.addr()], DdmMode::Auto) }).await;
    let port = proxy.vm_port(0).await;
    let mut attached = Vec::new();
    for _ in 0..3 {
        attached.push(RawClient::connect(port).await.unwrap());
    }
    let mut fourth = RawClient::connect_no_handshake(proxy.current_addr()).await.unwrap();
    fourth.send_raw(crate::support::wire::HANDSHAKE).await.unwrap();
    fourth.expect_closed(SOON).await.unwrap();
    for (i, dbg) in attached.iter_mut().enumerate() {
        dbg.ok(1 + i as u32, SET_VM, VM_VERSION, &[]).await.unwrap();
    }
    assert_eq!(proxy.list()[0].status.debuggers.len(), 3);
    // One leaves: there is room again.
    drop(attached.pop());
    wait_until("room", || proxy.list()[0].status.debuggers.len() == 2).await.unwrap();
    let mut again = RawClient::connect(port).await.unwrap();
    again.ok(1, SET_VM, VM_VERSION, &[]).await.unwrap();
    proxy.stop().await;
}
