//! Wiring a running daemon together: VM sessions, their debugger ports (stable, with bind
//! retries), the current-VM port, discovery and the control socket.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::capture::CaptureHandle;
use crate::control;
use crate::discovery::adb::Wanted;
use crate::discovery::forwards::ForwardLookup;
use crate::listen;
use crate::registry::{Registry, Source, VmId};
use crate::session::{self, SessionConfig, VmHandle};
use crate::transport::open::Connected;
use crate::settings::{self, Settings};

mod adb_vms;
mod followed;
mod held_port;
mod kube_vms;
pub(crate) mod proc_vms;
mod remote_vms;
mod runtime_vms;
mod said;
mod scanned;
mod started;
mod twins;

/// How often a debugger port that could not be bound is tried again.
pub const BIND_RETRY: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error("cannot listen on {addr}: {error} (is another jdwpmux or a VM using the port? pick another with --current-port / --base-port)")]
    Bind { addr: SocketAddr, error: std::io::Error },
    #[error("another jdwpmux serve runs with these settings: it holds {addr} and answers on {} (use it: jdwpmux list; or stop it first)", control.display())]
    AlreadyRunning { addr: SocketAddr, control: std::path::PathBuf },
    #[error("cannot listen on {addr}: {who} holds it (use it, or stop it first; or pick another port with --current-port / --base-port)")]
    HeldByOwn { addr: SocketAddr, who: String },
    #[error(transparent)]
    Control(#[from] control::server::ControlError),
    #[error(transparent)]
    Web(#[from] crate::web::WebError),
    #[error("cannot capture to {path}: {error}")]
    Capture { path: std::path::PathBuf, error: crate::capture::CaptureError },
    #[error("cannot make the private folder for ssh's sockets: {0}")]
    SshFolder(std::io::Error),
}

/// A running daemon: its registry, and the addresses it listens on.
pub struct Daemon {
    pub registry: Arc<Registry>,
    pub current_addr: SocketAddr,
    /// The monitor page, when served (`--web`).
    pub web: Option<crate::web::Monitor>,
    capture: Option<CaptureHandle>,
    cancel: CancellationToken,
    tracker: TaskTracker,
    /// The private folder of the links' sockets (ssh hosts, exec hosts, containers reached
    /// through their runtime), removed at the end.
    ssh_dir: runtime_vms::SharedDir,
}

impl Daemon {
    /// Stops every task and waits for them (bounded by `grace`).
    pub async fn shutdown(self, grace: Duration) {
        self.cancel.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait()).await.is_err() {
            warn!("some tasks did not stop within {grace:?}");
        }
        if let Some(dir) = self.ssh_dir.lock().ok().and_then(|mut d| d.take()) {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(c) = self.capture {
            match c.close().await {
                Ok(s) => info!(records = s.records_written, bytes = s.bytes_written, dropped = s.dropped, "capture closed"),
                Err(e) => warn!(error = %e, "capture did not close cleanly"),
            }
        }
    }

    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

/// Adds VMs: starts a session, registers it with a stable port, binds that port.
#[derive(Clone)]
pub(crate) struct Spawner {
    pub registry: Arc<Registry>,
    pub settings: Arc<Settings>,
    pub capture: Option<CaptureHandle>,
    pub cancel: CancellationToken,
    pub tracker: TaskTracker,
    /// Tells adb forwards to Android VMs apart before a VM is identified.
    pub forwards: Option<Arc<ForwardLookup>>,
    /// Addresses of local JVMs found by their process, which the port scan leaves alone.
    pub claimed: proc_vms::Claimed,
    /// Debuggers refused for their owner, counted per owner across every port.
    pub refusals: Arc<listen::owner::RefusalLog>,
}

impl Spawner {
    fn listen_options(&self) -> listen::ListenOptions {
        listen::ListenOptions {
            handshake_timeout: self.settings.timeouts.debugger_handshake,
            capture: self.capture.clone(),
            allow: Arc::new(self.settings.allow.clone()),
            allow_users: Arc::new(self.settings.allow_users.clone()),
            own_uid: rustix::process::geteuid().as_raw(),
            refusals: self.refusals.clone(),
        }
    }

    /// Adds a VM: a session, a registry entry under `key`, and its debugger port.
    pub fn add(&self, key: String, addr: SocketAddr, source: Source, android: bool, initial: Option<Connected>) -> VmId {
        let handle = self.start_session(key.clone(), addr, source, android, initial, None);
        self.register(key.clone(), key, addr, source, handle)
    }

    /// Starts a VM session (not yet listed).
    pub fn start_session(
        &self,
        name: String,
        addr: SocketAddr,
        source: Source,
        android: bool,
        initial: Option<Connected>,
        adb: Option<session::AdbTarget>,
    ) -> (VmHandle, CancellationToken) {
        let cfg = self.session_config(name, addr, source, android, adb);
        self.spawn_session(cfg, initial)
    }

    fn spawn_session(&self, cfg: SessionConfig, initial: Option<Connected>) -> (VmHandle, CancellationToken) {
        let token = self.cancel.child_token();
        (session::spawn(cfg, initial, token.clone(), &self.tracker), token)
    }

    fn session_config(&self, name: String, addr: SocketAddr, source: Source, android: bool, adb: Option<session::AdbTarget>) -> SessionConfig {
        let s = &self.settings;
        SessionConfig {
            name,
            addr,
            ddm: s.ddm,
            android,
            timeouts: s.timeouts,
            max_debuggers: s.max_debuggers,
            near_cache: s.near_cache,
            max_backoff: if source == Source::Cli { Duration::from_secs(5) } else { s.scan_interval },
            capture: self.capture.clone(),
            // A VM behind adb, said to be Android, or found by its process needs no lookup.
            forwards: self.forwards.clone().filter(|_| adb.is_none() && !android && matches!(source, Source::Cli | Source::Scan)),
            adb,
            located: None,
        }
    }

    /// Lists a VM under `key` with the lowest free port, and binds that port (retrying).
    pub fn register(&self, key: String, name: String, addr: SocketAddr, source: Source, session: (VmHandle, CancellationToken)) -> VmId {
        let (handle, _token) = session;
        let (id, port) = self.registry.add(key, name.clone(), addr, source, self.settings.base_port, handle);
        let (registry, cancel, tracker) = (self.registry.clone(), self.cancel.clone(), self.tracker.clone());
        let opts = self.listen_options();
        let listen_ip = self.settings.listen;
        self.tracker.spawn(async move {
            let addr = SocketAddr::new(listen_ip, port);
            let mut warned = false;
            loop {
                match listen::bind(addr, &format!("vm {name}{}", found_as(&registry, id))).await {
                    Ok(l) => {
                        if let Ok(local) = l.local_addr() {
                            registry.set_port(id, local.port());
                        }
                        let target = listen::Target::Vm { registry: registry.clone(), id };
                        listen::spawn_accept(l, target, opts, cancel, &tracker);
                        return;
                    }
                    Err(e) => {
                        if !warned {
                            warn!(vm = %name, %addr, error = %e, "cannot bind the VM's debugger port; retrying every {BIND_RETRY:?}");
                            warned = true;
                        }
                        tokio::select! {
                            _ = tokio::time::sleep(BIND_RETRY) => {}
                            _ = cancel.cancelled() => return,
                        }
                    }
                }
            }
        });
        id
    }
}

/// A debugger port as log lines show it: `8601`, or `none yet` while it could not be bound.
fn shown_port(port: Option<u16>) -> String {
    port.map_or_else(|| "none yet".into(), |p| p.to_string())
}

/// What the one line saying a VM's debugger port adds to its name: who it is, when that is
/// known, and how it was found (` (Billing pid 4242, found by its process)`).
fn found_as(registry: &Registry, id: VmId) -> String {
    let Some(e) = registry.get(id) else { return String::new() };
    let status = e.handle.status();
    let how = match (e.source, &e.host) {
        (Source::Cli, _) => "named with --vm".to_string(),
        (Source::Scan, _) => "found by the port scan".to_string(),
        (Source::Adb, None) => "found through adb".to_string(),
        (Source::Adb, Some(h)) => format!("found through adb on {h}"),
        (Source::Proc, _) => "found by its process".to_string(),
        (Source::Ssh, Some(h)) => format!("found on {h}"),
        (Source::Ssh, None) => "found through ssh".to_string(),
    };
    let who: Vec<String> = status.app.into_iter().chain(status.pid.map(|p| format!("pid {p}"))).collect();
    // Which container, pod or namespace, so that ten `java` lines can be told apart.
    let place = e.process.as_ref().and_then(|p| p.place.as_deref()).map(|w| format!("{}, ", crate::safe_text::Shown(w))).unwrap_or_default();
    if who.is_empty() { format!(" ({place}{how})") } else { format!(" ({}, {place}{how})", who.join(" ")) }
}

/// Starts the daemon: VM sessions, their debugger ports, the current-VM port, discovery.
pub async fn start(settings: Settings) -> Result<Daemon, RunError> {
    settings.validate()?;
    crate::park::set_spin(settings.spin);
    crate::park::pin::set_enabled(settings.cpu_pin);
    if !settings.listen.is_loopback() {
        let allow = if settings.allow.is_empty() {
            "from anywhere (restrict with --allow CIDR)".to_string()
        } else {
            format!("from {}", settings.allow.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))
        };
        warn!(
            listen = %settings.listen,
            "debugger ports {} (current) and {}+ (per VM) are open to the network {allow}: whoever connects controls the VMs",
            settings.current_port, settings.base_port
        );
    }
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    let registry = Arc::new(Registry::default());
    if let Some(sel) = &settings.select {
        registry.select_later(sel);
    }
    let capture = match &settings.capture {
        None => None,
        Some(c) => {
            let opts = crate::capture::CaptureOptions {
                max_bytes: c.max_bytes,
                snaplen: c.snaplen,
                chunk_decoder: Some(crate::ddm::json::chunks_json),
                ..Default::default()
            };
            let handle = crate::capture::Capture::start(&c.path, c.format, opts)
                .map_err(|error| RunError::Capture { path: c.path.clone(), error })?;
            info!(path = %c.path.display(), "capturing every packet");
            Some(handle)
        }
    };
    // Bound after the capture opened: never announce a port that will not be served.
    let current_addr = SocketAddr::new(settings.listen, settings.current_port);
    let current = match listen::bind(current_addr, "the current VM").await {
        Ok(l) => l,
        // Started twice the same way: the port is taken by the daemon already running, which
        // is what to say (not to pick other ports).
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => return Err(port_taken(&settings, current_addr, error).await),
        Err(error) => return Err(RunError::Bind { addr: current_addr, error }),
    };
    let current_addr = current.local_addr().unwrap_or(current_addr);
    registry.set_current_port(current_addr.port());
    if let Some(path) = &settings.control {
        control::server::start(path, registry.clone(), cancel.clone(), &tracker).await?;
    }
    let web = match settings.web {
        Some(addr) => Some(crate::web::start(addr, registry.clone(), cancel.clone(), &tracker).await?),
        None => None,
    };
    let settings = Arc::new(settings);
    let forwards = settings.adb_forwards.map(|addr| {
        let server = crate::discovery::adb::AdbServer::new(addr);
        Arc::new(ForwardLookup::new(server, settings.adb == Some(addr)))
    });
    let spawner = Spawner {
        registry: registry.clone(),
        settings: settings.clone(),
        capture: capture.clone(),
        cancel: cancel.clone(),
        tracker: tracker.clone(),
        forwards,
        claimed: Arc::default(),
        refusals: Arc::default(),
    };
    listen::spawn_accept(current, listen::Target::Current(registry.clone()), spawner.listen_options(), cancel.clone(), &tracker);
    for vm in &settings.vms {
        spawner.add(vm.to_string(), *vm, Source::Cli, settings.android_vms.contains(vm), None);
    }
    // The processes first: a JVM they show is never probed by the port scan.
    // Containers this user cannot enter, reached through their runtime: the /proc
    // discovery says which; `runtime_vms` serves them.
    let runtime_known = runtime_vms::Shared::default();
    let (runtime_seen, runtime_rx) = tokio::sync::watch::channel(std::collections::BTreeSet::new());
    if settings.proc_scan {
        proc_vms::start(spawner.clone(), spawner.claimed.clone(), proc_vms::Runtimes { seen: runtime_seen, known: runtime_known.clone() }).await;
    }
    if !settings.scans.is_empty() {
        scanned::start(&spawner);
    }
    let ssh_dir = runtime_vms::SharedDir::new(std::sync::Mutex::new(if settings.ssh.is_empty() && settings.exec.is_empty() { None } else { Some(start_ssh(&spawner)?) }));
    if settings.proc_scan {
        tracker.spawn(runtime_vms::run(spawner.clone(), runtime_rx, runtime_known, ssh_dir.clone()));
    }
    if !settings.kube.is_empty() {
        kube_vms::start(&spawner, ssh_dir.clone());
    }
    if let Some(addr) = settings.adb {
        let wanted = if settings.adb_by_default { Wanted::ByDefault } else { Wanted::Named };
        tracker.spawn(adb_vms::run(spawner.clone(), addr, wanted, cancel.clone()));
    }
    if settings.vms.is_empty() && settings.scans.is_empty() && settings.adb.is_none() && !settings.proc_scan && settings.ssh.is_empty() && settings.exec.is_empty() && settings.kube.is_empty() {
        info!("no VMs to watch: give --vm HOST:PORT, --scan HOST:FIRST-LAST, --adb, --proc, --ssh HOST, --exec NAME=COMMAND or --kube NAMESPACE");
    }
    registry.announce_current();
    Ok(Daemon { registry, current_addr, web, capture, cancel, tracker, ssh_dir })
}

/// Whether a daemon answers on the control socket at `path` (only its owner can connect).
async fn daemon_answers(path: &std::path::Path) -> bool {
    matches!(tokio::time::timeout(Duration::from_secs(2), tokio::net::UnixStream::connect(path)).await, Ok(Ok(_)))
}

/// What to say of a current-VM port another socket holds: this user's own daemon, where
/// it answers (its control socket here, or where a daemon started from another shell
/// answers: `control::candidates`); else this user's own jdwpmux or other process by its
/// pid; else the bare error.
async fn port_taken(settings: &Settings, addr: SocketAddr, error: std::io::Error) -> RunError {
    let uid = crate::private_folder::own_uid();
    let others = crate::control::candidates(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), uid);
    for control in settings.control.iter().chain(others.iter().filter(|p| Some(*p) != settings.control.as_ref())) {
        let ours = settings.control.as_ref() == Some(control) || crate::control::answers(control);
        if ours && daemon_answers(control).await {
            return RunError::AlreadyRunning { addr, control: control.clone() };
        }
    }
    match tokio::task::spawn_blocking(move || held_port::own_holder(addr, uid)).await {
        Ok(Some((pid, comm))) => RunError::HeldByOwn { addr, who: held_port::describe(pid, &comm) },
        _ => RunError::Bind { addr, error },
    }
}

