//! The proxy acting as a DDM server on behalf of `jdwpmux threads|heap|exit|features`:
//! requests sent to the VM, answers gathered from replies and from the chunks the VM pushes.

use std::collections::HashSet;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{debug, info};

use super::actor::Session;
use super::proxy_requests::Purpose;
use crate::ddm::{Chunk, ChunkType, ClientData};
use crate::jdwp::packet::{DDM_CMD, DDM_CMD_SET};

/// Snapshots queued for a thread viewer; a slow viewer misses some, the VM never waits.
pub const THREAD_VIEW_CHANNEL: usize = 4;

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
}

/// A DDM request and which chunk types complete its answer (from a reply or a push).
#[derive(Debug)]
pub struct DdmRequest {
    pub chunks: Vec<Chunk>,
    pub wait_for: Vec<ChunkType>,
    pub timeout: Duration,
    pub reply: oneshot::Sender<Result<DdmAnswer, DdmCommandError>>,
}

#[derive(Debug, Clone)]
pub struct DdmAnswer {
    pub chunks: Vec<Chunk>,
    /// The VM's client state once the answer was complete.
    pub state: ClientData,
}

pub(super) struct Waiter {
    wanted: HashSet<ChunkType>,
    got: Vec<Chunk>,
    deadline: Instant,
    timeout: Duration,
    reply: oneshot::Sender<Result<DdmAnswer, DdmCommandError>>,
}

pub(super) struct ThreadWatcher {
    tx: mpsc::Sender<ClientData>,
    interval: Duration,
    next: Instant,
}

impl ThreadWatcher {
    /// After a reconnect the VM must be asked again.
    pub(super) fn restart(&mut self) {
        self.next = Instant::now();
    }
}

impl Session {
    fn ddm_usable(&self) -> Result<(), DdmCommandError> {
        match (self.ready, self.ddm_aware) {
            (true, Some(true)) => Ok(()),
            (true, _) => Err(DdmCommandError::NotDdm(self.cfg.name.clone())),
            (false, _) => Err(DdmCommandError::NotReady(self.cfg.name.clone())),
        }
    }

    fn send_ddm(&mut self, chunks: &[Chunk]) {
        let Ok(payload) = crate::ddm::encode_payload(chunks) else { return };
        self.send_proxy(Purpose::Control, DDM_CMD_SET, DDM_CMD, &payload);
    }

    pub(super) fn on_ddm_request(&mut self, req: DdmRequest) {
        if let Err(e) = self.ddm_usable() {
            let _ = req.reply.send(Err(e));
            return;
        }
        self.send_ddm(&req.chunks);
        let waiter = Waiter {
            wanted: req.wait_for.into_iter().collect(),
            got: Vec::new(),
            deadline: Instant::now() + req.timeout,
            timeout: req.timeout,
            reply: req.reply,
        };
        if waiter.wanted.is_empty() {
            let _ = waiter.reply.send(Ok(DdmAnswer { chunks: Vec::new(), state: self.ddm_state.clone() }));
        } else {
            self.ddm_waiters.push(waiter);
        }
    }

    pub(super) fn on_watch_threads(&mut self, interval: Duration, tx: mpsc::Sender<ClientData>) {
        if let Err(e) = self.ddm_usable() {
            debug!(error = %e, "refusing a thread viewer");
            return; // dropping tx tells the viewer; the control server checks first
        }
        if self.thread_watchers.is_empty() {
            info!("thread updates on");
            self.send_ddm(&[Chunk::Then { enable: true }]);
        }
        self.thread_watchers.push(ThreadWatcher { tx, interval, next: Instant::now() });
        self.poll_threads();
    }

    /// Sends a THST request when a viewer is due (real VMs answer one THST per request).
    pub(super) fn poll_threads(&mut self) {
        let now = Instant::now();
        self.thread_watchers.retain(|w| !w.tx.is_closed());
        if self.thread_watchers.is_empty() {
            if self.threads_on {
                info!("thread updates off: no viewer left");
                self.send_ddm(&[Chunk::Then { enable: false }]);
                self.threads_on = false;
            }
            return;
        }
        self.threads_on = true;
        let due = self.thread_watchers.iter().any(|w| w.next <= now);
        if due && self.ddm_usable().is_ok() {
            self.send_ddm(&[Chunk::ThstRequest { interval_ms: None }]);
            for w in self.thread_watchers.iter_mut().filter(|w| w.next <= now) {
                w.next = now + w.interval;
            }
        }
    }

    /// Offers a decoded chunk from the VM to whoever waits for it.
    pub(super) fn offer_ddm_chunk(&mut self, chunk: &Chunk) {
        let ty = chunk.uncompressed().chunk_type();
        if ty == ChunkType::THST && !self.thread_watchers.is_empty() {
            let snapshot = self.ddm_state.clone();
            for w in &self.thread_watchers {
                let _ = w.tx.try_send(snapshot.clone());
            }
        }
        if self.ddm_waiters.is_empty() {
            return;
        }
        let mut done = Vec::new();
        for (i, w) in self.ddm_waiters.iter_mut().enumerate() {
            if w.wanted.remove(&ty) {
                w.got.push(chunk.uncompressed().clone());
                if w.wanted.is_empty() {
                    done.push(i);
                }
            }
        }
        for i in done.into_iter().rev() {
            let w = self.ddm_waiters.remove(i);
            let _ = w.reply.send(Ok(DdmAnswer { chunks: w.got, state: self.ddm_state.clone() }));
        }
    }

    /// Answers waiters whose time is up, and all of them when the VM is lost.
    pub(super) fn expire_ddm_waiters(&mut self, all: bool) {
        let now = Instant::now();
        let (late, keep): (Vec<_>, Vec<_>) = self.ddm_waiters.drain(..).partition(|w| all || w.deadline <= now);
        self.ddm_waiters = keep;
        for w in late {
            let err = if all { DdmCommandError::Gone } else { DdmCommandError::Timeout(w.timeout) };
            let _ = w.reply.send(Err(err));
        }
    }
}
