//! The far-side soak (`--only soak-far`, `--soak-far-minutes N`; three minutes in the smoke
//! run): a debug session through jdwpmux on the far side survives a bad link. A test host
//! behind a delay relay (25 ms each way in front of its sshd) runs `Tally.java`, an app that
//! logs its own values; `serve --ssh HOST --far always` here (`far_paths::start`); an IDE
//! (`soak_far_ide`) steps through the proxy's port for the whole run, every stop's frames,
//! variables, threads view, `this` and a toString() read and checked against the app's log,
//! and the log checked not to grow while the IDE holds the stop. Meanwhile, on a schedule
//! (`soak_far_check::schedule`): the link cut (the host's end of its veth down, then up), a
//! second debugger (`Attacher.java`, IntelliJ's attach: the class list, thread and class
//! requests, a breakpoint that never hits, a VM resume) attaching and leaving, and the far
//! side killed once (the near side starts another; the IDE attaches again). Sampled
//! throughout: serve's and the far side's RSS and open files, and from `jdwpmux stats
//! --json` the near answers that the VM's reply contradicted (`early_differed`) and the near
//! side's replay buffer (`links[].replay`: bytes held unacknowledged for a replay after a
//! cut, and the most held since the link started), judged flat (held at the end against
//! the level after the warm-up) and within the resume limit. The far side's own replay
//! buffer has no figure that reaches the near side, so it is not sampled.
//!
//! In the same run a second session (`soak_far_exec`): `Tally.java` in a rootful Podman
//! container reached by a second `serve --exec ... --far always`, stepped by a second IDE with
//! its own `Shared` and checked the same way against that app's log; the exec carrying its
//! link killed every few minutes (`Act::KillExec`) while that IDE holds a stop, which must
//! still be the VM's when serve has run the exec again; that serve's and the container's far
//! side's RSS and open files sampled and judged beside the others.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use testkit::delay_link::DelayLink;
use crate::far_paths::{self as fp, FarKind, FarWrapper, Path3};
use crate::failures::Failures;
use crate::params::Params;
use crate::procs::status_kib;
use crate::proxy::ProxyBin;
use crate::remote::VM_PORT;
use crate::remote_paths::Target;
use crate::soak_far_check::{flat, level_and_end, replay_flat, replay_level_and_end, replay_of, schedule, Act, Mem, Plan, Replay, FD_SLACK, REPLAY_BEYOND, REPLAY_FACTOR, REPLAY_SLACK, RSS_FACTOR, RSS_SLACK_KIB};
use crate::soak_far_exec::{self as exec, ExecRun, ExecSide, EXEC_HOST};
use crate::soak_far_ide::{self as ide, IdeCfg, IdeTotals, Shared};
use crate::stats::{fmt, fmt_opt, median};
use crate::table::{Row, Table};
use crate::test_hosts::BenchHost;

const TALLY_JAVA: &str = include_str!("Tally.java");
const STEP_DRIVER_JAVA: &str = include_str!("../../testkit/src/jdi/StepDriver.java");
const ATTACHER_JAVA: &str = include_str!("../../testkit/src/jdi/Attacher.java");

#[derive(Debug, Clone)]
pub struct SoakFarParams {
    pub plan: Plan,
    /// Samples before this are the warm-up: the level is the first one after it.
    pub warmup: Duration,
    pub delay: Duration,
    pub hold: Duration,
    pub step_limit: Duration,
}

