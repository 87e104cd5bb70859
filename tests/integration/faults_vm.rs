//! Faults of a real HotSpot VM under the real daemon: killed (-9) in the middle of a large
//! reply, stopped (SIGSTOP) for 30 s and resumed. Another VM and its debugger carry on, and
//! the daemon's memory and descriptors come back to their level.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::Served;
use crate::support::consts::*;
use crate::support::faults::{ready_port, row_of, start_big, start_big_of, FAULT_SLACK, SETTLE};
use crate::support::jvm_wire::{array_get_values, JvmDebugger, ARRAY_GET_VALUES, SET_ARRAY};
use crate::support::process::{self, usage, wait_back_to};
use crate::support::{java_available, FakeVm, FakeVmConfig, RawClient};

/// JDWP error VM_DEAD: what the daemon answers a debugger's outstanding command with when
/// its VM goes away.
const ERR_VM_DEAD: u16 = 112;
/// Bytes of the reply the debugger reads before the VM is killed: enough to know the reply
/// is on its way, far from its end (the daemon queues at most 1 MiB more for it).
const READ_BEFORE_KILL: usize = 256 * 1024;
/// Ints in the array whose reply is cut: 48 MiB, more than every buffer on the way can hold
/// (socket buffers on loopback grow to 4 and 6 MiB each way, plus the daemon's 1 MiB), so the
/// VM is still writing when it is killed however slow the machine.
const KILLED_LEN: u32 = 12 * 1024 * 1024;
/// How long the VM stays stopped.
const STOPPED_FOR: Duration = Duration::from_secs(30);

/// Version through a debugger of the other VM: it is served.
async fn still_served(c: &mut RawClient, id: u32) {
    let r = c.request(id, SET_VM, VM_VERSION, &[], Duration::from_secs(10)).await.expect("the other VM's debugger is served");
    assert_eq!(r.error_code(), Some(0));
}

/// Commands the debugger at `peer` has sent, as `list --json` counts them.
fn sent_commands(rows: &[serde_json::Value], peer: &str) -> u64 {
    rows.iter()
        .flat_map(|r| r["debuggers"].as_array().into_iter().flatten())
        .find(|d| d["peer"] == peer)
        .and_then(|d| d["commands"].as_u64())
        .unwrap_or(0)
}

