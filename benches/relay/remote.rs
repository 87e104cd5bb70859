//! The `remote` section: JVMs on other hosts through ssh (`jdwpmux serve --ssh HOST`), on
//! test hosts made for the run (network namespaces with sshd, `test_hosts`). Three parts:
//!
//! 1. one JVM on one host, reached through `ssh -L`, `ssh -W`, socat on a master's forward
//!    and jdwpmux (`remote_paths`): latency, pipelined requests and the 4 MiB array, paired
//!    runs alternating within each repetition, jdwpmux judged against the plain `ssh -L`
//!    forward;
//! 2. small JVMs on several hosts, all running before `serve --ssh` starts: how long until
//!    `jdwpmux list --json` lists them all, and until all are ready;
//! 3. one idle host with its JVMs: the CPU of the daemon and its ssh processes, and of the
//!    host's side (sshd, the session, its shell and what the scans run), over a window, and
//!    how many local processes that takes; the same for a master with an `ssh -W` per VM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::jvm::Debuggee;
use crate::proc_tree::{self, GroupTicks, Stat};
use crate::procs::status_kib;
use crate::proxy::{Proxy, ProxyBin};
use crate::remote_paths::{self as rp, Master, PathParams, RemoteKind, RemoteRun, Target};
use crate::report::{ratio_text, Rep};
use crate::stats::{fmt, fmt_opt, max, median, paired};
use crate::table::{Row, Table};
use crate::test_hosts::BenchHost;

/// Where the JVMs' agents listen on each host's loopback (one after another from here).
pub const VM_PORT: u16 = 8000;
/// jdwpmux's round trip may take this much longer than the plain forward's.
pub const LATENCY_VS_FORWARD: f64 = 1.05;
/// jdwpmux's pipelined rate and array throughput: at least this share of the forward's.
pub const RATE_VS_FORWARD: f64 = 0.95;
/// An idle host's cost, all processes on both sides, in % of one core.
pub const IDLE_CPU_PERCENT: f64 = 1.0;
/// How often `list --json` is asked while waiting for the hosts' JVMs.
const LIST_POLL: Duration = Duration::from_millis(20);
/// How often the idle window looks for processes come and gone.
const IDLE_SAMPLE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct RemoteParams {
    pub path: PathParams,
    pub hosts: usize,
    pub jvms_per_host: usize,
    /// "Listed within": None in smoke mode (no verdict).
    pub listed_target: Option<Duration>,
    pub idle_window: Duration,
    /// Time after every VM is ready before the idle window starts.
    pub idle_settle: Duration,
}

impl RemoteParams {
    pub fn new(smoke: bool) -> RemoteParams {
        if smoke {
            return RemoteParams {
                path: PathParams { warmup: 50, latency_n: 300, pipelined_n: 500, window: 16, array_n: 2 },
                hosts: 2,
                jvms_per_host: 2,
                listed_target: None,
                idle_window: Duration::from_secs(3),
                idle_settle: Duration::from_millis(500),
            };
        }
        RemoteParams {
            path: PathParams { warmup: 2_000, latency_n: 20_000, pipelined_n: 50_000, window: 16, array_n: 20 },
            hosts: 4,
            jvms_per_host: 5,
            listed_target: Some(Duration::from_secs(3)),
            idle_window: Duration::from_secs(30),
            idle_settle: Duration::from_secs(5),
        }
    }
}

/// Records a functional failure: what, and why.
pub type Fail<'a> = &'a mut dyn FnMut(&str, String);

/// Runs the section; when it cannot (no test hosts here), a failure, or skipped when allowed
/// (`test_hosts::can_run`).
pub fn run(bin: &ProxyBin, p: &RemoteParams, reps: usize, warmup: usize, t: &mut Table, fail: Fail) {
    if !crate::test_hosts::can_run("remote", fail) {
        return;
    }
    if !bin.has_control || !bin.has_list {
        eprintln!("remote: skipped, {} has no --control or no list", bin.path.display());
        return;
    }
    let made = crate::test_hosts::keys().and_then(|k| Ok((k, Debuggee::compile(0)?)));
    let (keys, prog) = match made {
        Ok(m) => m,
        Err(e) => return fail("remote: set-up", format!("{e:#}")),
    };
    paths_part(bin, &keys, &prog, p, reps, warmup, t, fail);
    let mut hosts = match start_hosts(&keys, &prog, p) {
        Ok(h) => h,
        Err(e) => return fail("remote: test hosts", format!("{e:#}")),
    };
    listing_part(bin, &keys, &mut hosts, p, reps, warmup, t, fail);
    // The idle host alone: the others and their JVMs go first.
    hosts.truncate(1);
    if let Some(h) = hosts.first_mut() {
        idle_part(bin, &keys, h, p, t, fail);
    }
}

