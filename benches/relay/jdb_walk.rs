//! The real `jdb` (the JDK's) typed at as a person would, waiting for each answer's prompt
//! before the next command, the same walk on every path (the `far` section's `--far-jdb` and
//! the `jvm` section's local jdb rows):
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
//! A counter (the delay relay's round trips, where there is one) is read at the same marks.
//! The jdb is the test kit's blocking one (`testkit::blocking_jdb`): each wait ends at an
//! answer's prompt (`testkit::jdb::answered`, where jdb's printing order is told), and a
//! command that causes an event waits for its answer and the event from the same place
//! (`ask_all`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use testkit::blocking_jdb::BlockingJdb;
use crate::procs::Proc;

/// Longest wait for one answer (the thin link through `ssh -L` is slow, a hung one fails).
const ANSWER: Duration = Duration::from_secs(120);

/// Starts `jdb -attach 127.0.0.1:PORT` (the kit's arguments) as a child of the benchmark,
/// and the console that types at it.
pub fn attach(port: u16) -> Result<(Proc, BlockingJdb)> {
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

/// The walk above on an attached jdb (`t0`: when jdb was started), at most `steps` steps
/// or `budget` of stepping; `count` read at each mark. Ends with the walk stopped
/// (`Walk.go = false`) and the stepper thread stopped at its last step: the caller resumes.
pub fn walk(jdb: &mut BlockingJdb, t0: Instant, steps: usize, budget: Duration, count: &dyn Fn() -> u64, marks: &mut JdbMarks, r: &mut JdbRun) -> Result<()> {
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
    while r.step_ms.len() < steps && s0.elapsed() < budget {
        let ts = Instant::now();
        jdb.ask("next", "\"thread=stepper\", Walk.run(), line=")?;
        jdb.ask("where", "[1] Walk.run (")?;
        jdb.ask("locals", "Local variables:")?;
        r.step_ms.push(ts.elapsed().as_secs_f64() * 1e3);
    }
    marks.end = Some(count());
    jdb.ask("set Walk.go = false", "Walk.go = false = false")?;
    Ok(())
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
