//! Commands made per debugger (see `sharing::policy`): suspensions, event requests, pins,
//! HoldEvents/ReleaseEvents and Dispose; what their replies settle; and the commands the
//! proxy sends the VM to carry out a release.

use std::time::SystemTime;

use tracing::{debug, info};

use super::actor::Session;
use super::ids::{Entry, Note};
use super::purpose::Purpose;
use super::sharing::owners::BREAKPOINT;
use super::sharing::waits::invoke_thread;
use super::sharing::VmCmd;
use crate::jdwp::events::IdSizes;
use crate::jdwp::names;
use crate::jdwp::packet::error;
use crate::jdwp::reader::{put_id, Reader};
use crate::jdwp::Packet;

const DISPOSE: (u8, u8) = (1, 6);
const VM_SUSPEND: (u8, u8) = (1, 8);
const VM_RESUME: (u8, u8) = (1, 9);
const HOLD_EVENTS: (u8, u8) = (1, 15);
const RELEASE_EVENTS: (u8, u8) = (1, 16);
const ID_SIZES: (u8, u8) = (1, 7);
const DISABLE_COLLECTION: (u8, u8) = (9, 7);
const ENABLE_COLLECTION: (u8, u8) = (9, 8);
const THREAD_SUSPEND: (u8, u8) = (11, 2);
const THREAD_RESUME: (u8, u8) = (11, 3);
const EVENT_SET: (u8, u8) = (15, 1);
const EVENT_CLEAR: (u8, u8) = (15, 2);
const EVENT_CLEAR_BREAKPOINTS: (u8, u8) = (15, 3);

/// The one id a ThreadReference or ObjectReference command carries: its body is that id,
/// so its length is the VM's object id size.
fn only_id(data: &[u8]) -> Option<u64> {
    (1..=8).contains(&data.len()).then(|| Reader::new(data).id(data.len(), "id").ok()).flatten()
}

impl Session {
    /// A command the proxy makes per debugger (`Policy::PerDebugger`).
    pub(super) async fn per_debugger(&mut self, conn: u64, p: Packet) {
        let h = p.header();
        match (h.cmd_set(), h.cmd()) {
            DISPOSE => {
                // Dispose would make the VM drop every debugger's state (and close the
                // connection the proxy keeps): answer it here; this debugger leaves alone.
                self.answer(conn, h.id, error::NONE);
                self.detach(conn, "VirtualMachine.Dispose").await;
            }
            VM_SUSPEND => {
                let hold = self.vm.sharing.holds.suspend_all(conn);
                self.forward(conn, p, Note::Hold(hold)).await;
            }
            THREAD_SUSPEND => match only_id(p.data()) {
                Some(t) => {
                    let hold = self.vm.sharing.holds.suspend_thread(conn, t);
                    self.forward(conn, p, Note::Hold(hold)).await;
                }
                None => self.forward(conn, p, Note::None).await,
            },
            VM_RESUME => {
                let plan = self.vm.sharing.holds.resume_all(conn);
                self.carry_out(conn, p, VmCmd::ResumeAll, plan).await;
                self.resume_noted(conn, None);
            }
            THREAD_RESUME => match only_id(p.data()) {
                Some(t) => {
                    let plan = self.vm.sharing.holds.resume_thread(conn, t);
                    self.carry_out(conn, p, VmCmd::ResumeThread(t), plan).await;
                    self.resume_noted(conn, Some(t));
                }
                None => self.forward(conn, p, Note::None).await,
            },
            HOLD_EVENTS | RELEASE_EVENTS => {
                if let Some(a) = self.debuggers.get_mut(conn) {
                    if (h.cmd_set(), h.cmd()) == HOLD_EVENTS {
                        a.hold_events();
                    } else {
                        a.release_events();
                    }
                }
                self.answer(conn, h.id, error::NONE);
            }
            EVENT_SET => {
                self.learn_id_sizes();
                self.vm.sharing.owners.set_sent(conn);
                let kind = p.data().first().copied().unwrap_or(0);
                self.forward_maybe_early(conn, p, Note::EventSet(kind)).await;
            }
            EVENT_CLEAR => {
                let mut r = Reader::new(p.data());
                let request = r.u8("eventKind").and_then(|_| r.u32("requestID"));
                match request {
                    // A request it learned from an early answer, whose Set reply is still
                    // coming: the VM sees the Clear after the Set.
                    Ok(id) if self.near.early_given.set_pending(conn, id) => self.forward(conn, p, Note::None).await,
                    Ok(id) if !self.vm.sharing.owners.clear(conn, id) => {
                        debug!(conn, request = id, "a Clear of a request this debugger does not own: answered here");
                        self.answer(conn, h.id, error::NONE);
                    }
                    // A request of its own, granted by the VM: the Clear goes out unchanged.
                    Ok(_) => self.forward_maybe_early(conn, p, Note::None).await,
                    Err(_) => self.forward(conn, p, Note::None).await,
                }
            }
            EVENT_CLEAR_BREAKPOINTS => {
                let alone = self.debuggers.len() == 1 && !self.vm.sharing.owners.others_have_breakpoints(conn);
                let mine = self.vm.sharing.owners.clear_breakpoints(conn);
                if alone {
                    self.forward(conn, p, Note::None).await;
                } else {
                    for id in mine {
                        self.clear_request(BREAKPOINT, id);
                    }
                    self.answer(conn, h.id, error::NONE);
                }
            }
            DISABLE_COLLECTION | ENABLE_COLLECTION => {
                let Some(o) = only_id(p.data()) else { return self.forward(conn, p, Note::None).await };
                let pins = &mut self.vm.sharing.pins;
                if (h.cmd_set(), h.cmd()) == DISABLE_COLLECTION {
                    if pins.disable(conn, o) {
                        self.forward(conn, p, Note::Pin(o)).await;
                    } else {
                        self.answer(conn, h.id, error::NONE);
                    }
                } else if pins.enable(conn, o) {
                    self.forward(conn, p, Note::None).await;
                } else {
                    self.answer(conn, h.id, error::NONE);
                }
            }
            _ => self.forward(conn, p, Note::None).await,
        }
        self.refresh_live(conn);
        // A Resume may let a waiting invoke run: the waits follow the holds.
        if self.vm.sharing.settle_waits() {
            self.publish_debuggers();
        }
    }

