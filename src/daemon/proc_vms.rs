//! JVMs on this machine found by their process (/proc), on any port and without a probe:
//! each becomes a session told where its agent listens now (a port the agent picked moves
//! after every debugger), listed while its process runs. One that cannot be reached (its
//! agent listens on a container's own loopback) is listed with a note saying what to do.
//! A container's JVM that an `--exec` host listed first is left to that row (`twins`).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::followed::{Followed, Sighting};
use super::twins::{self, Held, Step};
use super::Spawner;
use crate::discovery::jvms::decide::{decide, Decision};
use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::{self, same, FoundJvm, HostView};
use crate::registry::{Source, VmId};
use crate::session::Located;
use crate::transport::Endpoint;

/// Addresses of JVMs found by their process: the port scan leaves them alone.
pub(super) type Claimed = Arc<Mutex<HashSet<SocketAddr>>>;


/// Runs one /proc scan now (the first, before the port scan starts), then every interval.
pub(super) async fn start(spawner: Spawner, claimed: Claimed, runtimes: Runtimes) {
    let mut follower = ProcFollower {
        spawner: spawner.clone(),
        claimed,
        runtimes,
        view: Some(HostView::default()),
        keys: KeyBook::default(),
        live: HashMap::new(),
        left_alone: HashSet::new(),
        unsaid: HashSet::new(),
        holders: HashMap::new(),
    };
    follower.round().await;
    let cancel: CancellationToken = spawner.cancel.clone();
    let interval = spawner.settings.scan_interval;
    spawner.tracker.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = cancel.cancelled() => break,
            }
            follower.round().await;
        }
    });
}

enum Live {
    Session(Followed),
    Unreachable(VmId),
    /// An `--exec` host lists this JVM already: one JVM, one row (`twins`).
    Twin,
}

/// What the /proc discovery tells of containers this user cannot enter (`runtime_vms`), and
/// what it is told back (their names, whether docker reaches them).
pub(super) struct Runtimes {
    /// The containers holding a JVM this user cannot enter, each round: Docker's by full id,
    /// root's Podman's by name (with --podman-sudo).
    pub seen: tokio::sync::watch::Sender<std::collections::BTreeSet<super::runtime_vms::Seen>>,
    pub known: super::runtime_vms::Shared,
}

struct ProcFollower {
    spawner: Spawner,
    claimed: Claimed,
    runtimes: Runtimes,
    view: Option<HostView>,
    keys: KeyBook,
    /// By pid: what this discovery lists.
    live: HashMap<(u32, String), Live>,
    /// Other users' JVMs seen and left alone (each said once in the log).
    left_alone: HashSet<u32>,
    /// Docker containers' JVMs listed unreachable before docker was asked whether it
    /// reaches them: their line is said once it was.
    unsaid: HashSet<(u32, String)>,
    /// Who holds a busy JVM's agent, by the holder's socket inode (read once per connection:
    /// finding it means reading every process's fds).
    holders: HashMap<u64, Option<String>>,
}

/// A round's JVMs, with who holds each busy one (None: not busy, or jdwpmux itself holds it),
/// and the prints of those in containers, by pid.
type Round = (HostView, HashMap<u64, Option<String>>, Result<Vec<(FoundJvm, Option<String>)>, getrandom::Error>, HashMap<u32, same::Print>);

/// One /proc round, off the runtime (it reads files): the JVMs, who holds the busy ones, and
/// what tells those in containers apart.
fn scan_round(mut view: HostView, mut holders: HashMap<u64, Option<String>>) -> Round {
    let found = jvms::scan_local(&mut view).map(|found| {
        let mut seen = HashSet::new();
        let out: Vec<(FoundJvm, Option<String>)> = found
            .into_iter()
            .map(|f| {
                let busy = match (f.busy(), f.held_by) {
                    (true, Some(h)) => match h.socket {
                        Some((_, inode)) => {
                            seen.insert(inode);
                            holders.entry(inode).or_insert_with(|| jvms::local::describe_holder(&h)).clone()
                        }
                        None => jvms::local::describe_holder(&h),
                    },
                    (true, None) => Some("a debugger".to_string()),
                    (false, _) => None,
                };
                (f, busy)
            })
            .collect();
        holders.retain(|inode, _| seen.contains(inode));
        out
    });
    let prints = found.as_ref().map(|f| f.iter().filter_map(|(f, _)| Some((f.pid, print_of(f)?))).collect()).unwrap_or_default();
    (view, holders, found, prints)
}

