//! Drives the real `jdb`: attach to HOST:PORT, type lines, wait for text with deadlines.
//! jdb prompts look like `> ` and `main[1] `; a breakpoint prints
//! `Breakpoint hit: "thread=main", Main.tick(), line=5 bci=0`.
//!
//! Two drivers, one command line and one reading of its prompts: [`Jdb`] here (async, a
//! `Console`: the tests wait for one string at a time) and `blocking_jdb::BlockingJdb` (the
//! benchmark's timed sessions, which wait for each answer's prompt as a person typing
//! does). Where an answer ends is [`answered`]: jdb's prompts are `> ` (no current thread)
//! and `NAME[N] ` at the start of a line; a command's answer follows the prompt it was typed
//! at on the same line (input is not echoed), so an answer is its needle and the first
//! prompt at a line start after it. Events print from another thread: "\nBreakpoint hit: "
//! at once, the location (`"thread=stepper", Walk.run(), line=30 bci=19`, one line) after
//! the round trips that name it, then a prompt; a command's answer or prompt can land
//! between the two, and an event between an answer and its prompt. So an event's needle is
//! its location, and a command that causes one waits for its answer and the event from the
//! same place.

use std::process::ExitStatus;

use anyhow::Result;
use tokio::process::Command;

use super::console::Console;

/// jdb's arguments to attach to HOST:PORT, its own JVM started lean (serial GC, the client
/// compiler, no perf data file): what every jdb of the tests and the benchmark runs with.
pub fn attach_args(host_port: &str) -> [&str; 5] {
    ["-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-attach", host_port]
}

/// A running `jdb`: a `Console` that quits with `quit`.
pub struct Jdb(Console);

impl Jdb {
    /// Spawns `jdb -attach HOST:PORT` (stdout and stderr merged into one buffer). Does not
    /// wait: follow with e.g. `expect("Initializing jdb", ..)` or `expect("VM Started", ..)`.
    pub async fn attach(host_port: &str) -> Result<Jdb> {
        Self::attach_as(&[], host_port).await
    }

    /// `attach`, run under `prefix` (`setpriv ... --`: as another user) from `/`, which every
    /// user may enter (a test's own folder may be closed to others).
    pub async fn attach_as(prefix: &[String], host_port: &str) -> Result<Jdb> {
        let mut words = prefix.iter().map(String::as_str).chain(["jdb"]).chain(attach_args(host_port));
        let mut cmd = Command::new(words.next().unwrap_or("jdb"));
        cmd.args(words).current_dir("/");
        Ok(Jdb(Console::spawn(cmd, "jdb")?))
    }

    /// Sends `quit` and waits for jdb to exit (killing it if it does not).
    pub async fn quit(&mut self) -> Result<ExitStatus> {
        self.0.quit_with("quit").await
    }
}

impl std::ops::Deref for Jdb {
    type Target = Console;
    fn deref(&self) -> &Console {
        &self.0
    }
}

impl std::ops::DerefMut for Jdb {
    fn deref_mut(&mut self) -> &mut Console {
        &mut self.0
    }
}

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What jdb 17 printed through an attach, the walk's start, the first stop and a step
    /// (`stepper[1] > ` after `cont`: the old prompt, then the new one on the same line).
    pub(crate) const SESSION: &str = "Set uncaught java.lang.Throwable\nSet deferred uncaught java.lang.Throwable\nInitializing jdb ...\n> Set breakpoint Walk:30\n> All threads resumed.\n> Set breakpoint Main:22\n> \nBreakpoint hit: \"thread=stepper\", Main.lambda$main$0(), line=22 bci=31\n\nstepper[1]  Walk.go = true = true\nstepper[1] Removed: breakpoint Main:22\nstepper[1] > \nBreakpoint hit: \"thread=stepper\", Walk.run(), line=30 bci=19\n\nstepper[1]   [1] Walk.run (Gen.java:30)\n  [2] Main.lambda$main$0 (Main.java:20)\n  [3] java.lang.Thread.run (Thread.java:840)\nstepper[1] Method arguments:\nseed = 1\nLocal variables:\na = 1\nnote = \"walker\"\nstepper[1] Removed: breakpoint Walk:30\nstepper[1] > \nStep completed: \"thread=stepper\", Walk.run(), line=31 bci=29\n\nstepper[1] ";

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
}
