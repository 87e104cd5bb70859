//! Whether a VM connection answers near (see `near_layer`), and what the proxy asks the VM
//! for it at identification: a debugger's command whose answer the VM gave before on this
//! connection is answered with the debugger's own id, bytes as the VM sent them; a miss goes
//! to the VM and its successful reply is kept. What may change those answers
//! (RedefineClasses, DisposeObjects, ClassUnload) drops them as it passes.
//!
//! ClassUnload: the proxy sets its own request (suspend policy NONE) when it caches for a
//! VM; no debugger owns it, so its events are dropped by the split after `near_layer` read
//! them.

use super::actor::Session;
use super::purpose::Purpose;
use crate::jdwp::events::{kind, suspend};
use crate::session::modes::NearCacheMode;

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

    /// Whether this connection reads a stop's answers itself (`local_stops`): it answers
    /// near and reaches its VM without a far side or a forward (a local JVM, one in a
    /// container's namespace), and the VM is not known to be Android (ART loads its full
    /// agent on the first non-DDM packet; the relay asks the id sizes at once).
    pub(super) fn local_stops_wanted(&self) -> bool {
        self.near.on() && self.ssh_host().is_none() && self.known_android().is_none()
    }

    /// Identification: asks the VM for ClassUnload events so answers about types may be kept,
    /// and the VM facts every debugger asks at attach beside Version and IDSizes (each a
    /// round trip over a link otherwise). Not on a VM known to be Android: ART loads its
    /// full agent on the first non-DDM packet.
    pub(super) fn start_near_cache(&mut self) {
        if !self.near.on() || self.known_android().is_some() {
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
}
