//! Answers from the near cache (see `nearcache`): a debugger's command whose answer the VM
//! gave before on this connection is answered here with the debugger's own id, bytes as the
//! VM sent them; a miss goes to the VM and its successful reply is kept. What may change
//! those answers (RedefineClasses, DisposeObjects, ClassUnload) drops them as it passes.
//!
//! ClassUnload: the proxy sets its own request (suspend policy NONE) when it caches for a
//! VM; no debugger owns it, so its events are dropped by the split after they are read here.

use tracing::debug;

use super::actor::Session;
use super::ids::Entry;
use super::nearcache::{commands, immutable, Lookup, NearDecision};
use super::purpose::Purpose;
use crate::jdwp::events::{kind, parse_composite, suspend};
use crate::jdwp::packet::error;
use crate::jdwp::reader::Reader;
use crate::jdwp::Packet;
use crate::settings::NearCacheMode;

/// EventRequest.Set.
const EVENT_SET: (u8, u8) = (15, 1);

/// Asked when the connection is made, kept for the debuggers: VirtualMachine.CapabilitiesNew
/// (JDI asks it at attach, jdb too), Capabilities (older clients) and ClassPaths (jdb asks
/// it at attach), fixed for the VM's run.
const SEEDED: [(u8, u8); 3] = [(1, 17), (1, 12), (1, 13)];

impl Session {
    /// Whether this connection caches: by the mode, and for `auto` whether the VM is reached
    /// through ssh (where a round trip costs a link's delay).
    pub(super) fn near_cache_wanted(&self) -> bool {
        match self.cfg.near_cache {
            NearCacheMode::Never => false,
            NearCacheMode::Always => true,
            NearCacheMode::Auto => self.ssh_host().is_some(),
        }
    }

    /// Identification: asks the VM for ClassUnload events so answers about types may be kept,
    /// and the VM facts every debugger asks at attach beside Version and IDSizes (each a
    /// round trip over a link otherwise). Not on a VM known to be Android: ART loads its
    /// full agent on the first non-DDM packet.
    pub(super) fn start_near_cache(&mut self) {
        if !self.near_on || self.known_android().is_some() {
            return;
        }
        // eventKind, suspendPolicy, no modifiers.
        let mut data = vec![kind::CLASS_UNLOAD, suspend::NONE];
        data.extend_from_slice(&0u32.to_be_bytes());
        self.send_proxy(Purpose::UnloadWatch, EVENT_SET.0, EVENT_SET.1, &data);
        for (set, cmd) in SEEDED {
            self.send_proxy(Purpose::Seed(set, cmd), set, cmd, &[]);
        }
    }

    /// The reply to the proxy's ClassUnload request.
    pub(super) fn on_unload_watch_reply(&mut self, p: &Packet) {
        let granted = p.data().get(..4).filter(|_| p.header().error_code() == error::NONE);
        match granted {
            Some(b) => {
                self.unload_request = Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                self.near.watching_unloads();
            }
            None => debug!(error = p.header().error_code(), "the VM refused a ClassUnload request: answers about types are not kept"),
        }
    }

    /// The proxy's own Version and IDSizes replies are the answers a debugger will ask for.
    pub(super) fn near_seed(&mut self, set: u8, cmd: u8, p: &Packet) {
        if self.near_on && p.header().error_code() == error::NONE {
            self.near.seed(set, cmd, p.data());
        }
    }

    /// A debugger's whole command: answered near when the cache knows it (`Answered`), else
    /// forwarded, with the key its reply is kept under when it may be. Commands that may change kept answers drop them here, before they go.
    pub(super) fn near_command(&mut self, conn: u64, p: &Packet) -> NearDecision {
        if !self.near_on {
            return NearDecision::Forward(None);
        }
        let h = p.header();
        let what = (h.cmd_set(), h.cmd());
        if what == commands::REDEFINE_CLASSES {
            self.near.redefine(Some(p.data()));
        } else if what == commands::DISPOSE_OBJECTS {
            self.near.disposed(p.data());
        }
        if immutable(what.0, what.1).is_none() && !commands::watched(what.0, what.1) {
            return NearDecision::Forward(None);
        }
        if let Some(s) = self.id_sizes {
            self.near.set_sizes(s);
        }
        match self.near.lookup(what.0, what.1, p.data()) {
            Lookup::Hit(answer) => {
                self.reply_near(conn, h, &answer, crate::stats::near::Source::Cache);
                NearDecision::Answered
            }
            Lookup::Refused(error) => {
                self.reply_near_error(conn, h, error, crate::stats::near::Source::Cache);
                NearDecision::Answered
            }
            Lookup::Miss(key) => {
                self.stats.near_miss();
                NearDecision::Forward(Some(key))
            }
            Lookup::Watch(key) => NearDecision::Forward(Some(key)),
            Lookup::Pass => NearDecision::Forward(None),
        }
    }

    /// The head of a large command streamed to the VM: only its kind is known.
    pub(super) fn near_streamed_command(&mut self, set: u8, cmd: u8) {
        if !self.near_on {
            return;
        }
        if (set, cmd) == commands::REDEFINE_CLASSES {
            self.near.redefine(None);
        } else if (set, cmd) == commands::DISPOSE_OBJECTS {
            self.near.disposed(&[]);
        }
    }

    /// A whole VM reply to a debugger's command, before it is relayed.
    pub(super) fn near_reply(&mut self, conn: u64, e: &Entry, proxy_id: u32, p: &Packet) {
        if self.near_on && (immutable(e.cmd_set, e.cmd).is_some() || commands::watched(e.cmd_set, e.cmd)) {
            self.near.replied(proxy_id, conn, e.cmd_set, e.cmd, p.header().error_code(), p.data());
        }
    }

    /// An Event.Composite from the VM: the proxy's ClassUnload events drop what they name
    /// (the events themselves go nowhere: no debugger owns the request); ClassPrepare
    /// events say a type's signature.
    pub(super) fn near_event(&mut self, p: &Packet) {
        let (Some(req), Some(sizes)) = (self.unload_request, self.id_sizes) else { return };
        let Ok(c) = parse_composite(p.data(), &sizes) else {
            // Unreadable: it may hold an unload of ours.
            if crate::jdwp::events::first_event(p.data()).is_some_and(|(_, k, r)| k == kind::CLASS_UNLOAD || r == req) {
                self.near.redefine(None);
            }
            return;
        };
        // A debugger's ClassPrepare events name a type and its signature.
        for e in c.events.iter().filter(|e| e.kind == kind::CLASS_PREPARE) {
            // kind, requestID, thread, refTypeTag, typeID, signature, status.
            let at = e.range.start + 5 + sizes.object + 1;
            let mut r = Reader::new(p.data().get(at..e.range.end).unwrap_or(&[]));
            let Ok(t) = r.id(sizes.reference_type, "typeID") else { continue };
            if let Some(sig) = super::nearcache::table::jdwp_string(&mut r) {
                self.near.saw_signature(t, sig);
            }
        }
        for e in c.events.iter().filter(|e| e.kind == kind::CLASS_UNLOAD && e.request_id == req) {
            // kind, requestID, then the signature.
            let body = p.data().get(e.range.start + 5..e.range.end).unwrap_or(&[]);
            match super::nearcache::table::jdwp_string(&mut Reader::new(body)) {
                Some(sig) => self.near.unloaded(sig),
                None => self.near.redefine(None),
            }
        }
    }
}