impl SoakFarParams {
    pub fn new(smoke: bool, minutes: Option<f64>) -> SoakFarParams {
        let duration = minutes.map(|m| Duration::from_secs_f64(m * 60.0));
        let s = Duration::from_secs;
        if smoke {
            return SoakFarParams {
                plan: Plan { duration: duration.unwrap_or(s(180)), cut_every: s(40), cut_len: (s(5), s(5)), second_every: s(40), kill_at: 0.4, exec_kill_every: s(60), sample_every: s(30) },
                warmup: s(30),
                delay: Duration::from_millis(25),
                hold: Duration::from_millis(200),
                step_limit: s(120),
            };
        }
        SoakFarParams {
            plan: Plan { duration: duration.unwrap_or(s(1800)), cut_every: s(60), cut_len: (s(5), s(30)), second_every: s(180), kill_at: 0.5, exec_kill_every: s(300), sample_every: s(60) },
            warmup: s(180),
            delay: Duration::from_millis(25),
            hold: Duration::from_millis(300),
            step_limit: s(180),
        }
    }
}

/// The run's figures.
#[derive(Debug, Default)]
pub struct SoakFarRun {
    pub wall: Duration,
    pub ide: IdeTotals,
    pub cuts: Vec<Duration>,
    pub seconds: u64,
    pub seconds_failed: u64,
    pub kills: u64,
    pub far_restarted: bool,
    pub near: Vec<Mem>,
    pub far: Vec<Mem>,
    /// Most early answers contradicted by the VM's reply, seen at a sample.
    pub early_differed: Option<u64>,
    /// The session in the container, through `serve --exec`.
    pub exec: ExecRun,
    /// The near side's replay buffer for the host's link, at each sample.
    pub replay: Vec<Replay>,
    pub problems: Vec<String>,
}

pub(crate) fn section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let mut fail = |what: &str, why: String| f.add(what, why);
    if !crate::test_hosts::can_run("soak-far", &mut |w, y| fail(w, y)) {
        return;
    }
    let sp = &p.soak_far;
    eprintln!("soak-far: {:?} through jdwpmux on the far side, a link of +{} ms each way ...", sp.plan.duration, sp.delay.as_millis());
    let r = match run(bin, sp) {
        Ok(r) => r,
        Err(e) => return fail("soak-far", format!("{e:#}")),
    };
    rows(t, sp, &r);
    for why in r.problems.iter().take(20) {
        fail("soak-far", why.clone());
    }
    if r.problems.len() > 20 {
        fail("soak-far", format!("and {} more problems", r.problems.len() - 20));
    }
}

