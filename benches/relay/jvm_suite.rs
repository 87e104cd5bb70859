//! One run of one path against the real JVM: a single debugger connection measures
//! sequential latency, pipelined throughput, AllClasses and the 4 MiB array, each with the
//! relay's CPU time, and checks every reply. On jdwpmux, latency and pipelined throughput
//! are measured a second time with another, idle debugger attached to the same VM.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cpu_budget::{this_thread_ns, MachineTicks};
use crate::jdwp_ops::{self as ops, BigArray, ByteRegionCheck, IdSizes};
use crate::jvm::{Jvm, BIG_ARRAY_LEN, BIG_CLASS_SIG, BIG_FIELD};
use crate::paths::{CpuMeter, PathKind, Relay};
use crate::proxy::ProxyBin;
use crate::stats::percentile;
use testkit::blocking_client::{check_reply, BlockingClient, ClientError};
use testkit::wire::command_frame;

#[derive(Debug, Clone, Copy)]
pub struct JvmParams {
    pub warmup: usize,
    pub latency_n: usize,
    pub pipelined_n: usize,
    pub window: usize,
    pub all_classes_n: usize,
    pub array_n: usize,
    /// Fewest classes AllClasses must list (the generated ones).
    pub min_classes: usize,
    /// JDI calls of the IDE-shaped workload.
    pub ide_calls: u64,
    /// Stepping time after which the IDE-shaped workload stops even short of its calls.
    pub ide_budget: std::time::Duration,
    /// jdb's steps a run (`next`, `where`, `locals`), unless `jdb_local::BUDGET` ends them.
    pub jdb_steps: usize,
}

#[derive(Debug, Clone, Default)]
pub struct JvmRun {
    pub latency_us: f64,
    pub latency_p99_us: f64,
    pub pipelined_rps: f64,
    pub all_classes_mbps: f64,
    pub classes: usize,
    pub array_mbps: f64,
    /// Relay CPU (None on the direct path).
    pub cpu_rt_us: Option<f64>,
    pub cpu_req_us: Option<f64>,
    pub cpu_all_classes_ms_per_mb: Option<f64>,
    pub cpu_array_ms_per_mb: Option<f64>,
    /// jdwpmux only: the same latency and throughput with a second, idle debugger attached.
    pub idle2_latency_us: Option<f64>,
    pub idle2_pipelined_rps: Option<f64>,
    /// Latency and relay CPU per round trip from the second client configuration: one
    /// command in flight with Nagle's algorithm on.
    pub plain_latency_us: Option<f64>,
    pub plain_cpu_rt_us: Option<f64>,
    /// During the pipelined run, per request: the CPU of the client's thread and of the
    /// JVM (every thread), and the share of the machine's CPU time that was busy.
    pub pipe_client_us: Option<f64>,
    pub pipe_jvm_us: Option<f64>,
    pub pipe_busy_share: Option<f64>,
}

const MB: f64 = 1e6;

/// `idle_first`: on jdwpmux, measure with the idle second debugger before measuring alone
/// (alternated between repetitions, so neither order always comes warmer).
pub fn run(kind: PathKind, jvm: &mut Jvm, bin: &ProxyBin, p: &JvmParams, idle_first: bool) -> Result<JvmRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    // Whatever happens below, this run is one debugger session for the JVM.
    jvm.session_ended();
    let mut relay = Relay::start(kind, jvm.addr(), bin)?;
    let mut client = None;
    let result = measure(&relay, jvm.pid(), p, &mut client, idle_first);
    let log = if result.is_err() { relay.proxy_log() } else { None };
    // Stop the proxy while its client is still attached (see Relay::stop); socat and the
    // direct path end when the client closes.
    if matches!(relay, Relay::Proxy { .. }) {
        relay.stop();
    }
    drop(client);
    relay.stop();
    result.map_err(|e| match log {
        Some(l) => e.context(format!("jdwpmux log tail:\n{l}")),
        None => e,
    })
}

