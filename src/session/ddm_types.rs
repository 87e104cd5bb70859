//! DDM requests and answers as plain data: what a control command (`jdwpmux
//! threads|heap|exit|features`) hands a session through `VmHandle::ddm` and
//! `VmHandle::watch_threads`, what it gets back, and the records the session keeps of who
//! waits for what. How the session sends the requests and gathers the answers is in
//! `ddm_commands`; this file imports nothing of the session, so the handle and the actor can
//! both name these types.

use std::collections::HashSet;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::ddm::{Chunk, ChunkType, ClientData};

/// Snapshots queued for a thread viewer; a slow viewer misses some, the VM never waits.
pub const THREAD_VIEW_CHANNEL: usize = 4;

/// What a thread viewer receives: a snapshot, or why there will be none.
pub type ThreadUpdate = Result<ClientData, DdmCommandError>;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DdmCommandError {
    #[error("{0} does not speak DDM (only Android VMs do; HotSpot does not)")]
    NotDdm(String),
    #[error("{0} is not connected right now")]
    NotReady(String),
    #[error("no answer from the VM within {0:?}")]
    Timeout(Duration),
    #[error("the VM session ended")]
    Gone,
    #[error("the VM refused {chunk}: {refusal}")]
    Refused { chunk: ChunkType, refusal: Refusal },
}

/// How a VM refused a DDM request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A FAIL chunk: the VM's error code and message.
    Fail { code: u32, message: String },
    /// A JDWP error in the reply header (a VM whose JDWP layer rejected the packet).
    Jdwp(u16),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Fail { code, message } if message.is_empty() => write!(f, "FAIL error {code}"),
            Refusal::Fail { code, message } => write!(f, "FAIL error {code}: {message}"),
            Refusal::Jdwp(code) => write!(f, "JDWP error {code} ({})", crate::jdwp::names::display_error(*code)),
        }
    }
}

/// When the answer to a request is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Once every awaited chunk type came, in a reply or pushed.
    Chunks,
    /// As `Chunks`, or once the VM answered every packet without them: a VM that does not
    /// know a request answers it empty (the document: "Unrecognized types cause an empty
    /// response").
    ChunksOrEmptyReplies,
    /// A request the VM may answer by going away (EXIT): complete on its reply, when the
    /// connection drops, or at the deadline. Only a refusal is an error.
    ReplyOrGone,
}

/// How a request ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every awaited chunk came.
    Complete,
    /// The VM answered without the awaited chunks.
    AnsweredEmpty,
    /// The VM replied (`ReplyOrGone`).
    Acknowledged,
    /// The VM connection dropped (`ReplyOrGone`).
    VmLeft,
    /// Nothing came before the deadline (`ReplyOrGone`).
    NoAnswer,
}

/// A DDM request and which chunk types complete its answer (from a reply or a push).
#[derive(Debug)]
pub struct DdmRequest {
    pub chunks: Vec<Chunk>,
    pub wait_for: Vec<ChunkType>,
    pub completion: Completion,
    pub timeout: Duration,
    pub reply: oneshot::Sender<Result<DdmAnswer, DdmCommandError>>,
}

#[derive(Debug, Clone)]
pub struct DdmAnswer {
    pub chunks: Vec<Chunk>,
    /// The VM's client state once the answer was complete.
    pub state: ClientData,
    pub outcome: Outcome,
}

/// A control command waiting for its DDM answer (kept by the session in `ddm_waiters`).
pub(super) struct Waiter {
    pub(super) id: u64,
    pub(super) wanted: HashSet<ChunkType>,
    pub(super) got: Vec<Chunk>,
    /// Packets of this request the VM has not replied to yet.
    pub(super) unanswered: usize,
    pub(super) completion: Completion,
    pub(super) deadline: Instant,
    pub(super) timeout: Duration,
    pub(super) reply: oneshot::Sender<Result<DdmAnswer, DdmCommandError>>,
}

/// A thread viewer and when it is next due a snapshot (kept in `thread_watchers`).
pub(super) struct ThreadWatcher {
    pub(super) tx: mpsc::Sender<ThreadUpdate>,
    pub(super) interval: Duration,
    /// Polled form: when to ask again for this viewer. Interval form: when it is next due
    /// a snapshot from the VM's pushes.
    pub(super) next: Instant,
}

impl ThreadWatcher {
    /// After a reconnect the VM must be asked again.
    pub(super) fn restart(&mut self) {
        self.next = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_well() {
        let e = DdmCommandError::Refused {
            chunk: ChunkType::HPIF,
            refusal: Refusal::Fail { code: 1, message: "Unsupported HPIF what".into() },
        };
        assert_eq!(e.to_string(), "the VM refused HPIF: FAIL error 1: Unsupported HPIF what");
        let e = DdmCommandError::Refused { chunk: ChunkType::FEAT, refusal: Refusal::Jdwp(99) };
        assert_eq!(e.to_string(), "the VM refused FEAT: JDWP error 99 (NOT_IMPLEMENTED)");
    }
}