/// Starts following every --ssh host; their sockets go in a private folder of their own.
fn start_ssh(spawner: &Spawner) -> Result<std::path::PathBuf, RunError> {
    let s = &spawner.settings;
    let dir = crate::remote::ssh::private_dir(s.control.as_deref()).map_err(RunError::SshFolder)?;
    let labels = crate::remote::ssh::destination::labels(&s.ssh);
    let hosts = s
        .ssh
        .iter()
        .zip(labels)
        .enumerate()
        .map(|(i, (dest, label))| crate::remote::HostConfig {
            dest: dest.clone(),
            label,
            dir: dir.clone(),
            prefix: format!("h{i}"),
            ssh: s.ssh_options.clone(),
            interval: s.ssh_interval,
            other_users: s.other_users,
            keyed_as: None,
        })
        .collect();
    remote_vms::start(spawner, hosts, s.far.clone());
    // `--exec` hosts: their files beside the ssh hosts', their rows and VMs followed alike.
    let execs = s
        .exec
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let dest = e.name.parse().ok()?;
            let cfg = crate::remote::HostConfig { dest, label: e.name.clone(), dir: dir.clone(), prefix: format!("x{i}"), ssh: s.ssh_options.clone(), interval: s.ssh_interval, other_users: s.other_users, keyed_as: None };
            Some((cfg, e.clone()))
        })
        .collect();
    remote_vms::start_exec(spawner, execs, s.far.clone());
    Ok(dir)
}
