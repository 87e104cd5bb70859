//! The `far` section's three ways from an IDE to a JVM on an ssh host, and one IDE session
//! through one of them (`Step.java`, compiled here):
//!
//! - `ssh -L`: `ssh -N -L 127.0.0.1:P:127.0.0.1:PORT HOST`, what a user types;
//! - `jdwpmux --far never`: `serve --ssh HOST --far never`, today's forward: the daemon, its
//!   master's forward from a Unix socket, sshd, the JVM;
//! - `jdwpmux --far always`: `serve --ssh HOST --far always --far-path WRAPPER`: the daemon,
//!   its link over the master's Unix-socket forward to `jdwpmux far` on the host, which holds
//!   the JVM's connection. WRAPPER runs this binary with a `--dir` of its own: test hosts share
//!   this machine's file system, where real hosts each have their own.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use testkit::delay_link::DelayLink;
use testkit::ide_counts::IdeCounts;
use testkit::tap::Tap;
use crate::jvm::Jvm;
use crate::procs::Proc;
use crate::proxy::{Proxy, ProxyBin};
use crate::remote_paths::{ready_port, RemoteKind, RemoteRelay, Target};
use crate::sched_wait::SchedSnap;

const STEP_JAVA: &str = include_str!("Step.java");
/// `remote::protocol::squeeze::SQUEEZE_ENV`: `off` in `serve`'s environment, and it speaks the far
/// side's protocol from before compression.
pub const SQUEEZE_ENV: &str = "JDWPMUX_SQUEEZE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FarKind {
    SshL,
    Forward,
    Far,
}

pub const FAR_PATHS: [FarKind; 3] = [FarKind::SshL, FarKind::Forward, FarKind::Far];

impl FarKind {
    pub fn label(self) -> &'static str {
        match self {
            FarKind::SshL => "ssh -L",
            FarKind::Forward => "jdwpmux --far never",
            FarKind::Far => "jdwpmux --far always",
        }
    }

    pub fn column(self) -> usize {
        self as usize
    }

    /// Forward in even repetitions, backward in odd ones.
    pub fn order(rep: usize) -> [FarKind; 3] {
        let mut p = FAR_PATHS;
        if rep % 2 == 1 {
            p.reverse();
        }
        p
    }
}

/// A `jdwpmux` for the host's side: this binary with a far-side folder of its own.
pub struct FarWrapper {
    dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl FarWrapper {
    pub fn new(bin: &Path) -> Result<FarWrapper> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("jdwpmux");
        let script = format!("#!/bin/sh\nexec '{}' \"$@\" --dir '{}'\n", bin.display(), dir.path().join("far").display());
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(FarWrapper { dir, path })
    }

    /// The far side's own log in its folder, if it wrote one.
    pub fn log(&self) -> String {
        std::fs::read_dir(self.dir.path().join("far"))
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".log")).filter_map(|e| std::fs::read_to_string(e.path()).ok()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }
}

/// The compiled IDE program.
pub struct StepProgram {
    dir: tempfile::TempDir,
}

impl StepProgram {
    /// `Step.java` compiled with the kit's `Jdi.java` (`javac_jdi`) into a folder of its own.
    pub fn compile() -> Result<StepProgram> {
        let dir = tempfile::tempdir()?;
        testkit::jdi::javac_jdi_blocking(dir.path(), &[("Step.java", STEP_JAVA)])?;
        Ok(StepProgram { dir })
    }

    /// The folder of its class.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// Sizes of one IDE session.
#[derive(Debug, Clone, Copy)]
pub struct StepParams {
    pub steps: usize,
    /// Stepping stops after this long even if fewer steps were made (the slowest links).
    pub budget: Duration,
    /// IntelliJ's attach and view of a stop: the class list at attach, the threads view and
    /// a toString() of `this` at each stop too.
    pub ide_view: bool,
}

/// One IDE session's figures.
#[derive(Debug, Clone, Default)]
pub struct StepRun {
    /// From `serve`/`ssh` start to the path being ready for a debugger.
    pub setup_ms: f64,
    /// Attach to the first stop shown.
    pub first_ms: f64,
    /// The first stop alone: its event to its views read.
    pub first_stop_ms: Option<f64>,
    pub step_ms: Vec<f64>,
    /// With the kit's tap in front, counted (see `testkit::ide_counts`).
    pub tap: Option<IdeCounts>,
    /// Per step, µs on a CPU and µs waiting for one (`sched_wait`), while stepping: this
    /// machine's processes of the path, the host's (sshd, the far side, the JVM), the IDE.
    pub sched: Option<[(f64, f64); 3]>,
    /// Round trips counted on the delay relay's link (see `delay_link`), on the relay's links.
    pub turns: Option<LinkTurns>,
}

/// Round trips on the link, counted by the delay relay between the IDE's lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkTurns {
    /// From the IDE's start to the breakpoint's event (attach, the breakpoint set, the wait).
    pub attach: u64,
    /// The first stop: from its event to its views read.
    pub first_stop: u64,
    /// Per step, all steps of the run.
    pub per_step: f64,
}

