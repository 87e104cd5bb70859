//! The `far` section's jdb (`--far-jdb`): the real `jdb` (the JDK's) typed at through the same
//! three paths as the IDE (`ssh -L`, `--far never`, `--far always`) and links, as a person
//! would, waiting for each answer's prompt before the next command:
//!
//! - attach: `jdb -attach 127.0.0.1:PORT` (its own JVM's start included), `stop at
//!   Walk:LINE` ("Set breakpoint"), `resume` ("All threads resumed.");
//! - then, untimed, what starts the walk: jdb evaluates only in a thread's frame, so it stops
//!   the stepper thread in its idle loop (`stop at Main:IDLE`), `set Walk.go = true`,
//!   `clear Main:IDLE`, `cont`;
//! - the first stop: from the breakpoint's "Breakpoint hit" and prompt to `where` and
//!   `locals` answered (then, untimed, `clear Walk:LINE`);
//! - each step: `next` ("Step completed"), `where`, `locals`, each to its prompt.
//!
//! The delay relay's round trips are read at the same marks. The jdb is the test kit's
//! blocking one (`testkit::blocking_jdb`): each wait ends at an answer's prompt
//! (`testkit::jdb::answered`, where jdb's printing order is told), and a command that
//! causes an event waits for its answer and the event from the same place (`ask_all`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use testkit::blocking_jdb::BlockingJdb;
use testkit::delay_link::DelayLink;
use crate::far_paths::{self as fp, FarKind, FarWrapper, Path3};
use crate::jvm::Jvm;
use crate::procs::Proc;
use crate::proxy::ProxyBin;
use crate::remote_paths::Target;

/// Steps per run (each `next`, `where`, `locals`), unless the budget ends them sooner.
pub const JDB_STEPS: usize = 6;
/// Stepping stops after this long even if fewer steps were made.
pub const JDB_BUDGET: Duration = Duration::from_secs(20);
/// Longest wait for one answer (the thin link through `ssh -L` is slow, a hung one fails).
const ANSWER: Duration = Duration::from_secs(120);

/// Starts `jdb -attach 127.0.0.1:PORT` (the kit's arguments) as a child of the benchmark,
/// and the console that types at it.
fn attach(port: u16) -> Result<(Proc, BlockingJdb)> {
    let mut cmd = crate::procs::command("jdb");
    cmd.args(testkit::jdb::attach_args(&format!("127.0.0.1:{port}")))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn("jdb", &mut cmd)?;
    let stdin = proc.take_stdin().context("jdb stdin")?;
    let stdout = proc.take_stdout().context("jdb stdout")?;
    let stderr = proc.take_stderr().context("jdb stderr")?;
    Ok((proc, BlockingJdb::over(stdin, stdout, stderr, ANSWER)))
}

/// Round trips counted on the delay relay's link between jdb's answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JdbTurns {
    /// From jdb's start to the breakpoint set and the VM resumed.
    pub attach: u64,
    /// From the breakpoint's stop shown to `where` and `locals` answered.
    pub first_stop: u64,
    /// Per step (`next`, `where`, `locals`), all steps of the run.
    pub per_step: f64,
}

/// The relay's count at each mark.
#[derive(Debug, Default, Clone, Copy)]
pub struct JdbMarks {
    pub start: u64,
    pub attached: Option<u64>,
    pub hit: Option<u64>,
    pub first: Option<u64>,
    pub steps_from: Option<u64>,
    pub end: Option<u64>,
}

impl JdbMarks {
    pub fn figures(&self, steps: usize) -> Option<JdbTurns> {
        let (attached, hit, first, from, end) = (self.attached?, self.hit?, self.first?, self.steps_from?, self.end?);
        (steps > 0).then(|| JdbTurns {
            attach: attached.saturating_sub(self.start),
            first_stop: first.saturating_sub(hit),
            per_step: end.saturating_sub(from) as f64 / steps as f64,
        })
    }
}

/// One jdb session's figures.
#[derive(Debug, Clone, Default)]
pub struct JdbRun {
    /// jdb's start (its own JVM's start included) to the breakpoint set and the VM resumed.
    pub attach_ms: f64,
    /// The breakpoint's stop shown to `where` and `locals` answered.
    pub first_stop_ms: f64,
    pub step_ms: Vec<f64>,
    pub turns: Option<JdbTurns>,
}

