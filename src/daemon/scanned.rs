//! VMs found by scanning port ranges become sessions. A port that is an adb forward to an
//! Android VM is named like a VM found through adb (serial and pid) and keeps its debugger
//! port by device and app name; an Android VM found by its Version reply is reconnected and
//! spoken to with DDM only.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use super::Spawner;
use crate::discovery::scan::{self, AndroidVia, Found};
use crate::registry::Source;

/// Starts the scan task; what it finds is added through `spawner`.
pub(super) fn start(spawner: &Spawner) {
    // Forwarded ports are listed under their device and app, not their address: remember
    // them here so the scan leaves them to their session.
    let forwarded: Arc<Mutex<HashSet<SocketAddr>>> = Arc::default();
    let (reg, claimed, by_proc) = (spawner.registry.clone(), forwarded.clone(), spawner.claimed.clone());
    // JVMs found by their process are never probed: their sessions connect to them.
    let known = move |addr: SocketAddr| {
        reg.by_key(&addr.to_string()).is_some()
            || claimed.lock().is_ok_and(|set| set.contains(&addr))
            || by_proc.lock().is_ok_and(|set| set.contains(&addr))
    };
    let sp = spawner.clone();
    let found = move |addr: SocketAddr, f: Found| {
        let Found { conn, android } = f;
        match android {
            None => {
                sp.add(addr.to_string(), addr, Source::Scan, false, conn);
                sp.registry.announce_current();
            }
            Some(AndroidVia::Version(_)) => {
                sp.add(addr.to_string(), addr, Source::Scan, true, conn);
                sp.registry.announce_current();
            }
            Some(AndroidVia::Forward(fwd)) => {
                if let Ok(mut set) = forwarded.lock() {
                    set.insert(addr);
                }
                let name = fwd.name();
                let (handle, token) = sp.start_session(name.clone(), addr, Source::Scan, true, conn, None);
                let listing = super::adb_vms::list_when_named(sp.clone(), fwd.serial, name, (addr, Source::Scan, None), handle, token);
                sp.tracker.spawn(listing);
            }
        }
    };
    let s = &spawner.settings;
    let owners = if s.other_users { scan::Owners::Anyone } else { scan::Owners::Only(rustix::process::geteuid().as_raw()) };
    let task = scan::run(s.scans.clone(), s.scan_interval, spawner.forwards.clone(), owners, known, found, spawner.cancel.clone());
    spawner.tracker.spawn(task);
}
