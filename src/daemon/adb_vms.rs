//! VMs behind an adb server: every debuggable process of every device becomes a VM session,
//! listed once its DDM HELO has said which app it is, so that an app restarting with a new
//! pid finds its old debugger port again (key: serial + app name).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::Spawner;
use crate::discovery::adb::{self, AdbEvent, AdbServer, Wanted};
use crate::registry::Source;
use crate::session::{AdbTarget, VmHandle, VmState};

/// How long a new process has to say who it is before it is listed by serial and pid.
const NAMING_WAIT: Duration = Duration::from_secs(5);
const EVENTS: usize = 256;

/// An adb server on an ssh host: its VMs are listed under that host.
#[derive(Clone, Debug)]
pub(super) struct OnHost {
    pub label: String,
}

pub(super) async fn run(spawner: Spawner, addr: SocketAddr, wanted: Wanted, cancel: CancellationToken) {
    let server = AdbServer::new(addr);
    // A server asked for (`--adb`) is started if none runs; on the defaults one is only
    // followed if it runs. Either way the devices are followed once a server answers.
    let probe = server.clone();
    let _ = tokio::task::spawn_blocking(move || adb::try_start_server(&probe, wanted)).await;
    run_server(spawner, server, wanted, None, cancel).await
}

/// Follows one adb server's devices until `cancel`.
pub(super) async fn run_server(spawner: Spawner, server: AdbServer, wanted: Wanted, host: Option<OnHost>, cancel: CancellationToken) {
    let addr = server.addr;
    let (tx, mut rx) = mpsc::channel(EVENTS);
    spawner.tracker.spawn(adb::watch(server.clone(), wanted, tx, cancel.clone()));
    let mut live: HashMap<(String, u32), CancellationToken> = HashMap::new();
    // Whether the server ever answered: until then a ServerDown unlists nothing, and
    // `watch` has said why already.
    let mut was_up = false;
    loop {
        let event = tokio::select! {
            e = rx.recv() => e,
            _ = cancel.cancelled() => None,
        };
        match event {
            None => break,
            Some(AdbEvent::VmAdded { serial, pid }) => {
                let name = match &host {
                    Some(h) => format!("{}:{serial}:{pid}", h.label),
                    None => format!("{serial}:{pid}"),
                };
                let target = AdbTarget { server: server.clone(), serial: serial.clone(), pid };
                let (handle, token) = spawner.start_session(name.clone(), addr, Source::Adb, true, None, Some(target));
                live.insert((serial.clone(), pid), token.clone());
                spawner.tracker.spawn(list_when_named(spawner.clone(), serial, name, (addr, Source::Adb, host.clone()), handle, token));
            }
            Some(AdbEvent::VmRemoved { serial, pid }) => {
                if let Some(token) = live.remove(&(serial, pid)) {
                    token.cancel();
                }
            }
            Some(AdbEvent::ServerDown(why)) if was_up => {
                was_up = false;
                match wanted {
                    Wanted::Named => warn!(reason = %why, "the adb server is gone; device VMs are unlisted"),
                    Wanted::ByDefault => info!(reason = %why, "the adb server is gone; device VMs are unlisted"),
                }
            }
            Some(AdbEvent::ServerDown(_)) => {}
            Some(AdbEvent::ServerUp) => {
                was_up = true;
                info!(%addr, "the adb server answers");
            }
        }
    }
    for token in live.into_values() {
        token.cancel();
    }
}

/// Waits for the VM to say its app name, then lists it (or gives it back its old port).
/// `addr` is what the entry is reached through (the adb server, or an adb forward),
/// `source` how it was found, and `host` the ssh host of a remote adb server.
pub(super) async fn list_when_named(
    spawner: Spawner,
    serial: String,
    name: String,
    (addr, source, host): (SocketAddr, Source, Option<OnHost>),
    handle: VmHandle,
    token: CancellationToken,
) {
    let mut status = handle.watch_status();
    let named = tokio::time::timeout(NAMING_WAIT, async {
        loop {
            {
                let s = status.borrow_and_update();
                if s.app.is_some() || s.state == VmState::Ready && s.ddm == Some(false) {
                    return s.app.clone();
                }
            }
            if status.changed().await.is_err() {
                return None;
            }
        }
    })
    .await
    .ok()
    .flatten();
    if token.is_cancelled() {
        return;
    }
    let key = match &named {
        Some(app) => format!("adb:{serial}/{app}"),
        None => format!("adb:{name}"),
    };
    // Serials repeat across hosts (every host's first emulator is emulator-5554).
    let key = match &host {
        Some(h) => format!("ssh:{}/{key}", h.label),
        None => key,
    };
    let reg = &spawner.registry;
    let id = match reg.by_key(&key) {
        Some(old) => {
            info!(vm = %name, key = %key, port = %super::shown_port(old.port), "app came back; it keeps its debugger port");
            reg.replace_handle(old.id, name, handle);
            old.id
        }
        None => spawner.register(key, name, addr, source, (handle, token)),
    };
    if let Some(h) = host {
        reg.set_host(id, Some(h.label));
    }
    reg.announce_current();
}