impl ProcFollower {
    async fn round(&mut self) {
        let Some(mut view) = self.view.take() else { return };
        // JVMs our own sessions are connected to: their namespaces' tables need no new read.
        view.settled = self
            .live
            .iter()
            .filter(|(_, l)| matches!(l, Live::Session(f) if super::followed::connected(&self.spawner, f.id)))
            .map(|((pid, _), _)| *pid)
            .collect();
        let mut docker_asked = false;
        if let Ok(k) = self.runtimes.known.lock() {
            view.runtime_names = k.names.clone();
            view.docker = k.docker;
            view.podman_sudo = k.podman_sudo.clone();
            docker_asked = k.docker_asked;
        }
        let holders = std::mem::take(&mut self.holders);
        let scanned = tokio::task::spawn_blocking(move || scan_round(view, holders)).await;
        let Ok((view, holders, found, mut prints)) = scanned else { return };
        let scanner = view.uid;
        self.view = Some(view);
        self.holders = holders;
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                // What is listed stays as it was until a round can be read safely.
                warn!("the /proc scan is skipped this round: no random marker for its records: {e}");
                return;
            }
        };
        let only = &self.spawner.settings.proc_match;
        let matching = found.into_iter().filter(|(f, _)| only.is_empty() || only.iter().any(|t| f.command.contains(t.as_str())));
        // Another user's JVM in a container we cannot enter is listed (never connected to)
        // with why and what to do: nothing of it is taken, and a row says it is there.
        let (found, theirs): (Vec<_>, Vec<_>) = matching.partition(|(f, _)| self.spawner.settings.other_users || f.runs_as(scanner) || f.cannot_enter());
        self.left_alone.retain(|pid| theirs.iter().any(|(f, _)| f.pid == *pid));
        for (f, _) in &theirs {
            if self.left_alone.insert(f.pid) {
                debug!(pid = f.pid, user = f.user.as_deref().unwrap_or("unknown"), app = %f.name(), "leaving another user's JVM alone (--other-users takes it)");
            }
        }
        let (found, busy): (Vec<FoundJvm>, Vec<Option<String>>) = found.into_iter().unzip();
        let podman_sudo = self.spawner.settings.podman_sudo;
        let through_runtime: std::collections::BTreeSet<super::runtime_vms::Seen> = found
            .iter()
            .filter(|f| f.cannot_enter())
            .filter_map(|f| match &f.place {
                jvms::Place::Container { id: Some(id), .. } if docker_container(f) => Some(super::runtime_vms::Seen::Docker(id.clone())),
                jvms::Place::Container { name, .. } if podman_sudo && root_podman_container(f) => Some(super::runtime_vms::Seen::RootPodman(name.clone())),
                _ => None,
            })
            .collect();
        self.runtimes.seen.send_if_modified(|s| {
            let changed = *s != through_runtime;
            *s = through_runtime;
            changed
        });
        let decisions = decide(&found, scanner, &mut self.keys);
        if let Ok(mut c) = self.claimed.lock() {
            c.clear();
            // Only this machine's own addresses: a container's 127.0.0.1:PORT is not ours.
            c.extend(decisions.iter().filter(|d| d.unreachable.is_none() && matches!(d.endpoint, Endpoint::Tcp(_))).map(|d| d.addr));
        }
        let slots: Vec<(u32, String)> = found.iter().zip(&decisions).map(|(f, d)| (f.pid, d.key.clone())).collect();
        // The gone first: a JVM restarted on its port is a new process under the same key,
        // and takes its entry over.
        let gone: Vec<(u32, String)> = self.live.keys().filter(|k| !slots.contains(k)).cloned().collect();
        for slot in gone {
            debug!(pid = slot.0, key = %slot.1, "a JVM found by its process is gone");
            self.unsaid.remove(&slot);
            match self.live.remove(&slot) {
                Some(Live::Session(f)) => f.drop_from(&self.spawner),
                Some(Live::Unreachable(id)) => self.spawner.registry.set_held(id, false, None),
                Some(Live::Twin) | None => {}
            }
        }
        for (((f, d), slot), busy) in found.iter().zip(decisions).zip(slots).zip(busy) {
            let print = prints.remove(&f.pid);
            if self.twins(&slot, print.as_ref()) {
                continue;
            }
            let busy = busy.filter(|_| !connected(&self.spawner, self.live.get(&slot)));
            let located = Located { endpoint: d.endpoint.clone(), pid: Some(f.pid), app: f.main.as_ref().map(|m| m.to_string()), busy: busy.clone() };
            match self.live.get_mut(&slot) {
                Some(Live::Session(followed)) => {
                    followed.moved(&self.spawner, d.name.clone(), located);
                    self.spawner.registry.set_held(followed.id, true, note(busy.as_deref(), &d));
                    self.spawner.registry.set_process(followed.id, super::followed::process_info(f, scanner, None));
                }
                // Why it cannot be reached may change (docker found usable), and so may its
                // container's name (told by the runtime) and what tells it apart.
                Some(Live::Unreachable(id)) => {
                    let id = *id;
                    if docker_asked && self.unsaid.remove(&slot) {
                        if let Some(why) = &d.unreachable {
                            info!(pid = f.pid, app = %f.name(), place = %f.place, "found a JVM that cannot be reached: {why}");
                        }
                    }
                    self.spawner.registry.set_held(id, true, d.unreachable.clone());
                    self.spawner.registry.set_process(id, super::followed::process_info(f, scanner, None));
                    self.spawner.registry.set_print(id, print);
                }
                Some(Live::Twin) => {}
                None => {
                    // A VM named with --vm or found by the port scan is theirs already; the
                    // process says when it started.
                    if d.unreachable.is_none() && matches!(d.endpoint, Endpoint::Tcp(_)) {
                        if let Some(e) = self.spawner.registry.by_key(&d.key).filter(|e| e.source != Source::Proc) {
                            self.spawner.registry.set_started(e.id, super::started::of_pid(f.pid));
                            continue;
                        }
                    }
                    let s = Sighting { key: d.key.clone(), name: d.name.clone(), addr: d.addr, source: Source::Proc, host: None, located };
                    let live = match &d.unreachable {
                        None => {
                            // Said at INFO by the line naming its debugger port.
                            debug!(pid = f.pid, app = %f.name(), place = %f.place, addr = %d.addr, "found a JVM by its process");
                            let followed = self.spawner.follow(s);
                            self.spawner.registry.set_held(followed.id, true, note(busy.as_deref(), &d));
                            let info = super::followed::process_info(f, scanner, None);
                            super::followed::warn_exposed(f, &info, None);
                            self.spawner.registry.set_process(followed.id, info);
                            Live::Session(followed)
                        }
                        Some(why) => {
                            // A Docker container's, before docker was asked whether it reaches
                            // it: said once the answer is known (next rounds).
                            if docker_container(f) && !docker_asked {
                                self.unsaid.insert(slot.clone());
                            } else {
                                info!(pid = f.pid, app = %f.name(), place = %f.place, "found a JVM that cannot be reached: {why}");
                            }
                            let id = self.spawner.list_unreachable(s, why.clone());
                            let info = super::followed::process_info(f, scanner, None);
                            super::followed::warn_exposed(f, &info, None);
                            self.spawner.registry.set_process(id, info);
                            Live::Unreachable(id)
                        }
                    };
                    // One that cannot be reached is never the newest: 8700 would lead nowhere.
                    if let Live::Session(followed) = &live {
                        self.spawner.registry.set_started(followed.id, super::started::of_pid(f.pid));
                    }
                    if let Live::Session(Followed { id, .. }) | Live::Unreachable(id) = &live {
                        self.spawner.registry.set_print(*id, print);
                    }
                    self.live.insert(slot, live);
                }
            }
        }
        self.spawner.registry.announce_current();
    }

    /// Whether the JVM in `slot` is left to an `--exec` host's row this round (`twins`: the
    /// row listed first keeps it; this one, when it cannot reach the JVM, keeps nothing).
    fn twins(&mut self, slot: &(u32, String), print: Option<&same::Print>) -> bool {
        let held = match self.live.get(slot) {
            Some(Live::Session(f)) => Held::Session(f.id),
            Some(Live::Unreachable(id)) => Held::Unreachable(*id),
            Some(Live::Twin) => Held::LeftToTwin,
            None => Held::Nothing,
        };
        let exec_row = |e: &crate::registry::VmEntry| e.source == Source::Ssh;
        let own = match held {
            Held::Session(id) | Held::Unreachable(id) => Some(id),
            Held::Nothing | Held::LeftToTwin => None,
        };
        let twin = print.and_then(|p| self.spawner.registry.twin(p, own, exec_row));
        match twins::step(held, twin) {
            Step::Follow => false,
            Step::Skip => {
                if held == Held::Nothing {
                    debug!(pid = slot.0, "an --exec host lists this JVM already");
                    self.live.insert(slot.clone(), Live::Twin);
                }
                true
            }
            Step::Yield | Step::Unlist => {
                debug!(pid = slot.0, "an --exec host lists this JVM: its row stays, this one goes");
                match self.live.insert(slot.clone(), Live::Twin) {
                    Some(Live::Session(f)) => f.drop_from(&self.spawner),
                    Some(Live::Unreachable(id)) => self.spawner.registry.set_held(id, false, None),
                    Some(Live::Twin) | None => {}
                }
                true
            }
            Step::Resume => {
                self.live.remove(slot);
                false
            }
        }
    }
}

