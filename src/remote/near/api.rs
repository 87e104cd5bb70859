//! The near link's handle and what it is made with: how the far side is reached, the
//! link's settings, where it stands, and why an open failed. The task behind it is `link`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::{mpsc, oneshot, watch};

use super::timing::Liveness;
use crate::remote::protocol::frame::VmInfo;

/// How the far side's stream is reached.
#[derive(Debug, Clone)]
pub enum Dial {
    /// A Unix socket: the far side's own, or an ssh master's forward of it.
    Unix(PathBuf),
    /// A command's stdin and stdout (`kubectl exec -i ... -- jdwpmux far --attach`), run
    /// again for each connection.
    Exec(Arc<crate::remote::exec::pipe::ExecDial>),
}

impl std::fmt::Display for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dial::Unix(p) => write!(f, "{}", p.display()),
            Dial::Exec(e) => write!(f, "exec {}", e.name),
        }
    }
}

impl Dial {
    /// A connection's read and write halves, and what was read already past a ready line.
    pub(super) async fn connect(&self) -> Result<crate::remote::exec::pipe::Connected, String> {
        match self {
            Dial::Unix(p) => {
                let s = tokio::net::UnixStream::connect(p).await.map_err(|e| format!("connecting to {}: {e}", p.display()))?;
                let (read, write) = s.into_split();
                Ok(crate::remote::exec::pipe::Connected { read: Box::new(read), write: Box::new(write), rest: BytesMut::new() })
            }
            Dial::Exec(e) => e.connect().await,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// The host the far side runs on, as lines name it (empty: the socket's path is said).
    pub host: String,
    /// The hold asked of the far side, in seconds (0: the far side's own).
    pub hold_secs: u32,
    /// Ask the far side for a stop's answers gathered before its event (protocol 3): the
    /// sessions then answer from them (not with `--near-cache never`).
    pub gather: bool,
    /// Ask to take the far side over from another near side connected to it
    /// (`--far-take-over`); dropped for good once another took it from this one.
    pub take_over: bool,
    /// Bytes sent and not yet acknowledged before the VM sessions' writes wait.
    pub limit: usize,
    pub liveness: Liveness,
    /// The first and the longest wait between attempts after a cut.
    pub first_retry: Duration,
    pub max_retry: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            host: String::new(),
            hold_secs: 0,
            gather: false,
            take_over: false,
            limit: 8 << 20,
            liveness: crate::remote::protocol::liveness::DEFAULT,
            first_retry: Duration::from_millis(200),
            max_retry: Duration::from_secs(5),
        }
    }
}

/// Where the link stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected yet.
    Connecting,
    /// Connected; `connections` counts the connections made so far (more than one: it was
    /// cut and made again), `resumed` says this one resumed the session.
    Up { connections: u64, resumed: bool, hold_secs: u32 },
    /// Cut; trying again.
    /// `silent`: nothing was heard from the far side within the liveness deadline (a cut, as
    /// a rule, or a far side stopped), not a stream closed, broken or refused.
    Down { why: String, silent: bool },
    /// Cut for longer than the far side's hold: the far side has let the session's VMs go
    /// (they run on), and the link has closed its channels (their debuggers with them); it
    /// goes on trying, for a new session. `hold_secs`: the hold that ran out.
    Released { hold_secs: u64 },
    /// The far side serves another near side (the text names it): tried again every minute
    /// at most, so this one takes over once that one stops.
    Busy(String),
    /// Another near side took the far side over (the text names it), this one's session
    /// and VM connections with it: the link waits as for `Busy`, and never takes it back.
    TakenOver(String),
    /// The far side refused this near side (another protocol version): the link has ended.
    Refused(String),
    /// The link has ended.
    Ended,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the far side knows no VM {vm}: {text}")]
    NoSuchVm { vm: u32, text: String },
    #[error("the far side could not connect to VM {vm}: {text}")]
    ConnectFailed { vm: u32, text: String },
    #[error("the far side did not open VM {vm} (status {status}): {text}")]
    Other { vm: u32, status: u8, text: String },
    #[error("the far side's session ended before VM {vm} was opened (it restarted, or its hold ran out)")]
    SessionLost { vm: u32 },
    #[error("the link to the far side has ended")]
    Ended,
}

/// The handle of a running link. Dropping every clone ends the link as `shutdown` does.
#[derive(Debug, Clone)]
pub struct NearLink {
    pub(super) cmds: mpsc::Sender<Cmd>,
    pub(super) vms: watch::Receiver<Vec<VmInfo>>,
    pub(super) state: watch::Receiver<LinkState>,
    /// The Data frames the link carried each way, over all its connections, and its replay
    /// buffer.
    pub(super) figures: watch::Receiver<crate::remote::protocol::figures::LinkFigures>,
}

impl NearLink {
    /// The far side's VMs, as it last listed them.
    pub fn vms(&self) -> watch::Receiver<Vec<VmInfo>> {
        self.vms.clone()
    }

    pub fn state(&self) -> watch::Receiver<LinkState> {
        self.state.clone()
    }

    /// The Data frames the link sent and received so far, and of them those compressed, and
    /// what it holds unacknowledged for a replay, now and at most (what `jdwpmux stats` shows
    /// of the host); the last figures stay after the link ends.
    pub fn figures(&self) -> watch::Receiver<crate::remote::protocol::figures::LinkFigures> {
        self.figures.clone()
    }

    /// A connection to the far side's VM `vm` (a key from its list): the ends of a channel
    /// carrying that VM's JDWP connection from its start (the handshake is the caller's to
    /// send). Waits through a cut; the caller bounds the wait.
    pub async fn open_channel(&self, vm: u32) -> Result<super::ends::ChannelEnds, OpenError> {
        let (reply, answer) = oneshot::channel();
        self.cmds.send(Cmd::Open { vm, reply }).await.map_err(|_| OpenError::Ended)?;
        answer.await.map_err(|_| OpenError::Ended)?
    }

    /// The same as a byte stream carrying the VM's JDWP connection.
    pub async fn open(&self, vm: u32) -> Result<tokio::io::DuplexStream, OpenError> {
        Ok(self.open_channel(vm).await?.into_stream())
    }

    /// The way to the far side is back (its forward was made again): try at once instead of
    /// after the backoff. Does nothing while connected.
    pub fn retry_now(&self) {
        // A full queue holds commands the task takes before its next attempt anyway.
        let _ = self.cmds.try_send(Cmd::Retry);
    }

    /// Ends the link, telling the far side it may end too (it then closes its VM
    /// connections at once instead of holding them).
    pub async fn shutdown(self) {
        let (done, wait) = oneshot::channel();
        if self.cmds.send(Cmd::Shutdown(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

/// What the handle asks of the link's task.
#[derive(Debug)]
pub(super) enum Cmd {
    Open { vm: u32, reply: oneshot::Sender<Result<super::ends::ChannelEnds, OpenError>> },
    Shutdown(oneshot::Sender<()>),
    Retry,
}

