//! Early answers (the table in `remote::stop_answers::early`): a debugger's command whose VM reply cannot
//! differ from what the proxy knows is answered as it leaves for the VM, saving the
//! debugger a round trip. The VM's own reply is compared with the early one when it comes
//! and is not relayed; a difference is a defect, counted (`early_differed`) and logged.
//!
//! Only where the session forwards the debugger's command unchanged (a Resume the sharing
//! layer answers or turns into other commands is never early), on a connection answering
//! near, to a VM whose Version names a VM with libjdwp (`remote::stop_answers::early::libjdwp_vm`: not
//! Android, not a native image's agent), and not while a debugger's large command
//! holds the VM's queue (a command waiting there is not written yet, so the request
//! counter would not know of it).

use tracing::{debug, warn};

use super::actor::Session;
use super::ids::{Entry, Note};
use crate::remote::stop_answers::early::{Given, Verdict};
use crate::jdwp::names;
use crate::jdwp::{Header, Packet};
use crate::stats::near::Source;

/// EventRequest.Set: its replies keep the VM's request counter known.
const EVENT_SET: (u8, u8) = (15, 1);

impl Session {
    /// The early reply to a debugger's command, if the table gives one here and now.
    fn early_reply(&self, p: &Packet) -> Option<Vec<u8>> {
        let sizes = self.id_sizes?;
        if self.vm.identify_pending > 0 || self.known_android().is_some() || self.vm.upstream.is_some() {
            return None;
        }
        if !self.status.borrow().vm_ident.as_deref().is_some_and(crate::remote::stop_answers::early::libjdwp_vm) {
            return None;
        }
        self.near.early_answer(p, sizes)
    }

    /// Forwards a debugger's command unchanged and answers it at once when the early table
    /// allows.
    pub(super) async fn forward_maybe_early(&mut self, conn: u64, p: Packet, note: Note) {
        let h = p.header();
        let early = self.early_reply(&p);
        let Some(id) = self.forward_id(conn, p, note).await else { return };
        if let Some(data) = early {
            self.near.early_given.given(id, Given { conn, set: h.cmd_set(), cmd: h.cmd(), data: data.clone() });
            self.reply_near(conn, h, &data, Source::Early);
        }
    }

    /// Every whole VM reply, before it is routed: keeps the request counter, and the
    /// suspensions a Suspend's or an invoke's reply gives the stopped threads.
    pub(super) fn early_saw_reply(&mut self, e: &Entry, p: &Packet) {
        self.near.early.replied(p.header().id, p.header().error_code());
        if (e.cmd_set, e.cmd) == EVENT_SET {
            self.near.early.set_replied(p.header().error_code(), p.data());
        }
    }

    /// A VM reply too large to read whole (never one to a Set or an early-answered command
    /// from a real VM): the counter is lost, and an early answer cannot be compared.
    pub(super) fn early_streamed_reply(&mut self, e: &Entry, h: &Header) -> bool {
        self.near.early.replied(h.id, h.error_code());
        if (e.cmd_set, e.cmd) == EVENT_SET {
            self.near.early.set_lost();
        }
        match self.near.early_given.forget(h.id) {
            Some(g) => {
                self.early_differed(&g, h.error_code(), &format!("a reply of {} bytes", h.length));
                true
            }
            None => false,
        }
    }

    /// The VM's reply to a debugger's command: true when the command was answered early
    /// (the reply is compared and goes no further).
    pub(super) fn early_check(&mut self, p: &Packet) -> bool {
        let h = p.header();
        match self.near.early_given.replied(h.id, h.error_code(), p.data()) {
            None => false,
            Some(Verdict::Same(g)) => {
                debug!(command = %names::display_command(g.set, g.cmd), "the VM's reply matched the early answer");
                true
            }
            Some(Verdict::Differed { given, error, data }) => {
                self.early_differed(&given, error, &format!("{data:02x?}"));
                true
            }
        }
    }

    fn early_differed(&mut self, g: &Given, error: u16, data: &str) {
        self.stats.near_early_differed();
        warn!(
            conn = g.conn,
            command = %names::display_command(g.set, g.cmd),
            early = ?g.data,
            vm_error = error,
            vm_data = data,
            "the VM's reply differs from the early answer the debugger was given"
        );
    }
}