/// The relay's count when each of the IDE's lines was read: its start, `stop_ns`, `first_ns`,
/// `step_ns` (the stepping's end).
#[derive(Debug, Default, Clone, Copy)]
pub struct TurnMarks {
    pub start: u64,
    pub stop: Option<u64>,
    pub first: Option<u64>,
    pub end: Option<u64>,
}

impl TurnMarks {
    pub fn figures(&self, steps: usize) -> Option<LinkTurns> {
        let (stop, first, end) = (self.stop?, self.first?, self.end?);
        (steps > 0).then(|| LinkTurns {
            attach: stop.saturating_sub(self.start),
            first_stop: first.saturating_sub(stop),
            per_step: end.saturating_sub(first) as f64 / steps as f64,
        })
    }
}

/// What the program printed: `stop_ns=`, `first_ns=`, `step_ns=`, `done`.
#[derive(Debug, Default, PartialEq)]
pub struct Printed {
    pub stop_ns: Option<u64>,
    pub first_ns: Option<u64>,
    pub step_ns: Vec<u64>,
    pub done: bool,
}

impl Printed {
    pub fn line(&mut self, l: &str) {
        if let Some(v) = l.strip_prefix("stop_ns=") {
            self.stop_ns = v.trim().parse().ok();
        } else if let Some(v) = l.strip_prefix("first_ns=") {
            self.first_ns = v.trim().parse().ok();
        } else if let Some(v) = l.strip_prefix("step_ns=") {
            self.step_ns = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        } else if l.starts_with("done ") {
            self.done = true;
        }
    }
}

pub enum Path3 {
    Ssh(RemoteRelay),
    Jdwpmux { proxy: Proxy, port: u16, _dir: tempfile::TempDir },
}

pub fn start(kind: FarKind, t: &Target, bin: &ProxyBin, far: &FarWrapper) -> Result<(Path3, u16)> {
    start_env(kind, t, bin, far, &[])
}

