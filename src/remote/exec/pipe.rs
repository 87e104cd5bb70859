//! The exec command as the far link's stream: `COMMAND FAR far --attach` run here, its stdin
//! and stdout the byte pipe to the far side in the container (the first line on stdout is
//! the far side's ready line, the bytes after it the link's), its stderr kept in a bounded
//! `Tail` for the host's row. The command is killed when the stream is dropped; the far side
//! in the container outlives it and is attached to again by the next run.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::watch;

use super::tail::Tail;
use crate::remote::protocol::ready::{self, Ready};

/// How long the exec may take to give the far side's ready line (an exec through an API
/// server starts in 0.1 to a few seconds).
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest ready line read.
const MAX_LINE: usize = 4096;
/// How long an exec that closed its stdout is waited for, for its exit code.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// How an `--exec` host's far side is reached: the command run for each connection.
#[derive(Debug)]
pub struct ExecDial {
    pub name: String,
    /// The whole command: the user's words, then `FAR far --attach`.
    pub argv: Vec<String>,
    /// What the last run printed on stderr.
    pub tail: Arc<Mutex<Tail>>,
    /// The ready line of the last run that gave one.
    pub ready: watch::Sender<Option<Ready>>,
    /// Set when a run found no program at the far side's path (the container was made
    /// again without what was copied into it): the host looks for jdwpmux there again.
    pub far_gone: Arc<std::sync::atomic::AtomicBool>,
}

/// A connection made: its two halves and what was read past the ready line.
pub struct Connected {
    pub read: Box<dyn AsyncRead + Send + Unpin>,
    pub write: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    pub rest: BytesMut,
}

/// The exec's stdout, holding the process: dropped, the process is killed.
struct ExecRead {
    out: ChildStdout,
    _child: Child,
}

impl AsyncRead for ExecRead {
    fn poll_read(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.out).poll_read(cx, buf)
    }
}

impl ExecDial {
    /// Runs the command and reads the far side's ready line; why not, in the command's own
    /// words where it said any.
    pub async fn connect(&self) -> Result<Connected, String> {
        if let Ok(mut t) = self.tail.lock() {
            t.clear();
        }
        let (program, args) = self.argv.split_first().ok_or("no command")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        let (Some(stdin), Some(mut stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err("no pipes to the exec command".into());
        };
        tokio::spawn(keep_tail(stderr, self.tail.clone()));
        let mut buf = BytesMut::with_capacity(MAX_LINE);
        let line = tokio::time::timeout(READY_TIMEOUT, read_line(&mut stdout, &mut buf)).await;
        let line = match line {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) | Ok(Err(_)) => return Err(self.ended(&mut child, &buf).await),
            Err(_) => return Err(format!("the exec gave no ready line within {} s{}", READY_TIMEOUT.as_secs(), self.said_suffix())),
        };
        let ready = match ready::parse(&line) {
            Ok(r) => r,
            // A runtime's own error on stdout (Docker's exec of a missing program): the run
            // ends, and is judged by how it ended; one that runs on is no far side.
            Err(e) => {
                let mut printed = line.into_bytes();
                printed.extend_from_slice(&buf);
                let code = tokio::time::timeout(EXIT_WAIT, child.wait()).await.ok().and_then(Result::ok).map(|s| s.code());
                return Err(match code {
                    Some(code) => self.judged(code, &printed).await,
                    None => format!("{e}{}", self.said_suffix()),
                });
            }
        };
        self.ready.send_replace(Some(ready));
        Ok(Connected { read: Box::new(ExecRead { out: stdout, _child: child }), write: Box::new(stdin), rest: buf })
    }

    /// Why a run ended before its ready line: its exit code and its last words.
    async fn ended(&self, child: &mut Child, printed: &[u8]) -> String {
        match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
            Ok(Ok(s)) => self.judged(s.code(), printed).await,
            _ => format!("the exec closed its output: {}", self.words(printed)),
        }
    }

    /// Why a run that exited with `code` (None: a signal) gave no connection, in its own
    /// words; a run that found no program at the far side's path sets `far_gone`.
    async fn judged(&self, code: Option<i32>, printed: &[u8]) -> String {
        let how = code.map_or_else(|| "was ended by a signal".to_string(), |c| format!("exited with {c}"));
        // Its stderr reader may still hold the last piece: a moment for it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answer = super::answer::Answer { code, stdout: String::from_utf8_lossy(printed).into_owned(), said: self.said(), said_out: Some(String::from_utf8_lossy(printed).trim().to_string()).filter(|s| !s.is_empty()) };
        if answer.not_found() {
            self.far_gone.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        format!("the exec {how}: {}", self.words(printed))
    }

    /// Its last words: on stderr, else what it printed on stdout, else that it said nothing.
    fn words(&self, printed: &[u8]) -> String {
        let said = self.said().or_else(|| {
            let p = String::from_utf8_lossy(printed);
            let p = p.trim();
            (!p.is_empty()).then(|| crate::safe_text::shown(&p.chars().take(300).collect::<String>()).into_owned())
        });
        said.unwrap_or_else(|| "it said nothing".into())
    }

    pub fn said(&self) -> Option<String> {
        self.tail.lock().ok().and_then(|t| t.said())
    }

    fn said_suffix(&self) -> String {
        self.said().map(|s| format!(" (it said: {s})")).unwrap_or_default()
    }
}

/// Reads one line (without its end) into `buf`, leaving what follows it there; None at the
/// end of the stream.
async fn read_line(out: &mut ChildStdout, buf: &mut BytesMut) -> std::io::Result<Option<String>> {
    loop {
        if let Some(at) = buf.iter().position(|&b| b == b'\n') {
            let line = buf.split_to(at + 1);
            return Ok(Some(String::from_utf8_lossy(&line[..at]).into_owned()));
        }
        if buf.len() >= MAX_LINE {
            return Err(std::io::Error::other("a line longer than any ready line"));
        }
        buf.reserve(MAX_LINE);
        if out.read_buf(buf).await? == 0 {
            return Ok(None);
        }
    }
}

/// Keeps the exec's stderr in `tail` until it ends; what is read is bounded by the tail.
async fn keep_tail(mut err: tokio::process::ChildStderr, tail: Arc<Mutex<Tail>>) {
    let mut chunk = [0u8; 4096];
    loop {
        match err.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut t) = tail.lock() {
                    t.push(&chunk[..n]);
                }
            }
        }
    }
}
