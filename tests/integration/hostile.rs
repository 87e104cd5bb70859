//! Hostile peers on the JDWP side, through the real binary: a slow-handshake flood, replies
//! nobody asked for, a VM that answers twice, and DDM chunks whose counts lie. (Hostile sizes
//! and ZLIB bombs are in `limits`, the control socket in `hostile_control`.)
//!
//! Expected outcomes:
//! - 1,000 connections to a VM port and 1,000 to the current port, each sending the handshake
//!   one byte a second: the accept loop keeps up, a real debugger connecting meanwhile gets
//!   its handshake and replies within a second or so, and every slow connection is closed at
//!   `DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT` (10 s) with one log line each; fds return to their
//!   level; started with a soft limit of 128 open files, the daemon raises it to the hard
//!   limit, so 300 slow handshakes do not lock a debugger out;
//! - a reply whose id the proxy never sent, and the second copy of every reply from a VM that
//!   answers each command twice, are dropped: each debugger command gets exactly one reply,
//!   and the drops are logged with a count, at 1, 2, 4, 8... so a VM cannot flood the log;
//! - THST, HPSG, HPIF, STKL, FEAT and REAQ payloads whose counts promise more than their bytes
//!   hold (also inside ZLIB) are logged as malformed, one line each (in a packet of several,
//!   the first error ends its decoding), nothing panics, and the thread and heap views still
//!   work afterwards.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jdwpmux::settings::DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::{port_of, Served};
use crate::support::consts::*;
use crate::support::wire::HANDSHAKE;
use crate::support::{Chunk, FakeVm, FakeVmConfig, Packet, RawClient};

/// Slow connections per debugger port.
const SLOW_PER_PORT: usize = 1000;

/// Raises this process's soft fd limit (the daemon it starts inherits it) to `want`, or to
/// the hard limit if lower; returns the soft limit in force.
fn raise_nofile(want: u64) -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current.is_some_and(|c| c < want) {
        let current = Some(lim.maximum.map_or(want, |hard| hard.min(want)));
        let _ = setrlimit(Resource::Nofile, Rlimit { current, maximum: lim.maximum });
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

fn rss_kib(pid: u32) -> u64 {
    crate::support::process::status_kib(pid, "VmRSS").unwrap_or(0)
}

/// One slow connection: a byte of the handshake a second until the proxy closes it.
/// Returns how long after the connect it was closed (None: never within `give_up`).
async fn drip(addr: SocketAddr, give_up: Duration, connected: Arc<AtomicUsize>) -> Option<Duration> {
    // Timed from before the connect, so never later than the proxy's accept.
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).await.ok()?;
    connected.fetch_add(1, Ordering::SeqCst);
    let mut buf = [0u8; 64];
    for byte in HANDSHAKE.iter().cycle() {
        if s.write_all(&[*byte]).await.is_err() {
            return Some(start.elapsed());
        }
        match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => return None, // an echo: the proxy took 1 byte/s as a handshake
            Err(_) => {}
        }
        if start.elapsed() > give_up {
            return None;
        }
    }
    None
}

