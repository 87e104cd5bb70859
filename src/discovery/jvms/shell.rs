//! Driving `scan.sh` in a shell that stays open (on another host, the shell of the ssh
//! link): the functions go in once, then each round is a line or two of commands and the
//! records they print, up to the round's `done`.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::found::{self, FoundJvm};
use super::view::{self, HostView};
use super::wire::{fresh_nonce, WireError};

/// Steps in one round at most: the scan, what it asks for, and what that asks for in turn.
const MAX_STEPS: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error("the shell closed its output")]
    Closed,
    #[error("no answer from the shell within {0:?}")]
    Timeout(Duration),
    #[error("cannot talk to the shell: {0}")]
    Io(#[from] std::io::Error),
    #[error("the shell's output is not what jdwpmux's scan prints: {0}")]
    Wire(#[from] WireError),
    #[error("no random marker for the scan's records: {0}")]
    Random(#[from] getrandom::Error),
}

/// A shell with the scan's functions loaded, and the host view its rounds build up.
pub struct ShellScan<W, R> {
    stdin: W,
    stdout: R,
    buf: Vec<u8>,
    /// Bytes of `buf` known to hold no record end: a record is only whole once its end
    /// arrives, so the records are parsed once per end, not once per read.
    searched: usize,
    view: HostView,
    /// The bound of the step under way (for the error that says it passed).
    limit: Duration,
}

impl<W: AsyncWrite + Unpin, R: AsyncRead + Unpin> ShellScan<W, R> {
    /// Loads the functions and waits for the shell to say it has them.
    pub async fn start(stdin: W, stdout: R, limit: Duration) -> Result<Self, ShellError> {
        let mut s = ShellScan { stdin, stdout, buf: Vec::new(), searched: 0, view: HostView::default(), limit };
        s.stdin.write_all(super::SCRIPT.as_bytes()).await?;
        s.stdin.flush().await?;
        s.read_until_done("ready", Instant::now() + limit).await?;
        Ok(s)
    }

    /// One round: what every JVM with a listening agent looks like now.
    pub async fn round(&mut self, limit: Duration) -> Result<Vec<FoundJvm>, ShellError> {
        let deadline = Instant::now() + limit;
        self.limit = limit;
        let nonce = fresh_nonce()?;
        self.send(&view::scan_line(&nonce)).await?;
        self.read_until_done(&nonce, deadline).await?;
        for _ in 0..MAX_STEPS {
            let requests = self.view.requests();
            if requests.is_empty() {
                break;
            }
            let nonce = fresh_nonce()?;
            self.send(&view::request_line(&requests, &nonce)).await?;
            self.read_until_done(&nonce, deadline).await?;
        }
        Ok(found::found(&self.view))
    }

    pub fn view(&self) -> &HostView {
        &self.view
    }

    async fn send(&mut self, line: &str) -> Result<(), ShellError> {
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn read_until_done(&mut self, nonce: &str, deadline: Instant) -> Result<(), ShellError> {
        let end = format!("\n@@{nonce}\n");
        loop {
            let from = self.searched.saturating_sub(end.len());
            let ended = super::wire::find(&self.buf[from..], end.as_bytes()).is_some();
            if ended || self.buf.len() > super::wire::MAX_RECORD + super::wire::MAX_HEADER * 2 {
                let done = super::take_records(&mut self.view, &mut self.buf, nonce)?;
                if done {
                    self.searched = 0;
                    return Ok(());
                }
            }
            // Every whole record is taken: what is left waits for more bytes.
            self.searched = self.buf.len();
            match tokio::time::timeout_at(deadline, self.stdout.read_buf(&mut self.buf)).await {
                Err(_) => return Err(self.left_over(nonce).unwrap_or(ShellError::Timeout(self.limit))),
                Ok(Ok(0)) => return Err(self.left_over(nonce).unwrap_or(ShellError::Closed)),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e.into()),
            }
        }
    }

    /// When the output stops without ending its round: what is left is taken once more, so
    /// that a host that printed only lines that are no record says so, rather than merely
    /// that it went quiet. The same outcome however the output was cut into reads.
    fn left_over(&mut self, nonce: &str) -> Option<ShellError> {
        super::take_records(&mut self.view, &mut self.buf, nonce).err().map(Into::into)
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A shell that prints only a login script's chatter: the error says so, whether the
    /// output then closes or merely stops.
    #[tokio::test]
    async fn output_that_stops_short_says_what_it_was() {
        for close in [true, false] {
            let (stdin, _shell_in) = tokio::io::duplex(1 << 20);
            let (mut shell_out, stdout) = tokio::io::duplex(1 << 20);
            let chatter = "Welcome!\n".repeat(super::super::wire::MAX_JUNK_LINES + 1);
            shell_out.write_all(chatter.as_bytes()).await.expect("written");
            let _keep = if close { drop(shell_out); None } else { Some(shell_out) };
            let e = ShellScan::start(stdin, stdout, Duration::from_millis(300)).await.err().expect("no scan");
            assert!(matches!(e, ShellError::Wire(WireError::Junk(ref l)) if l == "Welcome!"), "{close}: {e}");
        }
        // A shell that says nothing still times out or closes as before.
        let (stdin, _shell_in) = tokio::io::duplex(1 << 20);
        let (shell_out, stdout) = tokio::io::duplex(64);
        drop(shell_out);
        let e = ShellScan::start(stdin, stdout, Duration::from_millis(300)).await.err().expect("no scan");
        assert!(matches!(e, ShellError::Closed), "{e}");
    }
}
