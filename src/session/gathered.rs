//! Answers gathered at a stop by jdwpmux on the VM's host (see `gather`): the packet that
//! carries them is taken out of the VM connection's stream here (no debugger ever sees it;
//! captures show it on the VM leg, marked near), kept in a `remote::stop_answers::store::Store` per VM
//! connection, and a debugger's command it can answer is answered with the debugger's own
//! id, bytes as the VM would send them. The store is told every command written to the VM
//! (any debugger's, DDM, the proxy's own) and every event read, and judges from them what
//! may still be served. The class data read with the stop (fields, variable tables,
//! superclasses) goes to the near cache too.
//!
//! The far side sends them only to a near side that asked, which it does unless
//! `--near-cache never`; only a connection answering near keeps them (`near_layer`). A session
//! cannot tell a far side's channel from a plain forward, so every VM connection takes them
//! out of the stream (no VM sends a command of this set under these ids, and a debugger must
//! never see one).

use super::actor::Session;
use crate::remote::stop_answers::inband;
use crate::jdwp::packet::error;
use crate::jdwp::{Header, Packet};
use crate::stats::near::Source;

impl Session {
    /// Whether a packet from the VM is a stop's gathered answers (never relayed).
    pub(super) fn is_gathered(&self, h: &Header) -> bool {
        inband::is_answers(h)
    }

    /// A stop's gathered answers, read whole from the VM connection.
    pub(super) fn on_gathered(&mut self, data: &[u8]) {
        let in_flight: Vec<(u32, u8, u8)> = self.vm.ids.pending().collect();
        self.near.gathered_arrived(data, self.id_sizes, in_flight);
    }

    /// The VM's reply to a debugger's StringReference.Value differed from the answer read
    /// with an invoke's reply on the VM's host: a defect, counted with the early answers'.
    pub(super) fn invoked_differed(&mut self, conn: u64, d: crate::remote::stop_answers::invoked::Differed) {
        self.stats.near_early_differed();
        tracing::warn!(
            conn,
            string = ?d.key.data,
            answer = ?d.answer,
            vm_error = d.vm_error,
            vm_data = ?d.vm_reply,
            "the VM's StringReference.Value differs from the one read with the invoke's reply"
        );
    }

    /// Sends a reply the proxy made near (from the cache, gathered or early) to a debugger's
    /// command, with its own id, counted and marked near in captures and logs.
    pub(super) fn reply_near(&mut self, conn: u64, h: Header, answer: &[u8], source: Source) {
        self.send_near_reply(conn, h, Packet::reply(h.id, error::NONE, answer), source);
    }

    /// As [`Session::reply_near`], with the error code the VM gave before and no data.
    pub(super) fn reply_near_error(&mut self, conn: u64, h: Header, code: u16, source: Source) {
        self.send_near_reply(conn, h, Packet::reply(h.id, code, &[]), source);
    }

    fn send_near_reply(&mut self, conn: u64, h: Header, reply: Packet, source: Source) {
        let what = (h.cmd_set(), h.cmd());
        self.stats.near_answer_from(source, what.0, what.1, reply.len() as u32);
        self.note_proxy_answer(conn, reply.as_bytes());
        if super::packet_log::wanted() {
            super::packet_log::packet("near->dbg", reply.as_bytes(), None, Some(what), None);
        }
        if let Some(a) = self.debuggers.get_mut(conn) {
            a.io.queue_near(reply.into_bytes());
        }
    }

    /// A command written to the VM, whole or its head (`data` empty then): what the
    /// gathered answers and the early answers must know of it.
    pub(super) fn told_vm(&mut self, bytes: &[u8]) {
        let Some(h) = Header::parse(bytes) else { return };
        if h.is_reply() {
            return;
        }
        // A streamed command's head holds only part of its data: none is read then.
        let data = bytes.get(crate::jdwp::packet::HEADER_LEN..h.length as usize).unwrap_or(&[]);
        self.near.told_vm(&h, data, self.id_sizes);
    }
}
