//! Requests the proxy itself sends to a VM: identification (Version, IDSizes), the DDM probe
//! (HELO), and the clean-up after a debugger leaves a DDM-aware VM (DBGD, EventRequest.Clear,
//! resuming every suspension it left behind).

use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::actor::Session;
use super::handle::VmState;
use super::ids::{Entry, Requester};
use super::leaving::Then;
use super::purpose::{CleanupStep, LateSizes, Purpose};
use super::sharing::VmCmd;
use crate::ddm::Chunk;
use crate::jdwp::events::IdSizes;
use crate::jdwp::packet::{DDM_CMD, DDM_CMD_SET};
use crate::jdwp::reader::{put_id, Reader};
use crate::jdwp::version::{is_android_vm, VmVersion};
use crate::jdwp::Packet;
use crate::session::modes::DdmMode;

/// A new debugger waits at most this long for the previous one's clean-up to finish.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(5);

impl Session {
    /// Queues a command of the proxy's own for the VM.
    pub(super) fn send_proxy(&mut self, purpose: Purpose, cmd_set: u8, cmd: u8, data: &[u8]) {
        let _ = self.send_proxy_id(purpose, cmd_set, cmd, data);
    }

    /// `send_proxy`, returning the id the command went out with.
    pub(super) fn send_proxy_id(&mut self, purpose: Purpose, cmd_set: u8, cmd: u8, data: &[u8]) -> Option<u32> {
        let entry = Entry {
            requester: Requester::Proxy(0),
            orig_id: 0,
            cmd_set,
            cmd,
            note: super::ids::Note::None,
            sent: Instant::now().into_std(),
        };
        match self.vm.ids.insert(entry) {
            Ok(id) => {
                let p = Packet::command(id, cmd_set, cmd, data);
                self.count_command(Requester::Proxy(0), cmd_set, cmd, p.len() as u32);
                self.trace_ddm_out(&p);
                self.queue_for_vm(p.as_bytes(), None, false);
                self.vm.purposes.insert(id, purpose);
                if let Purpose::Cleanup(_) = purpose {
                    self.vm.leaving.sent(1);
                }
                Some(id)
            }
            Err(e) => {
                warn!(error = %e, ?purpose, "cannot send a proxy request");
                None
            }
        }
    }

    pub(super) fn start_identify(&mut self) {
        self.dialect.new_connection();
        if let Some(why) = self.known_android() {
            // ART loads its full JDWP agent (and the app becomes "debugged", slower) on the
            // first non-DDM packet, so a VM known to be Android is probed with HELO alone.
            debug!(why = %why, "an Android VM: DDM only until a debugger attaches");
            self.probe_ddm();
            return;
        }
        self.send_proxy(Purpose::Version, 1, 1, &[]);
        self.send_proxy(Purpose::IdSizes, 1, 7, &[]);
        self.vm.identify_pending = 2;
        self.start_near_cache();
    }

    fn probe_ddm(&mut self) {
        if self.cfg.ddm == DdmMode::Never {
            self.set_ddm(false);
            self.become_ready();
            return;
        }
        let chunk = helo_request();
        self.send_proxy(Purpose::Helo, DDM_CMD_SET, DDM_CMD, &chunk);
    }

    fn set_ddm(&mut self, aware: bool) {
        self.vm.ddm_aware = Some(aware);
        self.status.send_modify(|s| s.ddm = Some(aware));
    }

    /// One identification reply (or its timeout) is in. Once both are: an Android VM found by
    /// its Version is reconnected to (its id sizes read first, so they are known on the next
    /// connection: the clean-up and the split of events need them), anything else is probed
    /// with HELO or ready.
    fn identify_step_done(&mut self) {
        self.vm.identify_pending = self.vm.identify_pending.saturating_sub(1);
        if self.vm.identify_pending > 0 {
            return;
        }
        if std::mem::take(&mut self.vm.android_by_version) {
            self.reconnect_as_android();
        }
        let android = self.android_by_ident();
        self.identified(android);
    }

    fn identified(&mut self, android: bool) {
        // A connection about to be dropped (an Android VM found by its Version) gets nothing.
        if self.vm.ready || self.vm.ddm_aware.is_some() || self.vm.leaving.resetting() {
            return;
        }
        let probe = match self.cfg.ddm {
            DdmMode::Always => true,
            DdmMode::Never => false,
            DdmMode::Auto => android,
        };
        if probe {
            self.probe_ddm();
        } else {
            // HotSpot reads the command set as a signed byte and indexes a table with it:
            // a DDM packet can crash it (JDK-8382537), so a non-Android VM is never probed.
            self.set_ddm(false);
            self.become_ready();
        }
    }

