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
//! The delay relay's round trips are read at the same marks. jdb's prompts are `> ` (no
//! current thread) and `NAME[N] ` at the start of a line; a command's answer follows the
//! prompt it was typed at on the same line (input is not echoed), so an answer is its needle
//! and the first prompt at a line start after it (`answered`). Events print from another
//! thread: "\nBreakpoint hit: " at once, the location (`"thread=stepper", Walk.run(),
//! line=30 bci=19`, one line) after the round trips that name it, then a prompt; a
//! command's answer or prompt can land between the two, and an event between an answer and
//! its prompt. So an event's needle is its location, and a command that causes one waits for
//! its answer and the event from the same place (`Jdb::ask_all`).

use std::io::{Read, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

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

/// The end of a jdb prompt starting at `at`, which must be a line's start: `> ` or
/// `NAME[N] ` (NAME: a thread's name without blanks or brackets).
pub fn prompt_end(text: &str, at: usize) -> Option<usize> {
    if at > 0 && text.as_bytes().get(at - 1) != Some(&b'\n') {
        return None;
    }
    let rest = text.get(at..)?;
    if rest.starts_with("> ") {
        return Some(at + 2);
    }
    let open = rest.find('[')?;
    let name = &rest[..open];
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == ']') {
        return None;
    }
    let after = &rest[open + 1..];
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && after[digits..].starts_with("] ")).then_some(at + open + 1 + digits + 2)
}

/// Where the answer holding `needle` ends in `text` after `from`: past the first prompt at a
/// line start after the needle (None while it has not come).
pub fn answered(text: &str, from: usize, needle: &str) -> Option<usize> {
    let i = from + text.get(from..)?.find(needle)?;
    let mut at = i + needle.len();
    while let Some(nl) = text.get(at..).and_then(|t| t.find('\n')) {
        at += nl + 1;
        if let Some(end) = prompt_end(text, at) {
            return Some(end);
        }
    }
    None
}

/// What jdb printed (standard output), shared with its reader thread; `None` once it ended.
type Printed = Arc<(Mutex<(String, bool)>, Condvar)>;

/// A running jdb: type lines, wait for answers.
struct Jdb {
    proc: Proc,
    stdin: Option<ChildStdin>,
    out: Printed,
    err: Arc<Mutex<String>>,
    /// Just past the last answer.
    cursor: usize,
}

