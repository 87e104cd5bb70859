//! What a session notes on the side of relaying: the capture and packet log of the VM leg,
//! the summaries of recent packets while a page watches, and who a local VM is (pid and main
//! class from /proc).

use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::debug;

use super::actor::Session;
use super::recent::{Party, RecentPackets};

impl Session {
    /// The ssh host a VM is reached through (its forward's socket), by the name `list` shows.
    pub(super) fn ssh_host(&self) -> Option<&str> {
        let located = self.cfg.located.as_ref()?;
        let through_ssh = matches!(located.borrow().endpoint, crate::transport::Endpoint::Unix(_));
        through_ssh.then(|| self.cfg.name.split(':').next().unwrap_or("its host"))
    }

    /// Its discovery says who is behind the VM's address now. A JVM restarted on the same
    /// port may have been reached before the discovery saw the new process: the status
    /// names the process the discovery sees. A DDM-aware VM says who it is at every
    /// connection (HELO), and that stands.
    pub(super) fn on_relocated(&mut self) {
        let Some(located) = &self.cfg.located else { return };
        let (pid, app) = {
            let l = located.borrow();
            (l.pid, l.app.clone())
        };
        if pid.is_none() && app.is_none() {
            return;
        }
        self.status.send_if_modified(|s| {
            if s.ddm == Some(true) || (s.pid, &s.app) == (pid, &app) {
                return false;
            }
            s.pid = pid;
            s.app = app;
            true
        });
    }

    /// For a VM on this machine, finds its pid and main class in the background.
    /// Who the VM is: what its discovery says (a JVM found by its process, here or on
    /// another host), else, for a VM on this machine's loopback, its pid and main class
    /// looked up from /proc.
    pub(super) fn look_up_process(&self, stream: &crate::transport::Stream) {
        if let Some(located) = &self.cfg.located {
            let (pid, app) = {
                let l = located.borrow();
                (l.pid, l.app.clone())
            };
            if pid.is_some() || app.is_some() {
                self.status.send_modify(|s| {
                    s.pid = s.pid.or(pid);
                    s.app = s.app.take().or(app);
                });
                return;
            }
        }
        let (Some(vm), Some(me)) = (stream.peer_addr(), stream.local_addr()) else { return };
        // Behind an adb forward, the local process is the adb server.
        if !vm.ip().is_loopback() || self.known_android().is_some() {
            return;
        }
        let status = self.status.clone();
        super::local_process::look_up(vm, me, move |pid, app| {
            status.send_modify(|s| {
                // DDM (HELO/APNM) knows better; only fill what is still unknown.
                s.pid = s.pid.or(pid);
                s.app = s.app.take().or(app);
            });
        });
    }

    /// Hands out the ring of recent packets, making one if nobody watches yet.
    pub(super) fn on_watch_packets(&mut self, reply: oneshot::Sender<Arc<RecentPackets>>) {
        if self.recent().is_none() {
            debug!("packet summaries on");
            self.recent = Some(Arc::default());
        }
        if let Some(r) = &self.recent {
            let _ = reply.send(r.clone());
        }
    }

    /// The ring of recent packets while somebody holds it besides the session; the session
    /// lets go of it once nobody does, so an unwatched VM records nothing.
    pub(super) fn recent(&mut self) -> Option<&RecentPackets> {
        if self.recent.as_ref().is_some_and(|r| Arc::strong_count(r) == 1) {
            debug!("packet summaries off: nobody watches");
            self.recent = None;
        }
        self.recent.as_deref()
    }

    /// Notes a command (whole, or the head of a large one) as a debugger sent it.
    pub(super) fn note_from_debugger(&mut self, conn: u64, bytes: &[u8]) {
        if let Some(r) = self.recent() {
            r.command(Party::Debugger, Party::Vm, Some(conn), bytes);
        }
    }

    /// Notes a reply the proxy makes to a debugger's command itself.
    pub(super) fn note_proxy_answer(&mut self, conn: u64, bytes: &[u8]) {
        if let (Some(r), Some(h)) = (self.recent(), crate::jdwp::Header::parse(bytes)) {
            r.reply(Party::Proxy, Some(conn), h.id, bytes, None, None);
        }
    }