/// A real debugger: handshake and one VirtualMachine.Version round trip; how long it took.
async fn debugger_round_trip(addr: SocketAddr) -> Duration {
    let t = Instant::now();
    let mut c = RawClient::connect(addr).await.unwrap();
    let r = c.request(1, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handshakes_by_the_thousand_neither_starve_others_nor_stay() {
    let limit = raise_nofile(8192);
    assert!(limit as usize > 4 * SLOW_PER_PORT + 200, "RLIMIT_NOFILE {limit} is too low for this test");
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    let vm_port = port_of(&served.wait_log(&format!("for vm {}", vm.addr())).await);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let vm_addr = SocketAddr::from(([127, 0, 0, 1], vm_port));
    let cur_addr = SocketAddr::from(([127, 0, 0, 1], current));
    let pid = served.pid();
    let (fds_before, rss_before) = (open_fds(pid), rss_kib(pid));
    let idle = debugger_round_trip(vm_addr).await;

    let deadline = DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT;
    let give_up = deadline + Duration::from_secs(10);
    let t0 = Instant::now();
    let connected = Arc::new(AtomicUsize::new(0));
    let slow: Vec<_> = (0..2 * SLOW_PER_PORT)
        .map(|i| tokio::spawn(drip(if i % 2 == 0 { vm_addr } else { cur_addr }, give_up, connected.clone())))
        .collect();
    // Wait until the daemon holds them all (give or take the closing idle debugger), then be
    // a real debugger on both ports.
    crate::harness::wait_until("the slow connections accepted", || open_fds(pid) + 2 >= fds_before + 2 * SLOW_PER_PORT).await.unwrap();
    let accepted_in = t0.elapsed();
    let (fds_peak, rss_peak) = (open_fds(pid), rss_kib(pid));
    let on_vm_port = debugger_round_trip(vm_addr).await;
    let on_current = debugger_round_trip(cur_addr).await;
    assert!(t0.elapsed() < deadline, "the debuggers' turn came after the slow ones were closed: not a test");

    let mut closed_after = Vec::new();
    for t in slow {
        closed_after.push(t.await.unwrap());
    }
    let never: usize = closed_after.iter().filter(|c| c.is_none()).count();
    assert_eq!(never, 0, "slow connections never closed");
    let times: Vec<Duration> = closed_after.into_iter().flatten().collect();
    let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    assert!(first >= deadline, "closed early, after {first:?}");
    assert!(last <= deadline + Duration::from_secs(5), "closed late, after {last:?}");
    let needle = format!("no handshake from the debugger within {deadline:?}");
    crate::harness::wait_until("every close logged", || served.log_text().matches(&needle).count() >= 2 * SLOW_PER_PORT).await.unwrap();
    assert_eq!(served.log_text().matches(&needle).count(), 2 * SLOW_PER_PORT);
    crate::harness::wait_until("fds back to their level", || open_fds(pid) <= fds_before + 2).await.unwrap();
    let (fds_after, rss_after) = (open_fds(pid), rss_kib(pid));
    eprintln!(
        "{} slow connections accepted in {accepted_in:?}; debugger round trip idle {idle:?}, during the flood \
         {on_vm_port:?} (VM port) and {on_current:?} (current port); closed after {first:?}..{last:?}; \
         fds {fds_before} -> {fds_peak} -> {fds_after}; RSS {rss_before} -> {rss_peak} -> {rss_after} KiB",
        2 * SLOW_PER_PORT
    );
    assert!(on_vm_port < Duration::from_secs(3) && on_current < Duration::from_secs(3), "{on_vm_port:?} {on_current:?}");
    // And the debuggers still work after the flood.
    debugger_round_trip(cur_addr).await;
}

/// The daemon's soft limit on open files, from /proc.
fn soft_nofile(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

/// Started with a soft limit of 128 open files (a hard one of 4096), the daemon raises the
/// soft limit to the hard one, so 300 slow handshakes do not use up its descriptors and a
/// real debugger connecting meanwhile is served at once (not after the handshake deadline
/// frees some).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_open_file_limit_is_raised_so_slow_handshakes_cannot_lock_debuggers_out() {
    const SLOW: usize = 300;
    assert!(raise_nofile(4096) >= 4096, "this test needs 4096 open files");
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let served = Served::start_wrapped(&["prlimit", "--nofile=128:4096"], &["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let pid = served.pid();
    let cur_addr = SocketAddr::from(([127, 0, 0, 1], current));
    let connected = Arc::new(AtomicUsize::new(0));
    let give_up = DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT + Duration::from_secs(10);
    let slow: Vec<_> = (0..SLOW).map(|_| tokio::spawn(drip(cur_addr, give_up, connected.clone()))).collect();
    crate::harness::wait_until("the slow connections made", || connected.load(Ordering::SeqCst) == SLOW).await.unwrap();
    let t = Instant::now();
    let mut c = match RawClient::connect(cur_addr).await {
        Ok(c) => c,
        Err(e) => {
            let log = served.log_text();
            let tail: Vec<&str> = log.lines().filter(|l| !l.contains("debugger connection")).collect();
            panic!("a debugger was not served ({e:#}) after {:?}, daemon fds {}:\n{}", t.elapsed(), open_fds(pid), tail[tail.len().saturating_sub(8)..].join("\n"));
        }
    };
    c.request(1, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
    let took = t.elapsed();
    let (fds, limit) = (open_fds(pid), soft_nofile(pid));
    eprintln!("soft RLIMIT_NOFILE 128 at start, {limit} now; {SLOW} slow handshakes pending, daemon fds {fds}; debugger round trip {took:?}");
    // Raised (said at debug level: it happens at every start).
    assert_eq!(limit, 4096);
    assert!(took < Duration::from_secs(3), "a debugger waited {took:?} behind {SLOW} slow handshakes");
    for t in slow {
        t.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrequested_and_duplicate_replies_are_dropped() {
    let plain = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let twice = FakeVm::start(FakeVmConfig { duplicate_replies: true, ..FakeVmConfig::hotspot_like() }).await;
    let served = Served::start(&["--vm", &plain.addr().to_string(), "--vm", &twice.addr().to_string(), "--no-scan", "--no-adb"]);
    let plain_port = port_of(&served.wait_log(&format!("for vm {}", plain.addr())).await);
    let twice_port = port_of(&served.wait_log(&format!("for vm {}", twice.addr())).await);
    served.list_until("both VMs ready", |v| v.iter().filter(|e| e["state"] == "ready").count() == 2).await;
    let plain_addr = SocketAddr::from(([127, 0, 0, 1], plain_port));
    let twice_addr = SocketAddr::from(([127, 0, 0, 1], twice_port));

    // A reply id the proxy never sent (nor could have yet: its ids start low), from a VM
    // that has a debugger attached: dropped, logged with the id, the debugger sees nothing.
    let mut watcher = RawClient::connect(plain_addr).await.unwrap();
    watcher.request(1, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
    plain.send_packet(&Packet::reply(0x7654_3210, 0, vec![1, 2, 3])).unwrap();
    let line = served.wait_log(&format!("dropping a reply to id {}", 0x7654_3210u32)).await;
    assert!(line.contains("1 such replies so far"), "{line}");
    watcher.request(2, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
    assert!(watcher.take_other_packets().is_empty(), "the stray reply reached the debugger");

    // A VM answering everything twice, one command at a time, then 50 pipelined: one reply
    // each for the debugger.
    let mut dbg = RawClient::connect(twice_addr).await.unwrap();
    for id in 1..=50 {
        let r = dbg.request(id, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE));
    }
    for id in 100..150 {
        dbg.send_command(id, SET_VM, VM_ID_SIZES, &[]).await.unwrap();
    }
    let mut got = std::collections::BTreeMap::new();
    while got.len() < 50 {
        let p = dbg.read_packet(Duration::from_secs(20)).await.unwrap();
        assert!(p.is_reply(), "{p:?}");
        *got.entry(p.id).or_insert(0) += 1;
    }
    // A last round trip: every duplicate came before its reply.
    dbg.request(999, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
    let extra = dbg.take_other_packets();
    assert!(extra.is_empty(), "{} extra packets, ids {:?}", extra.len(), extra.iter().map(|p| p.id).collect::<Vec<_>>());
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), (100..150).collect::<Vec<_>>(), "{got:?}");
    assert!(got.values().all(|&n| n == 1), "a reply twice: {got:?}");

    // 101 duplicates of the debugger's replies and those of the proxy's own requests:
    // logged at the 1st, 2nd, 4th... with the count, not once each.
    let twice_lines = |log: &str| -> (usize, u64) {
        let vm = format!("vm={}", twice.addr());
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(&vm) && l.contains("no request of that id is outstanding")).collect();
        let count = lines.last().and_then(|l| l.split("; ").nth(1)?.split_whitespace().next()?.parse().ok());
        (lines.len(), count.unwrap_or(0))
    };
    crate::harness::wait_until("the count logged", || twice_lines(&served.log_text()).1 >= 64).await.unwrap();
    let (lines, count) = twice_lines(&served.log_text());
    eprintln!("duplicate replies: {count} counted in {lines} log lines");
    assert!(lines <= 8, "{lines} lines for {count} duplicates");
    // Both sessions carried on.
    drop(dbg);
    debugger_round_trip(twice_addr).await;
    watcher.request(3, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap();
}

/// u4 count (or depth) then one entry's worth of bytes: a count that lies.
fn lying_count(count: u32, entry: &[u8]) -> Vec<u8> {
    let mut d = count.to_be_bytes().to_vec();
    d.extend_from_slice(entry);
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddm_counts_that_promise_more_than_the_bytes_hold_are_errors() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    crate::ddm_views::ready(&served, 1).await;
    // THST, real layout: 4-byte header, 18 bytes an entry, 65535 entries promised, one sent.
    let mut thst_real = vec![4, 18, 0xFF, 0xFF];
    thst_real.extend_from_slice(&[0, 0, 0x10, 0x01, 1, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0]);
    // THST, document layout: 1000 entries of 6 bytes promised, one sent.
    let thst_doc = lying_count(1000, &[0, 0, 0x10, 0x01, 1, 0]);
    // HPSG: 4 billion units promised, one run of 256 sent.
    let mut hpsg = vec![0, 0, 0, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
    hpsg.extend_from_slice(&[0x01, 0xFF]);
    // HPIF: 4 billion heaps promised, one (29 bytes) sent.
    let hpif = lying_count(u32::MAX, &[0u8; 29]);
    // STKL: a 4-billion-frame stack, one frame's worth of bytes.
    let mut stkl = vec![0, 0, 0, 0, 0, 0, 0x10, 0x01];
    stkl.extend(lying_count(u32::MAX, &[0u8; 16]));
    // FEAT: 4 billion features, one empty name.
    let feat = lying_count(u32::MAX, &[0, 0, 0, 0]);
    // REAQ: its one byte missing.
    let reaq: Vec<u8> = Vec::new();
    let bad: Vec<([u8; 4], Vec<u8>)> = vec![
        (*b"THST", thst_real.clone()),
        (*b"THST", thst_doc),
        (*b"HPSG", hpsg.clone()),
        (*b"HPIF", hpif),
        (*b"STKL", stkl),
        (*b"FEAT", feat),
        (*b"REAQ", reaq),
    ];
    for (ty, data) in &bad {
        vm.send_ddm(&[(*ty, data.clone())]).unwrap();
    }
    // The same lies inside ZLIB.
    for (ty, data) in [(*b"THST", thst_real), (*b"HPSG", hpsg)] {
        vm.send_ddm_chunks(&[crate::support::wire::zlib_chunk(&Chunk::new(&ty, data))]).unwrap();
    }
    // All of them in one packet: the first error ends the proxy's decoding of that packet
    // (documented in `decode_payload`; the packet itself is relayed whole).
    vm.send_ddm(&bad).unwrap();
    let n_bad = bad.len() + 2 + 1;
    let logged = crate::harness::wait_until("every bad chunk logged", || served.log_text().matches("malformed DDM chunk").count() >= n_bad).await;
    let log = served.log_text();
    let malformed: Vec<&str> = log.lines().filter(|l| l.contains("malformed DDM chunk")).collect();
    assert!(logged.is_ok(), "{n_bad} bad chunks sent, {} logged:\n{}", malformed.len(), malformed.join("\n"));
    for needle in ["THST", "units", "heap count", "depth", "count", "enabled"] {
        assert!(log.lines().any(|l| l.contains("malformed DDM chunk") && l.contains(needle)), "no {needle:?} error:\n{log}");
    }
    assert!(!log.contains("panicked"), "{log}");
    // The views work on.
    let (code, out, err) = served.run(&["threads", "com.example.fake", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("main") && out.contains("HeapTaskDaemon"), "{out}");
    let (code, out, err) = served.run(&["heap", "com.example.fake", "--summary"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heap 1"), "{out}");
    let malformed = served.log_text().matches("malformed DDM chunk").count();
    eprintln!("{n_bad} lying chunks sent, {malformed} malformed-chunk log lines; views still work");
}