/// What tells a container's JVM apart (`discovery::jvms::same`): its pid as its container
/// counts it is read here (a file read: off the runtime), for JVMs in a container or pod only.
fn print_of(f: &FoundJvm) -> Option<same::Print> {
    let contained = matches!(f.place, jvms::Place::Container { .. } | jvms::Place::Pod { .. });
    let pid = contained.then(|| std::fs::read_to_string(format!("/proc/{}/status", f.pid)).ok()).flatten().and_then(|s| same::innermost_pid(&s));
    same::Print::of(&f.place, f.port, &f.command, pid)
}

/// Whether it runs in a Docker container (which `runtime_vms` may reach through docker).
fn docker_container(f: &FoundJvm) -> bool {
    matches!(&f.place, jvms::Place::Container { runtime: jvms::place::Runtime::Docker, id: Some(_), .. })
}

/// Whether it runs as root in a Podman container with a name (root's Podman's: a user's
/// rootless containers map root to that user), which `runtime_vms` may reach through sudo.
fn root_podman_container(f: &FoundJvm) -> bool {
    f.uid == Some(0) && matches!(&f.place, jvms::Place::Container { runtime: jvms::place::Runtime::Podman, name, .. } if !name.is_empty() && !name.starts_with('-'))
}

/// Whether jdwpmux's own session is connected to the JVM (then its connection is the one
/// the agent holds, whatever /proc could tell of it).
fn connected(spawner: &Spawner, live: Option<&Live>) -> bool {
    matches!(live, Some(Live::Session(f)) if super::followed::connected(spawner, f.id))
}