    /// Queues bytes for the VM: a packet with its pre-rewrite id, or a body piece. While a
    /// debugger's large command is being streamed, whole packets wait for its end.
    pub(super) fn queue_for_vm(&mut self, bytes: &[u8], orig_id: Option<u32>, body: bool) {
        if !body && self.vm.upstream.is_some() {
            self.vm.deferred_writes.push((bytes::Bytes::copy_from_slice(bytes), orig_id));
            return;
        }
        if !body {
            self.told_vm(bytes);
        }
        if !body && orig_id.is_none() {
            // A debugger's commands were noted as they arrived; these are the proxy's own.
            if let Some(r) = self.recent() {
                r.command(Party::Proxy, Party::Vm, None, bytes);
            }
        }
        if !body && super::packet_log::wanted() {
            let who = if orig_id.is_some() { "dbg->vm" } else { "proxy->vm" };
            super::packet_log::packet(who, bytes, orig_id, None, None);
        }
        if let Some(t) = self.vm.tap.as_mut() {
            if body {
                t.body(crate::capture::Direction::ToServer, bytes);
            } else {
                t.packet(crate::capture::Direction::ToServer, bytes, orig_id);
            }
        }
        match self.vm.stops.as_mut() {
            Some(stops) => stops.session_wrote(bytes, &mut self.vm.out),
            None => self.vm.out.extend_from_slice(bytes),
        }
    }

    /// Captures and logs a frame read from the VM, with the requester's id and the latency
    /// of replies.
    pub(super) fn record_from_vm(&mut self, frame: &crate::jdwp::Frame) {
        use crate::capture::Direction::ToClient;
        use crate::jdwp::Frame;
        let (bytes, header) = match frame {
            Frame::Packet(p) => (p.as_bytes(), Some(p.header())),
            Frame::Head(h, b) => (&b[..], Some(*h)),
            Frame::Body { bytes, .. } => (&bytes[..], None),
        };
        let log = super::packet_log::wanted();
        match header {
            None => {
                if let Some(tap) = self.vm.tap.as_mut() {
                    tap.body(ToClient, bytes);
                }
            }
            Some(h) if h.is_reply() => {
                let entry = self.vm.ids.get(h.id);
                let to_dbg = entry.is_some_and(|e| matches!(e.requester, super::ids::Requester::Debugger(_)));
                let orig = entry.filter(|_| to_dbg).map(|e| e.orig_id);
                let latency = entry.map(|e| e.sent.elapsed());
                let answers = entry.map(|e| (e.cmd_set, e.cmd));
                let requester = entry.map(|e| (e.requester, e.orig_id));
                if log {
                    super::packet_log::packet(if to_dbg { "vm->dbg" } else { "vm->proxy" }, bytes, orig, answers, latency);
                }
                if let Some(r) = self.recent() {
                    let (conn, id) = match requester {
                        Some((super::ids::Requester::Debugger(c), id)) => (Some(c), id),
                        // The proxy's own requests go out under the wire id itself.
                        Some((super::ids::Requester::Proxy(_), _)) | None => (None, h.id),
                    };
                    r.reply(Party::Vm, conn, id, bytes, answers, latency);
                }
                if let Some(tap) = self.vm.tap.as_mut() {
                    tap.reply(ToClient, bytes, orig, latency);
                }
            }
            Some(h) if self.is_gathered(&h) => {
                // A stop's gathered answers: the proxy's to read, marked near on the VM leg.
                if log {
                    super::packet_log::packet("vm->near", bytes, None, None, None);
                }
                if let Some(r) = self.recent() {
                    r.command(Party::Vm, Party::Proxy, None, bytes);
                }
                if let Some(tap) = self.vm.tap.as_mut() {
                    tap.near_reply(ToClient, bytes);
                }
            }
            Some(h) => {
                if log {
                    super::packet_log::packet("vm->", bytes, None, None, None);
                }
                if let Some(r) = self.recent() {
                    // DDM packets are the proxy's to read; anything else goes to debuggers.
                    let to = if h.cmd_set() == crate::jdwp::packet::DDM_CMD_SET { Party::Proxy } else { Party::Debugger };
                    r.command(Party::Vm, to, None, bytes);
                }
                if let Some(tap) = self.vm.tap.as_mut() {
                    tap.packet(ToClient, bytes, None);
                }
            }
        }
    }
}
