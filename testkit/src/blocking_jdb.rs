//! The real `jdb` typed at from blocking code, as a person would: each command after the
//! last one's answer and prompt (`jdb::answered`). The benchmark times jdb's attach, first
//! stop and steps with it, so nothing polls on that path: a reader thread appends jdb's
//! output and wakes the waiting caller at once (a condition variable). The tests use the
//! async `jdb::Jdb`; both run jdb with `jdb::attach_args`.
//!
//! The process is the caller's (the benchmark keeps its children in a list it kills on
//! Ctrl-C): this drives its three pipes.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::jdb::answered;

/// What jdb printed (standard output) and whether it ended, shared with the reader thread.
type Printed = Arc<(Mutex<(String, bool)>, Condvar)>;

/// A running jdb's console: type lines, wait for answers.
pub struct BlockingJdb {
    stdin: Option<Box<dyn Write + Send>>,
    out: Printed,
    /// Its standard error, whole once it ended (for messages).
    err: Arc<Mutex<String>>,
    /// Just past the last answer.
    cursor: usize,
    /// Longest wait for one answer.
    answer: Duration,
}

impl BlockingJdb {
    /// Drives the jdb whose standard input, output and error these are (a child started
    /// with `jdb` and `jdb::attach_args`, all three piped); `answer` bounds each wait.
    pub fn over(stdin: impl Write + Send + 'static, mut stdout: impl Read + Send + 'static, mut stderr: impl Read + Send + 'static, answer: Duration) -> BlockingJdb {
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
        BlockingJdb { stdin: Some(Box::new(stdin)), out, err, cursor: 0, answer }
    }

    /// Types one line (a newline is added).
    pub fn send(&mut self, line: &str) -> Result<()> {
        let Some(stdin) = self.stdin.as_mut() else { bail!("jdb's input is closed") };
        stdin.write_all(format!("{line}\n").as_bytes()).and_then(|_| stdin.flush()).with_context(|| format!("type {line:?} to jdb"))
    }

    /// Waits for the answer holding `needle` and moves past it.
    pub fn expect(&mut self, needle: &str) -> Result<()> {
        self.expect_all(&[needle])
    }

    /// Waits for the answers holding each of `needles` (in any order, each from where the
    /// last answer ended) and moves past the last of them.
    pub fn expect_all(&mut self, needles: &[&str]) -> Result<()> {
        let deadline = Instant::now() + self.answer;
        let (lock, cv) = &*self.out;
        let mut g = lock.lock().map_err(|_| anyhow!("jdb's reader panicked"))?;
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
            g = cv.wait_timeout(g, left.min(Duration::from_millis(500))).map_err(|_| anyhow!("jdb's reader panicked"))?.0;
        }
    }

    /// Types `line` and waits for its answer.
    pub fn ask(&mut self, line: &str, needle: &str) -> Result<()> {
        self.ask_all(line, &[needle])
    }

    /// Types `line` and waits for its answer and the events it causes.
    pub fn ask_all(&mut self, line: &str, needles: &[&str]) -> Result<()> {
        self.send(line)?;
        self.expect_all(needles)
    }

    /// Types `quit` (jdb disposes the VM's connection and exits) and closes its input; the
    /// caller waits for the process.
    pub fn quit(&mut self) {
        let _ = self.send("quit");
        self.stdin = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jdb::tests::SESSION;
    use std::os::unix::net::UnixStream;

    /// A console over socket pairs: what the test writes is jdb's output, what it reads is
    /// what was typed.
    fn console(answer: Duration) -> (BlockingJdb, UnixStream, UnixStream) {
        let (typed, jdb_in) = UnixStream::pair().unwrap();
        let (jdb_out, printed) = UnixStream::pair().unwrap();
        let (_err_w, err_r) = UnixStream::pair().unwrap();
        (BlockingJdb::over(jdb_in, jdb_out, err_r, answer), typed, printed)
    }

    #[test]
    fn each_answer_waits_for_its_prompt_across_chunks() {
        let (mut jdb, mut typed, mut printed) = console(Duration::from_secs(10));
        let at = SESSION.find("Set breakpoint Walk:30").unwrap();
        // The first answer arrives in two pieces, its prompt in the second.
        let writer = std::thread::spawn(move || {
            printed.write_all(&SESSION.as_bytes()[..at - 2]).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            printed.write_all(&SESSION.as_bytes()[at - 2..]).unwrap();
            printed
        });
        jdb.expect("Initializing jdb").unwrap();
        assert_eq!(jdb.cursor, at);
        jdb.ask("stop at Walk:30", "breakpoint Walk:30").unwrap();
        jdb.ask_all("stop at Main:22", &["All threads resumed.", "Set breakpoint Main:22"]).unwrap();
        assert!(SESSION[jdb.cursor..].starts_with("\nBreakpoint hit"));
        let _printed = writer.join().unwrap();
        jdb.quit();
        assert!(jdb.send("where").is_err(), "input closed by quit");
        // Everything typed, up to the end of input that quit made.
        let mut got = String::new();
        typed.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        typed.read_to_string(&mut got).unwrap();
        assert_eq!(got, "stop at Walk:30\nstop at Main:22\nquit\n");
    }

    #[test]
    fn a_missing_answer_fails_once_output_ends_or_the_wait_is_over() {
        let (mut jdb, _typed, mut printed) = console(Duration::from_secs(10));
        printed.write_all(b"> All threads resumed.\n> ").unwrap();
        drop(printed);
        let e = jdb.expect("Local variables:").unwrap_err().to_string();
        assert!(e.starts_with("jdb's output ended waiting for [\"Local variables:\"]"), "{e}");
        let (mut jdb, _typed, mut printed) = console(Duration::from_millis(100));
        // The needle without the prompt after it is no answer yet.
        printed.write_all(b"stepper[1] Local variables:\na = 1\n").unwrap();
        let t0 = Instant::now();
        let e = jdb.expect("Local variables:").unwrap_err().to_string();
        assert!(e.starts_with("timed out waiting for"), "{e}");
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }
}
