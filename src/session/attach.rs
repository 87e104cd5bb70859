//! Letting debuggers in: up to `--max-debuggers` at once, each once the VM is ready and no
//! clean-up after the last one is running; past the limit, a refusal and a log line.

use std::sync::atomic::Ordering::Relaxed;

use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::info;

use super::actor::{PendingAttach, Session, BUSY_GRACE};
use super::debugger_io::DebuggerIo;
use super::debuggers::Attached;
use super::handle::{AttachError, DebuggerLink, HeldInfo, WaitHolder, WaitInfo};
use super::sharing::waits::{StillHeld, Wait};
use crate::capture::tap::Tap;
use crate::capture::Leg;
use crate::jdwp::names;

impl Session {
    pub(super) fn on_attach(&mut self, link: DebuggerLink, reply: oneshot::Sender<Result<(), AttachError>>) {
        let max = self.cfg.max_debuggers.max(1);
        if let Some(p) = self.waiting.first().filter(|_| self.waiting.len() + self.debuggers.len() >= max) {
            self.refuse_busy(&link, p.link.peer, reply);
            return;
        }
        // An attached debugger may be on its way out (it quit, and its close has not reached
        // us yet): when the VM is full, the newcomer waits a moment for that.
        let full = self.debuggers.len() >= max;
        let busy_with = self.debuggers.iter().next().filter(|_| full).map(|a| a.io.peer);
        let wait = if full { BUSY_GRACE } else { self.cfg.timeouts.attach_wait };
        self.waiting.push(PendingAttach { link, reply, deadline: Instant::now() + wait, busy_with });
        self.serve_waiting();
    }

    fn refuse_busy(&self, link: &DebuggerLink, attached: std::net::SocketAddr, reply: oneshot::Sender<Result<(), AttachError>>) {
        let max = self.cfg.max_debuggers.max(1);
        if max == 1 {
            info!(peer = %link.peer, attached = %attached, "refusing a second debugger");
        } else {
            info!(peer = %link.peer, attached = self.debuggers.len(), max, "refusing a debugger: --max-debuggers reached");
        }
        let _ = reply.send(Err(AttachError::Busy { attached, max }));
    }

    /// Answers the debuggers whose wait for the VM (or for an attached one to leave) ran out.
    pub(super) fn expire_waiting(&mut self) {
        let now = Instant::now();
        let (late, keep): (Vec<_>, Vec<_>) = self.waiting.drain(..).partition(|p| p.deadline <= now);
        self.waiting = keep;
        let state = self.status.borrow().state;
        let full = self.debuggers.len() >= self.cfg.max_debuggers.max(1);
        for p in late {
            if let Some(other) = p.busy_with.filter(|_| full) {
                self.refuse_busy(&p.link, other, p.reply);
                continue;
            }
            let why = format!("still {state} after {:?}", self.cfg.timeouts.attach_wait);
            info!(peer = %p.link.peer, reason = %why, "refusing a debugger");
            let _ = p.reply.send(Err(AttachError::Unavailable(why)));
        }
    }

    /// Attaches waiting debuggers while the VM is ready, no clean-up is running and there is room.
    pub(super) fn serve_waiting(&mut self) {
        let max = self.cfg.max_debuggers.max(1);
        while self.vm.ready && self.vm.leaving.may_serve() && self.debuggers.len() < max && !self.waiting.is_empty() {
            let p = self.waiting.remove(0);
            if p.reply.is_closed() {
                continue;
            }
            let DebuggerLink { conn, peer, sock, input, capture } = p.link;
            let tap = capture.map(|(c, vm)| {
                let local = sock.local_addr().unwrap_or(peer);
                let mut t = Tap::open(&c, conn, &vm, Leg::Debugger, peer, local);
                t.handshakes();
                t
            });
            let io = DebuggerIo::new(sock, peer, input, tap);
            if p.reply.send(Ok(())).is_err() {
                continue;
            }
            info!(peer = %peer, conn, attached = self.debuggers.len() + 1, "debugger attached");
            self.debuggers.push(Attached::new(conn, io));
            self.debugger_came();
            // Events the VM sent while nobody was attached (VM_START with suspend=y) go
            // first, right behind the handshake echo; their suspensions are now this one's.
            for e in self.held.take() {
                self.hand_held_event(conn, e);
            }
            self.publish_debuggers();
        }
    }

    /// Publishes who is attached (for `list`), with the live counters of each.
    pub(super) fn publish_debuggers(&mut self) {
        let mut infos: Vec<_> = self.debuggers.iter().map(|a| a.info()).collect();
        for info in &mut infos {
            info.waits = self.waits_of(info.conn);
            info.still_held = self.still_held_of(info.conn);
        }
        for a in self.debuggers.iter() {
            self.refresh_live_of(a);
        }
        self.status.send_modify(|s| s.debuggers = infos);
    }

    /// `conn`'s invokes that wait for other debuggers, as `list` shows them.
    fn waits_of(&self, conn: u64) -> Vec<WaitInfo> {
        let holder = |d: &u64| self.debuggers.get(*d).map(|a| WaitHolder { conn: *d, peer: a.io.peer });
        let shown = |w: &Wait| WaitInfo {
            thread: w.thread,
            command: names::display_command(w.command.0, w.command.1).to_string(),
            since_ms: w.since_ms,
            waits_for: w.holders.iter().filter_map(holder).collect(),
        };
        self.vm.sharing.waits.of(conn).map(shown).collect()
    }

    /// What `conn` resumed that other debuggers keep suspended, as `list` shows it.
    fn still_held_of(&self, conn: u64) -> Vec<HeldInfo> {
        let holder = |d: &u64| self.debuggers.get(*d).map(|a| WaitHolder { conn: *d, peer: a.io.peer });
        let shown = |h: &StillHeld| HeldInfo { thread: h.thread, since_ms: h.since_ms, held_by: h.holders.iter().filter_map(holder).collect() };
        self.vm.sharing.waits.held_of(conn).map(shown).collect()
    }

    /// Brings the request and suspension counts `list` shows for `conn` up to date.
    pub(super) fn refresh_live(&self, conn: u64) {
        if let Some(a) = self.debuggers.get(conn) {
            self.refresh_live_of(a);
        }
    }

    /// The same for every attached debugger (after an event or a release touched several).
    pub(super) fn refresh_all_live(&self) {
        for a in self.debuggers.iter() {
            self.refresh_live_of(a);
        }
    }

    fn refresh_live_of(&self, a: &Attached) {
        a.live.ddm.store(a.ddm_speaker, Relaxed);
        a.live.event_requests.store(self.vm.sharing.owners.count(a.conn) as u32, Relaxed);
        a.live.suspensions.store(self.vm.sharing.holds.held_by(a.conn) as u32, Relaxed);
    }
}