const COLUMNS: [&str; 4] = ["ssh -L", "ssh -W", "socat + fwd", "jdwpmux --ssh"];

#[allow(clippy::too_many_arguments)]
fn paths_part(bin: &ProxyBin, keys: &testkit::testhost::Keys, prog: &Arc<Debuggee>, p: &RemoteParams, reps: usize, warmup: usize, t: &mut Table, fail: Fail) {
    eprintln!("remote: a test host with the HotSpot debuggee ...");
    let mut host = match BenchHost::start(keys, "bench").and_then(|mut h| {
        h.launch(prog, VM_PORT, false)?;
        h.wait_ready(Duration::from_secs(120))?;
        Ok(h)
    }) {
        Ok(h) => h,
        Err(e) => return fail("remote: the debuggee's host", format!("{e:#}")),
    };
    let target = Target { config: keys.ssh_config(), host: host.alias().to_string(), port: VM_PORT };
    let mut all: Vec<Rep<RemoteRun>> = Vec::new();
    for rep in 0..warmup + reps {
        let Some(jvm) = host.jvms.first_mut() else { return };
        if !jvm.alive() {
            return fail(&format!("remote repetition {rep}"), "the debuggee on the test host died".into());
        }
        let mut row: Rep<RemoteRun> = Default::default();
        for kind in RemoteKind::order(rep) {
            match rp::run(kind, jvm, &target, bin, &p.path) {
                Ok(r) => row[kind.column()] = Some(r),
                Err(e) => fail(&format!("remote repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let lat = rp::REMOTE_PATHS.map(|k| row[k.column()].as_ref().map_or("-".into(), |r| fmt(r.latency_us)));
        let tag = if rep < warmup { " (warm-up, discarded)" } else { "" };
        eprintln!("remote repetition {rep}{tag}: latency µs ssh -L / ssh -W / socat + fwd / jdwpmux = {}", lat.join(" / "));
        if rep >= warmup {
            all.push(row);
        }
    }
    path_rows(t, &all, &p.path, &bin.extra);
}

/// Per repetition, one figure of the path in `column`.
fn col(reps: &[Rep<RemoteRun>], column: usize, f: &dyn Fn(&RemoteRun) -> Option<f64>) -> Vec<Option<f64>> {
    reps.iter().map(|r| r[column].as_ref().and_then(f)).collect()
}

#[derive(Clone, Copy)]
enum Judge {
    Info,
    /// jdwpmux / ssh -L, smaller is better.
    Lower(f64),
    /// jdwpmux / ssh -L, larger is better.
    Higher(f64),
}

/// Medians per path, and jdwpmux / `ssh -L` paired per repetition.
fn row(metric: &str, reps: &[Rep<RemoteRun>], judge: Judge, f: &dyn Fn(&RemoteRun) -> Option<f64>) -> Row {
    let med = |c: usize| median(&col(reps, c, f).into_iter().flatten().collect::<Vec<_>>());
    let cells = [fmt_opt(med(0)), fmt_opt(med(1)), fmt_opt(med(2)), fmt_opt(med(3))];
    let ratios = paired(&col(reps, 3, f), &col(reps, 0, f));
    let r = Row::new(metric, cells);
    if ratios.is_empty() {
        return r;
    }
    let text = format!("{} x ssh -L", ratio_text(&ratios));
    let m = median(&ratios);
    match judge {
        Judge::Info => r.judged(text, "", None),
        Judge::Lower(l) => r.judged(text, &format!("<= {l:.2} x ssh -L"), m.map(|m| m <= l)),
        Judge::Higher(l) => r.judged(text, &format!(">= {l:.2} x ssh -L"), m.map(|m| m >= l)),
    }
}

/// jdwpmux against socat on the same transport: what jdwpmux does in its hop, apart from the
/// hop itself.
fn vs_socat_row(metric: &str, reps: &[Rep<RemoteRun>], f: &dyn Fn(&RemoteRun) -> Option<f64>) -> Row {
    let ratios = paired(&col(reps, 3, f), &col(reps, 2, f));
    let r = Row::new(metric, [String::new(), String::new(), String::new(), String::new()]);
    if ratios.is_empty() {
        return r;
    }
    r.judged(format!("{} x socat + fwd", ratio_text(&ratios)), "", None)
}

fn path_rows(t: &mut Table, reps: &[Rep<RemoteRun>], p: &PathParams, extra: &[String]) {
    if reps.iter().all(|r| r.iter().all(Option::is_none)) {
        return;
    }
    let args = if extra.is_empty() { "its defaults".to_string() } else { format!("JDWPMUX_ARGS {}", extra.join(" ")) };
    t.section(&format!(
        "a JVM on an ssh test host (network namespace, veth, sshd), jdwpmux at {args}, {} repetitions, medians; ratio = jdwpmux / ssh -L, median of per-repetition ratios (range)",
        reps.len()
    ));
    t.columns(COLUMNS);
    let latency = |r: &RemoteRun| Some(r.latency_us);
    let rate = |r: &RemoteRun| Some(r.pipelined_rps);
    let array = |r: &RemoteRun| Some(r.array_mbps);
    t.push(row(&format!("latency µs per round trip ({} Version)", p.latency_n), reps, Judge::Lower(LATENCY_VS_FORWARD), &latency));
    t.push(vs_socat_row("latency: jdwpmux / socat on the same forward", reps, &latency));
    t.push(row("latency p99 µs", reps, Judge::Info, &|r| Some(r.latency_p99_us)));
    t.push(row(&format!("pipelined requests/s (window {})", p.window), reps, Judge::Higher(RATE_VS_FORWARD), &rate));
    t.push(vs_socat_row("pipelined: jdwpmux / socat on the same forward", reps, &rate));
    t.push(row(&format!("4 MiB byte[] GetValues MB/s ({} replies)", p.array_n), reps, Judge::Higher(RATE_VS_FORWARD), &array));
    t.push(vs_socat_row("4 MiB array: jdwpmux / socat on the same forward", reps, &array));
    t.push(row("connect + handshake ms", reps, Judge::Info, &|r| Some(r.connect_ms)));
    t.push(row("local CPU µs per round trip (ssh; master + ssh -W; master + socat; daemon + master)", reps, Judge::Info, &|r| r.cpu_rt_us));
    t.push(row("local CPU µs per pipelined request", reps, Judge::Info, &|r| r.cpu_req_us));
    t.push(row("local CPU ms per MB, 4 MiB array", reps, Judge::Info, &|r| r.cpu_array_ms_per_mb));
    let daemon = |f: &dyn Fn(&RemoteRun) -> Option<f64>| fmt_opt(median(&col(reps, 3, f).into_iter().flatten().collect::<Vec<_>>()));
    t.push(Row::proxy_only("of which jdwpmux's daemon: µs per round trip", daemon(&|r| r.daemon_rt_us)));
    t.push(Row::proxy_only("of which jdwpmux's daemon: µs per pipelined request", daemon(&|r| r.daemon_req_us)));
    t.push(Row::proxy_only("of which jdwpmux's daemon: ms per MB, 4 MiB array", daemon(&|r| r.daemon_array_ms_per_mb)));
}

/// `p.hosts` hosts `h1`.. with `p.jvms_per_host` small JVMs each, all ready.
fn start_hosts(keys: &testkit::testhost::Keys, prog: &Arc<Debuggee>, p: &RemoteParams) -> Result<Vec<BenchHost>> {
    eprintln!("remote: {} test hosts with {} JVMs each ...", p.hosts, p.jvms_per_host);
    let mut hosts = Vec::new();
    for i in 1..=p.hosts {
        let mut h = BenchHost::start(keys, &format!("h{i}"))?;
        for j in 0..p.jvms_per_host {
            h.launch(prog, VM_PORT + j as u16, true)?;
        }
        hosts.push(h);
    }
    for h in &mut hosts {
        h.wait_ready(Duration::from_secs(180))?;
    }
    Ok(hosts)
}

/// Each JVM of `hosts` is free (its agent listens) and will have one more session.
pub fn next_session(hosts: &mut [BenchHost]) -> Result<()> {
    for h in hosts {
        for j in &mut h.jvms {
            j.wait_free(Duration::from_secs(30))?;
            j.session_ended();
        }
    }
    Ok(())
}

/// How many rows of `list --json` are VMs of ssh hosts, and how many of those are ready.
pub fn count_ssh_rows(rows: &[serde_json::Value]) -> (usize, usize) {
    let ssh: Vec<&serde_json::Value> = rows.iter().filter(|r| r["source"] == "ssh").collect();
    (ssh.len(), ssh.iter().filter(|r| r["state"] == "ready").count())
}

/// `serve --ssh` of every host, started now: seconds until `list` shows `total` VMs of ssh
/// hosts, and until all of them are ready.
fn listing_once(bin: &ProxyBin, keys: &testkit::testhost::Keys, aliases: &[&str], total: usize) -> Result<(f64, f64)> {
    let dir = tempfile::tempdir()?;
    let args = bin.serve_ssh_args(aliases, &keys.ssh_config(), dir.path());
    let t0 = Instant::now();
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &[], 256, 0)?;
    let mut listed = None;
    let result = loop {
        let rows = proxy.list_json(bin)?;
        let (n, ready) = count_ssh_rows(&rows);
        if listed.is_none() && n >= total {
            listed = Some(t0.elapsed().as_secs_f64());
        }
        if let (Some(l), true) = (listed, ready >= total) {
            break Ok((l, t0.elapsed().as_secs_f64()));
        }
        if t0.elapsed() > Duration::from_secs(60) {
            break Err(anyhow::anyhow!("after 60 s jdwpmux lists {n} of {total} VMs, {ready} ready; log:\n{}", proxy.log_tail(3000)));
        }
        std::thread::sleep(LIST_POLL);
    };
    proxy.stop();
    result
}

#[allow(clippy::too_many_arguments)]
fn listing_part(bin: &ProxyBin, keys: &testkit::testhost::Keys, hosts: &mut [BenchHost], p: &RemoteParams, reps: usize, warmup: usize, t: &mut Table, fail: Fail) {
    let total = hosts.iter().map(|h| h.jvms.len()).sum::<usize>();
    let aliases: Vec<String> = hosts.iter().map(|h| h.alias().to_string()).collect();
    let aliases: Vec<&str> = aliases.iter().map(String::as_str).collect();
    // The JVMs' own start-up work is over before the clock starts.
    std::thread::sleep(p.idle_settle);
    let (mut listed, mut ready) = (Vec::new(), Vec::new());
    for rep in 0..warmup + reps {
        let got = next_session(hosts).and_then(|()| listing_once(bin, keys, &aliases, total));
        match got {
            Ok((l, r)) => {
                let tag = if rep < warmup { " (warm-up, discarded)" } else { "" };
                eprintln!("remote listing {rep}{tag}: {total} VMs listed after {} s, ready after {} s", fmt(l), fmt(r));
                if rep >= warmup {
                    listed.push(l);
                    ready.push(r);
                }
            }
            Err(e) => fail(&format!("remote listing {rep}"), format!("{e:#}")),
        }
    }
    if listed.is_empty() {
        return;
    }
    t.section(&format!(
        "{total} JVMs on {} ssh test hosts, all running before `serve --ssh` x{} starts (a scan every 2 s); `list --json` every {} ms; {} repetitions",
        hosts.len(),
        hosts.len(),
        LIST_POLL.as_millis(),
        listed.len()
    ));
    t.columns(COLUMNS);
    let spread = |v: &[f64]| format!("{} (max {})", fmt_opt(median(v)), fmt_opt(max(v)));
    let m = median(&listed);
    let listed_row = Row::proxy_only(&format!("all {total} listed after s, median (max)"), spread(&listed));
    t.push(match p.listed_target {
        Some(limit) => listed_row.judged(String::new(), &format!("<= {} s", limit.as_secs_f64()), m.map(|m| m <= limit.as_secs_f64())),
        None => listed_row,
    });
    t.push(Row::proxy_only(&format!("all {total} ready after s, median (max)"), spread(&ready)));
}

/// What an idle host costs, over a window.
#[derive(Debug, Clone, Default)]
pub struct IdleCost {
    /// CPU time over wall time, 1.0 = one core: this machine's processes of the path, and
    /// the host's (all in its namespace but the JVMs).
    pub local: f64,
    pub host: f64,
    /// Most ssh processes on this machine seen at once, and all local processes besides a
    /// daemon.
    pub ssh_procs: usize,
    pub other_procs: Vec<String>,
    /// VmRSS of the local ssh processes at the end, KiB.
    pub ssh_rss_kib: u64,
    /// Most processes of the host (not the JVMs) seen at once.
    pub host_procs: usize,
    /// The host's share by command name (sshd, sh: the scans' commands are the shell's
    /// reaped children), largest first.
    pub host_by_name: Vec<(String, f64)>,
}

/// Measures `window`: `local()` lists the local processes (with `daemon`, whose own process
/// is not one of the helpers counted), the host's are those of namespace `ns` but `jvms`.
pub fn idle_cost(local: &dyn Fn() -> Vec<Stat>, daemon: Option<u32>, ns: &str, jvms: &[u32], window: Duration) -> IdleCost {
    let host = || proc_tree::netns_members(ns).into_iter().filter(|s| !jvms.contains(&s.pid)).collect::<Vec<_>>();
    let mut c = IdleCost::default();
    let look = |l: &[Stat], h: &[Stat], c: &mut IdleCost| {
        let helpers: Vec<&Stat> = l.iter().filter(|s| Some(s.pid) != daemon).collect();
        c.ssh_procs = c.ssh_procs.max(helpers.iter().filter(|s| s.comm == "ssh").count());
        for s in helpers.iter().filter(|s| s.comm != "ssh") {
            if !c.other_procs.contains(&s.comm) {
                c.other_procs.push(s.comm.clone());
            }
        }
        c.host_procs = c.host_procs.max(h.len());
    };
    let (l0, h0) = (local(), host());
    let (lt0, ht0, t0) = (GroupTicks::of(&l0), GroupTicks::of(&h0), Instant::now());
    look(&l0, &h0, &mut c);
    while t0.elapsed() < window {
        std::thread::sleep(IDLE_SAMPLE.min(window.saturating_sub(t0.elapsed())));
        look(&local(), &host(), &mut c);
    }
    let (l1, h1) = (local(), host());
    let (lt1, ht1, wall) = (GroupTicks::of(&l1), GroupTicks::of(&h1), t0.elapsed().as_secs_f64());
    look(&l1, &h1, &mut c);
    let tick = proc_tree::ticks_per_s() as f64;
    c.local = lt1.since(&lt0) as f64 / tick / wall;
    c.host = ht1.since(&ht0) as f64 / tick / wall;
    c.host_by_name = ht1.since_by_name(&ht0, &h1).into_iter().map(|(n, t)| (n, t as f64 / tick / wall)).collect();
    c.ssh_rss_kib = l1.iter().filter(|s| s.comm == "ssh").filter_map(|s| status_kib(s.pid, "VmRSS")).sum();
    c
}

/// jdwpmux serving the idle host: its daemon and the daemon's children.
fn idle_jdwpmux(bin: &ProxyBin, keys: &testkit::testhost::Keys, host: &mut BenchHost, p: &RemoteParams) -> Result<IdleCost> {
    next_session(std::slice::from_mut(host))?;
    let dir = tempfile::tempdir()?;
    let args = bin.serve_ssh_args(&[host.alias()], &keys.ssh_config(), dir.path());
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &[], 64, host.jvms.len())?;
    let n = host.jvms.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, ready) = count_ssh_rows(&proxy.list_json(bin)?);
        if ready >= n {
            break;
        }
        if Instant::now() > deadline {
            let log = proxy.log_tail(3000);
            proxy.stop();
            bail!("jdwpmux has {ready} of {n} VMs ready after 60 s; log:\n{log}");
        }
        std::thread::sleep(LIST_POLL);
    }
    std::thread::sleep(p.idle_settle);
    let daemon = proxy.pid();
    let cost = idle_cost(&|| proc_tree::with_children(daemon), Some(daemon), host.ns(), &host.jvm_pids(), p.idle_window);
    proxy.stop();
    Ok(cost)
}

