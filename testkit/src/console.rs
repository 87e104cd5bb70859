//! A line-driven child process (the real `jdb`, a JDI program): type lines into its standard
//! input, wait for text in its merged output with deadlines.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

use super::output::OutputLog;

pub const QUIT_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Console {
    /// What it is, for error messages ("jdb", "JDI debugger A").
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    log: Arc<OutputLog>,
    /// Byte offset just past the last `expect` match.
    cursor: usize,
}

impl Console {
    /// Spawns `cmd` with piped standard streams (stdout and stderr merged into one buffer).
    pub fn spawn(mut cmd: Command, what: &str) -> Result<Console> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawn {what}"))?;
        let log = Arc::new(OutputLog::default());
        if let Some(o) = child.stdout.take() {
            log.spawn_reader(o, 0);
        }
        if let Some(e) = child.stderr.take() {
            log.spawn_reader(e, 1);
        }
        let stdin = child.stdin.take();
        Ok(Console { what: what.to_string(), child, stdin, log, cursor: 0 })
    }

    /// Types one command line (a newline is added).
    pub async fn send(&mut self, line: &str) -> Result<()> {
        let Some(stdin) = self.stdin.as_mut() else { bail!("{} stdin already closed", self.what) };
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        stdin.write_all(&bytes).await.with_context(|| format!("write {line:?} to {}", self.what))?;
        stdin.flush().await.with_context(|| format!("flush {} stdin", self.what))?;
        Ok(())
    }

    /// Waits for `substr` after the previous match; returns the text from there through the
    /// end of this match and moves past it. Fails early if jdb's output ends.
    pub async fn expect(&mut self, substr: &str, timeout: Duration) -> Result<String> {
        let (_, end) = self.log.wait_text(self.cursor, substr, timeout).await.with_context(|| format!("{} expect", self.what))?;
        let text = self.log.slice(self.cursor, end);
        self.cursor = end;
        Ok(text)
    }

    /// Waits until every needle has appeared after the previous match, in any order (a
    /// debugger's command and event threads print concurrently: a breakpoint can be reported
    /// before "Set breakpoint"); returns the text through the furthest match and moves past it.
    pub async fn expect_all(&mut self, needles: &[&str], timeout: Duration) -> Result<String> {
        let from = self.cursor;
        let mut end = from;
        let what = format!("all of {needles:?}");
        self.log
            .wait_until(
                &what,
                |text, _| {
                    let tail = text.get(from..).unwrap_or_default();
                    let ends: Option<Vec<usize>> = needles.iter().map(|n| tail.find(n).map(|i| i + n.len())).collect();
                    match ends {
                        Some(e) => {
                            end = from + e.into_iter().max().unwrap_or(0);
                            true
                        }
                        None => false,
                    }
                },
                timeout,
            )
            .await
            .with_context(|| format!("{} expect_all", self.what))?;
        let text = self.log.slice(from, end);
        self.cursor = end;
        Ok(text)
    }

    /// Everything it printed so far.
    pub fn output(&self) -> String {
        self.log.text()
    }

    /// What it printed after the last match.
    pub fn unmatched_output(&self) -> String {
        self.log.slice(self.cursor, usize::MAX)
    }

    /// Closes its standard input (a program that waits for it to end goes on).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for it to exit by itself (e.g. after the VM went away).
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(r) => Ok(r?),
            Err(_) => bail!("{} still running after {timeout:?}; output tail:\n{}", self.what, self.log.tail(2000)),
        }
    }

    /// Types `line` (jdb's `quit`), closes its input and waits up to `QUIT_TIMEOUT`; kills it
    /// and errs if it did not exit.
    pub async fn quit_with(&mut self, line: &str) -> Result<ExitStatus> {
        // A dead process cannot read the line; its exit status still answers.
        let _ = self.send(line).await;
        self.stdin = None;
        match self.wait_exit(QUIT_TIMEOUT).await {
            Ok(s) => Ok(s),
            Err(e) => {
                let _ = self.child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
                Err(e.context(format!("{} did not quit; killed", self.what)))
            }
        }
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
