//! The debuggers attached to one VM: each one's socket, served by the session task, and what
//! the session knows of it. A handful at most (`--max-debuggers`), kept in arrival order.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Poll;
use std::time::SystemTime;

use bytes::Bytes;

use super::debugger_io::{DebuggerEvent, DebuggerIo};
use super::handle::{DebuggerInfo, DebuggerLive};
use super::held_events::{BoundedQueue, MAX_HELD_EVENTS_PER_DEBUGGER, MAX_HELD_EVENT_BYTES_PER_DEBUGGER};

/// One attached debugger.
pub(super) struct Attached {
    pub conn: u64,
    pub io: DebuggerIo,
    pub since: SystemTime,
    /// It sent a DDM command itself (Android Studio, ddmlib): it gets DDM traffic too.
    pub ddm_speaker: bool,
    /// A streamed command from it is being passed to the VM (`Some(true)`) or swallowed.
    pub upstream: Option<bool>,
    /// Under VirtualMachine.HoldEvents: its events wait here until ReleaseEvents.
    holding_events: bool,
    held_events: BoundedQueue<Bytes>,
    pub live: Arc<DebuggerLive>,
}

impl Attached {
    pub fn new(conn: u64, io: DebuggerIo) -> Attached {
        Attached {
            conn,
            io,
            since: SystemTime::now(),
            ddm_speaker: false,
            upstream: None,
            holding_events: false,
            held_events: BoundedQueue::new(MAX_HELD_EVENTS_PER_DEBUGGER, MAX_HELD_EVENT_BYTES_PER_DEBUGGER),
            live: Arc::new(DebuggerLive::default()),
        }
    }

    /// How `list` shows it.
    pub fn info(&self) -> DebuggerInfo {
        let since_ms = self.since.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        DebuggerInfo {
            conn: self.conn,
            peer: self.io.peer,
            since_ms,
            ddm: self.ddm_speaker,
            event_requests: 0,
            suspensions: 0,
            commands: self.live.commands.load(Relaxed),
            waits: Vec::new(),
            still_held: Vec::new(),
            live: Some(self.live.clone()),
        }
    }

    /// Queues an event part: held under HoldEvents (within bounds), else sent.
    pub fn deliver_event(&mut self, bytes: Bytes) {
        if !self.holding_events {
            self.io.queue(bytes);
        } else if let Err(bytes) = self.held_events.push(bytes) {
            tracing::warn!(peer = %self.io.peer, "too many events held for HoldEvents; delivering anyway");
            self.io.queue(bytes);
        }
    }

    /// VirtualMachine.HoldEvents: its events wait until ReleaseEvents (within bounds).
    pub fn hold_events(&mut self) {
        self.holding_events = true;
    }

    /// VirtualMachine.ReleaseEvents: what was held goes out, in order.
    pub fn release_events(&mut self) {
        self.holding_events = false;
        for e in self.held_events.take() {
            self.io.queue(e);
        }
    }
}

#[derive(Default)]
pub(super) struct Debuggers {
    list: Vec<Attached>,
    /// Where the next poll starts, so a busy debugger cannot starve the others.
    next_poll: usize,
}

impl Debuggers {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn contains(&self, conn: u64) -> bool {
        self.list.iter().any(|a| a.conn == conn)
    }

    /// The connection number of the `i`-th debugger, in arrival order.
    pub fn conn_at(&self, i: usize) -> Option<u64> {
        self.list.get(i).map(|a| a.conn)
    }

    pub fn get(&self, conn: u64) -> Option<&Attached> {
        self.list.iter().find(|a| a.conn == conn)
    }

    pub fn get_mut(&mut self, conn: u64) -> Option<&mut Attached> {
        self.list.iter_mut().find(|a| a.conn == conn)
    }

    pub fn push(&mut self, a: Attached) {
        self.list.push(a);
    }

    pub fn remove(&mut self, conn: u64) -> Option<Attached> {
        let i = self.list.iter().position(|a| a.conn == conn)?;
        Some(self.list.remove(i))
    }

    pub fn drain(&mut self) -> impl Iterator<Item = Attached> + '_ {
        self.list.drain(..)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Attached> {
        self.list.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Attached> {
        self.list.iter_mut()
    }

    /// Connection numbers, in arrival order.
    pub fn conns(&self) -> Vec<u64> {
        self.list.iter().map(|a| a.conn).collect()
    }

    /// The most bytes queued for any one debugger.
    pub fn max_queued(&self) -> usize {
        self.list.iter().map(|a| a.io.queued()).max().unwrap_or(0)
    }

    /// Waits for something on any debugger's socket (forever when none is attached).
    /// Cancel-safe: see `DebuggerIo::poll_event`.
    pub async fn next_event(&mut self, take_input: bool) -> (u64, DebuggerEvent) {
        if self.list.is_empty() {
            return std::future::pending().await;
        }
        std::future::poll_fn(|cx| {
            let n = self.list.len();
            for k in 0..n {
                let i = (self.next_poll + k) % n;
                if let Poll::Ready(e) = self.list[i].io.poll_event(cx, take_input) {
                    self.next_poll = i + 1;
                    return Poll::Ready((self.list[i].conn, e));
                }
            }
            Poll::Pending
        })
        .await
    }
}
