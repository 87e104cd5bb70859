//! The `exec` section: an IDE (`Step.java`, as in the `far` section) stepping through a JVM
//! in a rootful Podman container (`--network=none`, its agent on the container's loopback,
//! nothing published), three ways, alternating within each repetition:
//!
//! - `node`: `serve --proc` on this machine, entering the container's network namespace as
//!   root (what a user with node access has);
//! - `exec`: `serve --exec 'podman exec -i C'`, jdwpmux (this build, bind-mounted) running
//!   in the container as the far side, the link over the exec's pipe;
//! - `pipe`: no jdwpmux: socat hands each debugger connection to `podman exec -i C busybox
//!   nc 127.0.0.1 PORT`, a plain byte pipe through the exec.
//!
//! Then what the far side in the container costs while nothing is debugged (its CPU, % of one
//! core) beside `serve`'s own. The container's root file system is a folder of mount points
//! with this machine's /usr, /etc/alternatives and /etc/java-17-openjdk bound read-only: the
//! JDK and busybox without an image to build.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::far_paths::{Printed, StepProgram};
use crate::jvm::{Debuggee, Jvm, Launch};
use crate::procs::Proc;
use crate::proxy::{Proxy, ProxyBin};
use crate::stats::{fmt, median};
use crate::table::{Row, Table};
use testkit::containers::{bound_rootfs, host_binds, Engine};
use testkit::process::stat_cpu_ticks;
use testkit::users::is_root;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Node,
    Exec,
    Pipe,
}

pub const WAYS: [Way; 3] = [Way::Node, Way::Exec, Way::Pipe];

impl Way {
    fn label(self) -> &'static str {
        match self {
            Way::Node => "serve --proc (root enters the container)",
            Way::Exec => "serve --exec 'podman exec -i C'",
            Way::Pipe => "podman exec -i C busybox nc (a plain pipe)",
        }
    }
}

/// One repetition's figures: per way, the median ms of a step and the attach to the first stop.
#[derive(Debug, Clone, Default)]
pub struct ExecRep {
    pub step_ms: [Option<f64>; 3],
    pub first_ms: [Option<f64>; 3],
}

/// The far side in the container idle, and `serve` beside it: CPU % of one core.
#[derive(Debug, Clone, Copy)]
pub struct Idle {
    pub far_pct: f64,
    pub serve_pct: f64,
    pub far_rss_kib: u64,
}

/// The kit's rootful engine (a Podman configuration and storage of its own), the container's
/// root folder and its name; the engine removes the container when dropped, before the root
/// folder goes.
struct Podman {
    engine: Arc<Engine>,
    root: tempfile::TempDir,
    name: String,
}

impl Podman {
    /// The environment that points the podman a program runs (serve, socat) at the engine.
    fn envs(&self) -> Vec<(&'static str, String)> {
        self.engine.env().into_iter().map(|(k, v)| (k, v.display().to_string())).collect()
    }
}

/// The engine, and the root folder of mount points (`bound_rootfs`: this machine's /usr
/// and the JDK's /etc folders bound read-only, and /opt/jm for this build of jdwpmux).
fn podman() -> Result<Podman> {
    let engine = Engine::rootful()?;
    let root = tempfile::tempdir()?;
    bound_rootfs(root.path(), &["opt/jm"])?;
    let name = format!("jmbench{}", std::process::id());
    Ok(Podman { engine, root, name })
}

