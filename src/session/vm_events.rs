//! Events from the VM, split between the debuggers that share it.
//!
//! Each Event.Composite is cut by owner: a debugger gets a composite with only the events of
//! its own requests, in the VM's order, with the VM's suspend policy; events of request 0
//! (VM_START, VM_DEATH) go to every debugger; an event whose request nobody owns any more is
//! dropped. The suspension the VM took for the composite is held by the debuggers that got a
//! part of it, or undone at once when none did. While no debugger is attached, events are
//! held for the next one (VM_START with suspend=y), except those of departed debuggers.

use std::collections::VecDeque;

use tracing::{debug, warn};

use super::actor::Session;
use super::purpose::LateSizes;
use super::sharing::Suspended;
use crate::jdwp::events::{encode_composite, first_event, kind, parse_composite, suspend, Composite, Event};
use crate::jdwp::packet::{EVENT_CMD_SET, EVENT_COMPOSITE};
use crate::jdwp::reader::Reader;
use crate::jdwp::Packet;

/// Composites kept back for Sets in flight; past this, the oldest goes out regardless (its
/// events of unknown requests are dropped) so a debugger that never stops setting requests
/// cannot hold the others' events forever.
pub const MAX_DEFERRED_EVENTS: usize = 1024;

impl Session {
    /// An Event.Composite from the VM.
    pub(super) fn on_event(&mut self, p: Packet) {
        // Read at once, not when routed: an unloaded class's answers go before anything else.
        self.near.class_events(&p, self.id_sizes);
        self.near.event(&p, self.id_sizes, self.vm.ids.commands());
        // Behind a kept-back composite, everything waits: the VM's order is kept.
        if !self.vm.deferred_events.is_empty() {
            self.vm.deferred_events.push_back(p);
            if self.vm.deferred_events.len() > MAX_DEFERRED_EVENTS {
                warn!(limit = MAX_DEFERRED_EVENTS, "too many events waiting for EventRequest.Set replies");
                if let Some(oldest) = self.vm.deferred_events.pop_front() {
                    self.route_event(oldest, true);
                }
            }
            return;
        }
        if let Some(p) = self.route_event(p, false) {
            self.vm.deferred_events.push_back(p);
        }
    }

    /// Routes the composites kept back, now that no Set (and no late IDSizes) is in flight.
    pub(super) fn release_deferred_events(&mut self) {
        if self.vm.sharing.owners.sets_in_flight() || self.vm.late_sizes == LateSizes::Pending {
            return;
        }
        let waiting: VecDeque<Packet> = std::mem::take(&mut self.vm.deferred_events);
        for p in waiting {
            self.route_event(p, true);
        }
    }

    /// Routes one composite; gives it back when it names a request whose Set reply may still
    /// be coming (unless `now`).
    fn route_event(&mut self, p: Packet, now: bool) -> Option<Packet> {
        if self.debuggers.is_empty() {
            self.hold_event(p);
            return None;
        }
        if self.id_sizes.is_none() && self.vm.late_sizes == LateSizes::Pending && !now {
            return Some(p);
        }
        match self.id_sizes.map(|s| parse_composite(p.data(), &s)) {
            Some(Ok(c)) => {
                let owners = &self.vm.sharing.owners;
                let unknown = c.events.iter().any(|e| e.request_id != 0 && owners.owner(e.request_id).is_none());
                if unknown && owners.sets_in_flight() && !now {
                    return Some(p);
                }
                self.split_event(p, c);
            }
            Some(Err(e)) => {
                warn!(error = %e, "cannot read an event composite; routing it by its first event");
                self.route_unread_event(p);
            }
            None => {
                debug!("no id sizes yet; routing an event composite by its first event");
                self.route_unread_event(p);
            }
        }
        None
    }

    fn split_event(&mut self, p: Packet, c: Composite) {
        let mut parts: Vec<(u64, Vec<&Event>)> = self.debuggers.conns().into_iter().map(|conn| (conn, Vec::new())).collect();
        let mut dropped = 0usize;
        for e in &c.events {
            if e.request_id == 0 {
                parts.iter_mut().for_each(|(_, evs)| evs.push(e));
                continue;
            }
            let owner = self.vm.sharing.owners.owner(e.request_id);
            match parts.iter_mut().find(|(conn, _)| Some(*conn) == owner) {
                Some((_, evs)) => evs.push(e),
                None => dropped += 1,
            }
        }
        if dropped > 0 {
            debug!(dropped, "dropping events of requests nobody owns any more");
        }
        parts.retain(|(_, evs)| !evs.is_empty());
        let to: Vec<u64> = parts.iter().map(|(conn, _)| *conn).collect();
        let thread = c.events.iter().find_map(|e| e.thread);
        let whole = parts.len() == 1 && dropped == 0;
        let bodies: Vec<(u64, Vec<u8>)> = if whole {
            Vec::new()
        } else {
            parts.iter().map(|(conn, evs)| (*conn, encode_composite(c.suspend_policy, p.data(), evs.iter().copied()))).collect()
        };
        self.account_suspension(c.suspend_policy, thread, &to);
        if whole {
            // The common case: one debugger's events, passed on as the VM sent them.
            if let Some(a) = self.debuggers.get_mut(to[0]) {
                a.deliver_event(p.into_bytes());
            }
            return;
        }
        for (conn, body) in bodies {
            let part = Packet::command(p.id(), EVENT_CMD_SET, EVENT_COMPOSITE, &body);
            if let Some(a) = self.debuggers.get_mut(conn) {
                a.deliver_event(part.into_bytes());
            }
        }
    }