/// The other design: one master and an `ssh -W` per VM connection, each connection open and
/// idle after a Version round trip (what a daemon holding each VM through `-W` would keep).
fn idle_stdio(keys: &testkit::testhost::Keys, host: &mut BenchHost, p: &RemoteParams) -> Result<IdleCost> {
    next_session(std::slice::from_mut(host))?;
    let t = |port| Target { config: keys.ssh_config(), host: host.alias().to_string(), port };
    let mut master = Master::start(&t(VM_PORT))?;
    let mut open = Vec::new();
    for port in host.jvms.iter().map(|j| j.port).collect::<Vec<_>>() {
        let (mut c, proc) = master.connect(&t(port))?;
        c.request(crate::jdwp_ops::VERSION.0, crate::jdwp_ops::VERSION.1, &[]).context("Version through ssh -W")?;
        open.push((c, proc));
    }
    std::thread::sleep(p.idle_settle);
    let mut pids = vec![master.pid()];
    pids.extend(open.iter().map(|(_, pr)| pr.pid()));
    let local = || pids.iter().filter_map(|p| proc_tree::stat(*p)).collect::<Vec<_>>();
    let cost = idle_cost(&local, None, host.ns(), &host.jvm_pids(), p.idle_window);
    for (c, mut pr) in open {
        drop(c);
        if !pr.wait_exit(Duration::from_secs(2)) {
            pr.kill();
        }
    }
    master.stop();
    Ok(cost)
}

