//! Many idle DDM VMs at once (RSS, CPU share, `jdwpmux list` time), and one VM flooding
//! THST chunks (decode-and-log rate, loss, and the latency of a debugger on the same VM).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use testkit::fake_vm::lean::{LeanConfig, LeanVms};
use crate::jdwp_ops::{self as ops};
use crate::jvm_suite::latency;
use crate::paths::CpuMeter;
use crate::procs::{ensure_nofile, status_kib};
use crate::proxy::{LogFollower, Proxy, ProxyBin};
use crate::stats::percentile;
use testkit::blocking_client::BlockingClient;

#[derive(Debug, Clone)]
pub struct ScaleResult {
    pub vms: usize,
    /// VMs the proxy probed with HELO (all of them, unless `probe_error`).
    pub probed: usize,
    /// Why not every VM was probed; the figures are then of a partly probed proxy.
    pub probe_error: Option<String>,
    /// From the proxy's start until every VM was probed with HELO (or probing gave up).
    pub probe_all: Duration,
    /// Time waited after that for the proxy to go quiet (bounded by `settle`).
    pub settled: Duration,
    pub rss_kib: Option<u64>,
    pub peak_rss_kib: Option<u64>,
    /// CPU time over wall time in the window (1.0 = one core).
    pub cpu_share: Option<f64>,
    /// Median wall time of `jdwpmux list`, or why there is none.
    pub list_ms: std::result::Result<f64, String>,
    /// The same window with the monitor page open on the first VM (None: no `--web`).
    pub page: Option<std::result::Result<PageResult, String>>,
}

/// What an open monitor page costs the proxy.
#[derive(Debug, Clone)]
pub struct PageResult {
    /// CPU time over wall time in the window (1.0 = one core).
    pub cpu_share: Option<f64>,
    /// Events the page received in the window: list updates, thread tables.
    pub vms_events: u64,
    pub threads_events: u64,
    /// Bytes the page received per second in the window.
    pub bytes_per_s: f64,
}

/// Time the page is given to load (the first full list) before the window starts.
const PAGE_SETTLE: Duration = Duration::from_secs(3);

/// Opens the monitor page on the first VM and measures the proxy's CPU over `window`.
fn page_open(proxy: &Proxy, window: Duration) -> Result<PageResult> {
    use std::sync::atomic::Ordering::Relaxed;
    let (addr, token) = crate::web_page::monitor_in_log(&proxy.log).context("no \"monitor at\" line in the proxy's log")?;
    let page = crate::web_page::open(addr, &token, 0)?;
    std::thread::sleep(PAGE_SETTLE);
    let seen = page.seen.clone();
    let before = (seen.vms.load(Relaxed), seen.threads.load(Relaxed), seen.bytes.load(Relaxed));
    let (meter, t0) = (CpuMeter::start(Some(proxy.pid())), Instant::now());
    std::thread::sleep(window);
    let (used, wall) = (meter.ns(), t0.elapsed());
    let after = (seen.vms.load(Relaxed), seen.threads.load(Relaxed), seen.bytes.load(Relaxed));
    page.close()?;
    let r = PageResult {
        cpu_share: used.map(|ns| ns as f64 / 1e9 / wall.as_secs_f64()),
        vms_events: after.0 - before.0,
        threads_events: after.1 - before.1,
        bytes_per_s: (after.2 - before.2) as f64 / wall.as_secs_f64(),
    };
    if seen.vms.load(Relaxed) == 0 || r.threads_events == 0 {
        bail!("the page got {} VM lists and {} thread tables in {window:?}", seen.vms.load(Relaxed), r.threads_events);
    }
    Ok(r)
}

