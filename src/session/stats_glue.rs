//! The session's traffic figures (see [`crate::stats`]): what it counts and where. Kept to
//! one call per place so the figures follow the relay wherever it routes:
//! - a command forwarded to the VM: `self.stats.command(..)` (debugger_side, proxy_requests);
//! - a reply from the VM routed to its requester: [`Session::answered`] (vm_side);
//! - every DDM payload on the VM connection: `self.stats.ddm_payload(..)` (ddm_glue).

use super::actor::Session;
use super::ids::{Entry, Requester};
use crate::jdwp::Header;
use crate::stats::Who;

/// Whose figures a request counts in.
pub(super) fn who(r: Requester) -> Who {
    match r {
        Requester::Debugger(conn) => Who::Debugger(conn),
        Requester::Proxy(_) => Who::Proxy,
    }
}

impl Session {
    /// Takes the request a VM reply answers out of the id table, counting the reply (its
    /// size, error and latency since the command left) for whoever asked.
    pub(super) fn answered(&mut self, h: &Header) -> Option<Entry> {
        let e = self.vm.ids.take(h.id)?;
        self.stats.reply(who(e.requester), e.cmd_set, e.cmd, h.error_code(), h.length, e.sent.elapsed());
        Some(e)
    }

    /// Counts a command leaving for the VM on behalf of `r` (with the debugger's address).
    pub(super) fn count_command(&mut self, r: Requester, set: u8, cmd: u8, len: u32) {
        let peer = match r {
            Requester::Debugger(c) => self.debuggers.get(c).map(|a| a.io.peer),
            Requester::Proxy(_) => None,
        };
        self.stats.command(who(r), peer, set, cmd, len);
    }

    /// The figures since the session started.
    pub(super) fn stats_report(&self) -> crate::stats::VmReport {
        self.stats.live_report(&self.cfg.name)
    }
}
