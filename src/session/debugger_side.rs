//! The session's debugger side: relaying each debugger's commands with rewritten ids,
//! protecting the VM from commands it cannot take, and the periodic checks.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::{info, warn};

use super::actor::{Session, OUT_HIGH_WATER};
use super::debugger_io::DebuggerEvent;
use super::ids::{Entry, Note, Requester};
use super::near_layer::Asked;
use super::sharing::waits::is_invoke;
use super::sharing::{policy, Policy};
use crate::jdwp::codec::Frame;
use crate::jdwp::names;
use crate::jdwp::packet::{error, Header, DDM_CMD_SET};
use crate::jdwp::Packet;


impl Session {
    /// Routes the frames the debuggers sent, one frame of each in turn, while the VM's queue
    /// has room. While one debugger streams a large command to the VM, only it is read.
    pub(super) async fn route_debugger_input(&mut self) {
        loop {
            let mut progress = false;
            // By index, not over a copy of the list: this runs on every wake-up. A debugger
            // that leaves while its frame is routed shifts the rest; one may wait a round.
            let mut i = 0;
            while let Some(conn) = self.debuggers.conn_at(i) {
                i += 1;
                if self.vm.out.len() >= OUT_HIGH_WATER {
                    return;
                }
                if self.vm.upstream.is_some_and(|c| c != conn) {
                    continue;
                }
                let Some(a) = self.debuggers.get_mut(conn) else { continue };
                match a.io.next_frame() {
                    Ok(Some(frame)) => {
                        progress = true;
                        self.on_debugger_frame(conn, frame).await;
                    }
                    Ok(None) => {}
                    Err(e) => self.detach(conn, &format!("bad packet from the debugger: {e}")).await,
                }
            }
            if !progress {
                return;
            }
        }
    }

    /// Something happened on a debugger's socket.
    pub(super) async fn on_debugger_event(&mut self, conn: u64, e: DebuggerEvent) {
        let why = match e {
            DebuggerEvent::Read(Ok(0)) => {
                // Route what it sent before it closed, then let it go.
                self.route_debugger_input().await;
                match self.debuggers.get_mut(conn) {
                    Some(a) => a.io.eof_reason(),
                    None => return,
                }
            }
            DebuggerEvent::Read(Ok(_)) | DebuggerEvent::Wrote(Ok(_)) => return,
            DebuggerEvent::Read(Err(e)) => format!("read from the debugger failed: {e}"),
            DebuggerEvent::Wrote(Err(e)) => format!("write to the debugger failed: {e}"),
        };
        self.detach(conn, &why).await;
    }

    /// Handles one frame from a debugger.
    async fn on_debugger_frame(&mut self, conn: u64, frame: Frame) {
        match frame {
            Frame::Packet(p) => {
                self.note_from_debugger(conn, p.as_bytes());
                self.debugger_packet(conn, p).await
            }
            Frame::Head(h, mut head) => {
                self.note_from_debugger(conn, &head);
                // A large command (RedefineClasses, SetValues) is passed on as it arrives;
                // nothing else reaches the VM until its end.
                let forward = self.admit(conn, h);
                if forward {
                    self.near.streamed_command(h.cmd_set(), h.cmd());
                    if let Some(id) = self.assign_id(conn, h, Note::None).await {
                        head[4..8].copy_from_slice(&id.to_be_bytes());
                        self.queue_for_vm(&head, Some(h.id), false);
                        self.vm.upstream = Some(conn);
                        self.vm.upstream_progress = Instant::now();
                    }
                }
                if let Some(a) = self.debuggers.get_mut(conn) {
                    a.upstream = Some(forward && self.vm.upstream == Some(conn));
                }
            }
            Frame::Body { bytes, last } => {
                let Some(a) = self.debuggers.get_mut(conn) else { return };
                let forward = a.upstream == Some(true);
                if last {
                    a.upstream = None;
                }
                if forward {
                    self.queue_for_vm(&bytes, None, true);
                    self.vm.upstream_progress = Instant::now();
                    if last {
                        self.end_vm_upstream();
                    }
                }
            }
        }
    }

    /// The streamed command is complete: what waited behind it goes to the VM.
    fn end_vm_upstream(&mut self) {
        self.vm.upstream = None;
        for (p, orig_id) in std::mem::take(&mut self.vm.deferred_writes) {
            self.queue_for_vm(&p, orig_id, false);
        }
    }

    async fn debugger_packet(&mut self, conn: u64, p: Packet) {
        let h = p.header();
        if !self.admit(conn, h) {
            return;
        }
        if let Some(a) = self.debuggers.get_mut(conn) {
            a.live.commands.fetch_add(1, Relaxed);
            if h.cmd_set() == DDM_CMD_SET && !a.ddm_speaker {
                a.ddm_speaker = true;
                self.publish_debuggers();
            }
        }
        if h.cmd_set() == DDM_CMD_SET {
            self.on_ddm_payload(p.data(), false, false);
        }
        let near_key = match self.near.ask(&p, self.id_sizes) {
            Asked::Answer(answer, source) => return self.reply_near(conn, h, &answer, source),
            Asked::Refuse(code, source) => return self.reply_near_error(conn, h, code, source),
            Asked::Forward { key, missed } => {
                if missed {
                    self.stats.near_miss();
                }
                key
            }
        };
        match policy(h.cmd_set(), h.cmd()) {
            Policy::Forward => {
                if is_invoke(h.cmd_set(), h.cmd()) {
                    self.invoke_sent(conn, &p);
                }
                let id = self.forward_id(conn, p, Note::None).await;
                if let (Some(id), Some(key)) = (id, near_key) {
                    self.near.cache.sent(id, conn, key);
                }
            }
            Policy::ForwardLogged => {
                info!(id = h.id, command = %names::display_command(h.cmd_set(), h.cmd()), "passing a VM-wide command");
                self.forward(conn, p, Note::None).await
            }
            Policy::PerDebugger => self.per_debugger(conn, p).await,
            Policy::Refuse => {
                info!(id = h.id, command = %names::display_command(h.cmd_set(), h.cmd()), "refusing a command that would reach every debugger");
                self.answer(conn, h.id, error::NOT_IMPLEMENTED);
            }
        }
    }