    pub(super) fn become_ready(&mut self) {
        if !self.vm.ready {
            self.vm.ready = true;
            // Said before `list` can show it ready, so that a reader of both sees the line.
            if self.arrival.first_ready() {
                let s = self.status.borrow();
                let who = [s.vm_ident.clone(), s.app.clone(), s.pid.map(|p| format!("pid {p}"))].into_iter().flatten().collect::<Vec<_>>().join(", ");
                drop(s);
                info!("VM ready: {who}");
            } else {
                debug!(ddm = ?self.vm.ddm_aware, "VM ready");
            }
            self.set_state(VmState::Ready);
        }
        self.serve_waiting();
    }

    /// Handles the reply to a proxy request (`purpose` is None for an unknown one).
    pub(super) fn on_proxy_reply(&mut self, purpose: Option<Purpose>, p: &Packet) {
        let Some(purpose) = purpose else { return };
        if let Purpose::Cleanup(_) = purpose {
            self.vm.leaving.answered();
        }
        let h = p.header();
        let ok = h.error_code() == 0;
        match purpose {
            Purpose::Version => {
                self.near.seed(1, 1, p);
                self.vm.android_by_version = if ok { self.on_version(p.data()) } else { false };
                if !ok {
                    warn!(error = h.error_code(), "VirtualMachine.Version failed");
                }
                self.identify_step_done();
            }
            Purpose::IdSizes => {
                if ok {
                    self.near.seed(1, 7, p);
                    self.on_id_sizes(p.data());
                }
                self.identify_step_done();
            }
            Purpose::Helo => {
                if ok {
                    self.set_ddm(true);
                    self.on_ddm_payload(p.data(), true, true);
                } else {
                    debug!(error = h.error_code(), "HELO refused: not a DDM-aware VM");
                    self.set_ddm(false);
                }
                self.become_ready();
            }
            Purpose::Dbgd => debug!(error = h.error_code(), len = p.len(), "DBGD answered"),
            Purpose::Control => self.on_control_reply(p),
            Purpose::Cleanup(step) => self.on_cleanup_reply(step, ok, p.data()),
            Purpose::Share => {
                if !ok {
                    debug!(error = h.error_code(), "a command sent on a debugger's behalf failed");
                }
            }
            Purpose::LeftSet(kind) => {
                // Waited for by a reset's clean-up (`settle_then_reset`), and so is its Clear.
                let settling = self.vm.leaving.settling();
                if settling {
                    self.vm.leaving.answered();
                }
                match p.data().get(..4).filter(|_| ok) {
                    Some(b) => {
                        let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                        debug!(kind, id, "clearing a request granted to a debugger that left before its reply");
                        let purpose = if settling { Purpose::Cleanup(CleanupStep::ClearEvent) } else { Purpose::Share };
                        self.clear_request_as(kind, id, purpose);
                    }
                    None => debug!(kind, error = h.error_code(), "a departed debugger's request was refused: nothing to clear"),
                }
            }
            Purpose::LateIdSizes => {
                if ok {
                    self.on_id_sizes(p.data());
                } else {
                    warn!(error = h.error_code(), "the VM refused IDSizes: events go whole to the owner of their first event");
                }
                self.late_sizes_settled();
            }
            Purpose::UnloadWatch => self.near.unload_watch_replied(p),
            Purpose::Seed(set, cmd) => self.near.seed(set, cmd, p),
        }
        self.check_cleanup_done();
    }

    /// A proxy request that was never answered.
    pub(super) fn on_proxy_timeout(&mut self, purpose: Purpose) {
        match purpose {
            Purpose::Version | Purpose::IdSizes => {
                warn!(?purpose, "the VM did not answer an identification request");
                self.identify_step_done();
            }
            Purpose::Helo => {
                warn!("the VM did not answer HELO; treating it as not DDM-aware");
                self.set_ddm(false);
                self.become_ready();
            }
            Purpose::Dbgd => debug!("DBGD was not answered (no Android VM implements it)"),
            Purpose::Control => debug!("a DDM request got no reply (answers may come as pushes)"),
            Purpose::Cleanup(step) => {
                warn!(?step, "a clean-up request was not answered");
                self.vm.leaving.answered();
                self.check_cleanup_done();
            }
            Purpose::Share => debug!("a command sent on a debugger's behalf was not answered"),
            Purpose::LeftSet(kind) => {
                debug!(kind, "a departed debugger's EventRequest.Set was not answered");
                if self.vm.leaving.settling() {
                    self.vm.leaving.answered();
                    self.check_cleanup_done();
                }
            }
            Purpose::LateIdSizes => {
                warn!("the VM did not answer IDSizes: events go whole to the owner of their first event");
                self.late_sizes_settled();
            }
            Purpose::UnloadWatch => debug!("the VM did not answer the ClassUnload request: answers about types are not kept"),
            Purpose::Seed(set, cmd) => debug!(set, cmd, "the VM did not answer a fact asked for the near cache"),
        }
    }

