//! The VMs the daemon knows, their debugger ports, and which one is current.
//!
//! Lookups only: nothing here is held across an `.await`.
//! - `mod.rs`: the entries (one per VM key, kept while the VM is away so that it gets its
//!   port back), `list`'s rows, and selectors (`resolve`).
//! - `current.rs`: which VM the current-VM port leads to, and why none: its rules, and the
//!   methods that keep the selection and say it.

mod current;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use crate::session::{VmHandle, VmStatus};

pub use current::NoCurrent;

pub type VmId = u32;

/// How a VM was found: VMs named on the command line stay listed while unreachable;
/// discovered ones leave the list when they go away (but keep their port for their return),
/// except those a discovery holds listed (`VmEntry::held`: a process it still sees).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Cli,
    Scan,
    Adb,
    /// Found by its process (/proc) on this machine.
    Proc,
    /// Found on another host through ssh.
    Ssh,
}

/// The `host` of VMs on this machine.
pub const LOCAL_HOST: &str = "local";

#[derive(Debug, Clone)]
pub struct VmEntry {
    pub id: VmId,
    /// What identifies the VM across reconnects: HOST:PORT, or adb serial + app.
    pub key: String,
    /// The VM's address as the user knows it.
    pub name: String,
    pub addr: SocketAddr,
    pub source: Source,
    /// The debugger port given to this VM (0: an ephemeral one was asked for).
    pub wanted_port: u16,
    /// The bound debugger port (None while it could not be bound).
    pub port: Option<u16>,
    pub handle: VmHandle,
    /// The ssh host it runs on; None: this machine.
    pub host: Option<String>,
    /// Listed even while unreachable: its discovery still sees it (a process found in /proc,
    /// a JVM on a host whose link is down).
    pub held: bool,
    /// What people should know about it (why it cannot be reached, what to do).
    pub note: Option<String>,
    /// What its discovery read of its process (a JVM found in /proc, here or on a host).
    pub process: Option<ProcessInfo>,
    /// When its process started on this machine (clock ticks since boot, from
    /// /proc/PID/stat), when that is known: the newest is the current VM by default.
    pub started: Option<u64>,
    /// What tells its JVM apart from the JVMs other discoveries find (`Registry::twin`).
    pub print: Option<crate::discovery::jvms::same::Print>,
}

/// What a discovery read of a VM's process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// Its owner's name, else `uid N`.
    pub user: Option<String>,
    /// It runs as another user than the one that found it (jdwpmux's own user; on an ssh
    /// host, the ssh login): taken because `--other-users` asked for it.
    #[serde(default)]
    pub other_user: bool,
    /// The agent's `address=` as given: `8000`, `*:8000`, `HOST:8000`, `0` (it picks one).
    pub agent: String,
    /// Where the agent's options were: `command line`, `JDK_JAVA_OPTIONS`, `JAVA_TOOL_OPTIONS`.
    pub agent_from: String,
    pub suspend: bool,
    /// `suspend=y` and `main` has not started yet.
    pub waiting: bool,
    /// Its agent listens now (no debugger holds it).
    pub listening: bool,
    /// Its agent listens on every address of its host: who can reach it, and how to keep it
    /// to its host (`discovery::jvms::exposed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed: Option<String>,
    /// Where it runs when that is not the host itself: `container billing-api (podman)`,
    /// `pod shop/orders-5f7c`, `netns NAME` (`discovery::jvms::place`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
}

impl VmEntry {
    /// Whether `list` shows it now.
    pub fn present(&self) -> bool {
        self.source == Source::Cli || self.held || self.handle.status().state != crate::session::VmState::Unreachable
    }

    /// A row with no session behind it: found, but it cannot be reached (never current,
    /// never selected, never a twin that keeps another finder's row out).
    pub fn placeholder(&self) -> bool {
        self.handle.tx.is_closed() && self.handle.status().state == crate::session::VmState::Unreachable
    }

    /// The host's name as `list` shows it.
    pub fn host_name(&self) -> &str {
        self.host.as_deref().unwrap_or(LOCAL_HOST)
    }
}

/// One row of `list`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VmInfo {
    pub id: VmId,
    /// The host it runs on: `local`, or the ssh host's name.
    #[serde(default = "local_host")]
    pub host: String,
    /// Its address (on its host).
    pub addr: String,
    pub source: Source,
    pub debugger_port: Option<u16>,
    pub current: bool,
    /// Why it cannot be reached and what to do, when that is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What its discovery read of its process (VMs found by their process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessInfo>,
    /// The user it runs as, where that is not jdwpmux's own (on an ssh host: not the ssh
    /// login's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(flatten)]
    pub status: VmStatus,
}

