//! jdwpmux: a transparent JDWP proxy and debugger multiplexer.
//!
//! It keeps one connection to each Java or Android VM, speaks DDM to the VMs that
//! understand it, and lets debuggers in through per-VM ports and one current-VM port,
//! rewriting request ids so the proxy's own traffic and the debugger's never collide.
//!
//! # Layout
//! - [`jdwp`]: the wire format (handshake, packets, streaming decoder, names). Pure.
//! - [`ddm`]: DDM chunks: typed decoding, zlib, heap maps, per-VM client state. Pure.
//! - [`session`]: one actor per VM owning its socket; the id table; attach and detach.
//! - [`listen`]: debugger accept loops and the per-debugger connection task.
//! - [`registry`]: the known VMs, their ports, and the current selection.
//! - [`settings`] and [`cli`]: validated settings and the command line.

pub mod cli;
// pub mod ddm;
pub mod jdwp;
pub mod listen;
pub mod registry;
pub mod session;
pub mod settings;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use registry::Registry;
use session::SessionConfig;
use settings::Settings;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error("cannot listen on {addr}: {source} (is another jdwpmux or a VM using the port? pick another with --current-port / --base-port)")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// A running daemon: its registry, and the addresses it listens on.
pub struct Daemon {
    pub registry: Arc<Registry>,
    pub current_addr: SocketAddr,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl Daemon {
    /// Stops every task and waits for them (bounded by `grace`).
    pub async fn shutdown(self, grace: std::time::Duration) {
        self.cancel.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait()).await.is_err() {
            warn!("some tasks did not stop within {grace:?}");
        }
    }

    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

/// Starts the daemon: VM sessions, their debugger ports and the current-VM port.
pub async fn start(settings: Settings) -> Result<Daemon, RunError> {
    settings.validate()?;
    if !settings.listen.is_loopback() {
        warn!(listen = %settings.listen, "debugger ports are open to the network: anyone who can connect controls the VMs");
    }
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    let registry = Arc::new(Registry::default());
    if let Some(sel) = &settings.select {
        registry.select_later(sel);
    }
    let current_addr = SocketAddr::new(settings.listen, settings.current_port);
    let current = listen::bind(current_addr, "the current VM")
        .await
        .map_err(|source| RunError::Bind { addr: current_addr, source })?;
    let current_addr = current.local_addr().unwrap_or(current_addr);
    listen::spawn_accept(
        current,
        listen::Target::Current(registry.clone()),
        settings.timeouts.debugger_handshake,
        cancel.clone(),
        &tracker,
    );
    for (k, vm) in settings.vms.iter().enumerate() {
        let name = vm.to_string();
        let cfg = SessionConfig {
            name: name.clone(),
            addr: *vm,
            ddm: settings.ddm,
            android: false,
            timeouts: settings.timeouts,
        };
        let handle = session::spawn(cfg, cancel.child_token(), &tracker);
        let id = registry.add(name.clone(), *vm, handle.clone());
        let port = if settings.base_port == 0 { 0 } else { settings.base_port.saturating_add(k as u16) };
        let addr = SocketAddr::new(settings.listen, port);
        let listener = listen::bind(addr, &format!("vm {name}"))
            .await
            .map_err(|source| RunError::Bind { addr, source })?;
        if let Ok(local) = listener.local_addr() {
            registry.set_port(id, local.port());
        }
        let target = listen::Target::Vm { name, handle };
        listen::spawn_accept(listener, target, settings.timeouts.debugger_handshake, cancel.clone(), &tracker);
    }
    if settings.vms.is_empty() {
        info!("no VMs given: add --vm HOST:PORT");
    }
    Ok(Daemon { registry, current_addr, cancel, tracker })
}