impl Jdb {
    fn attach(port: u16) -> Result<Jdb> {
        let mut cmd = crate::procs::command("jdb");
        cmd.args(["-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-attach", &format!("127.0.0.1:{port}")])
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn("jdb", &mut cmd)?;
        let mut stdout = proc.take_stdout().context("jdb stdout")?;
        let mut stderr = proc.take_stderr().context("jdb stderr")?;
        let out: Printed = Arc::new((Mutex::new((String::new(), false)), Condvar::new()));
        let o = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                let n = stdout.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*o;
                let Ok(mut g) = lock.lock() else { return };
                if n == 0 {
                    g.1 = true;
                    cv.notify_all();
                    return;
                }
                g.0.push_str(&String::from_utf8_lossy(&buf[..n]));
                cv.notify_all();
            }
        });
        let err = Arc::new(Mutex::new(String::new()));
        let e = err.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            if let Ok(mut g) = e.lock() {
                *g = s;
            }
        });
        let stdin = proc.take_stdin();
        Ok(Jdb { proc, stdin, out, err, cursor: 0 })
    }

    fn send(&mut self, line: &str) -> Result<()> {
        let Some(stdin) = self.stdin.as_mut() else { bail!("jdb's input is closed") };
        stdin.write_all(format!("{line}\n").as_bytes()).and_then(|_| stdin.flush()).with_context(|| format!("type {line:?} to jdb"))
    }

    /// Waits for the answer holding `needle` and moves past it.
    fn expect(&mut self, needle: &str) -> Result<()> {
        self.expect_all(&[needle])
    }

    /// Waits for the answers holding each of `needles` (in any order, each from where the
    /// last answer ended) and moves past the last of them.
    fn expect_all(&mut self, needles: &[&str]) -> Result<()> {
        let deadline = Instant::now() + ANSWER;
        let (lock, cv) = &*self.out;
        let mut g = lock.lock().map_err(|_| anyhow::anyhow!("jdb's reader panicked"))?;
        loop {
            let ends: Option<Vec<usize>> = needles.iter().map(|n| answered(&g.0, self.cursor, n)).collect();
            if let Some(end) = ends.and_then(|e| e.into_iter().max()) {
                self.cursor = end;
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if g.1 || left.is_zero() {
                let tail: String = g.0.get(self.cursor..).unwrap_or_default().chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
                let why = if g.1 { "jdb's output ended" } else { "timed out" };
                let err = self.err.lock().map(|e| e.clone()).unwrap_or_default();
                bail!("{why} waiting for {needles:?}, each with a prompt after it; jdb printed since:\n{tail:?}\nits errors: {err}");
            }
            g = cv.wait_timeout(g, left.min(Duration::from_millis(500))).map_err(|_| anyhow::anyhow!("jdb's reader panicked"))?.0;
        }
    }

    /// Types `line` and waits for its answer.
    fn ask(&mut self, line: &str, needle: &str) -> Result<()> {
        self.ask_all(line, &[needle])
    }

    /// Types `line` and waits for its answer and the events it causes.
    fn ask_all(&mut self, line: &str, needles: &[&str]) -> Result<()> {
        self.send(line)?;
        self.expect_all(needles)
    }

    /// `quit` (jdb disposes the VM's connection) and its exit; killed if it does not.
    fn quit(&mut self) {
        let _ = self.send("quit");
        self.stdin = None;
        if !self.proc.wait_exit(Duration::from_secs(15)) {
            self.proc.kill();
        }
    }
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
    let mut jdb = Jdb::attach(port)?;
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

    /// What jdb 17 printed through an attach, the walk's start, the first stop and a step
    /// (`stepper[1] > ` after `cont`: the old prompt, then the new one on the same line).
    const SESSION: &str = "Set uncaught java.lang.Throwable\nSet deferred uncaught java.lang.Throwable\nInitializing jdb ...\n> Set breakpoint Walk:30\n> All threads resumed.\n> Set breakpoint Main:22\n> \nBreakpoint hit: \"thread=stepper\", Main.lambda$main$0(), line=22 bci=31\n\nstepper[1]  Walk.go = true = true\nstepper[1] Removed: breakpoint Main:22\nstepper[1] > \nBreakpoint hit: \"thread=stepper\", Walk.run(), line=30 bci=19\n\nstepper[1]   [1] Walk.run (Gen.java:30)\n  [2] Main.lambda$main$0 (Main.java:20)\n  [3] java.lang.Thread.run (Thread.java:840)\nstepper[1] Method arguments:\nseed = 1\nLocal variables:\na = 1\nnote = \"walker\"\nstepper[1] Removed: breakpoint Walk:30\nstepper[1] > \nStep completed: \"thread=stepper\", Walk.run(), line=31 bci=29\n\nstepper[1] ";

    #[test]
    fn prompts_at_line_starts_only() {
        assert_eq!(prompt_end("> x", 0), Some(2));
        assert_eq!(prompt_end("a\nstepper[1] where", 2), Some(13));
        assert_eq!(prompt_end("a\npool-1-thread-3[12] ", 2), Some(22));
        // The frames of `where` start with blanks; a prompt needs its blank and digits.
        assert_eq!(prompt_end("\n  [1] Walk.run (Gen.java:30)", 1), None);
        assert_eq!(prompt_end("\nmain[1]", 1), None);
        assert_eq!(prompt_end("\nmain[] ", 1), None);
        assert_eq!(prompt_end("x> ", 1), None);
        assert_eq!(prompt_end("Local variables:", 0), None);
    }

    #[test]
    fn answers_end_at_the_prompt_after_their_needle() {
        let s = SESSION;
        let mut at = answered(s, 0, "Initializing jdb").unwrap();
        assert!(s[at..].starts_with("Set breakpoint Walk:30"));
        for (needle, next) in [
            ("breakpoint Walk:30", "All threads"),
            ("All threads resumed.", "Set breakpoint Main:22"),
            ("Set breakpoint Main:22", "\nBreakpoint hit"),
            ("\"thread=stepper\", Main.lambda$main$0(), line=22 ", " Walk.go = true"),
            ("Walk.go = true = true", "Removed: breakpoint Main:22"),
            ("Removed: breakpoint Main:22", "> \nBreakpoint hit"),
            ("\"thread=stepper\", Walk.run(), line=30 ", "  [1] Walk.run"),
            ("[1] Walk.run (", "Method arguments"),
            ("Local variables:", "Removed: breakpoint Walk:30"),
            ("Removed: breakpoint Walk:30", "> \nStep completed"),
        ] {
            at = answered(s, at, needle).unwrap_or_else(|| panic!("{needle}"));
            assert!(s[at..].starts_with(next), "after {needle}: {:?}", &s[at..]);
        }
        // The step's event and the prompt that ends the text.
        let end = answered(s, at, "\"thread=stepper\", Walk.run(), line=").unwrap();
        assert_eq!(end, s.len());
    }

    /// Seen through `ssh -L` at 10 ms one way: the breakpoint was hit before `stop at` had
    /// printed its answer, which landed between "Breakpoint hit: " and the location.
    #[test]
    fn an_answer_inside_an_event() {
        let s = "> All threads resumed.\n> \nBreakpoint hit: Set breakpoint Main:22\n> \"thread=stepper\", Main.lambda$main$0(), line=22 bci=31\n\nstepper[1] ";
        let from = "> All threads resumed.\n> ".len();
        let set = answered(s, from, "Set breakpoint Main:22").unwrap();
        let hit = answered(s, from, "\"thread=stepper\", Main.lambda$main$0(), line=22 ").unwrap();
        assert_eq!((set, hit), (s.find("\"thread").unwrap(), s.len()));
        // An event between an answer and its prompt: the prompt after it ends both.
        let s = "stepper[1] > \nBreakpoint hit: \"thread=stepper\", Walk.run(), line=30 bci=19\n\nstepper[1] ";
        assert_eq!(answered(s, 0, "\"thread=stepper\", Walk.run(), line=30 "), Some(s.len()));
    }

    #[test]
    fn answers_not_yet_complete() {
        // The needle without its prompt yet, a needle before the cursor, a prompt mid-line.
        assert_eq!(answered("stepper[1] Method arguments:\nLocal variables:\na = 1\n", 0, "Local variables:"), None);
        assert_eq!(answered("> All threads resumed.\n> ", 3, "All threads resumed."), None);
        assert_eq!(answered("Local variables: stepper[1] ", 0, "Local variables:"), None);
    }

    #[test]
    fn link_turns_between_the_answers() {
        let m = JdbMarks { start: 10, attached: Some(15), hit: Some(20), first: Some(22), steps_from: Some(23), end: Some(35) };
        assert_eq!(m.figures(6), Some(JdbTurns { attach: 5, first_stop: 2, per_step: 2.0 }));
        assert_eq!(m.figures(0), None);
        assert_eq!(JdbMarks { hit: None, ..m }.figures(6), None);
    }
}
