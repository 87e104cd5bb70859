//! VMs on ssh hosts: a task per host keeps its link and scans it (`remote::host`); this
//! follows what it reports. Every JVM found becomes a session reached through its forward's
//! socket, listed under its host and keyed by host and main class, so it keeps its debugger
//! port across reconnects and restarts; while the link is down they stay listed, unreachable,
//! with a note naming the host. An adb server on a host's loopback brings its devices' VMs.
//! An `--exec` container's JVM that this machine's /proc discovery listed first is left to
//! that row (`twins`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::followed::{Followed, Sighting};
use super::said::SaidOnce;
use super::twins::{self, Held, Step};
use super::Spawner;
use crate::discovery::adb::AdbServer;
use crate::discovery::jvms::same;
use crate::remote::far_choice::{FarChoice, FarMode};
use crate::registry::{Source, VmId};
use crate::remote::{self, host::ADB_PORT, HostConfig, HostReport, LinkState, RemoteVm};
use crate::session::Located;
use crate::transport::Endpoint;

/// Starts a task per host (through jdwpmux on it when `far` says so), and one following each.
pub(super) fn start(spawner: &Spawner, hosts: Vec<HostConfig>, far: FarChoice) {
    for cfg in hosts {
        let (tx, rx) = watch::channel(HostReport::default());
        // Listed from the start, connecting.
        spawner.registry.hosts.put(remote::status::HostRow::new(&cfg.label, &cfg.dest.dest));
        if far.mode == FarMode::Never {
            spawner.tracker.spawn(remote::host::run(cfg.clone(), tx, spawner.registry.hosts.clone(), spawner.cancel.clone()));
        } else {
            spawner.tracker.spawn(crate::remote::through_far::run(cfg.clone(), far.clone(), tx, spawner.registry.hosts.clone(), spawner.cancel.clone()));
        }
        let follower = HostFollower { spawner: spawner.clone(), label: cfg.label.clone(), link: "the ssh link to", exec: false, live: HashMap::new(), said: SaidOnce::default(), adb: None, busy_noted: false, cancel: spawner.cancel.clone() };
        spawner.tracker.spawn(follower.run(rx));
    }
}

/// Starts a task per `--exec` host (through jdwpmux in its container), and one following each.
pub(super) fn start_exec(spawner: &Spawner, hosts: Vec<(HostConfig, crate::remote::exec::ExecSpec)>, far: FarChoice) {
    for (cfg, spec) in hosts {
        start_one_exec(spawner, cfg, spec, far.clone(), spawner.cancel.clone());
    }
}

/// Starts one exec host and its follower, both ended by `cancel` (the daemon's, or a
/// container's reached through its runtime: `runtime_vms`); its rows go when it ends.
pub(super) fn start_one_exec(spawner: &Spawner, cfg: HostConfig, spec: crate::remote::exec::ExecSpec, far: FarChoice, cancel: CancellationToken) {
    let (tx, rx) = watch::channel(HostReport::default());
    spawner.registry.hosts.put(remote::status::HostRow::new(&cfg.label, &format!("exec: {}", crate::safe_text::shown(&spec.text))));
    spawner.tracker.spawn(crate::remote::exec_host::run(cfg.clone(), spec, far, tx, spawner.registry.hosts.clone(), cancel.clone()));
    let follower = HostFollower { spawner: spawner.clone(), label: cfg.label.clone(), link: "the exec to", exec: true, live: HashMap::new(), said: SaidOnce::default(), adb: None, busy_noted: false, cancel };
    spawner.tracker.spawn(follower.run(rx));
}

enum Live {
    Session(Followed),
    Unreachable(VmId),
    /// This machine's /proc discovery lists this JVM already: one JVM, one row (`twins`).
    Twin,
}

impl Live {
    /// Its registry entry (none for a JVM left to another row).
    fn id(&self) -> Option<VmId> {
        match self {
            Live::Session(f) => Some(f.id),
            Live::Unreachable(id) => Some(*id),
            Live::Twin => None,
        }
    }
}

struct HostFollower {
    spawner: Spawner,
    label: String,
    /// How the link is named in notes: "the ssh link to", "the exec to".
    link: &'static str,
    /// An `--exec` host: jdwpmux in a container, possibly on this machine.
    exec: bool,
    /// By key: what this host's discovery lists.
    live: HashMap<String, Live>,
    /// The JVMs that cannot be reached said already (by pid and why): each is one INFO line,
    /// however often the host's list drops it and lists it again.
    said: SaidOnce,
    /// The task following the host's adb server, while one listens.
    adb: Option<(PathBuf, CancellationToken)>,
    /// A VM of a live session was last noted busy (see `run`).
    busy_noted: bool,
    /// Ends it: the daemon's, or its own (a container reached through its runtime).
    cancel: CancellationToken,
}

/// How often a busy note on a VM with a live session is looked at again.
const BUSY_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