    /// A composite that cannot be cut (unknown id sizes or event kind): it goes whole to the
    /// owner of its first event's request (everybody for request 0; the one debugger when
    /// there is one).
    fn route_unread_event(&mut self, p: Packet) {
        let Some((policy, first_kind, request)) = first_event(p.data()) else {
            warn!(len = p.len(), "dropping a malformed event composite");
            return;
        };
        let owner = self.vm.sharing.owners.owner(request).filter(|o| self.debuggers.contains(*o));
        let to: Vec<u64> = match (request, owner) {
            (0, _) => self.debuggers.conns(),
            // The proxy's own ClassUnload request: nobody's.
            (r, _) if Some(r) == self.near.unload_request => Vec::new(),
            (_, Some(o)) => vec![o],
            _ if self.debuggers.len() == 1 => self.debuggers.conns(),
            _ => Vec::new(),
        };
        let thread = self.first_thread(p.data(), first_kind);
        self.account_suspension(policy, thread, &to);
        let bytes = p.into_bytes();
        for conn in to {
            if let Some(a) = self.debuggers.get_mut(conn) {
                a.deliver_event(bytes.clone());
            }
        }
    }

    /// Records who holds the suspension a composite caused, or undoes it when nobody got it.
    fn account_suspension(&mut self, policy: u8, thread: Option<u64>, to: &[u64]) {
        let scope = match (policy, thread) {
            (suspend::ALL, _) => Suspended::All,
            (suspend::EVENT_THREAD, Some(t)) => Suspended::Thread(t),
            (suspend::EVENT_THREAD, None) => {
                debug!("an event-thread suspension with no thread in the composite");
                return;
            }
            _ => return,
        };
        for c in self.vm.sharing.holds.event(scope, to) {
            self.send_vm_cmd(c);
        }
        self.refresh_all_live();
        // A debugger stopped again no longer waits on another's hold of what it resumed.
        if self.vm.sharing.settle_waits() {
            self.publish_debuggers();
        }
    }

    /// An event nobody will get (too large to read): undo its suspension.
    pub(super) fn undo_event(&mut self, data: &[u8]) {
        if let Some((policy, first_kind, _)) = first_event(data) {
            let thread = self.first_thread(data, first_kind);
            self.account_suspension(policy, thread, &[]);
        }
    }

    /// The thread of a composite's first event, read without knowing every id size.
    fn first_thread(&self, data: &[u8], first_kind: u8) -> Option<u64> {
        if matches!(first_kind, kind::CLASS_UNLOAD | kind::VM_DEATH) {
            return None;
        }
        let size = self.id_sizes.map_or(8, |s| s.object);
        // suspendPolicy, count, eventKind, requestID, then the thread.
        Reader::new(data.get(10..)?).id(size, "thread").ok()
    }

    /// No debugger is attached: an event of a departed debugger's request is dropped (and
    /// its suspension undone); others (VM_START, VM_DEATH) wait for the next debugger.
    fn hold_event(&mut self, p: Packet) {
        let data = p.data();
        let stale = match self.id_sizes.map(|s| parse_composite(data, &s)) {
            Some(Ok(c)) => c.events.iter().all(|e| e.request_id != 0 && self.vm.sharing.owners.owner(e.request_id).is_none()),
            _ => first_event(data).is_some_and(|(_, _, r)| r != 0 && self.vm.sharing.owners.owner(r).is_none()),
        };
        if stale {
            debug!(len = p.len(), "dropping an event of a departed debugger");
            self.undo_event(data);
            return;
        }
        let len = p.len();
        if self.held.hold(p) {
            debug!(len, "holding an event until a debugger attaches");
        }
    }

    /// Gives an event held while nobody was attached to the debugger that just attached: the
    /// suspension it caused is now that debugger's.
    pub(super) fn hand_held_event(&mut self, conn: u64, p: Packet) {
        if let Some((policy, first_kind, _)) = first_event(p.data()) {
            let thread = self.first_thread(p.data(), first_kind);
            self.account_suspension(policy, thread, &[conn]);
        }
        self.send_to(conn, p.into_bytes());
    }
}