fn measure(relay: &Relay, jvm_pid: u32, p: &JvmParams, slot: &mut Option<BlockingClient>, idle_first: bool) -> Result<JvmRun> {
    let c = slot.insert(BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect")?);
    let ids = ops::id_sizes(c).context("IDSizes")?;
    let version = c.request(ops::VERSION.0, ops::VERSION.1, &[]).context("Version")?;
    let vm_name = ops::version_vm_name(&version)?;
    if vm_name.is_empty() {
        return Err(ClientError::Content("empty vmName".into()).into());
    }
    let mut r = JvmRun::default();

    latency(c, p.warmup, &version).context("warm-up")?;
    pipelined(c, p.warmup.min(p.pipelined_n), p.window, &version).context("pipelined warm-up")?;
    let shared = matches!(relay, Relay::Proxy { .. });
    if shared && idle_first {
        with_idle_debugger(relay, c, p, &version, &mut r)?;
    }
    let cpu = relay.cpu();
    let (elapsed, mut samples) = latency(c, p.latency_n, &version).context("latency")?;
    r.latency_us = elapsed.as_secs_f64() * 1e6 / p.latency_n as f64;
    r.latency_p99_us = percentile(&mut samples, 99.0).map_or(f64::NAN, |ns| f64::from(ns) / 1e3);
    r.cpu_rt_us = cpu.ns().map(|ns| ns as f64 / 1e3 / p.latency_n as f64);

    let cpu = relay.cpu();
    let (client0, jvm_cpu, machine0) = (this_thread_ns(), CpuMeter::start(Some(jvm_pid)), MachineTicks::take());
    let elapsed = pipelined(c, p.pipelined_n, p.window, &version).context("pipelined")?;
    let per_req = |ns: u64| ns as f64 / 1e3 / p.pipelined_n as f64;
    r.pipelined_rps = p.pipelined_n as f64 / elapsed.as_secs_f64();
    r.cpu_req_us = cpu.ns().map(per_req);
    r.pipe_client_us = this_thread_ns().zip(client0).map(|(b, a)| per_req(b.saturating_sub(a)));
    r.pipe_jvm_us = jvm_cpu.ns().map(per_req);
    r.pipe_busy_share = MachineTicks::take().zip(machine0).and_then(|(b, a)| b.busy_share_since(&a));
    if shared && !idle_first {
        with_idle_debugger(relay, c, p, &version, &mut r)?;
    }

    c.set_nodelay(false).context("TCP_NODELAY off")?;
    let cpu = relay.cpu();
    let (elapsed, _) = latency(c, p.latency_n, &version).context("latency with Nagle on")?;
    r.plain_latency_us = Some(elapsed.as_secs_f64() * 1e6 / p.latency_n as f64);
    r.plain_cpu_rt_us = cpu.ns().map(|ns| ns as f64 / 1e3 / p.latency_n as f64);
    c.set_nodelay(true).context("TCP_NODELAY on")?;

    let cpu = relay.cpu();
    let (elapsed, bytes, classes) = all_classes(c, p.all_classes_n, &ids).context("AllClasses")?;
    if classes < p.min_classes {
        return Err(ClientError::Content(format!("AllClasses listed {classes} classes, expected at least {}", p.min_classes)).into());
    }
    r.classes = classes;
    r.all_classes_mbps = bytes as f64 / MB / elapsed.as_secs_f64();
    r.cpu_all_classes_ms_per_mb = cpu.ns().map(|ns| ns as f64 / 1e6 / (bytes as f64 / MB));

    let arr = ops::find_static_array(c, &ids, BIG_CLASS_SIG, BIG_FIELD).context("find Big.data")?;
    if arr.len != BIG_ARRAY_LEN {
        return Err(ClientError::Content(format!("Big.data has {} elements, expected {BIG_ARRAY_LEN}", arr.len)).into());
    }
    let cpu = relay.cpu();
    let (elapsed, bytes) = array_values(c, p.array_n, arr, &ids).context("ArrayReference.GetValues")?;
    r.array_mbps = bytes as f64 / MB / elapsed.as_secs_f64();
    r.cpu_array_ms_per_mb = cpu.ns().map(|ns| ns as f64 / 1e6 / (bytes as f64 / MB));
    Ok(r)
}

/// Latency and pipelined throughput of `c` while a second debugger is attached to the same
/// VM through the proxy and sends nothing after its first command.
fn with_idle_debugger(relay: &Relay, c: &mut BlockingClient, p: &JvmParams, version: &[u8], r: &mut JvmRun) -> Result<()> {
    let mut idle = BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect the second debugger")?;
    // Attached for sure: it got an answer.
    idle.request(ops::VERSION.0, ops::VERSION.1, &[]).context("the second debugger's Version")?;
    let (elapsed, _) = latency(c, p.latency_n, version).context("latency with a second debugger")?;
    r.idle2_latency_us = Some(elapsed.as_secs_f64() * 1e6 / p.latency_n as f64);
    let elapsed = pipelined(c, p.pipelined_n, p.window, version).context("pipelined with a second debugger")?;
    r.idle2_pipelined_rps = Some(p.pipelined_n as f64 / elapsed.as_secs_f64());
    Ok(())
}

/// `n` sequential Version round trips; total time and each round trip in ns.
pub fn latency(c: &mut BlockingClient, n: usize, expected: &[u8]) -> Result<(Duration, Vec<u32>), ClientError> {
    let mut req = command_frame(0, ops::VERSION.0, ops::VERSION.1, &[]);
    let mut body = Vec::with_capacity(expected.len());
    let mut samples = Vec::with_capacity(n);
    let t0 = Instant::now();
    for _ in 0..n {
        let id = c.next_id();
        req[4..8].copy_from_slice(&id.to_be_bytes());
        let t = Instant::now();
        c.write_all(&req)?;
        let h = c.read_header()?;
        check_reply(&h, id, ops::VERSION.0, ops::VERSION.1)?;
        c.read_body(&h, &mut body)?;
        samples.push(t.elapsed().as_nanos().min(u128::from(u32::MAX)) as u32);
        if body != expected {
            return Err(ClientError::Content("a Version reply differs from the first one".into()));
        }
    }
    Ok((t0.elapsed(), samples))
}

/// `n` Version requests with up to `window` outstanding; replies must come in order.
pub fn pipelined(c: &mut BlockingClient, n: usize, window: usize, expected: &[u8]) -> Result<Duration, ClientError> {
    let mut req = command_frame(0, ops::VERSION.0, ops::VERSION.1, &[]);
    let mut body = Vec::with_capacity(expected.len());
    let mut outstanding = std::collections::VecDeque::with_capacity(window);
    let (mut sent, mut received) = (0usize, 0usize);
    let t0 = Instant::now();
    while received < n {
        while sent < n && outstanding.len() < window {
            let id = c.next_id();
            req[4..8].copy_from_slice(&id.to_be_bytes());
            c.write_all(&req)?;
            outstanding.push_back(id);
            sent += 1;
        }
        let h = c.read_header()?;
        let want = outstanding.pop_front().unwrap_or(0);
        check_reply(&h, want, ops::VERSION.0, ops::VERSION.1)?;
        c.read_body(&h, &mut body)?;
        if body != expected {
            return Err(ClientError::Content("a pipelined Version reply differs".into()));
        }
        received += 1;
    }
    Ok(t0.elapsed())
}

/// `n` AllClasses; time, reply bytes, and the class count (first and last reply parsed).
fn all_classes(c: &mut BlockingClient, n: usize, ids: &IdSizes) -> Result<(Duration, u64, usize), ClientError> {
    let mut body = Vec::new();
    let (mut bytes, mut classes) = (0u64, 0usize);
    let t0 = Instant::now();
    for i in 0..n {
        let id = c.send(ops::ALL_CLASSES.0, ops::ALL_CLASSES.1, &[])?;
        let h = c.read_reply(id, ops::ALL_CLASSES.0, ops::ALL_CLASSES.1, &mut body)?;
        bytes += u64::from(h.len);
        if i == 0 || i + 1 == n {
            classes = ops::count_classes(&body, ids)?;
        }
    }
    Ok((t0.elapsed(), bytes, classes))
}

/// `n` GetValues of the whole array, each checked byte by byte as it streams in.
fn array_values(c: &mut BlockingClient, n: usize, arr: BigArray, ids: &IdSizes) -> Result<(Duration, u64), ClientError> {
    let q = ops::get_values_request(arr.id, ids.object, 0, arr.len);
    let mut bytes = 0u64;
    let t0 = Instant::now();
    for _ in 0..n {
        bytes += read_region(c, &q, 0, arr.len)?;
    }
    Ok((t0.elapsed(), bytes))
}

/// Sends one GetValues request and streams its reply through the checker; reply bytes.
pub fn read_region(c: &mut BlockingClient, request: &[u8], first: u32, count: u32) -> Result<u64, ClientError> {
    let id = c.send(ops::ARRAY_GET_VALUES.0, ops::ARRAY_GET_VALUES.1, request)?;
    let h = c.read_header()?;
    check_reply(&h, id, ops::ARRAY_GET_VALUES.0, ops::ARRAY_GET_VALUES.1)?;
    if h.body_len() != ByteRegionCheck::body_len(count) {
        return Err(ClientError::Content(format!("GetValues reply of {} bytes for {count} elements", h.body_len())));
    }
    let mut check = ByteRegionCheck::new(first, count);
    c.stream_body(h.body_len(), &mut |piece| check.feed(piece))?;
    check.finish()?;
    Ok(u64::from(h.len))
}

#[cfg(test)]
mod tests {
    //! The benchmark's client and checks against the kit's lean fake VMs.
    use std::sync::atomic::Ordering;

    use testkit::fake_vm::lean::{LeanConfig, LeanVms};
    use testkit::fake_vm::lean_wire::helo_reply;

    use super::*;
    use crate::jdwp_ops::{get_values_request, version_vm_name, DDM, VERSION};
    use testkit::wire::HEADER_LEN;

    fn connect(vms: &LeanVms) -> BlockingClient {
        BlockingClient::connect(vms.addrs[0], Duration::from_secs(10)).unwrap()
    }

    #[test]
    fn plain_vm_answers_what_the_benchmark_asks() {
        let vms = LeanVms::start(2, LeanConfig { ddm: false, thst_every: None, threads: 0 }).unwrap();
        assert_eq!(vms.addrs.len(), 2);
        let mut c = connect(&vms);
        let version = c.request(VERSION.0, VERSION.1, &[]).unwrap();
        assert_eq!(version_vm_name(&version).unwrap(), "Fake VM");
        assert_eq!(crate::jdwp_ops::id_sizes(&mut c).unwrap().object, 8);
        let (_, samples) = latency(&mut c, 10, &version).unwrap();
        assert_eq!(samples.len(), 10);
        pipelined(&mut c, 100, 16, &version).unwrap();
        let bytes = read_region(&mut c, &get_values_request(1, 8, 7, 300_000), 7, 300_000).unwrap();
        assert_eq!(bytes, (HEADER_LEN + 5 + 300_000) as u64);
        // A plain VM knows no DDM; unknown commands get NOT_IMPLEMENTED.
        let id = c.send(DDM.0, DDM.1, b"HELO\0\0\0\x04\0\0\0\x01").unwrap();
        let h = c.read_header().unwrap();
        assert!(matches!(check_reply(&h, id, DDM.0, DDM.1), Err(ClientError::Jdwp { code: 99, .. })));
        assert_eq!(vms.shared.helo.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn ddm_vm_says_dalvik_answers_helo_and_floods_thst() {
        let vms = LeanVms::start(1, LeanConfig { ddm: true, thst_every: None, threads: 3 }).unwrap();
        let mut c = connect(&vms);
        let version = c.request(VERSION.0, VERSION.1, &[]).unwrap();
        assert_eq!(version_vm_name(&version).unwrap(), "Dalvik");
        let helo = c.request(DDM.0, DDM.1, b"HELO\0\0\0\x04\0\0\0\x01").unwrap();
        assert_eq!(helo, helo_reply(0));
        assert_eq!(vms.shared.helo.load(Ordering::SeqCst), 1);
        vms.flood(300);
        let mut body = Vec::new();
        for i in 0..300u32 {
            let h = c.read_header().unwrap();
            assert!(!h.is_reply());
            assert_eq!((h.id, h.a, h.b), (0x8000_0001 + i, DDM.0, DDM.1));
            c.read_body(&h, &mut body).unwrap();
            assert_eq!(&body[..4], b"THST");
            assert_eq!(body.len(), 8 + 4 + 3 * 17);
        }
        // Replies still come while nothing else is queued.
        latency(&mut c, 5, &version).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while vms.shared.thst_written.load(Ordering::SeqCst) < 300 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(vms.shared.thst_written.load(Ordering::SeqCst), 300);
    }
}