impl HostFollower {
    async fn run(mut self, mut rx: watch::Receiver<HostReport>) {
        let cancel = self.cancel.clone();
        loop {
            let report = rx.borrow_and_update().clone();
            self.apply(report);
            tokio::select! {
                r = rx.changed() => if r.is_err() { break },
                // A VM noted busy whose own session has since connected: the host's list
                // does not change for that (its scan sees the agent held, now by us), so the
                // note is looked at again until it is gone.
                _ = tokio::time::sleep(BUSY_RECHECK), if self.busy_noted => rx.mark_changed(),
                _ = cancel.cancelled() => break,
            }
        }
        if let Some((_, token)) = self.adb.take() {
            token.cancel();
        }
        // Ended alone (its container gone for good): its rows go, their ports kept by key.
        if !self.spawner.cancel.is_cancelled() {
            for (_, live) in self.live.drain() {
                match live {
                    Live::Session(f) => f.drop_from(&self.spawner),
                    Live::Unreachable(id) => self.spawner.registry.set_held(id, false, None),
                    Live::Twin => {}
                }
            }
            self.spawner.registry.announce_current();
        }
    }

    fn apply(&mut self, report: HostReport) {
        // Set again by `follow_vms` while the link is up.
        self.busy_noted = false;
        match &report.link {
            LinkState::Up => self.follow_vms(&report.vms),
            LinkState::Down { reason, .. } => {
                let note = format!("{} {} is down: {reason}", self.link, self.label);
                for id in self.live.values().filter_map(Live::id) {
                    self.spawner.registry.set_held(id, true, Some(note.clone()));
                }
            }
            // The link is up; the far side there serves another serve.
            LinkState::Busy { reason } => {
                let note = format!("jdwpmux on {}: {reason}", self.label);
                for id in self.live.values().filter_map(Live::id) {
                    self.spawner.registry.set_held(id, true, Some(note.clone()));
                }
            }
            LinkState::Connecting => {}
        }
        // jdwpmux on the host let the VMs go (its hold ran out): said over any other note,
        // so no row looks held (or stopped) that is not.
        if let Some(note) = &report.released {
            for id in self.live.values().filter_map(Live::id) {
                self.spawner.registry.set_held(id, true, Some(note.clone()));
            }
        }
        self.follow_adb(report.adb);
    }

    fn follow_vms(&mut self, vms: &[RemoteVm]) {
        let gone: Vec<String> = self.live.keys().filter(|k| !vms.iter().any(|v| &v.key == *k)).cloned().collect();
        for key in gone {
            match self.live.remove(&key) {
                Some(Live::Session(f)) => {
                    info!(host = %self.label, vm = %f.name, "a JVM on {} is gone", self.label);
                    f.drop_from(&self.spawner)
                }
                Some(Live::Unreachable(id)) => self.spawner.registry.set_held(id, false, None),
                Some(Live::Twin) | None => {}
            }
        }
        for vm in vms {
            let f = &vm.found;
            let print = if self.exec { same::Print::of(&f.place, f.port, &f.command, Some(f.pid)) } else { None };
            if self.twins(&vm.key, print.as_ref()) {
                continue;
            }
            let target = match &f.reach {
                crate::discovery::jvms::Reach::At(addr) => Some(*addr),
                _ => None,
            };
            let name = match target {
                Some(addr) => format!("{}:{addr}", self.label),
                None => format!("{}:pid {}", self.label, f.pid),
            };
            let ours = matches!(self.live.get(&vm.key), Some(Live::Session(s)) if super::followed::connected(&self.spawner, s.id));
            let busy = (f.busy() && !ours).then(|| holder_on_host(f));
            let located = Located { endpoint: Endpoint::Unix(vm.socket.clone()), pid: Some(f.pid), app: f.main.as_ref().map(|m| m.to_string()), busy: busy.clone() };
            let note = match (&f.reach, vm.forwarded, &busy) {
                (crate::discovery::jvms::Reach::Unreachable(why), _, _) => Some(why.clone()),
                (_, false, _) => Some(format!("the ssh link to {} could not forward to it (see the log)", self.label)),
                (_, true, Some(who)) => Some(super::followed::busy_note(who)),
                (_, true, None) => None,
            };
            let key_unreachable = format!("{}!{}", vm.key, f.pid);
            match (self.live.get_mut(&vm.key), target) {
                (Some(Live::Session(followed)), _) => {
                    followed.moved(&self.spawner, name, located);
                    self.spawner.registry.set_held(followed.id, true, note);
                    self.spawner.registry.set_process(followed.id, self.process_info(vm));
                }
                (Some(Live::Unreachable(_) | Live::Twin), _) => {}
                (None, Some(addr)) => {
                    // Said at INFO by the line naming its debugger port.
                    debug!(host = %self.label, pid = f.pid, app = %f.name(), %addr, "found a JVM on {}", self.label);
                    let s = Sighting { key: vm.key.clone(), name, addr, source: Source::Ssh, host: Some(self.label.clone()), located };
                    let followed = self.spawner.follow(s);
                    self.spawner.registry.set_held(followed.id, true, note);
                    let info = self.process_info(vm);
                    super::followed::warn_exposed(f, &info, Some(&self.label));
                    self.spawner.registry.set_process(followed.id, info);
                    self.spawner.registry.set_print(followed.id, print);
                    self.live.insert(vm.key.clone(), Live::Session(followed));
                }
                (None, None) => {
                    let addr = SocketAddr::from(([0, 0, 0, 0], f.port.unwrap_or(0)));
                    let s = Sighting { key: key_unreachable, name, addr, source: Source::Ssh, host: Some(self.label.clone()), located };
                    let why = note.unwrap_or_default();
                    if self.said.first(format!("{} {why}", f.pid)) {
                        info!(host = %self.label, pid = f.pid, app = %f.name(), "found a JVM on {} that cannot be reached: {why}", self.label);
                    } else {
                        debug!(host = %self.label, pid = f.pid, app = %f.name(), "listed again: a JVM on {} that cannot be reached: {why}", self.label);
                    }
                    let id = self.spawner.list_unreachable(s, why);
                    let info = self.process_info(vm);
                    super::followed::warn_exposed(f, &info, Some(&self.label));
                    self.spawner.registry.set_process(id, info);
                    self.live.insert(vm.key.clone(), Live::Unreachable(id));
                }
            }
            self.busy_noted |= busy.is_some() && matches!(self.live.get(&vm.key), Some(Live::Session(_)));
        }
        self.spawner.registry.announce_current();
    }

