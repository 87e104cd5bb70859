//! A debugger leaving (closed, reset, Dispose, cut off): it leaves alone. Its event requests
//! are cleared, its suspensions released, its pins given back; the VM and the other
//! debuggers carry on. When the last one leaves, the VM forgets debuggers altogether: DBGD
//! and a full clean-up on a DDM-aware VM, a dropped and remade connection on any other.

use tracing::{debug, info, warn};

use super::actor::Session;
use super::ids::Requester;

impl Session {
    /// Forgets a debugger, closes its connection after flushing what was queued for it, and
    /// undoes what it left on the VM.
    pub(super) async fn detach(&mut self, conn: u64, reason: &str) {
        let Some(a) = self.debuggers.remove(conn) else { return };
        // The rest of a large packet on its way to it goes nowhere.
        if let Some(s) = self.vm.downstream.as_mut() {
            s.to.retain(|c| *c != conn);
        }
        if self.vm.upstream == Some(conn) {
            // The VM has half of its command and would read whatever comes next as the rest.
            warn!(peer = %a.io.peer, "a debugger left in the middle of a large command; resetting the VM connection");
            self.vm.leaving.reset();
        }
        // Its Sets still in flight (it need not wait for a reply answered early): while others
        // stay, or before a VM connection is reset, the requests the VM grants them are
        // cleared as their replies come, as its granted ones are below. Else the VM forgets
        // them with the DDM clean-up.
        if !self.debuggers.is_empty() || self.vm.ddm_aware != Some(true) {
            for (id, kind) in self.vm.ids.adopt_sets(Requester::Debugger(conn)) {
                self.vm.purposes.insert(id, super::purpose::Purpose::LeftSet(kind));
            }
        }
        // Before a reset (`settle_then_reset`) the replies to its commands still in flight
        // come while the connection is open: its entries stay, so they are known as a
        // departed debugger's (the reset forgets them). Else they are forgotten now.
        let resetting = self.debuggers.is_empty() && self.vm.ddm_aware != Some(true);
        let purged = if resetting { self.vm.ids.count(Requester::Debugger(conn)) } else { self.vm.ids.purge(Requester::Debugger(conn)) };
        self.near.cache.forget_conn(conn);
        self.near.early_given.forget_conn(conn);
        self.stats.debugger_left(conn);
        info!(peer = %a.io.peer, conn, reason, outstanding = purged, left = self.debuggers.len(), "debugger detached");
        a.io.close(reason, &self.tracker);
        let requests = self.vm.sharing.owners.leave(conn);
        let release = self.vm.sharing.holds.leave(conn);
        let unpin = self.vm.sharing.pins.leave(conn);
        // Its own waits end with it; others' that waited for it can run now.
        self.vm.sharing.waits.leave(conn);
        self.vm.sharing.settle_waits();
        self.publish_debuggers();
        if self.debuggers.is_empty() {
            if !self.vm.sharing.is_empty() {
                warn!("sharing tables not empty after the last debugger left");
            }
            if self.vm.ddm_aware == Some(true) {
                self.start_cleanup(requests, release, unpin);
            } else {
                // A VM that does not speak DDM only forgets a debugger when the connection
                // closes; what it left suspended VM-wide is resumed first (`settle_then_reset`).
                self.settle_then_reset(requests, release);
            }
        } else if !requests.is_empty() || !release.is_empty() || !unpin.is_empty() {
            debug!(requests = requests.len(), releases = release.len(), pins = unpin.len(), "undoing what the debugger left");
            for (kind, id) in requests {
                self.clear_request(kind, id);
            }
            for c in release {
                self.send_vm_cmd(c);
            }
            for o in unpin {
                self.unpin(o);
            }
            self.refresh_all_live();
        }
        // Events kept back for its Sets in flight can go now.
        self.release_deferred_events();
    }

    /// The daemon is stopping: every debugger leaves cleanly.
    pub(super) async fn detach_for_shutdown(&mut self) {
        for conn in self.debuggers.conns() {
            self.detach(conn, "the proxy is shutting down").await;
        }
    }
}
