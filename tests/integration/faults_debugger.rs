//! Faults of debuggers under the real daemon, against a real HotSpot VM: one that reads
//! nothing while the VM streams 200 MiB at it, and ones that reset their connection halfway
//! through a command. The VM's other debuggers and the other VMs carry on, nothing of the
//! half commands reaches a VM, and the daemon's memory stays bounded.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::Served;
use crate::support::consts::*;
use crate::support::faults::{ready_port, start_big, FAULT_SLACK, SETTLE};
use crate::support::jvm_wire::{
    array_get_values, array_region_head, breakpoint_request, JvmDebugger, ARRAY_GET_VALUES, BIG_LEN, SET_ARRAY,
};
use crate::support::process::{usage, wait_back_to, PeakSampler};
use crate::support::wire::{BufMut, Packet};
use crate::support::{java_available, FakeVm, FakeVmConfig, RawClient};

/// GetValues of the whole 16 MiB array the stalled debugger sends without reading: 13 of
/// them, 208 MiB of replies.
const PIPELINED_READS: u32 = 13;
/// The stall timeout the daemon runs with here (`--stall-timeout`).
const STALL_SECS: u64 = 3;
/// How far the daemon's RSS may rise above its level while 200 MiB pass through it: a
/// debugger's queue stops the VM's reads at 1 MiB, a read is at most 512 KiB, and the
/// allocator keeps some freed buffers. Holding the stream (or a good part of it) for the
/// debugger that does not read would show as tens or hundreds of MiB.
const STREAM_PEAK_SLACK_KIB: u64 = 32 * 1024;
/// Longest answer time of the other VM's debugger meanwhile: it must not wait for the
/// stalled one (it is normally answered within milliseconds; this leaves room for a loaded
/// machine).
const OTHER_VM_LATENCY: Duration = Duration::from_secs(2);

fn serve(vms: &[&str], stall_secs: u64) -> Served {
    let mut args = vec!["--no-adb", "--stall-timeout"];
    let stall = stall_secs.to_string();
    args.push(&stall);
    for vm in vms {
        args.extend(["--vm", vm]);
    }
    Served::start(&args)
}