    /// What `list` shows of a JVM's process. jdwpmux in an `--exec` container runs as whoever
    /// the exec enters as and takes only that user's JVMs: one it can reach is not another
    /// user's, though it may name its user `root` (a rootless container's root is the user
    /// who runs it, and the exec's user is the one who asked).
    fn process_info(&self, vm: &RemoteVm) -> crate::registry::ProcessInfo {
        let mut info = super::followed::process_info(&vm.found, vm.login, Some(&self.label));
        if self.exec && !matches!(vm.found.reach, crate::discovery::jvms::Reach::Unreachable(_)) {
            info.other_user = false;
        }
        info
    }

    /// Whether the JVM keyed `key` is left to this machine's /proc discovery's row this
    /// round (`twins`: the row listed first keeps it; only `--exec` hosts' JVMs have prints,
    /// so only they have twins).
    fn twins(&mut self, key: &str, print: Option<&same::Print>) -> bool {
        let held = match self.live.get(key) {
            Some(Live::Session(f)) => Held::Session(f.id),
            Some(Live::Unreachable(id)) => Held::Unreachable(*id),
            Some(Live::Twin) => Held::LeftToTwin,
            None => Held::Nothing,
        };
        let proc_row = |e: &crate::registry::VmEntry| e.source == Source::Proc && e.host.is_none();
        let twin = print.and_then(|p| self.spawner.registry.twin(p, self.live.get(key).and_then(Live::id), proc_row));
        match twins::step(held, twin) {
            Step::Follow => false,
            Step::Skip => {
                if held == Held::Nothing {
                    debug!(host = %self.label, key, "the /proc discovery lists this JVM already");
                    self.live.insert(key.to_string(), Live::Twin);
                }
                true
            }
            Step::Yield | Step::Unlist => {
                debug!(host = %self.label, key, "the /proc discovery lists this JVM: its row stays, this one goes");
                match self.live.insert(key.to_string(), Live::Twin) {
                    Some(Live::Session(f)) => f.drop_from(&self.spawner),
                    Some(Live::Unreachable(id)) => self.spawner.registry.set_held(id, false, None),
                    Some(Live::Twin) | None => {}
                }
                true
            }
            Step::Resume => {
                self.live.remove(key);
                false
            }
        }
    }

    /// Follows the host's adb server while one listens on its loopback (and its link is up).
    fn follow_adb(&mut self, socket: Option<PathBuf>) {
        match (&self.adb, socket) {
            (Some((s, _)), Some(new)) if *s == new => {}
            (None, None) => {}
            (_, socket) => {
                if let Some((_, token)) = self.adb.take() {
                    token.cancel();
                }
                if let Some(socket) = socket {
                    let token = self.spawner.cancel.child_token();
                    let server = AdbServer::on_host(&self.label, SocketAddr::from(([127, 0, 0, 1], ADB_PORT)), socket.clone());
                    info!(host = %self.label, "an adb server listens on {}; following its devices", self.label);
                    let on_host = super::adb_vms::OnHost { label: self.label.clone() };
                    self.spawner.tracker.spawn(super::adb_vms::run_server(self.spawner.clone(), server, crate::discovery::adb::Wanted::ByDefault, Some(on_host), token.clone()));
                    self.adb = Some((socket, token));
                } else {
                    info!(host = %self.label, "the adb server on {} is gone (or its link is down)", self.label);
                }
            }
        }
    }
}

/// Who holds a JVM's agent on its host, as the host's scan tells: the debugger's address on
/// the host and the uid of its socket (the host's processes' fds are not read for it).
fn holder_on_host(f: &crate::discovery::jvms::FoundJvm) -> String {
    match f.held_by {
        Some(h) => match h.socket {
            Some((uid, _)) => format!("a debugger at {} (uid {uid})", h.addr),
            None => format!("a debugger at {}", h.addr),
        },
        None => "a debugger".into(),
    }
}