/// Runs one repetition's worth of everything: the container, each way's IDE session, and
/// (in the last repetition) the idle window. `reps` repetitions in one container.
pub fn run(bin: &ProxyBin, reps: usize, steps: usize, idle_window: Duration) -> Result<(Vec<ExecRep>, Option<Idle>)> {
    if !is_root() {
        bail!("needs root (rootful podman)");
    }
    for tool in ["podman", "runc", "socat", "busybox"] {
        if crate::procs::command("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status().map(|s| !s.success()).unwrap_or(true) {
            bail!("{tool} is not installed");
        }
    }
    let pm = podman()?;
    let prog: Arc<Debuggee> = Debuggee::compile(0)?;
    let classes = prog.out_dir();
    let bin_dir = tempfile::tempdir()?;
    std::fs::copy(&bin.path, bin_dir.path().join("jdwpmux"))?;
    let mut prefix = vec!["podman".to_string(), "run".into(), "--rm".into(), "-i".into(), "--name".into(), pm.name.clone(), "--network=none".into(), "--tmpfs".into(), "/tmp".into()];
    prefix.extend(host_binds());
    for (from, to) in [(classes.as_path(), classes.as_path()), (bin_dir.path(), Path::new("/opt/jm"))] {
        prefix.extend(["-v".into(), format!("{}:{}:ro", from.display(), to.display())]);
    }
    prefix.extend(["--rootfs".into(), pm.root.path().display().to_string()]);
    // `podman` finds its configuration in the environment: the JVM's launcher runs it.
    let env_prefix: Vec<String> = ["env".to_string()].into_iter().chain(pm.envs().iter().map(|(k, v)| format!("{k}={v}"))).chain(prefix).collect();
    let mut jvm = Jvm::launch(&prog, &Launch { prefix: env_prefix, port: 0, small: true })?;
    jvm.wait_ready(Duration::from_secs(120)).context("the JVM in the container")?;
    let step = StepProgram::compile()?;
    let mut all = Vec::new();
    let mut idle = None;
    for rep in 0..reps {
        let mut r = ExecRep::default();
        // Each repetition starts with another way, so none is always first.
        for k in 0..WAYS.len() {
            let i = (rep + k) % WAYS.len();
            let way = WAYS[i];
            eprintln!("exec: repetition {rep}, {} ...", way.label());
            let (first, steps_ms) = one(way, &mut jvm, &pm, bin, &classes, &step, steps)?;
            r.first_ms[i] = Some(first);
            r.step_ms[i] = median(&steps_ms);
        }
        all.push(r);
    }
    if !idle_window.is_zero() {
        idle = Some(idle_far(bin, &pm, idle_window)?);
    }
    drop(jvm);
    Ok((all, idle))
}

/// One IDE session through `way`: attach to the first stop (ms), and each step (ms).
fn one(way: Way, jvm: &mut Jvm, pm: &Podman, bin: &ProxyBin, classes: &Path, step: &StepProgram, steps: usize) -> Result<(f64, Vec<f64>)> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let dir = tempfile::tempdir()?;
    let (mut serve, mut socat, port) = match way {
        Way::Pipe => {
            let port = crate::procs::free_port()?;
            let mut c = crate::procs::command("socat");
            c.envs(pm.engine.env());
            c.arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr")).arg(format!("EXEC:podman exec -i {} busybox nc 127.0.0.1 {}", pm.name, jvm.port));
            let p = Proc::spawn("socat", c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()))?;
            // Seen in /proc/net/tcp, not probed: a probe would be a debugger connection of its
            // own, through an exec, that the agent must see end before it takes the IDE's.
            crate::procs::wait_listening(port, Duration::from_secs(10)).context("socat")?;
            (None, Some(p), port)
        }
        Way::Node | Way::Exec => {
            let mut args = vec!["--control".to_string(), dir.path().join("control.sock").display().to_string(), "serve".into(), "--no-scan".into(), "--no-adb".into(), "--base-port".into(), "0".into(), "--current-port".into(), "0".into()];
            if way == Way::Node {
                args.extend(["--proc".into(), "--proc-match".into(), classes.display().to_string()]);
            } else {
                args.extend(["--no-proc".into(), "--exec".into(), format!("c=podman exec -i {}", pm.name), "--far-path".into(), "/opt/jm/jdwpmux".into()]);
            }
            let envs = pm.envs();
            let env: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let proxy = Proxy::start_args(bin, &args, dir.path(), &env, 1, 0)?;
            let port = ready_port(&proxy, bin)?;
            (Some(proxy), None, port)
        }
    };
    let got = ide(step, port, steps);
    if let Some(p) = &mut serve {
        p.stop();
    }
    if let Some(s) = &mut socat {
        s.terminate(Duration::from_secs(5));
    }
    let log = serve.as_ref().map(|p| p.log_tail(3000)).unwrap_or_default();
    got.with_context(|| format!("{}; serve's log:\n{log}", way.label()))
}