/// A note for a reachable JVM: who holds it while another debugger does, else where a
/// container's is reached.
fn note(busy: Option<&str>, d: &Decision) -> Option<String> {
    match busy {
        Some(who) => Some(super::followed::busy_note(who)),
        None => d.note.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::Reach;

    fn jvm(pid: u32, main: &str, port: u16, reach: Reach) -> FoundJvm {
        FoundJvm::sample(pid, main, port, 4000 + pid as u16, reach)
    }

    #[test]
    fn keys_agree_with_the_port_scan_and_follow_picked_ports() {
        let at = |p: u16| Reach::At(([127, 0, 0, 1], p).into());
        let found = [
            jvm(1, "Billing", 8000, at(8000)),
            jvm(2, "Worker", 0, at(40001)),
            jvm(3, "Tool", 0, at(40002)),
            jvm(4, "Tool", 0, at(40003)),
            jvm(5, "Box", 8001, Reach::Unreachable("listens on its container's loopback".into())),
        ];
        let mut book = KeyBook::default();
        let d = decide(&found, Some(1000), &mut book);
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["127.0.0.1:8000", "proc:Worker", "proc:Tool", "proc:Tool#4", "proc:Box#5!"]);
        // The first Tool ends: the second keeps its key; a Tool started again takes the first's.
        let again = decide(&[found[3].clone(), jvm(6, "Tool", 0, at(40004))], Some(1000), &mut book);
        assert_eq!(again.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["proc:Tool#4", "proc:Tool"]);
        assert_eq!(d[1].name, "127.0.0.1:40001");
        assert!(d[4].unreachable.is_some() && d[4].name == "pid 5");
    }
}
