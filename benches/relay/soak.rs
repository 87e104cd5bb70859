//! Load and soak: the daemon scans a range of ports holding hundreds of fake VMs, debuggers
//! attach across them (several per VM) and issue random pipelined commands for minutes while
//! VMs are killed and started elsewhere in the range and debuggers detach and reattach.
//! Every reply is checked against its request; the daemon's RSS and open files are sampled
//! at the start, middle and end, and its CPU is measured over the whole run.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use testkit::fake_vm::lean::{LeanConfig, LeanVms};
use crate::paths::CpuMeter;
use crate::procs::{ensure_nofile, status_kib};
use crate::proxy::{parse_listen_line, Listen, LogFollower, Proxy, ProxyBin};
use crate::soak_debugger::{self as debugger, Behaviour};
use crate::soak_world::{Counters, Rng, World};
use crate::stats::{fmt, percentile};

#[derive(Debug, Clone)]
pub struct SoakParams {
    /// VMs running at any time.
    pub vms: usize,
    /// Ports of the range with no VM at any time: where killed VMs come back.
    pub spare: usize,
    pub debuggers: usize,
    pub duration: Duration,
    pub behaviour: Behaviour,
    /// Pause between VM kills (each followed by a new VM on an empty port).
    pub churn: (Duration, Duration),
    /// Share of kills that hit a VM with debuggers attached.
    pub kill_debugged: f64,
    /// From the start of the load to the "start" sample.
    pub warmup: Duration,
    /// Interval of the RSS / open files series.
    pub sample_every: Duration,
    /// A started VM the daemon has not connected to after this long is a failure.
    pub find_limit: Duration,
}