impl VmInfo {
    /// Where it is, as lines and messages name it: its address, after its host's name when
    /// that is not this machine (`build-box:127.0.0.1:8000`).
    pub fn place(&self) -> String {
        if self.host == LOCAL_HOST { self.addr.clone() } else { format!("{}:{}", self.host, self.addr) }
    }
}

fn local_host() -> String {
    LOCAL_HOST.to_string()
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    #[error("no VM matches {selector:?}; known: {}", candidates.join(", "))]
    Unknown { selector: String, candidates: Vec<String> },
    #[error("{selector:?} is ambiguous; it matches: {}", candidates.join(", "))]
    Ambiguous { selector: String, candidates: Vec<String> },
    /// It names a VM that was found but cannot be reached: never the current VM.
    #[error("{selector:?} names {vm}, which cannot be reached{}", why.as_ref().map(|w| format!(": {w}")).unwrap_or_default())]
    Unreachable { selector: String, vm: String, why: Option<String> },
}

#[derive(Debug, Default)]
pub struct Registry {
    vms: DashMap<VmId, VmEntry>,
    by_key: DashMap<String, VmId>,
    next_id: AtomicU32,
    /// What the user selected, and what the log said of it (`current`).
    selection: Mutex<current::Selection>,
    /// The current-VM port, once bound (what `list` names).
    current_port: AtomicU16,
    /// Each `--ssh` host's row (`list`, the page).
    pub hosts: Arc<crate::remote::status::HostTable>,
}

