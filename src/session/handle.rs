//! The cheap-to-clone handle through which listeners and the control server talk to a VM
//! session, and the debugger connection handed to a session to attach.

use std::net::SocketAddr;

use bytes::BytesMut;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};

use super::ddm_types::{Completion, DdmAnswer, DdmCommandError, DdmRequest, ThreadUpdate, THREAD_VIEW_CHANNEL};

/// Capacity of a session's control channel (attach requests, queries).
pub const CONTROL_CHANNEL: usize = 32;

/// A debugger connection whose handshake was read, handed to a VM session to attach. The
/// session serves the socket itself from then on; if it refuses, the socket is closed
/// without the handshake echo, so the debugger reports a failed handshake at once.
pub struct DebuggerLink {
    pub conn: u64,
    pub peer: SocketAddr,
    pub sock: TcpStream,
    /// What the debugger sent after its handshake.
    pub input: BytesMut,
    /// Capture of the debugger leg, if capturing: (capture, VM name for the capture).
    pub capture: Option<(crate::capture::CaptureHandle, String)>,
}

impl std::fmt::Debug for DebuggerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebuggerLink").field("conn", &self.conn).field("peer", &self.peer).finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum AttachError {
    /// As many debuggers are attached as `--max-debuggers` allows (`attached`: one of them).
    #[error("{}", busy_text(*.attached, *.max))]
    Busy { attached: SocketAddr, max: usize },
    #[error("the VM is not reachable: {0}")]
    Unavailable(String),
    #[error("the VM session has ended")]
    Gone,
}

fn busy_text(attached: SocketAddr, max: usize) -> String {
    if max <= 1 {
        format!("a debugger is already attached ({attached})")
    } else {
        format!("{max} debuggers are attached, as many as --max-debuggers allows")
    }
}

/// Messages to a VM session.
#[derive(Debug)]
pub enum SessionMsg {
    Attach { link: DebuggerLink, reply: oneshot::Sender<Result<(), AttachError>> },
    Ddm(DdmRequest),
    /// Thread updates while the sender is open; a snapshot after every THST, or why none
    /// will come.
    WatchThreads { interval: std::time::Duration, tx: mpsc::Sender<ThreadUpdate> },
    /// The VM's ring of recent packet summaries, filled while the answer is held.
    WatchPackets { reply: oneshot::Sender<std::sync::Arc<super::recent::RecentPackets>> },
    /// How full the session's tables are (diagnostics; tests check nothing leaks).
    Tables(oneshot::Sender<TableSizes>),
    /// The traffic figures since the session started.
    Stats { reply: oneshot::Sender<crate::stats::VmReport> },
    /// Its discovery says something new of where or who the VM is (`SessionConfig::located`).
    Relocated,
}

/// Entries in a session's tables: what is outstanding and who owns what.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSizes {
    /// Requests sent to the VM and not yet answered (debuggers' and the proxy's own).
    pub outstanding: usize,
    pub debuggers: usize,
    /// Event requests owned, suspensions held, objects pinned, events kept back.
    pub event_requests: usize,
    pub holds: usize,
    pub pins: usize,
    pub deferred_events: usize,
    /// Events held for the next debugger while none is attached, and those dropped past
    /// the bound since the session started (a running total).
    pub held_events: usize,
    pub held_dropped: u64,
    /// Answers kept in the near cache, and commands whose replies it waits for.
    pub near_answers: usize,
    pub near_pending: usize,
}

/// Connection state of a VM, as shown by `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VmState {
    Connecting,
    Identifying,
    Ready,
    Reconnecting,
    Unreachable,
    /// Another debugger holds its agent (which takes one): jdwpmux connects when it leaves.
    Busy,
    /// Ready, and a debugger holds it suspended (a breakpoint, a step, Suspend). Never set by
    /// a session: [`VmState::shown`] derives it for `list`, its JSON and the page.
    Stopped,
    /// Its `--ssh` host's link is not up: what the session last saw is stale. Derived by
    /// [`VmState::shown`] alone, as `Stopped`.
    #[serde(rename = "link down")]
    LinkDown,
}