fn run(bin: &ProxyBin, sp: &SoakFarParams) -> Result<SoakFarRun> {
    let keys = crate::test_hosts::keys()?;
    let logs = tempfile::tempdir()?;
    let app_log = logs.path().join("tally.log");
    let app = crate::jvm::Debuggee::program("Tally", TALLY_JAVA, &[app_log.display().to_string()])?;
    let driver = crate::ide::compile_jdi("StepDriver", STEP_DRIVER_JAVA)?;
    let attacher = crate::ide::compile_jdi("Attacher", ATTACHER_JAVA)?;
    let wrapper = FarWrapper::new(&bin.path)?;
    let mut host = BenchHost::start(&keys, "soakfar")?;
    host.launch(&app, VM_PORT, false)?;
    host.wait_ready(Duration::from_secs(180))?;
    let link = DelayLink::start(SocketAddr::from((host.addr(), 22)), sp.delay)?;
    let alias = "soakfar-link";
    keys.add_host(alias, Ipv4Addr::LOCALHOST, "id_ed25519", &format!("  Port {}\n  HostKeyAlias {}\n", link.port(), host.addr()))?;
    let target = Target { config: keys.ssh_config(), host: alias.to_string(), port: VM_PORT };
    let (mut path, _) = fp::start(FarKind::Far, &target, bin, &wrapper)?;
    let Path3::Jdwpmux { proxy, .. } = &mut path else { anyhow::bail!("serve did not start") };
    let ns = host.ns().to_string();
    let mut side = ExecSide::start(bin, &app.out_dir()).context("the container's session")?;
    let shared = Arc::new(Shared::default());
    let in_ctr = Arc::new(Shared::tagged("the container's session: "));
    let cfg = IdeCfg {
        java_dir: driver.path().to_path_buf(),
        bin: bin.path.clone(),
        control: proxy.control.clone(),
        host: alias.to_string(),
        vm_port: VM_PORT,
        log: app_log.clone(),
        hold: sp.hold,
        step_limit: sp.step_limit,
    };
    let exec_cfg = IdeCfg { control: side.proxy.control.clone(), host: EXEC_HOST.to_string(), vm_port: side.port, log: side.log.clone(), ..cfg.clone() };
    let t0 = Instant::now();
    let ide_thread = {
        let shared = shared.clone();
        std::thread::spawn(move || ide::drive(&cfg, &shared))
    };
    let exec_thread = {
        let shared = in_ctr.clone();
        std::thread::spawn(move || ide::drive(&exec_cfg, &shared))
    };
    let mut r = SoakFarRun::default();
    let first_far = fp::far_pids(&ns);
    for (at, act) in schedule(&sp.plan) {
        while t0.elapsed() < at {
            if proxy.proc.exited().is_some() {
                shared.problem(format!("serve exited during the run; log:\n{}", proxy.log_tail(3000)));
                break;
            }
            if side.proxy.proc.exited().is_some() {
                in_ctr.problem(format!("serve --exec exited during the run; log:\n{}", side.proxy.log_tail(3000)));
                break;
            }
            std::thread::sleep((at - t0.elapsed().min(at)).min(Duration::from_millis(500)));
        }
        if proxy.proc.exited().is_some() || side.proxy.proc.exited().is_some() {
            break;
        }
        match act {
            Act::Cut(len) => {
                eprintln!("soak-far {:>5.0} s: link cut for {:?}", t0.elapsed().as_secs_f64(), len);
                if let Err(e) = host.set_link(false) {
                    shared.problem(format!("cutting the link: {e:#}"));
                    continue;
                }
                std::thread::sleep(len);
                if let Err(e) = host.set_link(true) {
                    shared.problem(format!("restoring the link: {e:#}"));
                }
                r.cuts.push(len);
            }
            Act::Second => {
                eprintln!("soak-far {:>5.0} s: a second debugger attaches", t0.elapsed().as_secs_f64());
                r.seconds += 1;
                if let Err(e) = second(bin, &proxy.control, alias, attacher.path()) {
                    r.seconds_failed += 1;
                    shared.problem(format!("the second debugger: {e:#}"));
                }
            }
            Act::KillFar => {
                let pids = fp::far_pids(&ns);
                eprintln!("soak-far {:>5.0} s: killing the far side (pids {pids:?})", t0.elapsed().as_secs_f64());
                if pids.is_empty() {
                    shared.problem("no far side to kill on the host".into());
                    continue;
                }
                shared.kills.fetch_add(1, Ordering::SeqCst);
                for pid in &pids {
                    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                }
                r.kills += 1;
            }
            Act::KillExec => {
                eprintln!("soak-far {:>5.0} s: killing the exec into the container", t0.elapsed().as_secs_f64());
                side.kill_exec(&in_ctr, sp.step_limit, &mut r.exec.kills);
            }
            Act::Sample => {
                let at = t0.elapsed();
                side.sample(at, &mut r.exec);
                if let Some(m) = mem(proxy.pid(), at) {
                    r.near.push(m);
                }
                if let Some(m) = fp::far_pids(&ns).first().and_then(|pid| mem(*pid, at)) {
                    r.far.push(m);
                }
                match stats_json(bin, &proxy.control) {
                    Ok(v) => {
                        r.early_differed = Some(r.early_differed.unwrap_or(0).max(early_differed(&v)));
                        match replay_of(&v, alias, at) {
                            Some(x) => r.replay.push(x),
                            None => shared.problem(format!("jdwpmux stats --json at {:.0} s: no replay figures for the link to {alias}", at.as_secs_f64())),
                        }
                    }
                    Err(e) => shared.problem(format!("jdwpmux stats: {e:#}")),
                }
                let (n, f) = (r.near.last(), r.far.last());
                let show = |m: Option<&Mem>| m.map_or("-".into(), |m| format!("{} MiB {} fds", fmt(m.rss_kib as f64 / 1024.0), m.fds));
                let replay = r.replay.last().filter(|x| x.at == at).map_or("-".into(), |x| format!("{} bytes held (most {})", x.held, x.most));
                let problems = shared.problems.lock().map_or(0, |p| p.len()) + in_ctr.problems.lock().map_or(0, |p| p.len());
                eprintln!("soak-far {:>5.0} s: serve {}, far side {}, early_differed {}, replay {replay}; exec: serve {}, far side {}; {problems} problems", at.as_secs_f64(), show(n), show(f), r.early_differed.map_or("-".into(), |v| v.to_string()), show(r.exec.serve.last()), show(r.exec.far.last()));
            }
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    in_ctr.stop.store(true, Ordering::SeqCst);
    r.ide = ide_thread.join().map_err(|_| anyhow::anyhow!("the IDE's thread panicked"))?;
    r.exec.ide = exec_thread.join().map_err(|_| anyhow::anyhow!("the container's IDE's thread panicked"))?;
    r.wall = t0.elapsed();
    let last_far = fp::far_pids(&ns);
    r.far_restarted = !last_far.is_empty() && last_far.iter().all(|p| !first_far.contains(p));
    let serve_log = proxy.log_tail(8000);
    proxy.stop();
    if let Err(e) = fp::far_gone(&ns, Duration::from_secs(20)) {
        shared.problem(format!("after serve stopped: {e:#}\nfar side's log:\n{}", wrapper.log()));
    }
    drop(path);
    drop(link);
    let (exec_log, ctr_far_log) = (side.proxy.log_tail(8000), side.far_log());
    exec_end(side, &in_ctr);
    r.problems = shared.problems.lock().map(|p| p.clone()).unwrap_or_default();
    r.problems.extend(in_ctr.problems.lock().map(|p| p.clone()).unwrap_or_default());
    let planned = schedule(&sp.plan).iter().filter(|(_, a)| *a == Act::KillExec).count();
    r.problems.extend(exec::judge(&r.exec, sp.warmup, planned));
    judge(&mut r, sp);
    if !r.problems.is_empty() {
        let far = wrapper.log();
        eprintln!("soak-far: serve's log, its end:\n{serve_log}\nsoak-far: the far sides' logs, their end:\n{}", String::from_utf8_lossy(&far.as_bytes()[far.len().saturating_sub(8000)..]));
        eprintln!("soak-far: serve --exec's log, its end:\n{exec_log}\nsoak-far: the far side's log in the container, its end:\n{ctr_far_log}");
    }
    Ok(r)
}

/// Stops the container's serve and sees its far side end there (serve says Bye), then
/// removes the container (dropping `side`).
fn exec_end(mut side: ExecSide, shared: &Shared) {
    side.proxy.stop();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !side.jdwpmux_left().is_empty() {
        if Instant::now() > deadline {
            shared.problem(format!("jdwpmux still runs in the container 20 s after serve stopped: {:?}", side.jdwpmux_left()));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A second debugger through the same port: IntelliJ's attach, a breakpoint in a method the
/// app never runs, a VM resume, then it leaves.
fn second(bin: &ProxyBin, control: &Path, host: &str, dir: &Path) -> Result<()> {
    let port = ide::ready_port(&bin.path, control, host, VM_PORT, Duration::from_secs(60))?;
    let mut cmd = crate::procs::command("java");
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"]).arg(dir).args(["Attacher", "127.0.0.1", &port.to_string(), "Tally", "spare", "arm"]);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut p = crate::procs::Proc::spawn("Attacher", &mut cmd)?;
    if !p.wait_exit(Duration::from_secs(120)) {
        p.kill();
        anyhow::bail!("it did not attach and leave within 120 s");
    }
    let mut out = String::new();
    use std::io::Read;
    if let Some(mut o) = p.take_stdout() {
        let _ = o.read_to_string(&mut out);
    }
    let mut err = String::new();
    if let Some(mut e) = p.take_stderr() {
        let _ = e.read_to_string(&mut err);
    }
    if !out.lines().any(|l| l == "done") {
        anyhow::bail!("it did not say done: {out} {err}");
    }
    Ok(())
}

pub(crate) fn mem(pid: u32, at: Duration) -> Option<Mem> {
    let rss_kib = status_kib(pid, "VmRSS")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some(Mem { at, pid, rss_kib, fds })
}

/// `jdwpmux stats --json` of the daemon at `control`.
fn stats_json(bin: &ProxyBin, control: &Path) -> Result<serde_json::Value> {
    let out = std::process::Command::new(&bin.path).args(["stats", "--json", "--control"]).arg(control).stdin(std::process::Stdio::null()).output()?;
    serde_json::from_slice(&out.stdout).with_context(|| format!("no JSON: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The sum of every VM's `early_differed` in a `stats --json` report.
fn early_differed(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::Object(m) => m.iter().map(|(k, x)| if k == "early_differed" { x.as_u64().unwrap_or(0) } else { early_differed(x) }).sum(),
        serde_json::Value::Array(a) => a.iter().map(early_differed).sum(),
        _ => 0,
    }
}

/// Adds the run's failures beyond the IDE's own: no load, the far side not started again,
/// memory, open files or the replay buffer not flat, the replay buffer past its bound,
/// early answers contradicted.
fn judge(r: &mut SoakFarRun, sp: &SoakFarParams) {
    let mut add = Vec::new();
    if r.ide.steps == 0 {
        add.push("no step was completed".to_string());
    }
    if r.kills > 0 && (!r.far_restarted || r.ide.sessions < 1 + r.kills) {
        add.push(format!("after the far side was killed: started again {}, IDE sessions {} (want {})", r.far_restarted, r.ide.sessions, 1 + r.kills));
    }
    if r.early_differed.is_none_or(|n| n > 0) {
        add.push(format!("early answers contradicted by the VM: {:?}", r.early_differed));
    }
    for (who, samples) in [("serve", &r.near), ("the far side", &r.far)] {
        match level_and_end(samples, sp.warmup) {
            Some((level, end)) => {
                let (rss, fds) = flat(&level, &end);
                if !rss || !fds {
                    add.push(format!("{who} not flat: {} KiB {} fds at {:?}, {} KiB {} fds at the end", level.rss_kib, level.fds, level.at, end.rss_kib, end.fds));
                }
            }
            None => add.push(format!("no samples of {who}")),
        }
    }
    match replay_level_and_end(&r.replay, sp.warmup) {
        Some((level, end)) => {
            let (flat, bounded) = replay_flat(&level, &end);
            if !flat {
                add.push(format!("serve's replay buffer not flat: {} bytes held at {:?}, {} at the end", level.held, level.at, end.held));
            }
            if !bounded {
                add.push(format!("serve's replay buffer held {} bytes at most, past its limit of {} (+ {REPLAY_BEYOND})", end.most, end.limit));
            }
        }
        None => add.push("no samples of serve's replay buffer".to_string()),
    }
    r.problems.extend(add);
}

fn rows(t: &mut Table, sp: &SoakFarParams, r: &SoakFarRun) {
    let p = &sp.plan;
    t.section(&format!(
        "far-side soak for {:.0} s: an IDE stepping through serve --ssh --far always (a link of +{} ms each way), each stop's values checked against the app's log; the link cut every {:?} for {:?}..{:?}, a second debugger every {:?} or more, the far side killed once; a second IDE stepping a JVM in a Podman container through serve --exec, the exec killed about every {:?}",
        r.wall.as_secs_f64(),
        sp.delay.as_millis(),
        p.cut_every,
        p.cut_len.0,
        p.cut_len.1,
        p.second_every,
        p.exec_kill_every
    ));
    let i = &r.ide;
    let ok = |b: bool| Some(b);
    t.push(Row::proxy_only("soak-far: steps done, stops checked; IDE sessions", format!("{}, {}; {}", i.steps, i.stops, i.sessions)).judged(String::new(), "> 0", ok(i.steps > 0)));
    t.push(
        Row::proxy_only("soak-far: stops differing from the app's log / holds the app ran in / sessions lost", format!("{} / {} / {}", i.values_wrong, i.ran_while_stopped, i.sessions_lost))
            .judged(String::new(), "0 / 0 / 0", ok(i.values_wrong == 0 && i.ran_while_stopped == 0 && i.sessions_lost == 0)),
    );
    let q = |x: f64| crate::far::quantile(&i.step_ms, x);
    t.push(Row::proxy_only("soak-far: ms per step median / p99 / max (cuts included)", format!("{} / {} / {}", fmt_opt(median(&i.step_ms)), fmt_opt(q(99.0)), fmt_opt(q(100.0)))));
    let cut_s: f64 = r.cuts.iter().map(Duration::as_secs_f64).sum();
    t.push(Row::proxy_only(
        "soak-far: link cuts (s in all); second debuggers (failed); far sides killed (another started)",
        format!("{} ({:.0} s); {} ({}); {} ({})", r.cuts.len(), cut_s, r.seconds, r.seconds_failed, r.kills, r.far_restarted),
    ).judged(String::new(), "no second debugger failed", ok(r.seconds_failed == 0)));
    t.push(Row::proxy_only("soak-far: early answers the VM contradicted (early_differed, most seen)", r.early_differed.map_or("-".into(), |v| v.to_string())).judged(String::new(), "0", r.early_differed.map(|n| n == 0)));
    let rule = format!("end <= level x {RSS_FACTOR} + {} MiB, <= level + {FD_SLACK} fds", RSS_SLACK_KIB / 1024);
    for (who, samples) in [("serve (near side)", &r.near), ("far side", &r.far)] {
        let le = level_and_end(samples, sp.warmup);
        let cell = le.map_or("-".into(), |(l, e)| format!("{} MiB {} fds at {:.0} s / {} MiB {} fds at {:.0} s", fmt(l.rss_kib as f64 / 1024.0), l.fds, l.at.as_secs_f64(), fmt(e.rss_kib as f64 / 1024.0), e.fds, e.at.as_secs_f64()));
        t.push(Row::proxy_only(&format!("soak-far: {who} RSS, open files: level after warm-up / end"), cell).judged(String::new(), &rule, le.map(|(l, e)| flat(&l, &e) == (true, true))));
        let series: Vec<String> = samples.iter().map(|m| fmt(m.rss_kib as f64 / 1024.0)).collect();
        t.push(Row::proxy_only(&format!("soak-far: {who} RSS MiB at each sample"), series.join(", ")));
    }
    let rule = format!("end <= level x {REPLAY_FACTOR} + {} KiB; most <= limit + {} KiB", REPLAY_SLACK / 1024, REPLAY_BEYOND / 1024);
    let le = replay_level_and_end(&r.replay, sp.warmup);
    let cell = le.map_or("-".into(), |(l, e)| format!("{} at {:.0} s / {} at {:.0} s; most {} (limit {})", l.held, l.at.as_secs_f64(), e.held, e.at.as_secs_f64(), e.most, e.limit));
    t.push(Row::proxy_only("soak-far: serve's replay buffer, bytes held unacknowledged: level after warm-up / end; most held", cell).judged(String::new(), &rule, le.map(|(l, e)| replay_flat(&l, &e) == (true, true))));
    let series: Vec<String> = r.replay.iter().map(|x| x.held.to_string()).collect();
    t.push(Row::proxy_only("soak-far: serve's replay buffer, bytes held at each sample", series.join(", ")));
    t.push(Row::proxy_only("soak-far: the far side's replay buffer", "not shown by jdwpmux (no figure reaches the near side)".into()));
    exec::rows(t, &r.exec, sp.warmup);
}
