//! VMs that a discovery follows for as long as it sees them (a process found in /proc, a
//! JVM on an ssh host): each gets a session told where the VM is now, and a registry entry
//! that stays listed while the discovery sees it, reachable or not, and keeps its debugger
//! port by key when the VM goes and comes back.

use std::net::SocketAddr;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::Spawner;
use crate::discovery::jvms::found::AgentFrom;
use crate::discovery::jvms::FoundJvm;
use crate::registry::{ProcessInfo, Source, VmId};
use crate::session::{Located, VmHandle, VmStatus};

/// A VM with a session that its discovery follows.
pub(super) struct Followed {
    pub id: VmId,
    token: CancellationToken,
    located: watch::Sender<Located>,
    handle: VmHandle,
    pub name: String,
}

/// What a discovery says of one VM.
pub(super) struct Sighting {
    pub key: String,
    /// Its name in logs and `list` (`HOST:ADDRESS` for one on an ssh host).
    pub name: String,
    /// Its address (on its host).
    pub addr: SocketAddr,
    pub source: Source,
    pub host: Option<String>,
    pub located: Located,
}

impl Spawner {
    /// Starts a session for a VM a discovery found, listed under its key (behind its old
    /// entry and port when it was there before).
    pub(super) fn follow(&self, s: Sighting) -> Followed {
        let (tx, rx) = watch::channel(s.located);
        let mut cfg = self.session_config(s.name.clone(), s.addr, s.source, false, None);
        cfg.located = Some(rx);
        let (handle, token) = self.spawn_session(cfg, None);
        let session = handle.clone();
        let id = match self.registry.by_key(&s.key) {
            Some(old) => {
                info!(vm = %s.name, key = %s.key, port = %super::shown_port(old.port), "a VM came back; it keeps its debugger port");
                self.registry.replace_handle(old.id, s.name.clone(), handle);
                old.id
            }
            None => self.register(s.key, s.name.clone(), s.addr, s.source, (handle, token.clone())),
        };
        self.registry.set_host(id, s.host);
        self.registry.set_held(id, true, None);
        Followed { id, token, located: tx, handle: session, name: s.name }
    }

    /// Lists a VM that was found but cannot be reached, with a note that says why.
    pub(super) fn list_unreachable(&self, s: Sighting, note: String) -> VmId {
        let status = VmStatus { pid: s.located.pid, app: s.located.app.clone(), ..VmStatus::default() };
        let id = match self.registry.by_key(&s.key) {
            Some(old) => {
                self.registry.replace_handle(old.id, s.name, VmHandle::unreachable(status));
                old.id
            }
            None => self.registry.add_unbound(s.key, s.name, s.addr, s.source, VmHandle::unreachable(status)),
        };
        self.registry.set_host(id, s.host);
        self.registry.set_held(id, true, Some(note));
        id
    }
}

impl Followed {
    /// Tells the session where the VM is now: read at its next connection, and who the
    /// process is shown at once.
    pub fn moved(&mut self, spawner: &Spawner, name: String, located: Located) {
        let changed = self.located.send_if_modified(|l| {
            let changed = *l != located;
            *l = located;
            changed
        });
        if changed {
            self.handle.relocated();
        }
        if name != self.name {
            spawner.registry.rename(self.id, name.clone());
            self.name = name;
        }
    }

    /// Its discovery no longer sees it: the session ends and the entry leaves the list
    /// (keeping its port for the VM's return).
    pub fn drop_from(self, spawner: &Spawner) {
        self.token.cancel();
        spawner.registry.set_held(self.id, false, None);
    }
}

/// The note of a JVM whose agent another debugger holds (`who`, as its discovery tells).
pub(super) fn busy_note(who: &str) -> String {
    format!("busy: another debugger holds it ({who}); jdwpmux connects when it leaves")
}

/// Whether the session of a followed VM is connected to it (then the connection its agent
/// holds is jdwpmux's own).
pub(super) fn connected(spawner: &Spawner, id: VmId) -> bool {
    spawner.registry.get(id).is_some_and(|e| e.handle.status().state == crate::session::VmState::Ready)
}

/// What `list` shows of a found JVM's process; `scanner` is the uid its discovery ran as,
/// `host` the ssh host it runs on (None: this machine).
pub(super) fn process_info(f: &FoundJvm, scanner: Option<u32>, host: Option<&str>) -> ProcessInfo {
    ProcessInfo {
        user: f.user.clone(),
        other_user: !f.runs_as(scanner),
        agent: f.agent.address_text(),
        agent_from: match f.from {
            AgentFrom::CommandLine => "command line",
            AgentFrom::JdkJavaOptions => "JDK_JAVA_OPTIONS",
            AgentFrom::JavaToolOptions => "JAVA_TOOL_OPTIONS",
        }
        .to_string(),
        suspend: f.agent.suspend,
        waiting: f.waiting == Some(true),
        listening: f.listening,
        exposed: f.port.filter(|_| f.all_addresses()).map(|port| crate::discovery::jvms::exposed::warning(host, port, f.other_net)),
        place: (f.place != crate::discovery::jvms::Place::Host).then(|| f.place.to_string()),
    }
}

/// Says once, when a JVM is first found, that its agent listens on every address.
pub(super) fn warn_exposed(f: &FoundJvm, info: &ProcessInfo, host: Option<&str>) {
    if let Some(w) = &info.exposed {
        let on = host.map(|h| format!(" on {}", crate::safe_text::Shown(h))).unwrap_or_default();
        tracing::warn!(pid = f.pid, app = %f.name(), "{} (pid {}){on}: {w}", crate::safe_text::Shown(&f.name()), f.pid);
    }
}
