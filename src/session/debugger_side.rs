//! The session's debugger side: attaching, relaying a debugger's commands with rewritten ids,
//! protecting the VM from commands it cannot take, and detaching.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{info, warn};

use super::actor::{Attached, PendingAttach, Session, OUT_HIGH_WATER};
use super::debugger_io::{DebuggerEvent, DebuggerIo};
use super::handle::{AttachError, DebuggerLink};
use super::ids::{Entry, Requester};
use crate::capture::tap::Tap;
use crate::capture::Leg;
use crate::jdwp::codec::Frame;
use crate::jdwp::packet::{error, Header, DDM_CMD_SET};
use crate::jdwp::Packet;

/// How long a debugger may leave the session's packets unread before it is cut off.
pub const DEBUGGER_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// JDWP VirtualMachine.Dispose.
const DISPOSE: (u8, u8) = (1, 6);
/// EventRequest.Set / Clear / ClearAllBreakpoints.
const EVENT_SET: (u8, u8) = (15, 1);
const EVENT_CLEAR: (u8, u8) = (15, 2);
const EVENT_CLEAR_BREAKPOINTS: (u8, u8) = (15, 3);
const BREAKPOINT_KIND: u8 = 2;
/// VirtualMachine.Suspend / Resume.
const VM_SUSPEND: (u8, u8) = (1, 8);
const VM_RESUME: (u8, u8) = (1, 9);

impl Session {
    pub(super) fn on_attach(&mut self, link: DebuggerLink, reply: oneshot::Sender<Result<(), AttachError>>) {
        if let Some(p) = self.waiting.first() {
            info!(peer = %link.peer, waiting = %p.link.peer, "refusing a second debugger");
            let _ = reply.send(Err(AttachError::Busy(p.link.peer)));
            return;
        }
        // The attached debugger may be on its way out (it quit, and its close has not reached
        // us yet): the newcomer waits a moment for that before it is refused as a second one.
        let busy_with = self.attached.as_ref().map(|a| a.io.peer);
        let wait = if busy_with.is_some() { super::actor::BUSY_GRACE } else { self.cfg.timeouts.attach_wait };
        self.waiting.push(PendingAttach { link, reply, deadline: Instant::now() + wait, busy_with });
        self.serve_waiting();
    }

    /// Answers the debuggers whose wait for the VM (or for the attached one to leave) ran out.
    pub(super) fn expire_waiting(&mut self) {
        let now = Instant::now();
        let (late, keep): (Vec<_>, Vec<_>) = self.waiting.drain(..).partition(|p| p.deadline <= now);
        self.waiting = keep;
        let state = self.status.borrow().state;
        for p in late {
            if let Some(other) = p.busy_with.filter(|_| self.attached.is_some()) {
                info!(peer = %p.link.peer, attached = %other, "refusing a second debugger");
                let _ = p.reply.send(Err(AttachError::Busy(other)));
                continue;
            }
            let why = format!("still {state} after {:?}", self.cfg.timeouts.attach_wait);
            info!(peer = %p.link.peer, reason = %why, "refusing a debugger");
            let _ = p.reply.send(Err(AttachError::Unavailable(why)));
        }
    }

    /// Attaches a waiting debugger once the VM is ready and no clean-up is running.
    pub(super) fn serve_waiting(&mut self) {
        if !self.ready || self.cleaning_up() || self.attached.is_some() || self.reset_requested {
            return;
        }
        while let Some(p) = (!self.waiting.is_empty()).then(|| self.waiting.remove(0)) {
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
            let mut io = DebuggerIo::new(sock, peer, input, tap);
            // Events the VM sent while nobody was attached (VM_START with suspend=y) go
            // first, right behind the handshake echo.
            for e in self.held.drain(..) {
                io.queue(e.into_bytes());
            }
            self.held_bytes = 0;
            if p.reply.send(Ok(())).is_err() {
                continue;
            }
            info!(peer = %peer, conn, "debugger attached");
            self.debugger_came();
            self.cleared_requests.clear();
            self.status.send_modify(|s| s.debugger = Some(peer));
            self.attached = Some(Attached {
                conn,
                io,
                ddm_speaker: false,
                event_requests: HashSet::new(),
                upstream: None,
                vm_suspends: 0,
            });
            return;
        }
    }

