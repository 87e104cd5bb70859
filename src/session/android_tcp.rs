//! Android VMs reached over plain TCP (an `adb forward tcp:8000 jdwp:PID`, a workstation
//! Dalvik): the proxy must not send them a non-DDM packet before a debugger does, since the
//! first one makes the VM treat the connection as a debugger's (ART loads its full JDWP
//! agent; Dalvik marks the debugger active, releases an app blocked in
//! `Debug.waitForDebugger()` and turns its JIT off) for as long as the proxy keeps it.
//!
//! So before a TCP connection is identified with VirtualMachine.Version, the adb server is
//! asked whether the address is one of its forwards to `jdwp:PID`; such a VM is probed with
//! HELO alone. If a Version reply reveals an Android VM anyway, the proxy logs it and
//! reconnects, and speaks only DDM on the new connection.

use std::sync::Arc;

use tracing::info;

use super::actor::Session;
use super::dialect::AndroidOverTcp;
use crate::discovery::forwards::{ForwardLookup, JdwpForward};

impl Session {
    /// Why the VM is known to be Android before anything is sent to it, if it is.
    pub(super) fn known_android(&self) -> Option<String> {
        if self.cfg.adb.is_some() {
            return Some("reached through adb".into());
        }
        if self.cfg.android {
            return Some("said to be Android".into());
        }
        match &self.dialect.android {
            Some(AndroidOverTcp::Forward(f)) => Some(format!("an adb forward to {f}")),
            Some(AndroidOverTcp::Version(ident)) => Some(format!("its Version said {ident:?}")),
            None => None,
        }
    }

    /// The forward lookup to run before connecting, when the VM is not known to be Android
    /// by other means.
    pub(super) fn forward_lookup(&self) -> Option<Arc<ForwardLookup>> {
        let by_other_means = self.cfg.adb.is_some()
            || self.cfg.android
            || matches!(self.dialect.android, Some(AndroidOverTcp::Version(_)));
        self.cfg.forwards.clone().filter(|_| !by_other_means)
    }

    /// Records what the lookup before this connection found.
    pub(super) fn note_forward(&mut self, found: Option<JdwpForward>) {
        let was = match &self.dialect.android {
            Some(AndroidOverTcp::Forward(f)) => Some(f.clone()),
            _ => None,
        };
        if was == found {
            return;
        }
        match &found {
            Some(f) => info!(forward = %f, "the VM's address is an adb forward: an Android VM, spoken to with DDM only until a debugger attaches"),
            None => info!("the VM's address is no longer an adb forward"),
        }
        self.dialect.android = found.map(AndroidOverTcp::Forward);
    }

    /// A Version reply said Android: that packet already made the VM think a debugger came,
    /// so the connection is made again and identified with HELO alone.
    pub(super) fn reconnect_as_android(&mut self) {
        let ident = self.status.borrow().vm_ident.clone().unwrap_or_default();
        info!(vm = %ident, "VirtualMachine.Version says this is an Android VM, which now thinks a debugger is attached; reconnecting to speak only DDM to it until a debugger attaches");
        self.dialect.android = Some(AndroidOverTcp::Version(ident));
        self.vm.leaving.reset();
    }
}
