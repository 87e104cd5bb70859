//! The session's VM side: routing each packet from the VM. Replies go to whoever asked, with
//! the asker's id restored; events go to the attached debugger (or are held until one comes);
//! DDM packets are decoded and logged, and copied only to a debugger that speaks DDM itself.

use tracing::{debug, warn};

use super::actor::{Session, VmStream, MAX_HELD_EVENTS, MAX_HELD_EVENT_BYTES};
use super::ids::Requester;
use crate::jdwp::codec::Frame;
use crate::jdwp::packet::{DDM_CMD_SET, EVENT_CMD_SET};
use crate::jdwp::reader::{put_id, Reader};
use crate::jdwp::{Header, Packet};

/// Largest prefix of a streamed packet the proxy keeps to read it itself (DDM logging).
pub const COLLECT_PREFIX: usize = 1024 * 1024;

/// Event suspend policies (JDWP SuspendPolicy).
const SUSPEND_EVENT_THREAD: u8 = 1;
const SUSPEND_ALL: u8 = 2;

impl Session {
    pub(super) async fn on_vm_frame(&mut self, frame: Frame) {
        match frame {
            Frame::Packet(p) => self.on_vm_packet(p).await,
            Frame::Head(h, mut head) => {
                let stream = self.route_head(h, &mut head);
                if let Some(a) = self.attached.as_mut().filter(|_| stream.to_debugger) {
                    a.io.queue_head(head.freeze());
                }
                self.vm_stream = Some(stream);
            }
            Frame::Body { bytes, last } => {
                let Some(stream) = self.vm_stream.as_mut() else { return };
                if let Some((_, prefix, _)) = stream.collect.as_mut() {
                    let room = COLLECT_PREFIX.saturating_sub(prefix.len());
                    prefix.extend_from_slice(&bytes[..room.min(bytes.len())]);
                }
                if let Some(a) = self.attached.as_mut().filter(|_| stream.to_debugger) {
                    a.io.queue_body(bytes.freeze(), last);
                }
                if last {
                    if let Some(VmStream { collect: Some((h, prefix, purpose)), .. }) = self.vm_stream.take() {
                        self.on_collected(h, prefix, purpose);
                    }
                }
            }
        }
    }

    /// Decides where a large packet's body goes, from its header alone.
    fn route_head(&mut self, h: Header, head: &mut bytes::BytesMut) -> VmStream {
        let attached_conn = self.attached.as_ref().map(|a| a.conn);
        let ddm_speaker = self.attached.as_ref().is_some_and(|a| a.ddm_speaker);
        if h.is_reply() {
            match self.answered(&h) {
                Some(e) if e.requester == Requester::Debugger(attached_conn.unwrap_or(u64::MAX)) => {
                    head[4..8].copy_from_slice(&e.orig_id.to_be_bytes());
                    let collect = (e.cmd_set == DDM_CMD_SET).then(|| (h, Vec::new(), None));
                    VmStream { to_debugger: true, collect }
                }
                Some(e) if matches!(e.requester, Requester::Proxy(_)) => {
                    let purpose = self.purposes.remove(&h.id);
                    VmStream { to_debugger: false, collect: Some((h, Vec::new(), purpose)) }
                }
                _ => {
                    debug!(id = h.id, len = h.length, "dropping a large reply nobody waits for");
                    VmStream { to_debugger: false, collect: None }
                }
            }
        } else if h.cmd_set() == DDM_CMD_SET {
            VmStream { to_debugger: ddm_speaker, collect: Some((h, Vec::new(), None)) }
        } else {
            if attached_conn.is_none() {
                warn!(len = h.length, set = h.cmd_set(), "dropping a large VM command: no debugger attached");
            }
            VmStream { to_debugger: attached_conn.is_some(), collect: None }
        }
    }

    /// A large packet the proxy read through a bounded prefix.
    fn on_collected(&mut self, h: Header, prefix: Vec<u8>, purpose: Option<super::proxy_requests::Purpose>) {
        let total = h.body_len();
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
                debug!(id = h.id, "dropping a reply with no request (its requester left)");
                return;
            };
            match e.requester {
                Requester::Debugger(conn) if self.attached.as_ref().is_some_and(|a| a.conn == conn) => {
                    self.track_event_reply(&e, &p);
                    if e.cmd_set == DDM_CMD_SET {
                        self.on_ddm_payload(p.data(), true, true);
                    }
                    p.set_id(e.orig_id);
                    self.send_to_debugger(p.into_bytes());
                }
                Requester::Debugger(_) => debug!(id = h.id, "dropping a late reply for a departed debugger"),
                Requester::Proxy(_) => {
                    let purpose = self.purposes.remove(&h.id);
                    self.on_proxy_reply(purpose, &p);
                }
            }
            return;
        }
        match h.cmd_set() {
            EVENT_CMD_SET => self.on_event(p).await,
            DDM_CMD_SET => {
                self.on_ddm_payload(p.data(), true, false);
                if self.attached.as_ref().is_some_and(|a| a.ddm_speaker) {
                    self.send_to_debugger(p.into_bytes());
                }
            }
            _ if self.attached.is_some() => self.send_to_debugger(p.into_bytes()),
            set => debug!(set, cmd = h.cmd(), "dropping a VM command: no debugger attached"),
        }
    }

    async fn on_event(&mut self, p: Packet) {
        if let Some(a) = self.attached.as_mut() {
            if p.data().first() == Some(&SUSPEND_ALL) {
                a.vm_suspends = a.vm_suspends.saturating_add(1);
            }
            self.send_to_debugger(p.into_bytes());
            return;
        }
        if let Some(stray) = self.stray_event(p.data()) {
            // An event for a request the departed debugger held: the clean-up cleared it,
            // but this one was already on its way. Undo its suspension and drop it.
            debug!(request = stray.0, policy = stray.1, "dropping an event of a departed debugger");
            self.resume_stray(stray.1, p.data());
            return;
        }
        if self.held.len() >= MAX_HELD_EVENTS || self.held_bytes + p.len() > MAX_HELD_EVENT_BYTES {
            self.held_dropped += 1;
            return;
        }
        debug!(len = p.len(), "holding an event until a debugger attaches");
        self.held_bytes += p.len();
        self.held.push_back(p);
    }

    /// (request id, suspend policy) of a composite event whose first request was cleared.
    fn stray_event(&self, data: &[u8]) -> Option<(u32, u8)> {
        let mut r = Reader::new(data);
        let policy = r.u8("suspendPolicy").ok()?;
        let _count = r.u32("events").ok()?;
        let _kind = r.u8("eventKind").ok()?;
        let request = r.u32("requestID").ok()?;
        self.cleared_requests.contains(&request).then_some((request, policy))
    }

    fn resume_stray(&mut self, policy: u8, data: &[u8]) {
        use super::proxy_requests::{CleanupStep, Purpose};
        match policy {
            SUSPEND_ALL => self.send_proxy(Purpose::Cleanup(CleanupStep::Resume), 1, 9, &[]),
            SUSPEND_EVENT_THREAD => {
                let size = self.id_size.unwrap_or(8);
                // policy, count, kind, requestID, then the thread for thread-bound events.
                let thread = data.get(10..).and_then(|d| Reader::new(d).id(size, "thread").ok());
                if let Some(t) = thread {
                    let mut d = Vec::new();
                    put_id(&mut d, t, size);
                    self.send_proxy(Purpose::Cleanup(CleanupStep::Resume), 11, 3, &d);
                }
            }
            _ => {}
        }
    }
}