impl SoakParams {
    pub fn new(smoke: bool, minutes: Option<f64>) -> SoakParams {
        let behaviour = |smoke: bool| Behaviour {
            think: if smoke { (ms(5), ms(50)) } else { (ms(20), ms(250)) },
            session: if smoke { (ms(500), ms(2000)) } else { (secs(5), secs(40)) },
            reply_timeout: secs(30),
        };
        let duration = minutes.map(|m| Duration::from_secs_f64(m * 60.0));
        if smoke {
            let duration = duration.unwrap_or(secs(6));
            return SoakParams {
                vms: 20,
                spare: 4,
                debuggers: 6,
                duration,
                behaviour: behaviour(true),
                churn: (ms(100), ms(400)),
                kill_debugged: 0.2,
                warmup: duration / 6,
                sample_every: ms(500),
                find_limit: secs(30),
            };
        }
        let duration = duration.unwrap_or(secs(600));
        SoakParams {
            vms: 500,
            spare: 25,
            debuggers: 50,
            duration,
            behaviour: behaviour(false),
            churn: (ms(500), ms(2000)),
            kill_debugged: 0.2,
            warmup: (duration / 10).min(secs(30)),
            sample_every: secs(10),
            find_limit: secs(30),
        }
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The daemon's resident memory and open files at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Duration,
    pub rss_kib: u64,
    pub fds: usize,
    /// VMs the daemon was connected to, debuggers attached (for reading the fd count).
    pub vms_connected: usize,
    pub debuggers: usize,
}

fn sample(pid: u32, at: Duration, world: &World) -> Option<Sample> {
    let rss_kib = status_kib(pid, "VmRSS")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    let (_, vms_connected) = world.live();
    let (debuggers, _, _) = world.sharing();
    Some(Sample { at, rss_kib, fds, vms_connected, debuggers })
}

/// Flat: the end no more than this above the middle. A daemon that keeps some KiB per
/// debugger session or per VM life grows by more within minutes of this churn.
pub const RSS_SLACK_KIB: u64 = 4 * 1024;
/// Flat: the end no more than this many open files above the middle (connections of VMs and
/// debuggers between two lives at the moment of a sample).
pub const FD_SLACK: usize = 25;

#[derive(Debug, Clone, Default)]
pub struct SoakResult {
    pub params_line: String,
    pub wall: Duration,
    pub done: u64,
    pub mismatched: u64,
    pub lost: u64,
    pub cut: u64,
    pub vm_dead: u64,
    pub attaches: u64,
    pub shared_attaches: u64,
    pub attach_failed: u64,
    pub attach_raced: u64,
    pub detaches: u64,
    pub disposes: u64,
    pub sessions_cut: u64,
    pub sessions_dropped: u64,
    pub vms_killed: u64,
    pub vms_killed_debugged: u64,
    pub vms_started: u64,
    pub vms_found: u64,
    pub found_ms_median: Option<f64>,
    pub found_ms_max: Option<f64>,
    /// Most debuggers on one VM, and most VMs with 2+ debuggers, seen at the samples.
    pub most_per_vm: usize,
    pub most_shared_vms: usize,
    pub burst_p50_ms: f64,
    pub burst_p99_ms: f64,
    pub burst_max_ms: f64,
    pub samples: Vec<Sample>,
    pub start: Option<Sample>,
    pub middle: Option<Sample>,
    pub end: Option<Sample>,
    /// Daemon CPU over wall time from the start sample to the end one (1.0 = one core).
    pub cpu_share: Option<f64>,
    /// This benchmark's own CPU share over the same time (fake VMs and debuggers).
    pub bench_cpu_share: Option<f64>,
    pub panics_in_log: usize,
    pub notes: Vec<String>,
    /// Why the run counts as failed (empty: it passed).
    pub failures: Vec<String>,
}

impl SoakResult {
    pub fn rate(&self) -> f64 {
        self.done as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    pub fn rss_flat(&self) -> Option<bool> {
        Some(self.end?.rss_kib <= self.middle?.rss_kib + RSS_SLACK_KIB)
    }

    pub fn fds_flat(&self) -> Option<bool> {
        Some(self.end?.fds <= self.middle?.fds + FD_SLACK)
    }
}

/// Fake VMs on `n` consecutive ports below the ephemeral range, all bindable now (an
/// ephemeral port could be taken by any connection meanwhile).
fn pick_ports(n: usize) -> Result<World> {
    let ephemeral_low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(32768);
    let mut base = 20000u16;
    while (base as usize) + n < ephemeral_low as usize {
        let ports: Vec<u16> = (base..base + n as u16).collect();
        if ports.iter().all(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok()) {
            let fakes = LeanVms::start(0, LeanConfig { ddm: false, thst_every: None, threads: 0 })?;
            return World::start(fakes, &ports).context("start the fake VMs");
        }
        base += n as u16 + 100;
    }
    bail!("no {n} free consecutive ports below {ephemeral_low}")
}

pub fn run(bin: &ProxyBin, p: &SoakParams) -> Result<SoakResult> {
    let total = p.vms + p.spare;
    // Listeners and the VM side of every connection live in this process.
    ensure_nofile(3 * total as u64 + 4 * p.debuggers as u64 + 512)?;
    let world = Arc::new(pick_ports(total)?);
    let ports = world.ports();
    let (first, last) = (ports[0], ports[ports.len() - 1]);
    let dir = tempfile::tempdir()?;
    let mut args = bin.serve_args(&[], dir.path());
    args.extend(["--scan".into(), format!("127.0.0.1:{first}-{last}"), "--no-adb".into()]);
    eprintln!("soak: {total} fake VMs on ports {first}-{last}; the daemon scans them ...");
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &[], total, 0)?;
    let pid = proxy.pid();
    let mut follow = LogFollower::open(&proxy.log)?;
    let setup_deadline = Instant::now() + Duration::from_secs(60 + total as u64 / 5);
    loop {
        follow.poll(&mut |line| {
            if let Some(Listen::Vm { port, vm }) = parse_listen_line(&String::from_utf8_lossy(line)) {
                if let Some(vm_port) = vm.rsplit_once(':').and_then(|(_, p)| p.parse().ok()) {
                    world.set_daemon_port(vm_port, port);
                }
            }
        })?;
        world.check_found();
        let (_, connected) = world.live();
        if world.daemon_ports_known() == total && connected == total {
            break;
        }
        if let Some(st) = proxy.proc.exited() {
            bail!("jdwpmux exited during the scan ({st}); log:\n{}", proxy.log_tail(3000));
        }
        if Instant::now() > setup_deadline {
            bail!("after the scan: {} of {total} debugger ports known, {connected} VMs connected; {}", world.daemon_ports_known(), proxy.warn_summary(3));
        }
        std::thread::sleep(ms(20));
    }
    eprintln!("soak: the daemon found all {total} VMs; killing {} so their ports are free for VMs to come back on", p.spare);
    let mut rng = Rng::seeded(0x50a6);
    for _ in 0..p.spare {
        world.kill_one(&mut rng, false);
    }
    let base = snapshot(&world.counters);