    /// Asks the VM's id sizes if nobody has yet, before a debugger's first EventRequest.Set
    /// goes out (a VM answers in order, so they are known before any event of that request).
    pub(super) fn learn_id_sizes(&mut self) {
        if self.id_sizes.is_none() && self.vm.late_sizes == LateSizes::NotAsked {
            debug!("asking the VM's id sizes, to split its events between debuggers");
            self.vm.late_sizes = LateSizes::Pending;
            self.send_proxy(Purpose::LateIdSizes, 1, 7, &[]);
        }
    }

    fn late_sizes_settled(&mut self) {
        self.vm.late_sizes = LateSizes::Settled;
        self.release_deferred_events();
    }

    fn android_by_ident(&self) -> bool {
        self.status.borrow().vm_ident.as_deref().is_some_and(is_android_vm)
    }

    fn on_version(&mut self, data: &[u8]) -> bool {
        match VmVersion::parse(data) {
            Ok(v) => {
                let first_line = v.description.lines().next().unwrap_or("");
                debug!(vm_name = %v.vm_name, vm_version = %v.vm_version, jdwp = %format!("{}.{}", v.jdwp_major, v.jdwp_minor),
                      description = %first_line, "VM identified");
                let android = v.is_android();
                self.status.send_modify(|s| s.vm_ident = Some(v.ident()));
                android
            }
            Err(e) => {
                warn!(error = %e, "malformed VirtualMachine.Version reply");
                false
            }
        }
    }

    fn on_id_sizes(&mut self, data: &[u8]) {
        match IdSizes::parse(data) {
            Some(s) => {
                debug!(field = s.field, method = s.method, object = s.object, reference_type = s.reference_type, frame = s.frame, "ID sizes");
                self.id_sizes = Some(s);
            }
            None => warn!(len = data.len(), "malformed or unusable IDSizes reply"),
        }
    }

    // ----- clean-up after a debugger leaves a DDM-aware VM -----

    /// Undoes what the last debugger left on a VM whose connection is kept: DBGD, clears its
    /// event requests, releases its suspensions and pins, then resumes every thread as often
    /// as it is still suspended (whatever the holds could not know of).
    pub(super) fn start_cleanup(&mut self, event_requests: Vec<(u8, u32)>, release: Vec<VmCmd>, unpin: Vec<u64>) {
        self.vm.leaving.clean_up(Instant::now() + CLEANUP_TIMEOUT);
        self.send_proxy(Purpose::Dbgd, DDM_CMD_SET, DDM_CMD, &dbgd_request());
        let requests = event_requests.len();
        for (kind, id) in event_requests {
            self.clear_request_as(kind, id, Purpose::Cleanup(CleanupStep::ClearEvent));
        }
        // VM-wide suspensions first (they also hold the count new threads start with), then
        // whatever each thread still has, read back with SuspendCount.
        let releases = release.len();
        for c in release {
            self.send_vm_cmd(c);
        }
        for o in unpin {
            self.unpin(o);
        }
        if self.id_sizes.is_some() {
            self.send_proxy(Purpose::Cleanup(CleanupStep::AllThreads), 1, 4, &[]);
        } else {
            self.send_proxy(Purpose::Cleanup(CleanupStep::IdSizes), 1, 7, &[]);
        }
        debug!(requests, releases, "cleaning up after the last debugger");
    }

