//! What a session notes on the side of relaying: the capture and packet log of the VM leg,
//! and who a local VM is (pid and main class from /proc).

use super::actor::Session;

impl Session {
    /// For a VM on this machine, finds its pid and main class in the background.
    pub(super) fn look_up_local_process(&self, stream: &tokio::net::TcpStream) {
        let (Ok(vm), Ok(me)) = (stream.peer_addr(), stream.local_addr()) else { return };
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

    /// Queues bytes for the VM: a packet with its pre-rewrite id, or a body piece. While a
    /// debugger's large command is being streamed, whole packets wait for its end.
    pub(super) fn queue_for_vm(&mut self, bytes: &[u8], orig_id: Option<u32>, body: bool) {
        if !body && self.vm_upstream.is_some() {
            self.vm_deferred.push((bytes::Bytes::copy_from_slice(bytes), orig_id));
            return;
        }
        if !body && super::packet_log::wanted() {
            let who = if orig_id.is_some() { "dbg->vm" } else { "proxy->vm" };
            super::packet_log::packet(who, bytes, orig_id, None, None);
        }
        if let Some(t) = self.tap.as_mut() {
            if body {
                t.body(crate::capture::Direction::ToServer, bytes);
            } else {
                t.packet(crate::capture::Direction::ToServer, bytes, orig_id);
            }
        }
        self.out.extend_from_slice(bytes);
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
                if let Some(tap) = self.tap.as_mut() {
                    tap.body(ToClient, bytes);
                }
            }
            Some(h) if h.is_reply() => {
                let entry = self.ids.get(h.id);
                let to_dbg = entry.is_some_and(|e| matches!(e.requester, super::ids::Requester::Debugger(_)));
                let orig = entry.filter(|_| to_dbg).map(|e| e.orig_id);
                let latency = entry.map(|e| e.sent.elapsed());
                if log {
                    let answers = entry.map(|e| (e.cmd_set, e.cmd));
                    super::packet_log::packet(if to_dbg { "vm->dbg" } else { "vm->proxy" }, bytes, orig, answers, latency);
                }
                if let Some(tap) = self.tap.as_mut() {
                    tap.reply(ToClient, bytes, orig, latency);
                }
            }
            Some(_) => {
                if log {
                    super::packet_log::packet("vm->", bytes, None, None, None);
                }
                if let Some(tap) = self.tap.as_mut() {
                    tap.packet(ToClient, bytes, None);
                }
            }
        }
    }
}