impl VmState {
    /// The state people are shown, one rule for `list`, `list --json` and the page: `link
    /// down` while the VM's host's link is not up, `stopped` while a debugger holds a
    /// suspension of a ready VM, else the session's own state.
    pub fn shown(self, debuggers: &[DebuggerInfo], link_up: bool) -> VmState {
        match self {
            _ if !link_up => VmState::LinkDown,
            VmState::Ready if debuggers.iter().any(|d| d.suspensions > 0) => VmState::Stopped,
            s => s,
        }
    }
}

impl std::fmt::Display for VmState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            VmState::Connecting => "connecting",
            VmState::Identifying => "identifying",
            VmState::Ready => "ready",
            VmState::Reconnecting => "reconnecting",
            VmState::Unreachable => "unreachable",
            VmState::Busy => "busy",
            VmState::Stopped => "stopped",
            VmState::LinkDown => "link down",
        };
        f.write_str(s)
    }
}

/// What is known of a VM: published by its session on a watch channel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VmStatus {
    pub state: VmState,
    /// VirtualMachine.Version: "vmName vmVersion".
    pub vm_ident: Option<String>,
    /// None until probed (or when DDM is off).
    pub ddm: Option<bool>,
    pub pid: Option<u32>,
    pub app: Option<String>,
    pub waiting_for_debugger: bool,
    /// The debuggers attached now, in order of arrival.
    pub debuggers: Vec<DebuggerInfo>,
}

impl VmStatus {
    /// This status with each debugger's live counts read now.
    pub fn with_live_counts(mut self) -> VmStatus {
        for d in &mut self.debuggers {
            d.read_live();
        }
        self
    }
}

/// A debugger attached to a VM, as `list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DebuggerInfo {
    /// Its connection number (the `conn` of log lines and captures).
    pub conn: u64,
    pub peer: SocketAddr,
    /// When it attached, in milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// It speaks DDM itself (Android Studio, ddmlib).
    pub ddm: bool,
    /// Event requests it owns.
    pub event_requests: u32,
    /// Suspensions it holds (its VM and thread suspends, the stops of events it was given).
    pub suspensions: u32,
    /// Commands it has sent.
    pub commands: u64,
    /// Its invokes that wait for other debuggers to resume their thread.
    #[serde(default)]
    pub waits: Vec<WaitInfo>,
    /// What its Resumes resumed that other debuggers keep suspended.
    #[serde(default)]
    pub still_held: Vec<HeldInfo>,
    /// Where the session keeps the numbers above up to date.
    #[serde(skip)]
    pub live: Option<std::sync::Arc<DebuggerLive>>,
}

impl DebuggerInfo {
    fn read_live(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(l) = &self.live {
            self.ddm = l.ddm.load(Relaxed);
            self.event_requests = l.event_requests.load(Relaxed);
            self.suspensions = l.suspensions.load(Relaxed);
            self.commands = l.commands.load(Relaxed);
        }
    }
}

/// An invoke of a debugger that waits for other debuggers to resume its thread, as `list`
/// shows it: "thread 0x1a5: an invoke waits for #2 127.0.0.1:40312 to resume it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitInfo {
    /// The JDWP threadID.
    pub thread: u64,
    /// The invoke command, e.g. "ObjectReference.InvokeMethod".
    pub command: String,
    /// When it was sent, in milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// The debuggers whose suspension keeps the thread from running it.
    pub waits_for: Vec<WaitHolder>,
}

/// A debugger's Resume whose threads other debuggers keep suspended, as `list` shows it:
/// "thread 0x1a5 stays suspended after its resume: #2 127.0.0.1:40312 holds it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldInfo {
    /// The thread of a ThreadReference.Resume; null for a VirtualMachine.Resume (the other
    /// debuggers hold every thread).
    pub thread: Option<u64>,
    /// When the Resume came, in milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// The debuggers that hold them.
    pub held_by: Vec<WaitHolder>,
}

/// A debugger another one waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitHolder {
    pub conn: u64,
    pub peer: SocketAddr,
}

/// Counters a session updates as a debugger works, read by `list` without asking the
/// session (so a command costs one relaxed add, not a status update).
#[derive(Debug, Default)]
pub struct DebuggerLive {
    pub ddm: std::sync::atomic::AtomicBool,
    pub event_requests: std::sync::atomic::AtomicU32,
    pub suspensions: std::sync::atomic::AtomicU32,
    pub commands: std::sync::atomic::AtomicU64,
}