    /// Passes a debugger's command to the VM under a proxy id.
    pub(super) async fn forward(&mut self, conn: u64, p: Packet, note: Note) {
        self.forward_id(conn, p, note).await;
    }

    /// `forward`, returning the proxy id the command went out with.
    pub(super) async fn forward_id(&mut self, conn: u64, mut p: Packet, note: Note) -> Option<u32> {
        let h = p.header();
        let id = self.assign_id(conn, h, note).await?;
        p.set_id(id);
        self.queue_for_vm(p.as_bytes(), Some(h.id), false);
        Some(id)
    }

    /// Answers a debugger's command in the proxy, with an empty body.
    pub(super) fn answer(&mut self, conn: u64, id: u32, error_code: u16) {
        let reply = Packet::reply(id, error_code, &[]);
        self.note_proxy_answer(conn, reply.as_bytes());
        self.send_to(conn, reply.into_bytes());
    }

    /// Checks a debugger command; answers or drops what must not reach the VM.
    fn admit(&mut self, conn: u64, h: Header) -> bool {
        if h.is_reply() {
            // HotSpot kills the connection on a reply from the debugger side.
            warn!(id = h.id, "dropping a reply packet sent by the debugger");
            return false;
        }
        let (set, cmd) = (h.cmd_set(), h.cmd());
        let why = if set == DDM_CMD_SET && self.vm.ddm_aware != Some(true) {
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
        self.answer(conn, h.id, error::NOT_IMPLEMENTED);
        false
    }

    /// Allocates a proxy id for a debugger command and records the debugger's own.
    async fn assign_id(&mut self, conn: u64, h: Header, note: Note) -> Option<u32> {
        let entry = Entry {
            requester: Requester::Debugger(conn),
            orig_id: h.id,
            cmd_set: h.cmd_set(),
            cmd: h.cmd(),
            note,
            sent: Instant::now().into_std(),
        };
        match self.vm.ids.insert(entry) {
            Ok(id) => {
                self.count_command(Requester::Debugger(conn), h.cmd_set(), h.cmd(), h.length);
                Some(id)
            }
            Err(e) => {
                warn!(error = %e, "closing the debugger");
                self.detach(conn, &e.to_string()).await;
                None
            }
        }
    }

    /// Queues a whole packet for a debugger (nothing when it is gone). Never waits: the
    /// session stops reading from the VM while a debugger's queue is full, and a debugger
    /// that stays stuck is cut off by the tick.
    pub(super) fn send_to(&mut self, conn: u64, bytes: Bytes) {
        if let Some(a) = self.debuggers.get_mut(conn) {
            a.io.queue(bytes);
        }
    }

    /// The VM connection is gone: answer the debuggers' outstanding requests with VM_DEAD.
    pub(super) async fn fail_pending(&mut self) {
        let pending = self.vm.ids.fail_all();
        self.vm.purposes.clear();
        for (id, e) in pending {
            // Answered early: the debugger has its reply already.
            if self.near.early_given.forget(id).is_some() {
                continue;
            }
            if let Requester::Debugger(conn) = e.requester {
                self.send_to(conn, Packet::reply(e.orig_id, error::VM_DEAD, &[]).into_bytes());
            }
        }
    }

    /// Periodic work: expired proxy requests, attach deadlines, clean-up deadline.
    pub(super) async fn on_tick(&mut self) {
        let old = Instant::now().into_std() - super::purpose::PROXY_REQUEST_TIMEOUT;
        for (id, _) in self.vm.ids.expire(old) {
            if let Some(purpose) = self.vm.purposes.remove(&id) {
                self.on_proxy_timeout(purpose);
            }
        }
        self.check_cleanup_done();
        self.expire_waiting();
        self.expire_ddm_waiters(false);
        self.poll_threads();
        let stall = self.cfg.timeouts.debugger_stall;
        let stalled: Vec<u64> = self.debuggers.iter().filter(|a| a.io.stalled(stall)).map(|a| a.conn).collect();
        for conn in stalled {
            warn!(conn, timeout = ?stall, "a debugger stopped reading; cutting it off");
            self.detach(conn, "the debugger stopped reading").await;
        }
        // A debugger that stops halfway through a large command holds the VM (and every
        // other debugger) up: it is cut off like one that stops reading.
        if let Some(conn) = self.vm.upstream.filter(|_| self.vm.upstream_progress.elapsed() >= stall) {
            warn!(conn, timeout = ?stall, "a debugger stopped halfway through a large command; cutting it off");
            self.detach(conn, "the debugger stopped sending its command").await;
        }
        if let Some(dropped) = self.held.log_drops() {
            warn!(dropped, total = self.held.dropped(), "events dropped while no debugger was attached");
        }
    }
}