/// A debugger's row in `list --json` (by its local address).
fn debugger_row(rows: &[serde_json::Value], peer: &str) -> Option<serde_json::Value> {
    rows.iter().flat_map(|r| r["debuggers"].as_array().into_iter().flatten()).find(|d| d["peer"] == peer).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_reads_nothing_while_200_mib_stream_is_cut_and_holds_nobody_hostage() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let other = FakeVm::start(FakeVmConfig::default()).await;
    let (big_addr, other_addr) = (big.host_port(), other.addr().to_string());
    let mut served = serve(&[&big_addr, &other_addr], STALL_SECS);
    let rows = served.list_until("both ready", |r| ready_port(r, &big_addr).is_some() && ready_port(r, &other_addr).is_some()).await;
    let (big_port, other_port) = (ready_port(&rows, &big_addr).unwrap(), ready_port(&rows, &other_addr).unwrap());
    let mut bystander = RawClient::connect(("127.0.0.1", other_port)).await.unwrap();
    let mut stalled = JvmDebugger::attach(("127.0.0.1", big_port)).await.unwrap();
    let mut second = JvmDebugger::attach(("127.0.0.1", big_port)).await.unwrap();
    let class = stalled.class_id("LBig;").await.unwrap();
    let array = stalled.static_object(class, "big").await.unwrap();
    // One read through the second debugger first: the reply is whole and right.
    let r = second.cmd(SET_ARRAY, ARRAY_GET_VALUES, &array_get_values(array, BIG_LEN)).await.unwrap();
    assert_eq!(array_region_head(&r).unwrap(), (b'I', BIG_LEN));
    assert_eq!(r.data.len(), 5 + 4 * BIG_LEN as usize);
    assert_eq!(&r.data[5 + 4 * 1000..5 + 4 * 1001], &1000u32.to_be_bytes());
    let before = usage(served.pid()).unwrap();
    let peak = PeakSampler::start(served.pid());

    // 208 MiB of replies asked for in one go, none read.
    let mut burst = Vec::new();
    for _ in 0..PIPELINED_READS {
        let id = stalled.id();
        burst.extend(Packet::command(id, SET_ARRAY, ARRAY_GET_VALUES, array_get_values(array, BIG_LEN)).encode());
    }
    stalled.c.send_raw(&burst).await.unwrap();
    // Its first reply's header is in: the VM is streaming to it.
    stalled.c.wait_for_bytes(11, Duration::from_secs(30)).await.unwrap();
    let asked = Instant::now();
    // The second debugger asks behind them: answered once the stalled one is cut and the VM
    // has streamed the rest of its replies (to nobody).
    let id = second.id();
    second.c.send_command(id, SET_VM, VM_VERSION, &[]).await.unwrap();
    // The other VM is served meanwhile, without waiting.
    let mut n = 1;
    let mut slowest = Duration::ZERO;
    while asked.elapsed() < Duration::from_secs(STALL_SECS + 1) {
        let t = Instant::now();
        let r = bystander.request(n, SET_VM, VM_VERSION, &[], Duration::from_secs(10)).await.unwrap();
        assert_eq!(r.error_code(), Some(0));
        slowest = slowest.max(t.elapsed());
        n += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(slowest < OTHER_VM_LATENCY, "the other VM's debugger waited {slowest:?}");
    // HotSpot answers commands in order on its one connection: this reply comes after all
    // 208 MiB of the stalled debugger's, so the daemon has read every byte of them by now.
    let r = second.c.wait_reply(id, Duration::from_secs(120)).await.expect("the second debugger is answered");
    assert_eq!(r.error_code(), Some(0));
    let second_waited = asked.elapsed();
    served.wait_log("a debugger stopped reading; cutting it off").await;
    // The stalled debugger is closed: it finds what the kernel buffered, then the end.
    stalled.c.expect_closed(Duration::from_secs(30)).await.unwrap();
    let replies = stalled.c.take_other_packets().len();
    assert!(replies < PIPELINED_READS as usize, "the cut debugger got {replies} whole replies");
    // The second debugger goes on reading the array, whole and right.
    let r = second.cmd(SET_ARRAY, ARRAY_GET_VALUES, &array_get_values(array, BIG_LEN)).await.unwrap();
    assert_eq!(r.data.len(), 5 + 4 * BIG_LEN as usize);
    assert_eq!(&r.data[r.data.len() - 4..], &(BIG_LEN - 1).to_be_bytes());
    // Nothing of it left the VM suspended: the app ticks on.
    big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    let peak_kib = peak.stop().await;
    assert!(served.is_running());
    assert!(
        peak_kib <= before.rss_kib + STREAM_PEAK_SLACK_KIB,
        "RSS rose from {} KiB to {peak_kib} KiB while the VM streamed",
        before.rss_kib
    );
    drop((stalled, second));
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!(
        "stalled debugger: daemon before {before}, peak RSS {peak_kib} KiB, after {after}; second debugger answered after {second_waited:?}; other VM slowest {slowest:?} over {} commands; cut debugger got {replies} whole replies",
        n - 1
    );
    drop(bystander);
}

/// Body of the large command sent half: within `WHOLE_COMMAND_UP_TO` (1 MiB), the commands
/// the daemon passes on only once whole.
const LARGE_HALF_COMMAND: usize = 900 * 1024;

/// Sends `bytes` then resets the connection (SO_LINGER 0).
async fn send_and_reset(port: u16, bytes: &[u8]) {
    let mut c = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    c.send_raw(bytes).await.unwrap();
    c.reset().unwrap();
}

/// The half packets a resetting debugger leaves: a header cut short, and a whole header
/// with half its body (a suspend-all breakpoint at `Big.tick`, or a VM.Suspend padded so
/// that its length says more is coming).
fn half_packets(class: u64, tick: u64) -> Vec<Vec<u8>> {
    let suspend = Packet::command(90, SET_VM, VM_SUSPEND, vec![]).encode();
    let brk = Packet::command(91, SET_EVENT_REQUEST, ER_SET, breakpoint_request(class, tick, SUSPEND_ALL)).encode();
    let mut long_suspend = Packet::command(92, SET_VM, VM_SUSPEND, vec![0; 64]).encode();
    long_suspend.truncate(11 + 10);
    // Large, above the 64 KiB the daemon reads at a time: half of it arrives in many reads.
    let large = Packet::command(93, SET_VM, VM_SUSPEND, vec![0; LARGE_HALF_COMMAND]).encode();
    vec![
        suspend[..5].to_vec(),
        suspend[..10].to_vec(),
        brk[..brk.len() / 2].to_vec(),
        brk[..11].to_vec(),
        long_suspend,
        large[..large.len() / 2].to_vec(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_reset_mid_packet_leaves_nothing_of_it_in_the_vm() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let fake = FakeVm::start(FakeVmConfig::default()).await;
    let (big_addr, fake_addr) = (big.host_port(), fake.addr().to_string());
    let mut served = serve(&[&big_addr, &fake_addr], 30);
    let rows = served.list_until("both ready", |r| ready_port(r, &big_addr).is_some() && ready_port(r, &fake_addr).is_some()).await;
    let (big_port, fake_port) = (ready_port(&rows, &big_addr).unwrap(), ready_port(&rows, &fake_addr).unwrap());
    let mut keeper = JvmDebugger::attach(("127.0.0.1", big_port)).await.unwrap();
    let mut fake_keeper = RawClient::connect(("127.0.0.1", fake_port)).await.unwrap();
    fake_keeper.ok(1, SET_VM, VM_VERSION, &[]).await.unwrap();
    let class = keeper.class_id("LBig;").await.unwrap();
    let tick = keeper.method_id(class, "tick").await.unwrap();
    let before = usage(served.pid()).unwrap();
    fake.clear_received();
    let accepted = fake.connections_accepted();

    for (i, half) in half_packets(class, tick).iter().enumerate() {
        send_and_reset(big_port, half).await;
        send_and_reset(fake_port, half).await;
        // Both still serve their remaining debugger.
        let r = keeper.cmd(SET_VM, VM_VERSION, &[]).await.unwrap();
        assert_eq!(r.error_code(), Some(0), "after half packet {i}");
        fake_keeper.ok(10 + i as u32, SET_VM, VM_VERSION, &[]).await.unwrap();
    }
    // Every reset debugger is gone from the VMs' lists; the keepers hold nothing.
    let keeper_peer = keeper.c.local_addr().unwrap().to_string();
    let rows = served
        .list_until("only the keepers attached", |r| {
            r.iter().map(|v| v["debuggers"].as_array().map_or(0, Vec::len)).sum::<usize>() == 2
        })
        .await;
    let k = debugger_row(&rows, &keeper_peer).unwrap();
    assert_eq!((k["event_requests"].as_u64(), k["suspensions"].as_u64()), (Some(0), Some(0)), "{k}");

    // The fake VM received no part of a half command: no suspend, no event request.
    assert!(fake.received_commands(SET_VM, VM_SUSPEND).is_empty(), "{:?}", fake.received());
    assert!(fake.received_commands(SET_EVENT_REQUEST, ER_SET).is_empty());
    assert!(fake.event_requests().is_empty() && !fake.any_suspended());
    assert!(fake.protocol_errors().is_empty(), "{:?}", fake.protocol_errors());
    assert_eq!(fake.connections_accepted(), accepted, "the fake VM's connection was remade");
    // The real VM was neither suspended nor given the breakpoint: it ticks on.
    big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    assert!(big.output().lines().filter(|l| l.starts_with("tick")).count() > 2);
    assert!(served.is_running());
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("debugger reset mid packet: daemon before {before}, after {after}");
    drop((keeper, fake_keeper));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_larger_than_the_read_buffer_reaches_the_vm_whole() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let big_addr = big.host_port();
    let served = serve(&[&big_addr], 30);
    let rows = served.list_until("ready", |r| ready_port(r, &big_addr).is_some()).await;
    let mut dbg = JvmDebugger::attach(("127.0.0.1", ready_port(&rows, &big_addr).unwrap())).await.unwrap();
    let class = dbg.class_id("LBig;").await.unwrap();
    let array = dbg.static_object(class, "big").await.unwrap();
    // ArrayReference.SetValues of 1 Mi ints (4 MiB, far above the daemon's 64 KiB reads):
    // element k becomes 7 * k.
    const N: u32 = 1 << 20;
    let mut data = Vec::with_capacity(16 + 4 * N as usize);
    data.put_u64(array);
    data.put_u32(0);
    data.put_u32(N);
    for k in 0..N {
        data.put_u32(7 * k);
    }
    let r = dbg.cmd(SET_ARRAY, 3, &data).await.unwrap();
    assert_eq!(r.error_code(), Some(0));
    // The VM read it as it was sent: the values are there, the session goes on.
    let r = dbg.cmd(SET_ARRAY, ARRAY_GET_VALUES, &array_get_values(array, N + 1)).await.unwrap();
    assert_eq!(array_region_head(&r).unwrap(), (b'I', N + 1));
    let at = |k: usize| u32::from_be_bytes(r.data[5 + 4 * k..9 + 4 * k].try_into().unwrap());
    assert_eq!((at(1), at(12345), at(N as usize - 1), at(N as usize)), (7, 7 * 12345, 7 * (N - 1), N));
    big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
}

/// Bytes the trickling debugger reads at a time, every `TRICKLE_EVERY`: 640 bytes a second,
/// so it frees less than one loopback segment (64 KiB) of its receive window per stall
/// timeout, and the daemon's writes to it make no progress.
const TRICKLE: usize = 64;
const TRICKLE_EVERY: Duration = Duration::from_millis(100);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_reads_a_trickle_is_cut_like_one_that_reads_nothing() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let big_addr = big.host_port();
    let served = serve(&[&big_addr], STALL_SECS);
    let rows = served.list_until("ready", |r| ready_port(r, &big_addr).is_some()).await;
    let port = ready_port(&rows, &big_addr).unwrap();
    let mut second = JvmDebugger::attach(("127.0.0.1", port)).await.unwrap();
    let class = second.class_id("LBig;").await.unwrap();
    let array = second.static_object(class, "big").await.unwrap();
    let before = usage(served.pid()).unwrap();

    // The trickler: handshake, two 16 MiB reads asked for, then 64 bytes every 100 ms.
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    sock.write_all(crate::support::wire::HANDSHAKE).await.unwrap();
    for id in 1..=2 {
        sock.write_all(&Packet::command(id, SET_ARRAY, ARRAY_GET_VALUES, array_get_values(array, BIG_LEN)).encode()).await.unwrap();
    }
    // Trickles until told to drain: then reads what the kernel still holds, to the end.
    let drain = std::sync::Arc::new(tokio::sync::Notify::new());
    let told = drain.clone();
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let mut started_tx = Some(started_tx);
    let trickle = tokio::spawn(async move {
        let mut buf = vec![0u8; TRICKLE];
        let mut total = 0usize;
        let mut draining = false;
        loop {
            match tokio::time::timeout(Duration::from_secs(60), sock.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Some(total),
                Ok(Ok(n)) => total += n,
                Err(_) => return None,
            }
            // Past the handshake echo and a reply's header: the replies are on their way.
            if total > 14 + 11 {
                if let Some(tx) = started_tx.take() {
                    let _ = tx.send(());
                }
            }
            if !draining {
                tokio::select! {
                    _ = tokio::time::sleep(TRICKLE_EVERY) => {}
                    _ = told.notified() => {
                        draining = true;
                        buf = vec![0u8; 1 << 20];
                    }
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), started).await.unwrap().unwrap();
    let asked = Instant::now();
    let id = second.id();
    second.c.send_command(id, SET_VM, VM_VERSION, &[]).await.unwrap();
    let r = second.c.wait_reply(id, Duration::from_secs(60)).await.expect("the second debugger is answered");
    assert_eq!(r.error_code(), Some(0));
    let waited = asked.elapsed();
    served.wait_log("a debugger stopped reading; cutting it off").await;
    drain.notify_one();
    let read = trickle.await.unwrap().expect("the trickler is closed");
    assert!(read < 2 * 4 * BIG_LEN as usize, "the trickler read all {read} bytes");
    big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    drop(second);
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("trickling debugger: cut after reading {read} bytes; second debugger answered after {waited:?}; daemon before {before}, after {after}");
}
