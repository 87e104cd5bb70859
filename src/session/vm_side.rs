//! The session's VM side: routing each packet from the VM. Replies go to whoever asked, with
//! the asker's id restored; events go to the debuggers that own their requests (see
//! `vm_events`); DDM packets are decoded and logged, and copied only to debuggers that speak
//! DDM themselves.

use tracing::{debug, info, warn};

use super::actor::Session;
use super::connection::VmStream;
use super::ids::{Note, Requester};
use crate::jdwp::codec::Frame;
use crate::jdwp::packet::{DDM_CMD_SET, EVENT_CMD_SET};
use crate::jdwp::{Header, Packet};

/// Largest prefix of a streamed packet the proxy keeps to read it itself (DDM logging, and
/// events, which it must read whole to split them between debuggers).
pub const COLLECT_PREFIX: usize = 1024 * 1024;

impl Session {
    pub(super) async fn on_vm_frame(&mut self, frame: Frame) {
        match frame {
            Frame::Packet(p) => self.on_vm_packet(p).await,
            Frame::Head(h, mut head) => {
                let stream = self.route_head(h, &mut head);
                let head = head.freeze();
                for conn in &stream.to {
                    if let Some(a) = self.debuggers.get_mut(*conn) {
                        a.io.queue_head(head.clone());
                    }
                }
                self.vm.downstream = Some(stream);
            }
            Frame::Body { bytes, last } => {
                let Some(stream) = self.vm.downstream.as_mut() else { return };
                if let Some((_, prefix, _)) = stream.collect.as_mut() {
                    let room = COLLECT_PREFIX.saturating_sub(prefix.len());
                    prefix.extend_from_slice(&bytes[..room.min(bytes.len())]);
                }
                let bytes = bytes.freeze();
                for conn in &stream.to {
                    if let Some(a) = self.debuggers.get_mut(*conn) {
                        a.io.queue_body(bytes.clone(), last);
                    }
                }
                if last {
                    if let Some(VmStream { collect: Some((h, prefix, purpose)), .. }) = self.vm.downstream.take() {
                        self.on_collected(h, prefix, purpose);
                    }
                }
            }
        }
    }

    /// Decides where a large packet's body goes, from its header alone.
    fn route_head(&mut self, h: Header, head: &mut bytes::BytesMut) -> VmStream {
        if h.is_reply() {
            // Too large to read whole: not kept; a class list's prefix is read for the lasting
            // classes it names (an AllClasses reply is often this large).
            let list = self.near.cache.streamed(h.id);
            let stream = self.route_reply_head(h, head, list);
            if list.is_some() && stream.collect.is_none() {
                self.near.cache.forget(h.id);
            }
            return stream;
        }
        self.route_command_head(h)
    }

    /// Where a large reply's body goes; `list`: the debugger whose class list it may be.
    fn route_reply_head(&mut self, h: Header, head: &mut bytes::BytesMut, list: Option<u64>) -> VmStream {
        let Some(e) = self.answered(&h) else {
            self.stray_reply(&h);
            return nobody(h);
        };
        if self.early_streamed_reply(&e, &h) {
            return nobody(h);
        }
        match e.requester {
            Requester::Debugger(conn) if self.debuggers.contains(conn) => {
                if let Note::EventSet(_) = e.note {
                    // Never happens with a real VM (the reply is 4 bytes); keep the count right.
                    self.vm.sharing.owners.set_answered(conn, None);
                }
                head[4..8].copy_from_slice(&e.orig_id.to_be_bytes());
                let collect = (e.cmd_set == DDM_CMD_SET || list == Some(conn)).then(|| (h, Vec::new(), None));
                VmStream { to: vec![conn], collect }
            }
            Requester::Proxy(_) => {
                let purpose = self.vm.purposes.remove(&h.id);
                VmStream { to: Vec::new(), collect: Some((h, Vec::new(), purpose)) }
            }
            Requester::Debugger(_) => nobody(h),
        }
    }

    /// Where a large command's body goes.
    fn route_command_head(&mut self, h: Header) -> VmStream {
        if self.is_gathered(&h) {
            return VmStream { to: Vec::new(), collect: Some((h, Vec::new(), None)) };
        }
        match h.cmd_set() {
            DDM_CMD_SET => VmStream { to: self.ddm_speakers(), collect: Some((h, Vec::new(), None)) },
            // An event is read whole (up to the bound) and split between debuggers after.
            EVENT_CMD_SET => VmStream { to: Vec::new(), collect: Some((h, Vec::new(), None)) },
            set => {
                if self.debuggers.is_empty() {
                    warn!(len = h.length, set, "dropping a large VM command: no debugger attached");
                }
                VmStream { to: self.debuggers.conns(), collect: None }
            }
        }
    }