/// The debugger port of the one VM `serve` lists, once it is ready.
fn ready_port(proxy: &Proxy, bin: &ProxyBin) -> Result<u16> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = proxy.list_json(bin).unwrap_or_default();
        if let Some(p) = rows.iter().find(|r| r["state"] == "ready").and_then(|r| r["debugger_port"].as_u64()) {
            return Ok(p as u16);
        }
        if Instant::now() > deadline {
            bail!("no VM ready: {rows:?}\n{}", proxy.log_tail(2000));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `java Step`: attach, the breakpoint, `steps` steps; (first stop ms, step ms).
fn ide(step: &StepProgram, port: u16, steps: usize) -> Result<(f64, Vec<f64>)> {
    ide_as(&[], step, port, steps)
}

/// [`ide`] run under `prefix` (e.g. `setpriv` to another user, whose debugger ports take
/// only that user's own debuggers), when it is not empty.
pub(crate) fn ide_as(prefix: &[String], step: &StepProgram, port: u16, steps: usize) -> Result<(f64, Vec<f64>)> {
    let mut cmd = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = crate::procs::command(program);
            c.args(args).arg("java");
            c
        }
        None => crate::procs::command("java"),
    };
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(step.dir())
        .args(["Step", "127.0.0.1", &port.to_string(), &crate::jvm::walk_breakpoint_line().to_string(), &steps.to_string(), "60000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut p = Proc::spawn("Step", &mut cmd)?;
    let out = p.take_stdout().context("Step stdout")?;
    let mut printed = Printed::default();
    for l in BufReader::new(out).lines().map_while(Result::ok) {
        printed.line(&l);
        if printed.done {
            break;
        }
    }
    if let Some(mut s) = p.take_stdin() {
        let _ = s.flush();
    }
    if !p.wait_exit(Duration::from_secs(10)) {
        p.kill();
    }
    let (Some(first), true) = (printed.first_ns, printed.done) else { bail!("the IDE program ended without its figures") };
    Ok((first as f64 / 1e6, printed.step_ns.iter().map(|n| *n as f64 / 1e6).collect()))
}

/// `serve --exec` connected and idle with the far side in the container: both CPUs over
/// `window`, once they have settled.
fn idle_far(bin: &ProxyBin, pm: &Podman, window: Duration) -> Result<Idle> {
    let dir = tempfile::tempdir()?;
    let args: Vec<String> = ["--control".to_string(), dir.path().join("control.sock").display().to_string(), "serve".into(), "--no-scan".into(), "--no-proc".into(), "--no-adb".into(), "--base-port".into(), "0".into(), "--current-port".into(), "0".into(), "--exec".into(), format!("c=podman exec -i {}", pm.name), "--far-path".into(), "/opt/jm/jdwpmux".into()].into();
    let envs = pm.envs();
    let env: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &env, 1, 0)?;
    ready_port(&proxy, bin)?;
    std::thread::sleep(Duration::from_secs(3));
    let far = far_pid().context("no jdwpmux far process in the container")?;
    let ticks = |pid: u32| stat_cpu_ticks(pid).unwrap_or(0);
    let (f0, s0, t) = (ticks(far), ticks(proxy.pid()), Instant::now());
    std::thread::sleep(window);
    let (f1, s1) = (ticks(far), ticks(proxy.pid()));
    let hz = crate::proc_tree::ticks_per_s() as f64;
    let pct = |a: u64, b: u64| b.saturating_sub(a) as f64 / hz / t.elapsed().as_secs_f64() * 100.0;
    let rss = crate::procs::status_kib(far, "VmRSS").unwrap_or(0);
    let idle = Idle { far_pct: pct(f0, f1), serve_pct: pct(s0, s1), far_rss_kib: rss };
    proxy.stop();
    Ok(idle)
}

/// The far side started in the container (`jdwpmux far --dir ...`, not the `--attach` bridge).
fn far_pid() -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        (cmd.starts_with("/opt/jm/jdwpmux\0far\0--dir")).then_some(pid)
    })
}

/// The section's rows.
pub fn rows(t: &mut Table, reps: &[ExecRep], idle: Option<Idle>, steps: usize) {
    if reps.is_empty() {
        return;
    }
    t.section(&format!("An IDE stepping through a JVM in a Podman container ({steps} steps a session; medians of {} repetitions)", reps.len()));
    let med = |f: &dyn Fn(&ExecRep) -> Option<f64>| median(&reps.iter().filter_map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN);
    let node = med(&|r| r.step_ms[0]);
    for (i, way) in WAYS.iter().enumerate() {
        let step = med(&|r| r.step_ms[i]);
        let first = med(&|r| r.first_ms[i]);
        t.push(Row::proxy_only(&format!("{}: ms a step / attach to the first stop", way.label()), format!("{} / {}", fmt(step), fmt(first))).judged(format!("{} x node", fmt(step / node)), "", None));
    }
    if let Some(i) = idle {
        t.push(Row::proxy_only("idle: the far side in the container / serve, CPU % of one core; its RSS", format!("{} / {}; {} MiB", fmt(i.far_pct), fmt(i.serve_pct), fmt(i.far_rss_kib as f64 / 1024.0))));
    }
}
