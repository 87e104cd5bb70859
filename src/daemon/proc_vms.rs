//! JVMs on this machine found by their process (/proc), on any port and without a probe:
//! each becomes a session told where its agent listens now (a port the agent picked moves
//! after every debugger), listed while its process runs. One that cannot be reached (its
//! agent listens on a container's own loopback) is listed with a note saying what to do.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::followed::{Followed, Sighting};
use super::Spawner;
use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::{self, FoundJvm, HostView, Reach};
use crate::registry::{Source, VmId};
use crate::session::{Located, VmState};
use crate::transport::Endpoint;

/// Addresses of JVMs found by their process: the port scan leaves them alone.
pub(super) type Claimed = Arc<Mutex<HashSet<SocketAddr>>>;

/// What one round decided about one JVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub key: String,
    pub name: String,
    pub addr: SocketAddr,
    /// None: reachable at `addr`; Some: why not.
    pub unreachable: Option<String>,
    /// Something worth a note while it is reachable (a container's own address).
    pub note: Option<String>,
}

/// Keys and names for a round's JVMs. A JVM whose agent has a port of its own is keyed by
/// its address (as the port scan and `--vm` key it, so that nothing is listed twice); one
/// whose agent picked its port, by what it runs (`jvms::keys`: it keeps its key while it
/// runs, and a restarted one takes it again).
pub(crate) fn decide(found: &[FoundJvm], book: &mut KeyBook) -> Vec<Decision> {
    let picked: Vec<FoundJvm> = found.iter().filter(|f| f.agent.ephemeral() && matches!(f.reach, Reach::At(_))).cloned().collect();
    let mut picked_keys = book.keys("proc:", &picked).into_iter();
    found
        .iter()
        .map(|f| {
            let name = f.name();
            match &f.reach {
                Reach::At(addr) => {
                    let key = if f.agent.ephemeral() { picked_keys.next().unwrap_or_default() } else { addr.to_string() };
                    let note = f.other_net.then(|| format!("runs in another network namespace (a container); reached at {addr}"));
                    Decision { key, name: addr.to_string(), addr: *addr, unreachable: None, note }
                }
                Reach::Unreachable(why) => Decision {
                    key: format!("proc:{name}#{}!", f.pid),
                    name: format!("pid {}", f.pid),
                    addr: SocketAddr::from(([0, 0, 0, 0], f.port.unwrap_or(0))),
                    unreachable: Some(why.clone()),
                    note: None,
                },
            }
        })
        .collect()
}

/// Runs one /proc scan now (the first, before the port scan starts), then every interval.
pub(super) async fn start(spawner: Spawner, claimed: Claimed) {
    let mut follower = ProcFollower { spawner: spawner.clone(), claimed, view: Some(HostView::default()), keys: KeyBook::default(), live: HashMap::new() };
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
}

struct ProcFollower {
    spawner: Spawner,
    claimed: Claimed,
    view: Option<HostView>,
    keys: KeyBook,
    /// By pid: what this discovery lists.
    live: HashMap<(u32, String), Live>,
}

impl ProcFollower {
    async fn round(&mut self) {
        let Some(mut view) = self.view.take() else { return };
        let scanned = tokio::task::spawn_blocking(move || {
            let found = jvms::scan_local(&mut view);
            (view, found)
        })
        .await;
        let Ok((view, found)) = scanned else { return };
        self.view = Some(view);
        let only = &self.spawner.settings.proc_match;
        let found: Vec<FoundJvm> = found.into_iter().filter(|f| only.is_empty() || only.iter().any(|t| f.command.contains(t.as_str()))).collect();
        let decisions = decide(&found, &mut self.keys);
        if let Ok(mut c) = self.claimed.lock() {
            c.clear();
            c.extend(decisions.iter().filter(|d| d.unreachable.is_none()).map(|d| d.addr));
        }
        let slots: Vec<(u32, String)> = found.iter().zip(&decisions).map(|(f, d)| (f.pid, d.key.clone())).collect();
        // The gone first: a JVM restarted on its port is a new process under the same key,
        // and takes its entry over.
        let gone: Vec<(u32, String)> = self.live.keys().filter(|k| !slots.contains(k)).cloned().collect();
        for slot in gone {
            debug!(pid = slot.0, key = %slot.1, "a JVM found by its process is gone");
            match self.live.remove(&slot) {
                Some(Live::Session(f)) => f.drop_from(&self.spawner),
                Some(Live::Unreachable(id)) => self.spawner.registry.set_held(id, false, None),
                None => {}
            }
        }
        for ((f, d), slot) in found.iter().zip(decisions).zip(slots) {
            let located = Located { endpoint: Endpoint::Tcp(d.addr), pid: Some(f.pid), app: f.main.as_ref().map(|m| m.to_string()) };
            match self.live.get_mut(&slot) {
                Some(Live::Session(followed)) => {
                    followed.moved(&self.spawner, d.name.clone(), located);
                    let note = note(&self.spawner, followed.id, f, &d);
                    self.spawner.registry.set_held(followed.id, true, note);
                    self.spawner.registry.set_process(followed.id, super::followed::process_info(f));
                }
                Some(Live::Unreachable(_)) => {}
                None => {
                    // A VM named with --vm or found by the port scan is theirs already.
                    if d.unreachable.is_none() && self.spawner.registry.by_key(&d.key).is_some_and(|e| e.source != Source::Proc) {
                        continue;
                    }
                    let s = Sighting { key: d.key.clone(), name: d.name.clone(), addr: d.addr, source: Source::Proc, host: None, located };
                    let live = match &d.unreachable {
                        None => {
                            info!(pid = f.pid, app = %f.name(), addr = %d.addr, "found a JVM by its process");
                            let followed = self.spawner.follow(s);
                            let note = note(&self.spawner, followed.id, f, &d);
                            self.spawner.registry.set_held(followed.id, true, note);
                            self.spawner.registry.set_process(followed.id, super::followed::process_info(f));
                            Live::Session(followed)
                        }
                        Some(why) => {
                            info!(pid = f.pid, app = %f.name(), "found a JVM that cannot be reached: {why}");
                            let id = self.spawner.list_unreachable(s, why.clone());
                            self.spawner.registry.set_process(id, super::followed::process_info(f));
                            Live::Unreachable(id)
                        }
                    };
                    self.live.insert(slot, live);
                }
            }
        }
    }

}

/// A note for a reachable JVM: where a container's is reached, or that another debugger
/// holds it while jdwpmux cannot connect.
fn note(spawner: &Spawner, id: VmId, f: &FoundJvm, d: &Decision) -> Option<String> {
    let connected = spawner.registry.get(id).is_some_and(|e| e.handle.status().state == VmState::Ready);
    if !connected && f.attached && !f.listening {
        return Some("another debugger is attached to it directly; jdwpmux connects when it leaves".into());
    }
    d.note.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let d = decide(&found, &mut book);
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["127.0.0.1:8000", "proc:Worker", "proc:Tool", "proc:Tool#4", "proc:Box#5!"]);
        // The first Tool ends: the second keeps its key; a Tool started again takes the first's.
        let again = decide(&[found[3].clone(), jvm(6, "Tool", 0, at(40004))], &mut book);
        assert_eq!(again.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["proc:Tool#4", "proc:Tool"]);
        assert_eq!(d[1].name, "127.0.0.1:40001");
        assert!(d[4].unreachable.is_some() && d[4].name == "pid 5");
    }
}