    /// A large packet the proxy read through a bounded prefix.
    fn on_collected(&mut self, h: Header, prefix: Vec<u8>, purpose: Option<super::purpose::Purpose>) {
        let total = h.body_len();
        if self.is_gathered(&h) {
            if prefix.len() >= total {
                self.on_gathered(&prefix);
            } else {
                warn!(len = h.length, limit = COLLECT_PREFIX, "gathered answers larger than COLLECT_PREFIX: not kept");
            }
            return;
        }
        if !h.is_reply() && h.cmd_set() == EVENT_CMD_SET {
            if prefix.len() >= total {
                self.on_event(Packet::command(h.id, h.cmd_set(), h.cmd(), &prefix));
            } else {
                warn!(len = h.length, limit = COLLECT_PREFIX, "dropping an event composite larger than COLLECT_PREFIX");
                self.undo_event(&prefix);
            }
            return;
        }
        if h.is_reply() && purpose.is_none() && h.cmd_set() != DDM_CMD_SET && self.near.cache.lists_classes(h.id) {
            // Up to COLLECT_PREFIX of it: the classes past that are not learnt.
            self.near.cache.streamed_class_list(h.id, h.error_code(), &prefix);
            return;
        }
        if h.is_reply() && purpose.is_some() {
            // The proxy's own requests never ask for large answers; log and move on.
            warn!(id = h.id, len = h.length, ?purpose, "unexpectedly large reply to a proxy request");
            return;
        }
        self.on_ddm_prefix(&prefix, total, !h.is_reply() || purpose.is_some(), h.is_reply());
    }

    pub(super) async fn on_vm_packet(&mut self, mut p: Packet) {
        let h = p.header();
        if h.is_reply() {
            let Some(e) = self.answered(&h) else {
                self.stray_reply(&h);
                return;
            };
            self.early_saw_reply(&e, &p);
            match e.requester {
                Requester::Debugger(conn) if self.debuggers.contains(conn) => {
                    self.settle_reply(conn, &e, &p);
                    if let Some(d) = self.near.replied(conn, &e, h.id, &p) {
                        self.invoked_differed(conn, d);
                    }
                    if e.cmd_set == DDM_CMD_SET {
                        self.on_ddm_payload(p.data(), true, true);
                    }
                    // Answered early: the debugger has its reply; this one is only compared.
                    if !self.early_check(&p) {
                        p.set_id(e.orig_id);
                        self.send_to(conn, p.into_bytes());
                    }
                    if let Note::EventSet(_) = e.note {
                        // The new request's owner is known: events kept back for it can go.
                        self.release_deferred_events();
                    }
                }
                Requester::Debugger(_) => debug!(id = h.id, "dropping a late reply for a departed debugger"),
                Requester::Proxy(_) => {
                    let purpose = self.vm.purposes.remove(&h.id);
                    self.on_proxy_reply(purpose, &p);
                }
            }
            return;
        }
        if self.is_gathered(&h) {
            return self.on_gathered(p.data());
        }
        match h.cmd_set() {
            EVENT_CMD_SET => self.on_event(p),
            DDM_CMD_SET => {
                self.on_ddm_payload(p.data(), true, false);
                let bytes = p.into_bytes();
                for conn in self.ddm_speakers() {
                    self.send_to(conn, bytes.clone());
                }
            }
            _ if !self.debuggers.is_empty() => {
                let bytes = p.into_bytes();
                for conn in self.debuggers.conns() {
                    self.send_to(conn, bytes.clone());
                }
            }
            set => debug!(set, cmd = h.cmd(), "dropping a VM command: no debugger attached"),
        }
    }

    /// Drops a reply whose id has no outstanding request: one the proxy never sent, the
    /// second copy of one already answered, or one purged when its requester left. Logged
    /// with the count at the 1st, 2nd, 4th, 8th... so a VM cannot flood the log with them.
    fn stray_reply(&mut self, h: &Header) {
        // Its requester left, but the VM handled the command: what it resumed or suspended
        // is done.
        self.near.early.replied(h.id, h.error_code());
        self.stray_replies += 1;
        let n = self.stray_replies;
        if n.is_power_of_two() {
            info!(
                id = h.id,
                len = h.length,
                "dropping a reply to id {}: no request of that id is outstanding (never sent, already answered, \
                 or its requester left); {n} such replies so far",
                h.id
            );
        }
    }

    /// The attached debuggers that speak DDM themselves.
    fn ddm_speakers(&self) -> Vec<u64> {
        self.debuggers.iter().filter(|a| a.ddm_speaker).map(|a| a.conn).collect()
    }
}

/// Where a large reply goes that nobody waits for (its requester left): nowhere.
fn nobody(h: Header) -> VmStream {
    debug!(id = h.id, len = h.length, "dropping a large reply nobody waits for");
    VmStream { to: Vec::new(), collect: None }
}
