//! The session's DDM layer: decodes and logs every DDM chunk that passes, in both directions,
//! and keeps the VM's client state (app name, pid, threads, heap) up to date.

use tracing::{info, trace, warn};

use super::actor::Session;
use crate::ddm::state::MAX_THREADS;
use crate::ddm::{decode_payload, Chunk, Dir};
use crate::jdwp::packet::DDM_CMD_SET;
use crate::jdwp::Packet;

impl Session {
    /// Decodes a whole DDM payload: `from_vm` for VM->proxy, `is_reply` for replies.
    pub(super) fn on_ddm_payload(&mut self, payload: &[u8], from_vm: bool, is_reply: bool) {
        self.decode_ddm(payload, None, from_vm, is_reply);
    }

    /// Decodes a DDM payload seen through a bounded prefix of `total` bytes.
    pub(super) fn on_ddm_prefix(&mut self, prefix: &[u8], total: usize, from_vm: bool, is_reply: bool) {
        let whole = (prefix.len() >= total).then_some(());
        self.decode_ddm(prefix, whole.map_or(Some(total), |_| None), from_vm, is_reply);
    }

    fn decode_ddm(&mut self, payload: &[u8], prefix_of: Option<usize>, from_vm: bool, is_reply: bool) {
        self.stats.ddm_payload(payload, prefix_of);
        let dir = if from_vm { Dir::FromVm } else { Dir::ToVm };
        let arrow = if from_vm { "<-" } else { "->" };
        for item in decode_payload(payload, dir, is_reply, prefix_of) {
            match item {
                Ok(chunk) => {
                    info!(dir = arrow, chunk = %chunk.uncompressed().chunk_type(), "{chunk}");
                    if from_vm {
                        let ignored = self.vm.ddm_state.threads_ignored;
                        self.vm.ddm_state.apply(&chunk);
                        if ignored == 0 && self.vm.ddm_state.threads_ignored > 0 {
                            warn!("the VM reports more than MAX_THREADS ({MAX_THREADS}) threads; the others are not tracked");
                        }
                        self.publish_ddm_state(&chunk);
                        self.offer_ddm_chunk(&chunk);
                    }
                }
                Err(e) => warn!(dir = arrow, "malformed DDM chunk: {e}"),
            }
        }
    }

    /// Copies what `list` shows from the DDM client state into the VM status.
    fn publish_ddm_state(&mut self, chunk: &Chunk) {
        if !matches!(chunk.uncompressed(), Chunk::HeloReply(_) | Chunk::Apnm { .. } | Chunk::Wait { .. }) {
            return;
        }
        let d = &self.vm.ddm_state;
        let (pid, app, waiting) = (d.pid, d.app_name.clone(), d.is_waiting_for_debugger());
        let ident = d.vm_ident.clone();
        self.status.send_modify(|s| {
            s.pid = pid.or(s.pid);
            s.app = app.or(s.app.take());
            s.waiting_for_debugger = waiting;
            if s.vm_ident.is_none() {
                s.vm_ident = ident;
            }
        });
    }

    /// A debugger attached: the VM sends no "done waiting" chunk, so the flag ends here.
    pub(super) fn debugger_came(&mut self) {
        self.vm.ddm_state.clear_waiting();
        self.status.send_modify(|s| s.waiting_for_debugger = false);
    }

    /// Logs the proxy's own DDM commands as they leave.
    pub(super) fn trace_ddm_out(&mut self, p: &Packet) {
        if p.header().cmd_set() == DDM_CMD_SET {
            trace!(id = p.id(), len = p.len(), "DDM request");
            self.decode_ddm(p.data(), None, false, false);
        }
    }
}