    /// A debugger's Resume is carried out: when other debuggers keep what it resumed
    /// suspended, that is logged once and shown by `list` while it lasts.
    fn resume_noted(&mut self, conn: u64, thread: Option<u64>) {
        let now_ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let before = self.vm.sharing.waits.held_of(conn).find(|h| h.thread == thread).map(|h| h.holders.clone());
        let Some(h) = self.vm.sharing.waits.resumed(conn, thread, &self.vm.sharing.holds, now_ms) else { return };
        let holders = h.holders.clone();
        // Said already when nothing changed: a debugger resuming again and again logs it once.
        if before.as_ref() != Some(&holders) {
            let held_by = holders.iter().map(|d| self.debugger_name(*d)).collect::<Vec<_>>().join(" and ");
            let who = self.debugger_name(conn);
            match thread {
                Some(t) => info!(conn, thread = t, "thread {t:#x}: {who} resumed it, but {held_by} holds it suspended"),
                None => info!(conn, "{who} resumed the VM, but {held_by} holds every thread suspended"),
            }
        }
        self.publish_debuggers();
    }

    /// "debugger #2 127.0.0.1:40312", as log lines name a debugger.
    fn debugger_name(&self, d: u64) -> String {
        match self.debuggers.get(d) {
            Some(a) => format!("debugger #{d} {}", a.io.peer),
            None => format!("debugger #{d}"),
        }
    }

    /// An invoke is on its way to the VM: when another debugger's suspension keeps its thread
    /// from running it, the wait is logged once and shown by `list` until its reply.
    pub(super) fn invoke_sent(&mut self, conn: u64, p: &Packet) {
        let h = p.header();
        let Some(sizes) = self.id_sizes else { return };
        let Some(t) = invoke_thread(h.cmd_set(), h.cmd(), p.data(), &sizes) else { return };
        let now_ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let command = (h.cmd_set(), h.cmd());
        let Some(w) = self.vm.sharing.waits.sent(conn, h.id, command, t, &self.vm.sharing.holds, now_ms) else { return };
        let holders = w.holders.clone();
        let name = |d: u64| self.debugger_name(d);
        let waits_for = holders.iter().map(|d| name(*d)).collect::<Vec<_>>().join(" and ");
        info!(
            conn,
            thread = t,
            command = %names::display_command(command.0, command.1),
            "thread {t:#x}: an invoke from {} waits for {waits_for} to resume it",
            name(conn)
        );
        self.publish_debuggers();
    }