/// The daemon serving `Big` and a fake VM; (daemon, Big's port, the fake VM's port).
async fn serve_two(big: &str, other: &FakeVm) -> (Served, u16, u16) {
    let other_addr = other.addr().to_string();
    let served = Served::start(&["--vm", big, "--vm", &other_addr, "--no-adb", "--stall-timeout", "600"]);
    let rows = served
        .list_until("both VMs ready", |r| ready_port(r, big).is_some() && ready_port(r, &other_addr).is_some())
        .await;
    (served, ready_port(&rows, big).unwrap(), ready_port(&rows, &other_addr).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_killed_mid_reply_ends_its_debuggers_cleanly_and_spares_the_others() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let mut big = start_big_of(Path::new("java"), KILLED_LEN).await.unwrap();
    let other = FakeVm::start(FakeVmConfig::default()).await;
    let (mut served, big_port, other_port) = serve_two(&big.host_port(), &other).await;
    let mut bystander = RawClient::connect(("127.0.0.1", other_port)).await.unwrap();
    still_served(&mut bystander, 1).await;
    let mut dbg = JvmDebugger::attach(("127.0.0.1", big_port)).await.unwrap();
    let class = dbg.class_id("LBig;").await.unwrap();
    let array = dbg.static_object(class, "big").await.unwrap();
    let mut waiter = RawClient::connect(("127.0.0.1", big_port)).await.unwrap();
    let before = usage(served.pid()).unwrap();

    // The 48 MiB reply starts streaming; the debugger stops reading, so the VM is caught
    // halfway through writing it.
    let big_id = dbg.id();
    dbg.c.send_command(big_id, SET_ARRAY, ARRAY_GET_VALUES, &array_get_values(array, KILLED_LEN)).await.unwrap();
    dbg.c.wait_for_bytes(READ_BEFORE_KILL, Duration::from_secs(30)).await.unwrap();
    // A second debugger's command waits behind the reply the VM is busy writing.
    waiter.send_command(7, SET_VM, VM_VERSION, &[]).await.unwrap();
    let peer = waiter.local_addr().unwrap().to_string();
    served.list_until("the waiting command passed on", |r| sent_commands(r, &peer) >= 1).await;
    process::signal(big.pid().unwrap(), libc::SIGKILL).unwrap();
    assert!(big.kill().await.unwrap().is_some(), "the VM is reaped");

    // The debugger whose reply was cut gets the bytes that were on their way, then an end
    // of stream: never a forged end of the reply.
    dbg.c.expect_closed(Duration::from_secs(20)).await.unwrap();
    assert!(
        !dbg.c.take_other_packets().iter().any(|p| p.id == big_id && p.is_reply()),
        "a reply the VM never finished must not reach the debugger whole"
    );
    // The waiting one is told the VM died, then closed.
    let r = waiter.wait_reply(7, Duration::from_secs(20)).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_VM_DEAD), "an outstanding command is answered VM_DEAD");
    waiter.expect_closed(Duration::from_secs(20)).await.unwrap();

    // The daemon stays up, lists the dead VM as not ready, and serves the other VM: its
    // attached debugger and a new one.
    assert!(served.is_running(), "the daemon died:\n{}", served.log_text());
    let big_addr = big.host_port();
    served.list_until("the killed VM no longer ready", |r| row_of(r, &big_addr).is_some_and(|v| v["state"] != "ready")).await;
    for id in 2..12 {
        still_served(&mut bystander, id).await;
    }
    let mut newcomer = RawClient::connect(("127.0.0.1", other_port)).await.unwrap();
    still_served(&mut newcomer, 1).await;
    drop((newcomer, dbg, waiter));

    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("vm killed mid reply: daemon before {before}, after {after}");
    // The loss is said, whichever side of the socket met it first (under load the kill can
    // be seen by the write of the waiting command rather than by a read), once it is known
    // whether the process exited: within seconds.
    let said = || ["the VM closed the connection", "read from the VM failed", "write to the VM failed"].iter().any(|s| served.log_text().contains(s));
    crate::harness::wait_until("the VM's loss said", said).await.unwrap_or_else(|e| panic!("{e}:\n{}", served.log_text()));
    drop(bystander);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_stopped_for_30_s_answers_after_it_resumes_and_nothing_times_out() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let other = FakeVm::start(FakeVmConfig::default()).await;
    let (mut served, big_port, other_port) = serve_two(&big.host_port(), &other).await;
    let mut bystander = RawClient::connect(("127.0.0.1", other_port)).await.unwrap();
    still_served(&mut bystander, 1).await;
    let mut dbg = JvmDebugger::attach(("127.0.0.1", big_port)).await.unwrap();
    let class = dbg.class_id("LBig;").await.unwrap();
    let before = usage(served.pid()).unwrap();
    let log_before = served.log_text().lines().count();

    let pid = big.pid().unwrap();
    process::signal(pid, libc::SIGSTOP).unwrap();
    let stopped_at = Instant::now();
    crate::harness::wait_until("the VM stopped", || process::state(pid) == Some('T')).await.unwrap();
    // Asked while the VM cannot answer.
    let id = dbg.id();
    dbg.c.send_command(id, SET_VM, VM_ALL_THREADS, &[]).await.unwrap();
    // The other VM is served the whole time, by a debugger attached before and by new ones.
    let mut n = 2;
    while stopped_at.elapsed() < STOPPED_FOR {
        still_served(&mut bystander, n).await;
        if n % 10 == 0 {
            let mut newcomer = RawClient::connect(("127.0.0.1", other_port)).await.unwrap();
            still_served(&mut newcomer, 1).await;
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The stopped VM's debugger is still attached, its command unanswered, no reply made up.
    assert!(dbg.c.take_other_packets().is_empty());
    assert!(served.list_until("still listed", |r| row_of(r, &big.host_port()).is_some()).await.len() == 2);
    process::signal(pid, libc::SIGCONT).unwrap();

    let r = dbg.c.wait_reply(id, Duration::from_secs(30)).await.expect("the command is answered after the resume");
    assert_eq!(r.error_code(), Some(0));
    assert!(r.reader().u4().unwrap() >= 1, "threads listed");
    // And the session goes on as before.
    assert!(dbg.class_id("LBig;").await.unwrap() == class);
    big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    assert!(served.is_running());
    let log = served.log_text();
    let since: Vec<&str> = log.lines().skip(log_before).collect();
    // No warning at all, and nothing closed or given up on the stopped VM's side.
    let big_vm = format!("vm={}", big.host_port());
    let bad = |l: &&str| {
        l.contains(" WARN ") || l.contains(" ERROR ") || (l.contains(&big_vm) && ["closed", "lost", "timed out", "detached"].iter().any(|w| l.contains(w)))
    };
    assert!(!since.iter().any(bad), "logged while the VM was stopped:\n{}", since.join("\n"));
    println!("vm stopped for {:?}: {} commands to the other VM served meanwhile", STOPPED_FOR, n - 2);
    drop(dbg);
    served.list_until("the VM ready again", |r| ready_port(r, &big.host_port()).is_some()).await;
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("vm stopped: daemon before {before}, after {after}");
    drop(bystander);
}