impl Registry {
    /// Registers a VM under `key` with the lowest free debugger port from `base_port`
    /// (0: ephemeral). Returns its id and the port to bind.
    pub fn add(&self, key: String, name: String, addr: SocketAddr, source: Source, base_port: u16, handle: VmHandle) -> (VmId, u16) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let wanted_port = if base_port == 0 { 0 } else { self.free_port(base_port) };
        self.by_key.insert(key.clone(), id);
        self.vms.insert(id, VmEntry { id, key, name, addr, source, wanted_port, port: None, handle, host: None, held: false, note: None, process: None, started: None, print: None });
        (id, wanted_port)
    }

    /// Lists a VM that has no debugger port (found, but it cannot be reached).
    pub fn add_unbound(&self, key: String, name: String, addr: SocketAddr, source: Source, handle: VmHandle) -> VmId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.by_key.insert(key.clone(), id);
        self.vms.insert(id, VmEntry { id, key, name, addr, source, wanted_port: 0, port: None, handle, host: None, held: false, note: None, process: None, started: None, print: None });
        id
    }

    /// The VM registered under `key`, present or away.
    pub fn by_key(&self, key: &str) -> Option<VmEntry> {
        let id = *self.by_key.get(key)?;
        self.get(id)
    }

    /// Replaces the session behind an entry (an app that came back with a new pid).
    pub fn replace_handle(&self, id: VmId, name: String, handle: VmHandle) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.handle = handle;
            e.name = name;
        }
    }

    fn free_port(&self, base: u16) -> u16 {
        let used: std::collections::HashSet<u16> = self.vms.iter().map(|e| e.wanted_port).filter(|p| *p != 0).collect();
        (base..=u16::MAX).find(|p| !used.contains(p)).unwrap_or(0)
    }

    /// Says which ssh host a VM runs on.
    pub fn set_host(&self, id: VmId, host: Option<String>) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.host = host;
        }
    }

    /// Keeps a VM listed while unreachable (or lets it go), with a note for people.
    pub fn set_held(&self, id: VmId, held: bool, note: Option<String>) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.held = held;
            e.note = note;
        }
    }

    /// What its discovery read of the VM's process now.
    pub fn set_process(&self, id: VmId, process: ProcessInfo) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.process = Some(process);
        }
    }

    /// When the VM's process started on this machine (`VmEntry::started`).
    pub fn set_started(&self, id: VmId, started: Option<u64>) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.started = started;
        }
    }

    /// What tells the VM's JVM apart from those other discoveries find.
    pub fn set_print(&self, id: VmId, print: Option<crate::discovery::jvms::same::Print>) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.print = print;
        }
    }

    /// The first-listed entry other than `except`, listed now with a session, that `of`
    /// takes (another finder's rows) and whose JVM is the one `print` describes
    /// (`discovery::jvms::same`): the row that JVM already has.
    pub fn twin(&self, print: &crate::discovery::jvms::same::Print, except: Option<VmId>, of: impl Fn(&VmEntry) -> bool) -> Option<VmId> {
        self.entries()
            .into_iter()
            .filter(|e| Some(e.id) != except && of(e) && !e.placeholder())
            .find(|e| e.print.as_ref().is_some_and(|p| p.same(print)))
            .map(|e| e.id)
    }

    /// Renames a VM (its address on its host changed).
    pub fn rename(&self, id: VmId, name: String) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.name = name;
        }
    }

    pub fn set_port(&self, id: VmId, port: u16) {
        if let Some(mut e) = self.vms.get_mut(&id) {
            e.port = Some(port);
        }
    }

    pub fn get(&self, id: VmId) -> Option<VmEntry> {
        self.vms.get(&id).map(|e| e.clone())
    }

    /// The VMs `list` shows, in order of appearance.
    fn entries(&self) -> Vec<VmEntry> {
        let mut v: Vec<VmEntry> = self.vms.iter().map(|e| e.clone()).filter(|e| e.present()).collect();
        v.sort_by_key(|e| e.id);
        v
    }

    /// Each listed entry with its status read once.
    fn rows(&self) -> Vec<(VmEntry, VmStatus)> {
        self.entries()
            .into_iter()
            .map(|e| {
                let s = e.handle.status();
                (e, s)
            })
            .collect()
    }

    pub fn list(&self) -> Vec<VmInfo> {
        let current = self.current().map(|e| e.id);
        let hosts = self.hosts.rows();
        let link_up = |e: &VmEntry| {
            e.host.as_ref().is_none_or(|h| hosts.iter().find(|r| &r.host == h).is_none_or(|r| r.state == crate::remote::status::HostState::Up))
        };
        self.entries()
            .into_iter()
            .map(|e| VmInfo {
                id: e.id,
                host: e.host_name().to_string(),
                addr: e.host.as_ref().and_then(|h| e.name.strip_prefix(h.as_str())).and_then(|a| a.strip_prefix(':')).unwrap_or(&e.name).to_string(),
                source: e.source,
                debugger_port: e.port,
                current: Some(e.id) == current,
                note: e.note.clone(),
                process: e.process.clone(),
                user: e.process.as_ref().filter(|p| p.other_user).map(|p| p.user.clone().unwrap_or_else(|| "another user".into())),
                status: {
                    let mut s = e.handle.status();
                    s.waiting_for_debugger |= e.process.as_ref().is_some_and(|p| p.waiting);
                    s.state = s.state.shown(&s.debuggers, link_up(&e));
                    s
                },
            })
            .collect()
    }

    /// Finds the one VM a selector names: `:PORT` (debugger port), `HOST:PORT` (VM address),
    /// a pid (else a bare debugger port), or an app name (exact, then the class name without
    /// its package, then unique prefix); any of
    /// them after `HOST:` (an ssh host, or `local`) looks at that host's VMs only.
    /// Rows that cannot be reached are not chosen; one that alone matches is named with why.
    pub fn resolve(&self, selector: &str) -> Result<VmId, SelectError> {
        let (placeholders, rows): (Vec<_>, Vec<_>) = self.rows().into_iter().partition(|(e, _)| e.placeholder());
        match Self::resolve_among(&rows, selector) {
            Err(SelectError::Unknown { selector, candidates }) => match Self::resolve_among(&placeholders, &selector) {
                Ok(id) => match placeholders.iter().find(|(e, _)| e.id == id) {
                    Some((e, s)) => Err(SelectError::Unreachable { selector: selector.clone(), vm: describe(e, s), why: e.note.clone() }),
                    None => Err(SelectError::Unknown { selector, candidates }),
                },
                Err(_) => Err(SelectError::Unknown { selector, candidates }),
            },
            other => other,
        }
    }

    fn resolve_among(rows: &[(VmEntry, VmStatus)], selector: &str) -> Result<VmId, SelectError> {
        if let Some((host, rest)) = selector.split_once(':') {
            let on_host: Vec<(VmEntry, VmStatus)> = rows.iter().filter(|(e, _)| e.host_name() == host).cloned().collect();
            let is_host = host == LOCAL_HOST || rows.iter().any(|(e, _)| e.host.as_deref() == Some(host));
            if is_host && !rest.is_empty() && selector.parse::<SocketAddr>().is_err() {
                return match Self::resolve_in(&on_host, rest) {
                    Ok(id) => Ok(id),
                    // `HOST:NAME` where NAME is a VM's full name (`HOST:ADDRESS`).
                    Err(e) => Self::resolve_in(rows, selector).map_err(|_| match e {
                        SelectError::Unknown { candidates, .. } => SelectError::Unknown { selector: selector.to_string(), candidates },
                        SelectError::Ambiguous { candidates, .. } => SelectError::Ambiguous { selector: selector.to_string(), candidates },
                        SelectError::Unreachable { vm, why, .. } => SelectError::Unreachable { selector: selector.to_string(), vm, why },
                    }),
                };
            }
        }
        Self::resolve_in(rows, selector)
    }

    fn resolve_in(rows: &[(VmEntry, VmStatus)], selector: &str) -> Result<VmId, SelectError> {
        let pick = |matches: Vec<&(VmEntry, VmStatus)>| -> Option<Result<VmId, SelectError>> {
            match matches.len() {
                0 => None,
                1 => Some(Ok(matches[0].0.id)),
                _ => Some(Err(SelectError::Ambiguous {
                    selector: selector.to_string(),
                    candidates: matches.iter().map(|(e, s)| describe(e, s)).collect(),
                })),
            }
        };
        if let Some(port) = selector.strip_prefix(':').and_then(|p| p.parse::<u16>().ok()) {
            if let Some(r) = pick(rows.iter().filter(|(e, _)| e.port == Some(port)).collect()) {
                return r;
            }
        } else if let Ok(addr) = selector.parse::<SocketAddr>() {
            if let Some(r) = pick(rows.iter().filter(|(e, _)| e.addr == addr && e.host.is_none()).collect()) {
                return r;
            }
        } else if let Some(r) = pick(rows.iter().filter(|(e, _)| e.name == selector).collect()) {
            return r;
        } else if let Ok(pid) = selector.parse::<u32>() {
            if let Some(r) = pick(rows.iter().filter(|(_, s)| s.pid == Some(pid)).collect()) {
                return r;
            }
            // No such pid: the number as `list` shows it in its PORT column.
            let port = u16::try_from(pid).ok();
            if let Some(r) = pick(rows.iter().filter(|(e, _)| port.is_some() && e.port == port).collect()) {
                return r;
            }
        } else {
            let exact: Vec<_> = rows.iter().filter(|(_, s)| s.app.as_deref() == Some(selector)).collect();
            if let Some(r) = pick(exact) {
                return r;
            }
            // `Billing` for `com.example.Billing`: the class name people say.
            let simple: Vec<_> = rows.iter().filter(|(_, s)| s.app.as_deref().is_some_and(|a| simple_name(a) == selector)).collect();
            if let Some(r) = pick(simple) {
                return r;
            }
            let prefix: Vec<_> =
                rows.iter().filter(|(_, s)| s.app.as_deref().is_some_and(|a| a.starts_with(selector))).collect();
            if let Some(r) = pick(prefix) {
                return r;
            }
        }
        Err(SelectError::Unknown {
            selector: selector.to_string(),
            candidates: rows.iter().map(|(e, s)| describe(e, s)).collect(),
        })
    }
}

/// A main class's name without its package (`Billing` of `com.example.Billing`); an app
/// name of an Android process (`com.example.app`) gives its last part too.
fn simple_name(app: &str) -> &str {
    app.rsplit('.').next().unwrap_or(app)
}

/// A VM as log lines and messages name it: `127.0.0.1:8000 (:8600) Billing pid 4242`.
pub(crate) fn describe(e: &VmEntry, s: &VmStatus) -> String {
    let mut d = match &e.host {
        Some(h) if !e.name.starts_with(&format!("{h}:")) => format!("{h}:{}", e.name),
        _ => e.name.clone(),
    };
    if let Some(p) = e.port {
        d.push_str(&format!(" (:{p})"));
    }
    if let Some(app) = &s.app {
        d.push_str(&format!(" {app}"));
    }
    // A row named by its pid alone (`pid 4242`, `HOST:pid 4242`: a JVM that cannot be
    // reached) says it once.
    if let Some(pid) = s.pid.filter(|p| !e.name.ends_with(&format!("pid {p}"))) {
        d.push_str(&format!(" pid {pid}"));
    }
    d
}

#[cfg(test)]
mod tests;