    /// Carries out a release planned by the holds table: the debugger's own command goes to
    /// the VM where the plan has it (its reply is the VM's), the rest are the proxy's; with
    /// no place for it, the proxy answers it.
    async fn carry_out(&mut self, conn: u64, p: Packet, own: VmCmd, plan: Vec<VmCmd>) {
        let id = p.header().id;
        match plan.iter().position(|c| *c == own) {
            // The debugger's own command alone, unchanged: it may be answered early.
            Some(_) if plan.len() == 1 => self.forward_maybe_early(conn, p, Note::None).await,
            Some(at) => {
                plan[..at].iter().for_each(|c| self.send_vm_cmd(*c));
                self.forward(conn, p, Note::None).await;
                plan[at + 1..].iter().for_each(|c| self.send_vm_cmd(*c));
            }
            None => {
                plan.iter().for_each(|c| self.send_vm_cmd(*c));
                self.answer(conn, id, error::NONE);
            }
        }
    }

    /// Sends a suspend or resume of the proxy's own.
    pub(super) fn send_vm_cmd(&mut self, c: VmCmd) {
        self.send_vm_cmd_as(c, Purpose::Share);
    }

    /// `send_vm_cmd` for a given purpose.
    pub(super) fn send_vm_cmd_as(&mut self, c: VmCmd, purpose: Purpose) {
        let size = self.id_sizes.map_or(8, |s| s.object);
        let thread = |t: u64| {
            let mut d = Vec::with_capacity(size);
            put_id(&mut d, t, size);
            d
        };
        match c {
            VmCmd::SuspendAll => self.send_proxy(purpose, VM_SUSPEND.0, VM_SUSPEND.1, &[]),
            VmCmd::ResumeAll => self.send_proxy(purpose, VM_RESUME.0, VM_RESUME.1, &[]),
            VmCmd::SuspendThread(t) => self.send_proxy(purpose, THREAD_SUSPEND.0, THREAD_SUSPEND.1, &thread(t)),
            VmCmd::ResumeThread(t) => self.send_proxy(purpose, THREAD_RESUME.0, THREAD_RESUME.1, &thread(t)),
        }
    }

    /// Clears an event request in the VM on a debugger's behalf.
    pub(super) fn clear_request(&mut self, kind: u8, id: u32) {
        self.clear_request_as(kind, id, Purpose::Share);
    }

    /// `clear_request` for a given purpose.
    pub(super) fn clear_request_as(&mut self, kind: u8, id: u32, purpose: Purpose) {
        let mut data = vec![kind];
        data.extend_from_slice(&id.to_be_bytes());
        self.send_proxy(purpose, EVENT_CLEAR.0, EVENT_CLEAR.1, &data);
    }

    /// Enables collection of an object nobody pins any more.
    pub(super) fn unpin(&mut self, o: u64) {
        let size = self.id_sizes.map_or(8, |s| s.object);
        let mut data = Vec::with_capacity(size);
        put_id(&mut data, o, size);
        self.send_proxy(Purpose::Share, ENABLE_COLLECTION.0, ENABLE_COLLECTION.1, &data);
    }

    /// What a VM reply to a debugger's command settles in the sharing tables, before the
    /// reply is relayed.
    pub(super) fn settle_reply(&mut self, conn: u64, e: &Entry, reply: &Packet) {
        let ok = reply.header().error_code() == error::NONE;
        if let Some(w) = self.vm.sharing.waits.answered(conn, e.orig_id) {
            debug!(conn, thread = w.thread, "the invoke that waited is answered");
            self.publish_debuggers();
        }
        match e.note {
            Note::None => {}
            Note::EventSet(kind) => {
                let granted = reply.data().get(..4).filter(|_| ok).map(|b| (kind, u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
                self.vm.sharing.owners.set_answered(conn, granted);
                self.refresh_live(conn);
            }
            Note::Hold(hold) => {
                if !ok && self.vm.sharing.holds.cancel(hold) {
                    debug!(conn, error = reply.header().error_code(), "the VM refused a suspension");
                    self.refresh_live(conn);
                }
            }
            Note::Pin(o) => {
                if !ok {
                    self.vm.sharing.pins.refused(conn, o);
                }
            }
        }
        if (e.cmd_set, e.cmd) == ID_SIZES && ok && self.id_sizes.is_none() {
            self.id_sizes = IdSizes::parse(reply.data());
        }
    }
}