    /// The last debugger left a VM that forgets debuggers only when its connection closes
    /// (HotSpot's agent): its event requests are cleared and the suspensions it held
    /// released, and the connection is reset once the VM has answered them (or after
    /// [`CLEANUP_TIMEOUT`]).
    ///
    /// HotSpot's agent pins every object id while the VM is suspended VM-wide
    /// (`commonRef_pinAll` in `threadControl_suspendAll`), and its reset on a closed connection
    /// zeroes its suspend-all count but not that pin count. A connection closed while the VM
    /// was suspended VM-wide (a debugger that quit at a suspend-all breakpoint, or a
    /// suspend-all event just fired) would leave every object id the VM hands out afterwards
    /// holding its object, and its class and loader, until that next connection closes: for
    /// as long as jdwpmux keeps it, debugger after debugger. So those suspensions are
    /// resumed while the connection is still open, after the requests that could fire new
    /// ones are cleared: those granted and those whose Sets are still in flight (cleared as
    /// their replies come, `Purpose::LeftSet`). An event that still comes meanwhile comes
    /// before the last of those replies and is resumed as it arrives (`hold_event`); all of
    /// it is written before the connection closes.
    pub(super) fn settle_then_reset(&mut self, event_requests: Vec<(u8, u32)>, release: Vec<VmCmd>) {
        let sets_in_flight = self.vm.purposes.values().filter(|p| matches!(p, Purpose::LeftSet(_))).count();
        if event_requests.is_empty() && release.is_empty() && sets_in_flight == 0 {
            self.vm.leaving.reset();
            return;
        }
        self.vm.leaving.clean_up_then_reset(Instant::now() + CLEANUP_TIMEOUT);
        // As after the reset: not ready for the next debugger until the VM is connected again.
        self.set_state(VmState::Reconnecting);
        // Each Set in flight is waited for, and then the Clear of what it was granted.
        self.vm.leaving.sent(sets_in_flight);
        let (requests, releases) = (event_requests.len(), release.len());
        for (kind, id) in event_requests {
            self.clear_request_as(kind, id, Purpose::Cleanup(CleanupStep::ClearEvent));
        }
        for c in release {
            self.send_vm_cmd_as(c, Purpose::Cleanup(CleanupStep::Resume));
        }
        debug!(requests, releases, sets_in_flight, "clearing and resuming what the last debugger left before the VM connection is reset");
    }

    fn on_cleanup_reply(&mut self, step: CleanupStep, ok: bool, data: &[u8]) {
        if !ok {
            debug!(?step, "clean-up request failed");
            return;
        }
        match step {
            CleanupStep::IdSizes => {
                self.on_id_sizes(data);
                if self.id_sizes.is_some() {
                    self.send_proxy(Purpose::Cleanup(CleanupStep::AllThreads), 1, 4, &[]);
                }
            }
            CleanupStep::ClearEvent | CleanupStep::Resume => {}
            CleanupStep::AllThreads => {
                let size = self.id_sizes.map_or(8, |s| s.object);
                let mut r = Reader::new(data);
                let threads = r.u32("thread count").and_then(|n| {
                    (0..n.min(1_000_000)).map(|_| r.id(size, "thread id")).collect::<Result<Vec<_>, _>>()
                });
                match threads {
                    Ok(threads) => {
                        for t in threads {
                            let mut d = Vec::with_capacity(size);
                            put_id(&mut d, t, size);
                            self.send_proxy(Purpose::Cleanup(CleanupStep::SuspendCount(t)), 11, 12, &d);
                        }
                    }
                    Err(e) => warn!(error = %e, "malformed AllThreads reply"),
                }
            }
            CleanupStep::SuspendCount(thread) => {
                let count = Reader::new(data).i32("suspend count").unwrap_or(0);
                if count > 0 {
                    debug!(thread, count, "resuming a thread the debugger left suspended");
                }
                let size = self.id_sizes.map_or(8, |s| s.object);
                for _ in 0..count.clamp(0, 1000) {
                    let mut d = Vec::with_capacity(size);
                    put_id(&mut d, thread, size);
                    self.send_proxy(Purpose::Cleanup(CleanupStep::Resume), 11, 3, &d);
                }
            }
        }
    }

    /// Ends a clean-up that is answered or out of time: the connection is reset after it, or
    /// serves the debuggers waiting.
    pub(super) fn check_cleanup_done(&mut self) {
        let Some(done) = self.vm.leaving.check(Instant::now()) else { return };
        if done.unanswered > 0 {
            warn!(pending = done.unanswered, "clean-up did not finish in time");
        } else {
            debug!("clean-up done");
        }
        if done.then == Then::Serve {
            self.serve_waiting();
        }
    }
}

/// The HELO request the proxy sends: server protocol version 1.
fn helo_request() -> Vec<u8> {
    Chunk::HeloRequest { version: 1 }.encode().unwrap_or_default()
}

/// DBGD: "the debugger has disconnected".
fn dbgd_request() -> Vec<u8> {
    Chunk::Dbgd.encode().unwrap_or_default()
}
