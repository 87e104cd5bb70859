//! The far-side soak's IDE: `StepDriver` (testkit/src/jdi/StepDriver.java, with its `view`:
//! the threads view and a toString() at each stop) stepping for as long as the run lasts
//! through the proxy's port, each stop checked against the app's log as it was once the
//! stop's views had been read, and the log checked again after the IDE held the stop a
//! while: it must not have grown. After the far side is killed the session ends (the VM sees
//! its debugger leave); the IDE attaches again once the VM is listed ready, as a person would.
//! When the schedule asks (`Shared::gate`, before it kills the exec that carries the link to
//! a far side in a container), the IDE holds its next stop until told to go on, and the log
//! must not have grown through that hold either: the stop is still the VM's.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::procs::Proc;
use crate::soak_far_check::{check_stop, LogTail, Stop};

/// `Shared::gate`: nothing asked.
pub const GATE_OPEN: u8 = 0;
/// The schedule asks the IDE to hold its next stop.
pub const GATE_ASKED: u8 = 1;
/// The IDE holds a stop (checked against the log) and waits.
pub const GATE_HOLDING: u8 = 2;
/// The schedule is done: the IDE checks the log once more and steps on.
pub const GATE_GO_ON: u8 = 3;

/// What the IDE's thread and the schedule share.
#[derive(Default)]
pub struct Shared {
    /// Put before each problem (which session it is, when the run has two).
    pub tag: String,
    pub stop: AtomicBool,
    /// Far sides killed so far: a session that ends after one is expected to.
    pub kills: AtomicU64,
    /// Steps done so far, every session's: the schedule sees the IDE go on.
    pub steps: AtomicU64,
    /// A hold the schedule asks for: `GATE_OPEN`, `GATE_ASKED`, `GATE_HOLDING`, `GATE_GO_ON`.
    pub gate: AtomicU8,
    pub problems: Mutex<Vec<String>>,
}

impl Shared {
    pub fn tagged(tag: &str) -> Shared {
        Shared { tag: tag.to_string(), ..Shared::default() }
    }

    pub fn problem(&self, why: String) {
        let why = format!("{}{why}", self.tag);
        eprintln!("soak-far: {why}");
        if let Ok(mut p) = self.problems.lock() {
            p.push(why);
        }
    }

