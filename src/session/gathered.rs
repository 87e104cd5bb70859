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
//! `--near-cache never`; only a connection answering near (`near_on`) keeps them. A session
//! cannot tell a far side's channel from a plain forward, so every VM connection takes them
//! out of the stream (no VM sends a command of this set under these ids, and a debugger must
//! never see one).

use tracing::{debug, warn};

use super::actor::Session;
use crate::jdwp::packet::error::ABSENT_INFORMATION;
use super::nearcache::immutable;
use crate::remote::stop_answers::inband;
use crate::jdwp::events::IdSizes;
use crate::jdwp::packet::error;
use crate::jdwp::{Header, Packet};
use crate::stats::near::Source;

/// Id sizes to read a command's thread id with before the VM said its own (HotSpot's).
pub(super) const SIZES_UNTIL_KNOWN: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };

impl Session {
    /// Whether a packet from the VM is a stop's gathered answers (never relayed).
    pub(super) fn is_gathered(&self, h: &Header) -> bool {
        inband::is_answers(h)
    }

    /// A stop's gathered answers, read whole from the VM connection.
    pub(super) fn on_gathered(&mut self, data: &[u8]) {
        if !self.near_on {
            debug!("gathered answers on a connection that does not answer near: dropped");
            return;
        }
        let Some(sizes) = self.id_sizes else {
            debug!("gathered answers before the VM's id sizes are known: not kept");
            return;
        };
        let answers = match inband::answers(data) {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "unreadable gathered answers from the VM's host: not kept");
                return;
            }
        };
        let in_flight: Vec<(u8, u8)> = self.ids.commands().collect();
        // Class data goes to the near cache, unless a RedefineClasses in flight may have
        // changed it after the reading.
        if !in_flight.contains(&super::nearcache::commands::REDEFINE_CLASSES) {
            self.near.set_sizes(sizes);
            for g in answers.answers.iter().filter(|g| immutable(g.key.set, g.key.cmd).is_some()) {
                self.near.gathered(g.key.set, g.key.cmd, &g.key.data, error::NONE, &g.reply);
            }
            for key in answers.absent.iter().filter(|k| immutable(k.set, k.cmd).is_some()) {
                self.near.gathered(key.set, key.cmd, &key.data, ABSENT_INFORMATION, &[]);
            }
        }
        // Class data read for a class lookup's reply suspends nothing: only the cache takes
        // it, and the current stop's answers stay.
        if answers.suspend_policy == crate::jdwp::events::suspend::NONE {
            debug!(reply = answers.event_id, answers = answers.answers.len(), "class data read for a class lookup");
            return;
        }
        debug!(event = answers.event_id, answers = answers.answers.len(), "gathered answers for a stop");
        self.gathered.arrived(answers, sizes, in_flight);
    }

    /// A debugger's whole command: answered from the stop's gathered answers when they may
    /// serve it. True when answered.
    pub(super) fn gathered_command(&mut self, conn: u64, p: &Packet) -> bool {
        if !self.near_on {
            return false;
        }
        let h = p.header();
        let Some(answer) = self.gathered.lookup(h.cmd_set(), h.cmd(), p.data()) else { return false };
        self.reply_near(conn, h, &answer, Source::Gathered);
        true
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
        if self.near_on {
            self.gathered.command(h.cmd_set(), h.cmd(), data);
            let sizes = self.id_sizes.unwrap_or(SIZES_UNTIL_KNOWN);
            let near = &self.near;
            let line_table = |class, method| near.line_table(&sizes, class, method);
            let lasting_class = |class| near.lasting_class(class);
            let held = crate::remote::stop_answers::early::Held { line_table: &line_table, lasting_class: &lasting_class };
            self.early.written_with(h.id, h.cmd_set(), h.cmd(), data, &sizes, &held);
        }
    }

    /// An Event.Composite read from the VM, before it is routed.
    pub(super) fn gather_event(&mut self, p: &Packet) {
        if !self.near_on {
            return;
        }
        self.gathered.event(p.id());
        let sizes = self.id_sizes.unwrap_or(SIZES_UNTIL_KNOWN);
        match crate::jdwp::events::parse_composite(p.data(), &sizes) {
            Ok(c) => self.early.event(c.suspend_policy, c.events.iter().map(|e| (e.kind, e.thread))),
            // Unreadable: nothing is known suspended by it, and what was may have ended.
            Err(_) => self.early.event(crate::jdwp::events::suspend::NONE, [(crate::jdwp::events::kind::VM_DEATH, None)]),
        }
    }
}