impl Default for VmStatus {
    fn default() -> Self {
        VmStatus {
            state: VmState::Connecting,
            vm_ident: None,
            ddm: None,
            pid: None,
            app: None,
            waiting_for_debugger: false,
            debuggers: Vec::new(),
        }
    }
}

/// A handle on a running VM session. Dropping every handle does not stop the session: its
/// cancellation token does.
#[derive(Debug, Clone)]
pub struct VmHandle {
    pub(crate) tx: mpsc::Sender<SessionMsg>,
    pub(crate) status: watch::Receiver<VmStatus>,
}

impl VmHandle {
    /// A handle with no session behind it, for a VM that was found but cannot be reached
    /// (its status is `status`, with state unreachable; attaching says the session ended).
    pub fn unreachable(status: VmStatus) -> VmHandle {
        let (tx, _) = mpsc::channel(1);
        let (_, rx) = watch::channel(VmStatus { state: VmState::Unreachable, ..status });
        VmHandle { tx, status: rx }
    }

    /// A handle with no session behind it whose status stays `status` (tests of what reads
    /// states, such as which VM is current).
    #[cfg(test)]
    pub fn fixed(status: VmStatus) -> VmHandle {
        let (tx, _) = mpsc::channel(1);
        let (_, rx) = watch::channel(status);
        VmHandle { tx, status: rx }
    }

    /// Attaches a debugger; waits while the session (re)connects, up to its own deadline.
    pub async fn attach(&self, link: DebuggerLink) -> Result<(), AttachError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(SessionMsg::Attach { link, reply }).await.map_err(|_| AttachError::Gone)?;
        rx.await.map_err(|_| AttachError::Gone)?
    }

    /// Sends DDM requests (one packet per chunk) and waits for their answer.
    pub async fn ddm(
        &self,
        chunks: Vec<crate::ddm::Chunk>,
        wait_for: Vec<crate::ddm::ChunkType>,
        completion: Completion,
        timeout: std::time::Duration,
    ) -> Result<DdmAnswer, DdmCommandError> {
        let (reply, rx) = oneshot::channel();
        let req = DdmRequest { chunks, wait_for, completion, timeout, reply };
        self.tx.send(SessionMsg::Ddm(req)).await.map_err(|_| DdmCommandError::Gone)?;
        rx.await.map_err(|_| DdmCommandError::Gone)?
    }

    /// Starts thread updates; they stop when the receiver is dropped.
    pub async fn watch_threads(&self, interval: std::time::Duration) -> Option<mpsc::Receiver<ThreadUpdate>> {
        let (tx, rx) = mpsc::channel(THREAD_VIEW_CHANNEL);
        self.tx.send(SessionMsg::WatchThreads { interval, tx }).await.ok()?;
        Some(rx)
    }

    /// Starts keeping summaries of the VM's packets; they stop when the last holder of the
    /// ring drops it.
    pub async fn watch_packets(&self) -> Option<std::sync::Arc<super::recent::RecentPackets>> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(SessionMsg::WatchPackets { reply }).await.ok()?;
        rx.await.ok()
    }

    /// How full the session's tables are now (None when the session has ended).
    pub async fn tables(&self) -> Option<TableSizes> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(SessionMsg::Tables(tx)).await.ok()?;
        rx.await.ok()
    }

    /// The VM's traffic figures since its session started; `None` if the session ended.
    pub async fn stats(&self) -> Option<crate::stats::VmReport> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(SessionMsg::Stats { reply }).await.ok()?;
        rx.await.ok()
    }

    /// What is known of the VM now, with its debuggers' live counts.
    /// Tells the session that its discovery's `Located` changed. Never waits: a session too
    /// busy to take it now reads the change at its next connection.
    pub fn relocated(&self) {
        let _ = self.tx.try_send(SessionMsg::Relocated);
    }

    pub fn status(&self) -> VmStatus {
        self.status.borrow().clone().with_live_counts()
    }

    /// Whether both handles lead to the same session (an app that came back with a new pid
    /// gets a new one behind the same registry entry).
    pub fn same_session(&self, other: &VmHandle) -> bool {
        self.tx.same_channel(&other.tx)
    }

    pub fn watch_status(&self) -> watch::Receiver<VmStatus> {
        self.status.clone()
    }
}