/// Waits for `cond`, failing with `what` after `limit`.
fn wait_for(what: &str, limit: Duration, cond: &mut dyn FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + limit;
    while !cond()? {
        if Instant::now() > deadline {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Probing that makes no progress for this long has failed.
const STALLED: Duration = Duration::from_secs(30);

/// Below this CPU share over one second the proxy counts as idle (the target's bound: a
/// proxy that never gets there is measured after the longest settle time anyway).
const QUIET_SHARE: f64 = 0.05;

/// Waits (up to `limit`) for a one-second slice in which `pid` uses less than QUIET_SHARE
/// of a core, so start-up work (connecting, probing) stays out of the idle window; a proxy
/// that never goes quiet is measured anyway.
fn settle(pid: u32, limit: Duration) -> Duration {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        let meter = CpuMeter::start(Some(pid));
        let s0 = Instant::now();
        std::thread::sleep(Duration::from_secs(1));
        match meter.ns() {
            Some(ns) if (ns as f64 / 1e9) / s0.elapsed().as_secs_f64() < QUIET_SHARE => break,
            None => break,
            _ => {}
        }
    }
    t0.elapsed()
}

pub fn scale(bin: &ProxyBin, n: usize, settle_limit: Duration, window: Duration) -> Result<ScaleResult> {
    // The fake VMs live in this process: a listener and a connection each.
    ensure_nofile(2 * n as u64 + 512)?;
    let cfg = LeanConfig { ddm: true, thst_every: Some(Duration::from_millis(500)), threads: 8 };
    let vms = LeanVms::start(n, cfg)?;
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let web: &[&str] = if bin.has_web { &["--web", "127.0.0.1:0"] } else { &[] };
    let mut proxy = Proxy::start_with(bin, &vms.addrs, dir.path(), web, &[])?;
    let limit = Duration::from_secs(60 + n as u64 / 4);
    let shared = vms.shared.clone();
    let alive = |p: &mut Proxy| -> Result<()> {
        match p.proc.exited() {
            Some(st) => bail!("jdwpmux exited ({st}); log:\n{}", p.log_tail(3000)),
            None => Ok(()),
        }
    };
    // Fails early when probing stops making progress, and says what the proxy complained of.
    let (mut last, mut moved) = (0usize, Instant::now());
    let waited = wait_for(&format!("{n} VMs to get HELO"), limit, &mut || {
        alive(&mut proxy)?;
        let helo = shared.helo.load(Ordering::SeqCst);
        if helo != last {
            (last, moved) = (helo, Instant::now());
        } else if moved.elapsed() > STALLED {
            bail!("no VM was probed for {STALLED:?}");
        }
        Ok(helo >= n)
    });
    // Not every VM probed is a functional failure, but the figures are still worth having.
    let probe_error = waited.err().map(|e| {
        let helo = shared.helo.load(Ordering::SeqCst);
        format!("{helo} of {n} VMs probed with HELO ({e}); proxy warnings: {}", proxy.warn_summary(3))
    });
    let probe_all = started.elapsed();
    let pid = proxy.pid();
    let settled = settle(pid, settle_limit);
    let (meter, t0) = (CpuMeter::start(Some(pid)), Instant::now());
    std::thread::sleep(window);
    let (used, wall) = (meter.ns(), t0.elapsed());
    alive(&mut proxy)?;
    let cpu_share = used.map(|ns| ns as f64 / 1e9 / wall.as_secs_f64());
    let rss_kib = status_kib(pid, "VmRSS");
    let peak_rss_kib = status_kib(pid, "VmHWM");
    let list_ms = if bin.has_list { time_list(bin, &proxy, n) } else { Err("n/a (control interface not built yet)".into()) };
    let page = bin.has_web.then(|| page_open(&proxy, window).map_err(|e| format!("{e:#}")));
    alive(&mut proxy)?;
    let live = shared.live.load(Ordering::SeqCst);
    proxy.stop();
    if live < n {
        bail!("only {live} of {n} VM connections stayed up during the window");
    }
    let probed = shared.helo.load(Ordering::SeqCst);
    Ok(ScaleResult { vms: n, probed, probe_error, probe_all, settled, rss_kib, peak_rss_kib, cpu_share, list_ms, page })
}

/// Median of three `jdwpmux list` runs against this proxy; each must list every VM.
fn time_list(bin: &ProxyBin, proxy: &Proxy, n: usize) -> std::result::Result<f64, String> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut cmd = std::process::Command::new(&bin.path);
        if bin.has_control {
            cmd.arg("--control").arg(&proxy.control);
        }
        let t0 = Instant::now();
        let out = cmd.arg("list").output().map_err(|e| format!("run list: {e}"))?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if !out.status.success() {
            return Err(format!("list failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let rows = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("127.0.0.1:")).count();
        if rows < n {
            return Err(format!("list showed {rows} of {n} VMs"));
        }
        times.push(ms);
    }
    crate::stats::median(&times).ok_or_else(|| "no list runs".into())
}

#[derive(Debug, Clone)]
pub struct DdmResult {
    pub sent: u64,
    pub logged: u64,
    pub malformed: u64,
    pub chunks_per_s: f64,
    pub round_trips: usize,
    pub rtt_p99_us: f64,
    pub rtt_max_us: f64,
    /// The fake VM's own longest reply delay: what of the max is not the proxy's.
    pub vm_max_reply_us: f64,
    /// Proxy CPU per logged chunk during the flood.
    pub cpu_us_per_chunk: Option<f64>,
}

/// A THST line the proxy logged for a chunk from the VM; `Some(false)` for a malformed one.
pub fn thst_line(line: &[u8]) -> Option<bool> {
    let has = |pat: &[u8]| line.windows(pat.len()).any(|w| w == pat);
    if !has(b"THST") || !has(b"<-") {
        return None;
    }
    Some(!(has(b" WARN ") || has(b" ERROR ") || has(b"malformed")))
}

/// THST lines seen in the proxy log: decoded, and reported malformed.
#[derive(Debug, Default, Clone, Copy)]
struct ThstCount {
    ok: u64,
    bad: u64,
}

impl ThstCount {
    fn poll(&mut self, f: &mut LogFollower) -> Result<()> {
        f.poll(&mut |l| match thst_line(l) {
            Some(true) => self.ok += 1,
            Some(false) => self.bad += 1,
            None => {}
        })
    }

    fn total(&self) -> u64 {
        self.ok + self.bad
    }
}

pub fn ddm_flood(bin: &ProxyBin, chunks: u64, threads: u16) -> Result<DdmResult> {
    let vms = LeanVms::start(1, LeanConfig { ddm: true, thst_every: None, threads })?;
    let dir = tempfile::tempdir()?;
    let mut proxy = Proxy::start(bin, &vms.addrs, dir.path())?;
    let shared = vms.shared.clone();
    wait_for("the VM to get HELO", Duration::from_secs(30), &mut || Ok(shared.helo.load(Ordering::SeqCst) >= 1))?;
    let mut c = BlockingClient::connect(std::net::SocketAddr::from(([127, 0, 0, 1], proxy.current_port)), Duration::from_secs(10))?;
    let version = c.request(ops::VERSION.0, ops::VERSION.1, &[])?;
    if ops::version_vm_name(&version)? != "Dalvik" {
        bail!("the debugger did not reach the fake VM");
    }
    let mut follow = LogFollower::open(&proxy.log)?;
    let mut count = ThstCount::default();
    count.poll(&mut follow)?;
    let base = count;

    // The debugger keeps doing round trips on the same VM for as long as the flood lasts.
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let debugger = std::thread::spawn(move || {
        let mut samples = Vec::new();
        while !flag.load(Ordering::SeqCst) {
            let (_, s) = latency(&mut c, 1, &version)?;
            samples.extend(s);
        }
        Ok::<_, testkit::blocking_client::ClientError>((samples, c))
    });
    let cpu = CpuMeter::start(Some(proxy.pid()));
    let t0 = Instant::now();
    vms.flood(chunks);
    let (mut last, mut last_change) = (0u64, Instant::now());
    let mut done_at = t0;
    loop {
        count.poll(&mut follow)?;
        let got = count.total() - base.total();
        if got != last {
            last = got;
            last_change = Instant::now();
            done_at = last_change;
        }
        if got >= chunks || last_change.elapsed() > Duration::from_secs(10) || proxy.proc.exited().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let cpu_ns = cpu.ns();
    stop.store(true, Ordering::SeqCst);
    let joined = debugger.join().map_err(|_| anyhow::anyhow!("the debugger thread panicked"))?;
    let (mut samples, client) = joined.context("debugger session during the flood")?;
    proxy.stop();
    drop(client);
    let logged = count.ok - base.ok;
    let secs = (done_at - t0).as_secs_f64().max(1e-6);
    Ok(DdmResult {
        sent: shared.thst_written.load(Ordering::SeqCst),
        logged,
        malformed: count.bad - base.bad,
        chunks_per_s: logged as f64 / secs,
        round_trips: samples.len(),
        rtt_p99_us: percentile(&mut samples, 99.0).map_or(f64::NAN, |v| f64::from(v) / 1e3),
        rtt_max_us: samples.iter().max().map_or(f64::NAN, |v| f64::from(*v) / 1e3),
        vm_max_reply_us: shared.max_reply_ns.load(Ordering::SeqCst) as f64 / 1e3,
        cpu_us_per_chunk: cpu_ns.filter(|_| logged > 0).map(|ns| ns as f64 / 1e3 / logged as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thst_lines() {
        let cases: [(&[u8], Option<bool>); 5] = [
            (b"2026 INFO vm{vm=127.0.0.1:5}: jdwpmux::session::ddm_glue: THST 8 threads dir=\"<-\"", Some(true)),
            (b"2026  WARN vm: malformed DDM chunk: THST too short dir=\"<-\"", Some(false)),
            (b"2026 INFO vm: THST interval=500ms dir=\"->\"", None),
            (b"2026 INFO vm: HELO version=1 dir=\"<-\"", None),
            (b"", None),
        ];
        for (line, want) in cases {
            assert_eq!(thst_line(line), want, "{}", String::from_utf8_lossy(line));
        }
    }
}