    /// Routes the frames the debugger sent, while the VM's queue has room.
    pub(super) async fn route_debugger_input(&mut self) -> Result<(), String> {
        while self.out.len() < OUT_HIGH_WATER {
            let Some(a) = self.attached.as_mut() else { return Ok(()) };
            match a.io.next_frame() {
                Ok(Some(frame)) => self.on_debugger_frame(frame).await,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("bad packet from the debugger: {e}")),
            }
        }
        Ok(())
    }

    /// Something happened on the attached debugger's socket.
    pub(super) async fn on_debugger_event(&mut self, e: DebuggerEvent) {
        let why = match e {
            DebuggerEvent::Read(Ok(0)) => {
                // Route what it sent before it closed, then let it go.
                let _ = self.route_debugger_input().await;
                match self.attached.as_mut() {
                    Some(a) => a.io.eof_reason(),
                    None => return,
                }
            }
            DebuggerEvent::Read(Ok(_)) | DebuggerEvent::Wrote(Ok(_)) => return,
            DebuggerEvent::Read(Err(e)) => format!("read from the debugger failed: {e}"),
            DebuggerEvent::Wrote(Err(e)) => format!("write to the debugger failed: {e}"),
        };
        self.detach(&why).await;
    }

    /// Handles one frame from the attached debugger.
    async fn on_debugger_frame(&mut self, frame: Frame) {
        match frame {
            Frame::Packet(p) => self.debugger_packet(p).await,
            Frame::Head(h, mut head) => {
                let forward = self.admit(h).await;
                if forward {
                    if let Some(id) = self.assign_id(h, 0).await {
                        head[4..8].copy_from_slice(&id.to_be_bytes());
                        self.queue_for_vm(&head, Some(h.id), false);
                    }
                }
                if let Some(a) = self.attached.as_mut() {
                    a.upstream = Some(forward);
                }
            }
            Frame::Body { bytes, last } => {
                let Some(a) = self.attached.as_mut() else { return };
                let forward = a.upstream == Some(true);
                if last {
                    a.upstream = None;
                }
                if forward {
                    self.queue_for_vm(&bytes, None, true);
                }
            }
        }
    }

    async fn debugger_packet(&mut self, mut p: Packet) {
        let h = p.header();
        if !self.admit(h).await {
            return;
        }
        if (h.cmd_set(), h.cmd()) == DISPOSE {
            // Dispose would make the VM close the connection the proxy keeps: answer it here
            // and treat it as the debugger leaving.
            self.send_to_debugger(Packet::reply(h.id, error::NONE, &[]).into_bytes());
            self.detach("VirtualMachine.Dispose").await;
            return;
        }
        if h.cmd_set() == DDM_CMD_SET {
            if let Some(a) = self.attached.as_mut() {
                a.ddm_speaker = true;
            }
            self.on_ddm_payload(p.data(), false, false);
        }
        self.track_event_command(h, p.data());
        // EventRequest.Set: remember the event kind until the VM grants the request.
        let note = if (h.cmd_set(), h.cmd()) == EVENT_SET { p.data().first().copied().unwrap_or(0) } else { 0 };
        if let Some(id) = self.assign_id(h, note).await {
            p.set_id(id);
            self.queue_for_vm(p.as_bytes(), Some(h.id), false);
        }
    }

    /// Checks a debugger command; answers or drops what must not reach the VM.
    async fn admit(&mut self, h: Header) -> bool {
        if h.is_reply() {
            // HotSpot kills the connection on a reply from the debugger side.
            warn!(id = h.id, "dropping a reply packet sent by the debugger");
            return false;
        }
        let (set, cmd) = (h.cmd_set(), h.cmd());
        let why = if set == DDM_CMD_SET && self.ddm_aware != Some(true) {
            Some("a DDM command to a VM that does not speak DDM")
        } else if set >= 0x80 && set != DDM_CMD_SET {
            Some("a vendor command set")
        } else if cmd == 0 || cmd >= 0x80 {
            Some("a command number out of range")
        } else {
            None
        };
        let Some(why) = why else { return true };
        // HotSpot reads these bytes as signed table indexes: never let them through.
        info!(id = h.id, set, cmd, reason = why, "answering NOT_IMPLEMENTED for the VM");
        self.send_to_debugger(Packet::reply(h.id, error::NOT_IMPLEMENTED, &[]).into_bytes());
        false
    }

    /// Allocates a proxy id for a debugger command and records the debugger's own.
    async fn assign_id(&mut self, h: Header, note: u8) -> Option<u32> {
        let conn = self.attached.as_ref()?.conn;
        let entry = Entry {
            requester: Requester::Debugger(conn),
            orig_id: h.id,
            cmd_set: h.cmd_set(),
            cmd: h.cmd(),
            note,
            sent: Instant::now().into_std(),
        };
        match self.ids.insert(entry) {
            Ok(id) => {
                self.count_command(Requester::Debugger(conn), h.cmd_set(), h.cmd(), h.length);
                Some(id)
            }
            Err(e) => {
                warn!(error = %e, "closing the debugger");
                self.detach(&e.to_string()).await;
                None
            }
        }
    }

    /// Keeps the set of event requests the debugger holds up to date.
    fn track_event_command(&mut self, h: Header, data: &[u8]) {
        let Some(a) = self.attached.as_mut() else { return };
        match (h.cmd_set(), h.cmd()) {
            EVENT_CLEAR => {
                if let (Some(kind), Some(id)) = (data.first(), data.get(1..5)) {
                    let id = u32::from_be_bytes([id[0], id[1], id[2], id[3]]);
                    a.event_requests.remove(&(*kind, id));
                }
            }
            EVENT_CLEAR_BREAKPOINTS => a.event_requests.retain(|(k, _)| *k != BREAKPOINT_KIND),
            VM_SUSPEND => a.vm_suspends = a.vm_suspends.saturating_add(1),
            VM_RESUME => a.vm_suspends = a.vm_suspends.saturating_sub(1),
            _ => {}
        }
    }

    /// Called with a VM reply to a debugger's EventRequest.Set before it is relayed.
    pub(super) fn track_event_reply(&mut self, entry: &Entry, reply: &Packet) {
        if (entry.cmd_set, entry.cmd) != EVENT_SET || reply.header().error_code() != 0 {
            return;
        }
        let (Some(a), Some(id)) = (self.attached.as_mut(), reply.data().get(..4)) else { return };
        a.event_requests.insert((entry.note, u32::from_be_bytes([id[0], id[1], id[2], id[3]])));
    }

    /// Queues a whole packet for the attached debugger (nothing when none is attached).
    /// Never waits: the session stops reading from the VM while the debugger's queue is
    /// full, and a debugger that stays stuck is cut off by the tick.
    pub(super) fn send_to_debugger(&mut self, bytes: Bytes) {
        if let Some(a) = self.attached.as_mut() {
            a.io.queue(bytes);
        }
    }

    /// The debugger is gone (or is being sent away): forget it, close its connection after
    /// flushing what was queued for it, and make the VM forget it.
    pub(super) async fn detach(&mut self, reason: &str) {
        let Some(a) = self.attached.take() else { return };
        // The rest of a large packet that was on its way to this debugger goes nowhere: a
        // debugger attaching next must not get the tail of it.
        if let Some(s) = self.vm_stream.as_mut() {
            s.to_debugger = false;
        }
        let purged = self.ids.purge(Requester::Debugger(a.conn));
        info!(peer = %a.io.peer, reason, outstanding = purged, "debugger detached");
        a.io.close(reason, &self.tracker);
        self.status.send_modify(|s| s.debugger = None);
        if self.ddm_aware == Some(true) {
            self.start_cleanup(a.event_requests.into_iter().collect(), a.vm_suspends);
        } else {
            // A VM that does not speak DDM only forgets a debugger when the connection closes.
            self.reset_requested = true;
        }
    }

    pub(super) async fn detach_for_shutdown(&mut self) {
        if self.attached.is_some() {
            self.detach("the proxy is shutting down").await;
        }
    }

    /// The VM connection is gone: answer the debugger's outstanding requests with VM_DEAD.
    pub(super) async fn fail_pending(&mut self) {
        let pending = self.ids.fail_all();
        self.purposes.clear();
        let Some(conn) = self.attached.as_ref().map(|a| a.conn) else { return };
        for (_, e) in pending {
            if e.requester == Requester::Debugger(conn) {
                self.send_to_debugger(Packet::reply(e.orig_id, error::VM_DEAD, &[]).into_bytes());
            }
        }
    }

    /// Periodic work: expired proxy requests, attach deadlines, clean-up deadline.
    pub(super) async fn on_tick(&mut self) {
        let old = Instant::now().into_std() - super::proxy_requests::PROXY_REQUEST_TIMEOUT;
        for (id, _) in self.ids.expire(old) {
            if let Some(purpose) = self.purposes.remove(&id) {
                self.on_proxy_timeout(purpose);
            }
        }
        self.check_cleanup_done();
        self.expire_waiting();
        self.expire_ddm_waiters(false);
        self.poll_threads();
        if self.attached.as_ref().is_some_and(|a| a.io.stalled(DEBUGGER_STALL_TIMEOUT)) {
            warn!(timeout = ?DEBUGGER_STALL_TIMEOUT, "the debugger stopped reading; cutting it off");
            self.detach("the debugger stopped reading").await;
        }
        if self.held_dropped > 0 {
            warn!(dropped = self.held_dropped, "events dropped while no debugger was attached");
            self.held_dropped = 0;
        }
    }
}