/// One jdb session through `kind` against `jvm` (the host of `t`, namespace `ns`); `link` is
/// the delay relay `t` goes through, if any.
#[allow(clippy::too_many_arguments)]
pub fn run(kind: FarKind, jvm: &mut Jvm, t: &Target, ns: &str, bin: &ProxyBin, far: &FarWrapper, steps: usize, link: Option<&DelayLink>) -> Result<JdbRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let (mut path, port) = fp::start(kind, t, bin, far)?;
    let count = || link.map_or(0, DelayLink::turns);
    let mut marks = JdbMarks { start: count(), ..JdbMarks::default() };
    let t0 = Instant::now();
    let (mut jdb_proc, mut jdb) = attach(port)?;
    let mut r = JdbRun::default();
    let session = (|| -> Result<()> {
        let bp = crate::jvm::walk_breakpoint_line();
        let idle = crate::jvm::idle_line();
        jdb.expect("Initializing jdb")?;
        jdb.ask(&format!("stop at Walk:{bp}"), &format!("breakpoint Walk:{bp}"))?;
        jdb.ask("resume", "All threads resumed.")?;
        r.attach_ms = t0.elapsed().as_secs_f64() * 1e3;
        marks.attached = Some(count());
        // The walk starts from a frame of the stepper thread.
        jdb.ask_all(&format!("stop at Main:{idle}"), &[&format!("Set breakpoint Main:{idle}"), &format!("\"thread=stepper\", Main.lambda$main$0(), line={idle} ")])?;
        jdb.ask("set Walk.go = true", "Walk.go = true = true")?;
        jdb.ask(&format!("clear Main:{idle}"), &format!("Removed: breakpoint Main:{idle}"))?;
        jdb.ask("cont", &format!("\"thread=stepper\", Walk.run(), line={bp} "))?;
        let hit = Instant::now();
        marks.hit = Some(count());
        jdb.ask("where", "[1] Walk.run (")?;
        jdb.ask("locals", "Local variables:")?;
        r.first_stop_ms = hit.elapsed().as_secs_f64() * 1e3;
        marks.first = Some(count());
        jdb.ask(&format!("clear Walk:{bp}"), &format!("Removed: breakpoint Walk:{bp}"))?;
        marks.steps_from = Some(count());
        let s0 = Instant::now();
        while r.step_ms.len() < steps && s0.elapsed() < JDB_BUDGET {
            let ts = Instant::now();
            jdb.ask("next", "\"thread=stepper\", Walk.run(), line=")?;
            jdb.ask("where", "[1] Walk.run (")?;
            jdb.ask("locals", "Local variables:")?;
            r.step_ms.push(ts.elapsed().as_secs_f64() * 1e3);
        }
        marks.end = Some(count());
        jdb.ask("set Walk.go = false", "Walk.go = false = false")?;
        jdb.send("cont")
    })();
    // jdwpmux goes first while jdb is still attached: the VM sees one disconnect.
    let log = match &mut path {
        Path3::Jdwpmux { proxy, .. } => {
            let l = if session.is_ok() { String::new() } else { proxy.log_tail(3000) };
            proxy.stop();
            l
        }
        Path3::Ssh(r) => r.log_tail(),
    };
    jdb.quit();
    if !jdb_proc.wait_exit(Duration::from_secs(15)) {
        jdb_proc.kill();
    }
    if let Path3::Ssh(r) = &mut path {
        r.stop();
    }
    if kind == FarKind::Far {
        fp::far_gone(ns, Duration::from_secs(20)).with_context(|| format!("after serve stopped; far side's log:\n{}", far.log()))?;
    }
    session.with_context(|| format!("jdb through {}; log:\n{log}\nfar side's log:\n{}", kind.label(), if kind == FarKind::Far { far.log() } else { String::new() }))?;
    r.turns = link.and_then(|_| marks.figures(r.step_ms.len()));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_turns_between_the_answers() {
        let m = JdbMarks { start: 10, attached: Some(15), hit: Some(20), first: Some(22), steps_from: Some(23), end: Some(35) };
        assert_eq!(m.figures(6), Some(JdbTurns { attach: 5, first_stop: 2, per_step: 2.0 }));
        assert_eq!(m.figures(0), None);
        assert_eq!(JdbMarks { hit: None, ..m }.figures(6), None);
    }
}