    /// Waits (up to `limit`) until the gate is `want`.
    pub fn gate_is(&self, want: u8, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.gate.load(Ordering::SeqCst) != want {
            if Instant::now() > deadline || self.stop.load(Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

/// Where the IDE goes and what it reads.
#[derive(Clone)]
pub struct IdeCfg {
    pub java_dir: PathBuf,
    pub bin: PathBuf,
    pub control: PathBuf,
    pub host: String,
    pub vm_port: u16,
    pub log: PathBuf,
    /// How long the IDE holds each stop before it steps on.
    pub hold: Duration,
    /// A step (or an attach to its first stop) not done within this is a failure.
    pub step_limit: Duration,
}

/// The IDE's figures.
#[derive(Debug, Default, Clone)]
pub struct IdeTotals {
    pub stops: u64,
    pub steps: u64,
    pub sessions: u64,
    /// Stops whose values differed from the app's log, holds in which the app's log grew.
    pub values_wrong: u64,
    pub ran_while_stopped: u64,
    /// Sessions that ended when no far side had been killed.
    pub sessions_lost: u64,
    /// Stops held while the schedule killed the exec (`Shared::gate`).
    pub held_through: u64,
    pub step_ms: Vec<f64>,
}

/// The debugger port of the VM at 127.0.0.1:`vm_port` on `host` once listed ready (or stopped).
pub fn ready_port(bin: &Path, control: &Path, host: &str, vm_port: u16, limit: Duration) -> Result<u16> {
    let deadline = Instant::now() + limit;
    loop {
        let out = Command::new(bin).args(["list", "--json", "--control"]).arg(control).stdin(Stdio::null()).output().context("run jdwpmux list")?;
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).ok().and_then(|v: serde_json::Value| v.as_array().cloned()).unwrap_or_default();
        // Ready, or held at a stop by another debugger (`list` shows it stopped).
        let addr = format!("127.0.0.1:{vm_port}");
        let row = rows.iter().find(|r| r["host"] == host && r["addr"] == addr.as_str() && (r["state"] == "ready" || r["state"] == "stopped"));
        if let Some(p) = row.and_then(|r| r["debugger_port"].as_u64()).and_then(|p| u16::try_from(p).ok()) {
            return Ok(p);
        }
        if Instant::now() > deadline {
            bail!("the VM on {host} was not listed ready within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A `StepDriver` process and its output lines.
struct Driver {
    proc: Proc,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Driver {
    fn start(dir: &Path, port: u16) -> Result<Driver> {
        let mut cmd = crate::procs::command("java");
        cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"]).arg(dir).args(["StepDriver", "127.0.0.1", &port.to_string()]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut proc = Proc::spawn("StepDriver", &mut cmd)?;
        let out = proc.take_stdout().context("StepDriver stdout")?;
        let stdin = proc.take_stdin().context("StepDriver stdin")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Ok(Driver { proc, stdin, lines })
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush()).context("write to StepDriver")
    }

    /// Lines up to one starting with `want` (returned), or why not.
    fn expect(&mut self, want: &str, limit: Duration) -> Result<String, Ended> {
        let deadline = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) if l.starts_with(want) => return Ok(l),
                Ok(l) if l.starts_with("disconnected") => return Err(Ended::Disconnected),
                Ok(l) if l.starts_with("error") => return Err(Ended::Error(l)),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => return Err(Ended::Timeout),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Ended::Disconnected),
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.send("exit");
        if !self.proc.wait_exit(Duration::from_secs(5)) {
            self.proc.kill();
        }
    }
}

/// Why a session's wait ended without its line.
#[derive(Debug)]
enum Ended {
    Disconnected,
    Error(String),
    Timeout,
}

/// The app's log file, read on as it grows.
struct LogReader {
    file: File,
    tail: LogTail,
}

impl LogReader {
    fn read(&mut self) -> &LogTail {
        let mut buf = Vec::new();
        if self.file.read_to_end(&mut buf).is_ok() {
            self.tail.feed(&buf);
        }
        &self.tail
    }
}

/// Steps until `shared.stop`, attaching again after each session that ends.
pub fn drive(cfg: &IdeCfg, shared: &Arc<Shared>) -> IdeTotals {
    let mut t = IdeTotals::default();
    let mut log = match File::open(&cfg.log) {
        Ok(file) => LogReader { file, tail: LogTail::default() },
        Err(e) => {
            shared.problem(format!("the app's log {}: {e}", cfg.log.display()));
            return t;
        }
    };
    while !shared.stop.load(Ordering::SeqCst) {
        let kills = shared.kills.load(Ordering::SeqCst);
        if let Err(e) = session(cfg, shared, &mut log, &mut t) {
            if shared.stop.load(Ordering::SeqCst) {
                break;
            }
            if shared.kills.load(Ordering::SeqCst) == kills {
                t.sessions_lost += 1;
                let before = log.tail.clone();
                std::thread::sleep(Duration::from_millis(500));
                let app = log.read();
                shared.problem(format!(
                    "the IDE's session {} ended with no far side killed: {e:#} (the app's log: last value {:?}, {} bytes, {} in the next 0.5 s)",
                    t.sessions,
                    app.value,
                    app.len,
                    if app.len > before.len { "growing" } else { "not growing" }
                ));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    t
}

/// One session: attach, stop at `Tally.step`, step and check until the run ends (Ok) or the
/// session does (Err).
fn session(cfg: &IdeCfg, shared: &Shared, log: &mut LogReader, t: &mut IdeTotals) -> Result<()> {
    // Once a far side is killed the VM sees this session leave and runs: what the IDE shows
    // from then on is checked no more, and the session ends.
    let born = shared.kills.load(Ordering::SeqCst);
    let killed = || shared.kills.load(Ordering::SeqCst) != born;
    let port = ready_port(&cfg.bin, &cfg.control, &cfg.host, cfg.vm_port, Duration::from_secs(180))?;
    let mut d = Driver::start(&cfg.java_dir, port)?;
    t.sessions += 1;
    let said = |what: &str, e: Ended| anyhow::anyhow!("{what}: {e:?}");
    d.expect("attached", cfg.step_limit).map_err(|e| said("attach", e))?;
    d.send("view")?;
    d.expect("viewing", cfg.step_limit).map_err(|e| said("view", e))?;
    d.send("go Tally step go")?;
    d.expect("going", cfg.step_limit).map_err(|e| said("breakpoint", e))?;
    let mut previous: Option<Stop> = None;
    let mut asked = Instant::now();
    loop {
        let mut stop = Stop::default();
        let deadline = Instant::now() + cfg.step_limit;
        loop {
            let l = d.expect("stop", deadline.saturating_duration_since(Instant::now())).map_err(|e| said(&format!("stop after {} steps", t.steps), e))?;
            if let Some(num) = l.strip_prefix("stopped ") {
                stop.number = num.trim().parse().unwrap_or(0);
                break;
            }
            let Some(rest) = l.strip_prefix("stop ") else { continue };
            stop.line(rest.split_once(' ').map_or("", |(_, what)| what));
        }
        if previous.is_some() {
            t.steps += 1;
            shared.steps.fetch_add(1, Ordering::SeqCst);
            t.step_ms.push(asked.elapsed().as_secs_f64() * 1e3);
        }
        let at_stop = log.read().clone();
        if killed() {
            bail!("a far side was killed at stop {}", stop.number);
        }
        t.stops += 1;
        let wrong = check_stop(&stop, &at_stop, previous.as_ref(), true);
        if !wrong.is_empty() {
            t.values_wrong += 1;
            for w in wrong {
                shared.problem(w);
            }
        }
        std::thread::sleep(cfg.hold);
        // Asked to hold this stop through an exec kill: until the schedule says go on.
        let held = shared.gate.compare_exchange(GATE_ASKED, GATE_HOLDING, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if held {
            if !shared.gate_is(GATE_GO_ON, cfg.step_limit) && !shared.stop.load(Ordering::SeqCst) {
                shared.problem(format!("the schedule did not let stop {} go on within {:?}", stop.number, cfg.step_limit));
            }
            t.held_through += 1;
            shared.gate.store(GATE_OPEN, Ordering::SeqCst);
        }
        let after = log.read().len;
        if killed() {
            bail!("a far side was killed at stop {}", stop.number);
        }
        if after != at_stop.len {
            t.ran_while_stopped += 1;
            let through = if held { " through an exec kill" } else { "" };
            shared.problem(format!("the app ran while the IDE held stop {}{through} ({} -> {} bytes of log)", stop.number, at_stop.len, after));
        }
        previous = Some(stop);
        if shared.stop.load(Ordering::SeqCst) {
            let _ = d.send("finish");
            let _ = d.expect("finished", Duration::from_secs(60));
            return Ok(());
        }
        asked = Instant::now();
        d.send("step")?;
    }
}