fn idle_part(bin: &ProxyBin, keys: &testkit::testhost::Keys, host: &mut BenchHost, p: &RemoteParams, t: &mut Table, fail: Fail) {
    let n = host.jvms.len();
    eprintln!("remote: an idle host with {n} JVMs, {:?} windows ...", p.idle_window);
    let j = idle_jdwpmux(bin, keys, host, p).map_err(|e| fail("remote: idle host, jdwpmux", format!("{e:#}"))).ok();
    let w = idle_stdio(keys, host, p).map_err(|e| fail("remote: idle host, ssh -W", format!("{e:#}"))).ok();
    if j.is_none() && w.is_none() {
        return;
    }
    for (what, c) in [("jdwpmux", &j), ("ssh -W", &w)] {
        if let Some(c) = c {
            eprintln!("remote idle, {what}: local {} %, host {} %, {} ssh processes", fmt(c.local * 100.0), fmt(c.host * 100.0), c.ssh_procs);
        }
    }
    t.section(&format!(
        "an idle ssh host: {n} JVMs, all ready, then a {} s window; CPU = utime+stime+cutime+cstime of /proc/PID/stat over wall time; jdwpmux at {} (a scan every 2 s); ssh -W: a master and an idle `ssh -W` per VM, no scans",
        p.idle_window.as_secs_f64(),
        if bin.extra.is_empty() { "its defaults".to_string() } else { format!("JDWPMUX_ARGS {}", bin.extra.join(" ")) }
    ));
    t.columns(COLUMNS);
    let cells = |f: &dyn Fn(&IdleCost) -> String| [String::new(), w.as_ref().map_or("-".into(), f), String::new(), j.as_ref().map_or("-".into(), f)];
    let pct = |v: f64| fmt(v * 100.0);
    t.push(Row::new("idle: local CPU % of one core (daemon + its ssh; master + ssh -W)", cells(&|c| pct(c.local))));
    let by_name = |c: &IdleCost| {
        let parts: Vec<String> = c.host_by_name.iter().map(|(n, v)| format!("{n} {}", pct(*v))).collect();
        if parts.is_empty() { pct(c.host) } else { format!("{} ({})", pct(c.host), parts.join(", ")) }
    };
    t.push(Row::new("idle: host-side CPU % (sshd, session, shell and scans; not the JVMs)", cells(&by_name)));
    let total = j.as_ref().map(|c| (c.local + c.host) * 100.0);
    t.push(Row::new("idle: local + host-side CPU % of one core", cells(&|c| pct(c.local + c.host))).judged(
        String::new(),
        &format!("jdwpmux <= {IDLE_CPU_PERCENT} %"),
        total.map(|v| v <= IDLE_CPU_PERCENT),
    ));
    let procs = |c: &IdleCost| {
        let others = if c.other_procs.is_empty() { String::new() } else { format!(" + {}", c.other_procs.join(", ")) };
        format!("{}{others}", c.ssh_procs)
    };
    t.push(Row::new(&format!("idle: local ssh processes for {n} VMs"), cells(&procs)).judged(
        String::new(),
        "jdwpmux: 1 (one master a host)",
        j.as_ref().map(|c| c.ssh_procs == 1 && c.other_procs.is_empty()),
    ));
    t.push(Row::new("idle: RSS MiB of the local ssh processes", cells(&|c| fmt(c.ssh_rss_kib as f64 / 1024.0))));
    t.push(Row::new("idle: host-side processes (not the JVMs)", cells(&|c| c.host_procs.to_string())));
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