    let t0 = Instant::now();
    let debuggers: Vec<_> = (0..p.debuggers)
        .map(|i| {
            let (w, how) = (world.clone(), p.behaviour);
            std::thread::spawn(move || debugger::run(&w, i, how))
        })
        .collect();
    let churn = {
        let (w, p) = (world.clone(), p.clone());
        std::thread::spawn(move || churn(&w, &p))
    };
    let mut r = SoakResult {
        params_line: format!(
            "{} VMs running in a scanned range of {total} ports, {} debuggers (up to {} per VM), {} in flight per burst, think {:?}..{:?}, sessions {:?}..{:?}, a VM killed every {:?}..{:?}",
            p.vms,
            p.debuggers,
            crate::soak_world::MAX_SHARE,
            format_args!("1..{}", debugger::MAX_BURST),
            p.behaviour.think.0,
            p.behaviour.think.1,
            p.behaviour.session.0,
            p.behaviour.session.1,
            p.churn.0,
            p.churn.1
        ),
        ..Default::default()
    };
    let (mut next_sample, mut next_progress) = (t0 + p.warmup, t0 + secs(60));
    let mut meters: Option<(CpuMeter, CpuMeter, Instant)> = None;
    let (middle_at, end_at) = (t0 + p.warmup + (p.duration - p.warmup.min(p.duration)) / 2, t0 + p.duration);
    let mut failed_early = None;
    while Instant::now() < end_at {
        std::thread::sleep(ms(100));
        let now = Instant::now();
        let waited = world.check_found();
        if waited > p.find_limit {
            failed_early = Some(format!("a started VM was not found by the daemon within {:?}", p.find_limit));
            break;
        }
        if let Some(st) = proxy.proc.exited() {
            failed_early = Some(format!("jdwpmux exited during the run ({st}); log:\n{}", proxy.log_tail(3000)));
            break;
        }
        if now >= next_sample {
            next_sample += p.sample_every;
            if let Some(s) = sample(pid, now - t0, &world) {
                if meters.is_none() {
                    meters = Some((CpuMeter::start(Some(pid)), CpuMeter::start(Some(std::process::id())), now));
                    r.start = Some(s);
                }
                if r.middle.is_none() && now >= middle_at {
                    r.middle = Some(s);
                }
                let (_, shared, most) = world.sharing();
                r.most_per_vm = r.most_per_vm.max(most);
                r.most_shared_vms = r.most_shared_vms.max(shared);
                r.samples.push(s);
            }
        }
        if now >= next_progress {
            next_progress += secs(60);
            let c = &world.counters;
            let last = r.samples.last();
            eprintln!(
                "soak {:>4.0} s: {} commands, {} mismatched, {} lost, {} VMs killed, {} attaches; RSS {} MiB, {} fds",
                (now - t0).as_secs_f64(),
                Counters::get(&c.done) - base.0,
                Counters::get(&c.mismatched),
                Counters::get(&c.lost),
                Counters::get(&c.vms_killed) - base.1,
                Counters::get(&c.attaches),
                last.map_or("-".into(), |s| fmt(s.rss_kib as f64 / 1024.0)),
                last.map_or("-".into(), |s| s.fds.to_string()),
            );
        }
    }
    // The end figures are taken under load, before anything stops.
    if let Some(s) = sample(pid, t0.elapsed(), &world) {
        r.end = Some(s);
        r.samples.push(s);
    }
    if let Some((daemon, me, since)) = meters {
        let wall = since.elapsed().as_secs_f64();
        r.cpu_share = daemon.ns().map(|ns| ns as f64 / 1e9 / wall);
        r.bench_cpu_share = me.ns().map(|ns| ns as f64 / 1e9 / wall);
    }
    world.stop.store(true, Ordering::SeqCst);
    let mut rtts = Vec::new();
    for d in debuggers {
        rtts.extend(d.join().map_err(|_| anyhow::anyhow!("a debugger thread panicked"))?);
    }
    churn.join().map_err(|_| anyhow::anyhow!("the churn thread panicked"))?;
    r.wall = t0.elapsed();
    let alive_at_end = proxy.proc.exited().is_none();
    proxy.stop();
    let c = &world.counters;
    let g = Counters::get;
    (r.done, r.mismatched, r.lost, r.cut, r.vm_dead) = (g(&c.done) - base.0, g(&c.mismatched), g(&c.lost), g(&c.cut), g(&c.vm_dead));
    (r.attaches, r.shared_attaches, r.attach_failed, r.attach_raced) = (g(&c.attaches), g(&c.shared_attaches), g(&c.attach_failed), g(&c.attach_raced));
    (r.detaches, r.disposes, r.sessions_cut, r.sessions_dropped) = (g(&c.detaches), g(&c.disposes), g(&c.sessions_cut), g(&c.sessions_dropped));
    (r.vms_killed, r.vms_killed_debugged) = (g(&c.vms_killed) - base.1, g(&c.vms_killed_debugged));
    (r.vms_started, r.vms_found) = (g(&c.vms_started), g(&c.vms_found) - base.2);
    let found = world.found_ms();
    let found = &found[(base.2 as usize).min(found.len())..];
    r.found_ms_median = crate::stats::median(found);
    r.found_ms_max = crate::stats::max(found);
    let p50 = percentile(&mut rtts, 50.0);
    r.burst_p50_ms = p50.map_or(f64::NAN, |v| f64::from(v) / 1e3);
    r.burst_p99_ms = percentile(&mut rtts, 99.0).map_or(f64::NAN, |v| f64::from(v) / 1e3);
    r.burst_max_ms = rtts.iter().max().map_or(f64::NAN, |v| f64::from(*v) / 1e3);
    r.panics_in_log = std::fs::read_to_string(&proxy.log).map(|t| t.lines().filter(|l| l.contains("panicked")).count()).unwrap_or(0);
    r.notes = world.notes();
    if let Some(why) = failed_early {
        r.failures.push(why);
    }
    judge(&mut r, alive_at_end);
    Ok(r)
}

/// Counters that include the setup, to subtract: commands, VMs killed, VMs found.
fn snapshot(c: &Counters) -> (u64, u64, u64) {
    (Counters::get(&c.done), Counters::get(&c.vms_killed), Counters::get(&c.vms_found))
}

/// Kills a VM now and then and starts a new one on another free port of the range.
fn churn(world: &World, p: &SoakParams) {
    let mut rng = Rng::seeded(0xc4a2);
    while !world.stop.load(Ordering::Relaxed) {
        let wake = Instant::now() + rng.duration(p.churn);
        while Instant::now() < wake && !world.stop.load(Ordering::Relaxed) {
            std::thread::sleep((wake - Instant::now()).min(ms(100)));
        }
        if world.stop.load(Ordering::Relaxed) {
            return;
        }
        let debugged = rng.chance(p.kill_debugged);
        let killed = world.kill_one(&mut rng, debugged);
        if let Err(e) = world.start_one(&mut rng, killed) {
            world.note(format!("starting a VM: {e:#}"));
        }
    }
}

fn judge(r: &mut SoakResult, alive_at_end: bool) {
    let mut failures = Vec::new();
    let mut fail = |why: String| failures.push(why);
    if !alive_at_end {
        fail("the daemon was not running at the end".into());
    }
    if r.mismatched > 0 {
        fail(format!("{} replies mismatched", r.mismatched));
    }
    if r.lost > 0 {
        fail(format!("{} commands lost ({} sessions ended by the daemon while their VM ran)", r.lost, r.sessions_dropped));
    }
    if r.attach_failed > 0 {
        fail(format!("{} attaches failed while their VM was up", r.attach_failed));
    }
    if r.panics_in_log > 0 {
        fail(format!("{} panics in the daemon's log", r.panics_in_log));
    }
    if r.done == 0 || r.vms_found == 0 {
        fail(format!("no load: {} commands done, {} VMs found again", r.done, r.vms_found));
    }
    match (r.rss_flat(), r.fds_flat()) {
        (Some(rss), Some(fds)) => {
            if !rss {
                fail(format!("RSS not flat: end {} KiB, middle {} KiB", r.end.map_or(0, |s| s.rss_kib), r.middle.map_or(0, |s| s.rss_kib)));
            }
            if !fds {
                fail(format!("open files not flat: end {}, middle {}", r.end.map_or(0, |s| s.fds), r.middle.map_or(0, |s| s.fds)));
            }
        }
        _ => fail("no middle or end sample of the daemon's RSS and open files".into()),
    }
    r.failures.extend(failures);
}

#[cfg(test)]
#[path = "soak_tests.rs"]
mod tests;