/// The same with `env` in `serve`'s environment.
pub fn start_env(kind: FarKind, t: &Target, bin: &ProxyBin, far: &FarWrapper, env: &[(&str, &str)]) -> Result<(Path3, u16)> {
    if kind == FarKind::SshL {
        let r = RemoteRelay::start(RemoteKind::Forward, t, bin)?;
        let RemoteRelay::Forward { port, .. } = &r else { bail!("ssh -L relay of another kind") };
        let port = *port;
        return Ok((Path3::Ssh(r), port));
    }
    let dir = tempfile::tempdir()?;
    let mut args = bin.serve_ssh_args(&[&t.host], &t.config, dir.path());
    // No scan of the host within a run (the first one lists the VM): its round trips on the
    // link are not the stepping's, and would be counted with them.
    args.extend(["--ssh-interval", "60"].map(String::from));
    match kind {
        FarKind::Forward => args.extend(["--far", "never"].map(String::from)),
        _ => args.extend(["--far".to_string(), "always".into(), "--far-path".into(), far.path.display().to_string()]),
    }
    let proxy = Proxy::start_args(bin, &args, dir.path(), env, 16, 1)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let port = loop {
        if let Some(p) = ready_port(&proxy.list_json(bin)?, &t.host, t.port) {
            break p;
        }
        if Instant::now() > deadline {
            bail!("jdwpmux did not list the VM on {} as ready within 60 s; log:\n{}\nfar side's log:\n{}", t.host, proxy.log_tail(3000), far.log());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if kind == FarKind::Far && !std::fs::read_to_string(&proxy.log).unwrap_or_default().contains(&format!("using jdwpmux on {}", t.host)) {
        bail!("jdwpmux does not use its far side on {}; log:\n{}", t.host, proxy.log_tail(3000));
    }
    Ok((Path3::Jdwpmux { proxy, port, _dir: dir }, port))
}

/// One IDE session through `kind` against `jvm` (the host of `t`, namespace `ns`), through
/// the counting tap when `tap`; `link` is the delay relay `t` goes through, if any: its
/// round trips are counted between the IDE's lines.
#[allow(clippy::too_many_arguments)]
pub fn run(kind: FarKind, jvm: &mut Jvm, t: &Target, ns: &str, bin: &ProxyBin, far: &FarWrapper, prog: &StepProgram, p: &StepParams, tap: bool, link: Option<&DelayLink>) -> Result<StepRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let t0 = Instant::now();
    let (mut path, port) = start(kind, t, bin, far)?;
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let tap = if tap { Some(CountingTap::start(port)?) } else { None };
    let ide_port = tap.as_ref().map_or(port, CountingTap::port);
    let mut cmd = crate::procs::command("java");
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(prog.dir.path())
        .args(["Step", "127.0.0.1", &ide_port.to_string(), &crate::jvm::walk_breakpoint_line().to_string(), &p.steps.to_string()])
        .arg(p.budget.as_millis().to_string())
        .args(p.ide_view.then_some("view"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut marks = TurnMarks { start: link.map_or(0, DelayLink::turns), ..TurnMarks::default() };
    let mut ide = Proc::spawn("Step", &mut cmd)?;
    let out = ide.take_stdout().context("Step stdout")?;
    let err = ide.take_stderr().context("Step stderr")?;
    let (tx, rx) = mpsc::sync_channel::<String>(64);
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        for l in BufReader::new(err).lines().map_while(Result::ok).take(40) {
            s.push_str(&l);
            s.push('\n');
        }
        s
    });
    // A hung reply must fail the run, not the benchmark: JDI itself would wait for ever.
    let deadline = Instant::now() + p.budget + Duration::from_secs(180);
    let mut printed = Printed::default();
    // The path's processes here, the host's (sshd, the far side, the JVM) and the IDE.
    let local = match &path {
        Path3::Ssh(r) => r.local_pids(),
        Path3::Jdwpmux { proxy, .. } => crate::proc_tree::with_children(proxy.pid()).iter().map(|s| s.pid).collect(),
    };
    let groups = || [local.clone(), crate::proc_tree::netns_members(ns).iter().map(|s| s.pid).collect(), vec![ide.pid()]];
    let snap = || groups().map(|g| SchedSnap::take(&g));
    let mut at_first = None;
    let mut sched = None;
    while !printed.done {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                printed.line(&l);
                let count = link.map(DelayLink::turns);
                if l.starts_with("stop_ns=") {
                    marks.stop = count;
                } else if l.starts_with("first_ns=") {
                    marks.first = count;
                }
                if l.starts_with("step_ns=") {
                    marks.end = count;
                }
                if l.starts_with("first_ns=") {
                    at_first = Some(snap());
                } else if l.starts_with("step_ns=") {
                    sched = at_first.as_ref().map(|a| {
                        let b = snap();
                        [0, 1, 2].map(|i| b[i].since(&a[i]))
                    });
                }
            }
            Err(_) => break,
        }
    }
    let summary = tap.as_ref().map(CountingTap::counts);
    // jdwpmux goes first while the IDE is still attached: the VM sees one disconnect.
    let log = match &mut path {
        Path3::Jdwpmux { proxy, .. } => {
            let l = if printed.done { String::new() } else { proxy.log_tail(3000) };
            proxy.stop();
            l
        }
        Path3::Ssh(r) => r.log_tail(),
    };
    drop(ide.take_stdin().map(|mut s| s.flush()));
    if !ide.wait_exit(Duration::from_secs(10)) {
        ide.kill();
    }
    drop(tap);
    if let Path3::Ssh(r) = &mut path {
        r.stop();
    }
    if kind == FarKind::Far {
        if let Err(e) = far_gone(ns, Duration::from_secs(20)) {
            let serve_log = match &path {
                Path3::Jdwpmux { proxy, .. } => proxy.log_tail(3000),
                Path3::Ssh(_) => String::new(),
            };
            bail!("after serve stopped: {e:#}\nserve's log:\n{serve_log}\nfar side's log:\n{}", far.log());
        }
    }
    let said = errors.join().unwrap_or_default();
    let (Some(first), true) = (printed.first_ns, printed.done) else {
        bail!("the IDE program ended without its figures: {said}\n{} log:\n{log}\nfar side's log:\n{}", kind.label(), far.log());
    };
    let steps = printed.step_ns.len().max(1) as f64;
    let sched = sched.map(|g| g.map(|(run, wait)| (run as f64 / 1e3 / steps, wait as f64 / 1e3 / steps)));
    let turns = link.and_then(|_| marks.figures(printed.step_ns.len()));
    let first_stop_ms = printed.stop_ns.filter(|s| *s <= first).map(|s| (first - s) as f64 / 1e6);
    Ok(StepRun { setup_ms, first_ms: first as f64 / 1e6, first_stop_ms, step_ms: printed.step_ns.iter().map(|n| *n as f64 / 1e6).collect(), tap: summary, sched, turns })
}

