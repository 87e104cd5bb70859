//! A child process's merged stdout/stderr, collected by background tasks so tests can wait for
//! text with a deadline. Also notes facts about the debuggee's lines (ticks, listen ports).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Result};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Default)]
struct Inner {
    text: String,
    /// Partial last line per stream (index = stream number).
    partial: [String; 2],
    streams_open: usize,
    max_tick: Option<u64>,
    listen_ports: Vec<u16>,
}

#[derive(Default)]
pub struct OutputLog {
    inner: Mutex<Inner>,
    changed: Notify,
}

/// What a log knows right now.
pub struct Facts {
    pub max_tick: Option<u64>,
    pub listen_ports: Vec<u16>,
    pub streams_open: usize,
}

const LISTENING: &str = "Listening for transport dt_socket at address:";

impl OutputLog {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends everything `r` produces (lossy UTF-8) until EOF, on a background task.
    pub fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(self: &Arc<Self>, mut r: R, stream: usize) {
        let log = self.clone();
        log.lock().streams_open += 1;
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            loop {
                match r.read(&mut buf).await {
                    Ok(n) if n > 0 => log.append(stream.min(1), &String::from_utf8_lossy(&buf[..n])),
                    _ => break,
                }
            }
            log.lock().streams_open -= 1;
            log.changed.notify_waiters();
        });
    }

    fn append(&self, stream: usize, s: &str) {
        let mut g = self.lock();
        g.text.push_str(s);
        g.partial[stream].push_str(s);
        while let Some(nl) = g.partial[stream].find('\n') {
            let line: String = g.partial[stream].drain(..=nl).collect();
            note_line(&mut g, line.trim_end());
        }
        drop(g);
        self.changed.notify_waiters();
    }

    pub fn text(&self) -> String {
        self.lock().text.clone()
    }

    pub fn len(&self) -> usize {
        self.lock().text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn facts(&self) -> Facts {
        let g = self.lock();
        Facts { max_tick: g.max_tick, listen_ports: g.listen_ports.clone(), streams_open: g.streams_open }
    }

    /// Waits until `pred(text, facts)` holds. Fails at the deadline, or early once every
    /// stream has ended without it holding (the process is gone).
    pub async fn wait_until(
        &self,
        what: &str,
        mut pred: impl FnMut(&str, &Facts) -> bool,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (ok, ended) = {
                let g = self.lock();
                let facts =
                    Facts { max_tick: g.max_tick, listen_ports: g.listen_ports.clone(), streams_open: g.streams_open };
                (pred(&g.text, &facts), g.streams_open == 0)
            };
            if ok {
                return Ok(());
            }
            let now = Instant::now();
            if ended || now >= deadline {
                let why = if ended { "output ended" } else { "timed out" };
                bail!("{why} after {timeout:?} waiting for {what}; output tail:\n{}", self.tail(3000));
            }
            let _ = tokio::time::timeout((deadline - now).min(Duration::from_millis(100)), notified).await;
        }
    }

    /// Waits for `needle` at or after byte offset `from`; returns (start, end) of the match.
    pub async fn wait_text(&self, from: usize, needle: &str, timeout: Duration) -> Result<(usize, usize)> {
        let mut found = None;
        self.wait_until(
            &format!("{needle:?}"),
            |text, _| {
                found = text.get(from..).and_then(|t| t.find(needle)).map(|i| (from + i, from + i + needle.len()));
                found.is_some()
            },
            timeout,
        )
        .await?;
        found.ok_or_else(|| anyhow::anyhow!("match vanished"))
    }

    pub fn tail(&self, max: usize) -> String {
        let g = self.lock();
        let mut start = g.text.len().saturating_sub(max);
        while !g.text.is_char_boundary(start) {
            start += 1;
        }
        g.text[start..].to_string()
    }

    /// Text between byte offsets (clamped; lossless for offsets from `wait_text`).
    pub fn slice(&self, from: usize, to: usize) -> String {
        let g = self.lock();
        g.text.get(from..to.min(g.text.len())).unwrap_or_default().to_string()
    }
}

fn note_line(g: &mut Inner, line: &str) {
    if let Some(n) = line.strip_prefix("tick ").and_then(|n| n.trim().parse::<u64>().ok()) {
        g.max_tick = Some(g.max_tick.map_or(n, |m| m.max(n)));
    }
    if let Some(rest) = line.find(LISTENING).map(|i| &line[i + LISTENING.len()..]) {
        // The address is "PORT" or "HOST:PORT".
        if let Some(port) = rest.trim().rsplit(':').next().and_then(|p| p.parse::<u16>().ok()) {
            g.listen_ports.push(port);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_noted_across_chunks() {
        let log = OutputLog::default();
        log.append(0, "tick 1\nti");
        log.append(1, "Listening for transport dt_socket at address: 4");
        log.append(0, "ck 7\ntick 3\n");
        log.append(1, "5123\nListening for transport dt_socket at address: 127.0.0.1:6000\n");
        let f = log.facts();
        assert_eq!(f.max_tick, Some(7));
        assert_eq!(f.listen_ports, vec![45123, 6000]);
        assert!(log.text().contains("tick 3"));
    }
}
