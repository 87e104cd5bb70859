//! Drives the real `jdb`: attach to HOST:PORT, type lines, wait for text with deadlines.
//! jdb prompts look like `> ` and `main[1] `; a breakpoint prints
//! `Breakpoint hit: "thread=main", Main.tick(), line=5 bci=0`.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

use super::output::OutputLog;

pub const QUIT_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Jdb {
    child: Child,
    stdin: Option<ChildStdin>,
    log: Arc<OutputLog>,
    /// Byte offset just past the last `expect` match.
    cursor: usize,
}

impl Jdb {
    /// Spawns `jdb -attach HOST:PORT` (stdout and stderr merged into one buffer). Does not
    /// wait: follow with e.g. `expect("Initializing jdb", ..)` or `expect("VM Started", ..)`.
    pub async fn attach(host_port: &str) -> Result<Jdb> {
        let mut child = Command::new("jdb")
            .args(["-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-attach", host_port])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("spawn jdb")?;
        let log = Arc::new(OutputLog::default());
        if let Some(o) = child.stdout.take() {
            log.spawn_reader(o, 0);
        }
        if let Some(e) = child.stderr.take() {
            log.spawn_reader(e, 1);
        }
        let stdin = child.stdin.take();
        Ok(Jdb { child, stdin, log, cursor: 0 })
    }

    /// Types one command line (a newline is added).
    pub async fn send(&mut self, line: &str) -> Result<()> {
        let Some(stdin) = self.stdin.as_mut() else { bail!("jdb stdin already closed") };
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        stdin.write_all(&bytes).await.with_context(|| format!("write {line:?} to jdb"))?;
        stdin.flush().await.context("flush jdb stdin")?;
        Ok(())
    }

    /// Waits for `substr` after the previous match; returns the text from there through the
    /// end of this match and moves past it. Fails early if jdb's output ends.
    pub async fn expect(&mut self, substr: &str, timeout: Duration) -> Result<String> {
        let (_, end) = self.log.wait_text(self.cursor, substr, timeout).await.context("jdb expect")?;
        let text = self.log.slice(self.cursor, end);
        self.cursor = end;
        Ok(text)
    }

    /// Waits until every needle has appeared after the previous match, in any order (jdb's
    /// command and event threads print concurrently: a breakpoint can be reported before
    /// "Set breakpoint"); returns the text through the furthest match and moves past it.
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
            .context("jdb expect_all")?;
        let text = self.log.slice(from, end);
        self.cursor = end;
        Ok(text)
    }

    /// Everything jdb printed so far.
    pub fn output(&self) -> String {
        self.log.text()
    }

    /// What jdb printed after the last match.
    pub fn unmatched_output(&self) -> String {
        self.log.slice(self.cursor, usize::MAX)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for jdb to exit by itself (e.g. after the VM went away).
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(r) => Ok(r?),
            Err(_) => bail!("jdb still running after {timeout:?}; output tail:\n{}", self.log.tail(2000)),
        }
    }

    /// Sends `quit` and waits up to `QUIT_TIMEOUT`; kills jdb and errs if it did not exit.
    pub async fn quit(&mut self) -> Result<ExitStatus> {
        // A dead jdb cannot read `quit`; its exit status still answers.
        let _ = self.send("quit").await;
        self.stdin = None;
        match self.wait_exit(QUIT_TIMEOUT).await {
            Ok(s) => Ok(s),
            Err(e) => {
                let _ = self.child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
                Err(e.context("jdb did not quit; killed"))
            }
        }
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

impl Drop for Jdb {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