/// The far side's processes on the host of namespace `ns` (`jdwpmux far`).
pub fn far_pids(ns: &str) -> Vec<u32> {
    crate::proc_tree::netns_members(ns).into_iter().filter(|s| s.comm == "jdwpmux").map(|s| s.pid).collect()
}

/// Waits until no far side runs on the host: `serve` said Bye as it stopped, and the far side
/// ends at once on that (the next run starts a fresh one, as a user's next `serve` would).
pub fn far_gone(ns: &str, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let left = far_pids(ns);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("jdwpmux far still runs on the host after {limit:?} (pids {left:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The kit's tap in front of 127.0.0.1:`target`, recording both ways, on a runtime of its
/// own (the path is driven from plain threads). The tap adds a hop, so only the warm-up
/// repetition goes through it. Dropping it closes the tap's connections.
pub(crate) struct CountingTap {
    tap: Tap,
    // Runs the tap; dropped after it, ending its relays.
    _rt: tokio::runtime::Runtime,
}

impl CountingTap {
    pub(crate) fn start(target: u16) -> Result<CountingTap> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().context("the tap's runtime")?;
        let tap = rt.block_on(Tap::start_both(([127, 0, 0, 1], target).into()));
        Ok(CountingTap { tap, _rt: rt })
    }

    pub(crate) fn port(&self) -> u16 {
        self.tap.addr().port()
    }

    fn counts(&self) -> IdeCounts {
        IdeCounts::of(&self.tap.seen())
    }

    /// The debugger's commands passed on so far, by command set and command.
    pub(crate) fn commands(&self) -> Vec<(u8, u8)> {
        self.tap
            .seen()
            .iter()
            .filter(|s| s.to_vm)
            .filter_map(|s| match s.packet.kind {
                testkit::wire::Kind::Command { set, cmd } => Some((set, cmd)),
                testkit::wire::Kind::Reply { .. } => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_lines_are_read() {
        let mut p = Printed::default();
        for l in ["stop_ns=100000000", "first_ns=123456789", "step_ns=1000000,2500000", "something else", "done steps=2 values=40"] {
            p.line(l);
        }
        assert_eq!(p, Printed { stop_ns: Some(100_000_000), first_ns: Some(123_456_789), step_ns: vec![1_000_000, 2_500_000], done: true });
        let mut none = Printed::default();
        none.line("step_ns=");
        assert!(none.step_ns.is_empty() && !none.done);
    }

    #[test]
    fn link_turns_between_the_ides_lines() {
        let m = TurnMarks { start: 10, stop: Some(28), first: Some(31), end: Some(61) };
        assert_eq!(m.figures(20), Some(LinkTurns { attach: 18, first_stop: 3, per_step: 1.5 }));
        assert_eq!(m.figures(0), None);
        assert_eq!(TurnMarks { end: None, ..m }.figures(20), None);
    }

    #[test]
    fn paths_alternate_and_keep_their_columns() {
        assert_eq!(FarKind::order(1), [FarKind::Far, FarKind::Forward, FarKind::SshL]);
        assert_eq!(FAR_PATHS.map(FarKind::column), [0, 1, 2]);
    }
}
