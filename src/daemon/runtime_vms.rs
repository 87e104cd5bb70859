//! Containers reached through their runtime as this user (`remote::runtime`): the /proc
//! discovery tells which Docker containers hold a JVM this user cannot enter; this asks
//! Docker's CLI once whether this user may use it, names each container once
//! (`docker inspect`), and serves each as an `--exec` host (`docker exec -i NAME`) while the
//! plan says, its rows followed as any exec host's. The /proc rows of those JVMs give way to
//! the exec host's (`twins`) as soon as its far side lists them. With `--podman-sudo`, root's
//! Podman containers (named by their conmon, no CLI asked) are served the same way through
//! `sudo -n podman exec -i NAME`, once `sudo -n podman version` has answered.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Spawner;
use crate::discovery::jvms::view::{DockerWay, PodmanSudo};
use crate::remote::runtime::cli::{self, Access, Cli};
use crate::remote::runtime::names::RuntimeName;
use crate::remote::runtime::plan::{Change, Plan};

/// A container holding a JVM this user cannot enter, as the /proc discovery saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seen {
    /// A Docker container, by its full id (named by `docker inspect`).
    Docker(String),
    /// Root's Podman container, by the name its conmon shows (`--podman-sudo`).
    RootPodman(String),
}

/// What the /proc discovery reads of this each round: the names the runtime gave, and
/// whether (and how) Docker's CLI, and root's Podman through sudo, reach containers for this
/// user.
#[derive(Debug, Default)]
pub(crate) struct Known {
    /// By full id: (name, compose service), as `HostView::runtime_names`.
    pub names: BTreeMap<String, (String, Option<String>)>,
    pub docker: DockerWay,
    /// Docker was asked (whatever it said): `docker` is its answer.
    pub docker_asked: bool,
    pub podman_sudo: PodmanSudo,
}

pub(crate) type Shared = Arc<Mutex<Known>>;
/// The daemon's private folder for the links' sockets: made by whoever needs it first.
pub(crate) type SharedDir = Arc<Mutex<Option<PathBuf>>>;

/// The shared private folder, made now if no host made it before; `who` names what cannot be
/// reached when it cannot be made.
pub(super) fn private_dir(dir: &SharedDir, spawner: &Spawner, who: &str) -> Option<PathBuf> {
    let mut d = dir.lock().ok()?;
    if d.is_none() {
        match crate::remote::ssh::private_dir(spawner.settings.control.as_deref()) {
            Ok(made) => *d = Some(made),
            Err(e) => {
                warn!("{who}: no private folder for their sockets: {e}");
                return None;
            }
        }
    }
    d.clone()
}

/// How often the plan is looked at when nothing new was seen (to end hosts of containers
/// gone for good).
const TICK: Duration = Duration::from_secs(15);
/// The most container ids whose names are kept.
const MAX_NAMES: usize = 1024;

/// How a container is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Via {
    /// `docker exec -i NAME`, its rows showing this Compose service.
    Docker(Option<String>),
    /// `sudo -n podman exec -i NAME`.
    SudoPodman,
}

impl Via {
    fn runtime(&self) -> &'static str {
        match self {
            Via::Docker(_) => "docker",
            Via::SudoPodman => "podman",
        }
    }
}

/// Follows the containers the /proc discovery reports (Docker containers, and with
/// `--podman-sudo` root's Podman containers, with a JVM it cannot enter) until the daemon
/// ends.
pub(super) async fn run(spawner: Spawner, mut seen: watch::Receiver<BTreeSet<Seen>>, known: Shared, dir: SharedDir) {
    if spawner.settings.podman_sudo {
        if let Ok(mut k) = known.lock() {
            k.podman_sudo = PodmanSudo::Untried;
        }
    }
    let mut f = Follower {
        spawner,
        known,
        dir,
        access: Access::of(Cli::Docker),
        podman: Access::of(Cli::SudoPodman),
        plan: Plan::default(),
        asked: HashMap::new(),
        hosts: HashMap::new(),
        next: 0,
        said: None,
        podman_said: None,
    };
    let cancel = f.spawner.cancel.clone();
    loop {
        tokio::select! {
            r = seen.changed() => if r.is_err() { break },
            _ = tokio::time::sleep(TICK) => {}
            _ = cancel.cancelled() => break,
        }
        let now = seen.borrow_and_update().clone();
        tokio::select! {
            _ = f.round(now) => {}
            _ = cancel.cancelled() => break,
        }
    }
}

struct Follower {
    spawner: Spawner,
    known: Shared,
    dir: SharedDir,
    access: Access,
    /// Whether `sudo -n podman` answers this user (asked only with --podman-sudo).
    podman: Access,
    plan: Plan,
    /// What `docker inspect` said of each container id (asked once: None, nothing usable).
    asked: HashMap<String, Option<RuntimeName>>,
    /// The exec host of each container name, ended by its token, and its runtime.
    hosts: HashMap<String, (CancellationToken, &'static str)>,
    /// Numbers the hosts' files (`r0`, `r1`...).
    next: u32,
    /// What the log last said of the access (each change said once).
    said: Option<Result<(), String>>,
    podman_said: Option<Result<(), String>>,
}

impl Follower {
    async fn round(&mut self, seen: BTreeSet<Seen>) {
        if seen.is_empty() && self.hosts.is_empty() {
            return;
        }
        let ids: BTreeSet<String> = seen.iter().filter_map(|s| if let Seen::Docker(id) = s { Some(id.clone()) } else { None }).collect();
        let podman: Vec<String> = seen.iter().filter_map(|s| if let Seen::RootPodman(n) = s { Some(n.clone()) } else { None }).collect();
        let mut wanted: Vec<(String, Via)> = Vec::new();
        if !ids.is_empty() || self.hosts.values().any(|(_, rt)| *rt == "docker") {
            wanted.extend(self.docker_round(&ids).await);
        }
        if self.spawner.settings.podman_sudo && !podman.is_empty() && self.podman_usable().await {
            wanted.extend(podman.into_iter().map(|n| (n, Via::SudoPodman)));
        }
        for change in self.plan.seen(Instant::now(), wanted.iter().map(|(n, _)| n.as_str())) {
            match change {
                Change::Start(name) => {
                    if let Some((_, via)) = wanted.iter().find(|(n, _)| *n == name) {
                        let via = via.clone();
                        self.start(&name, &via);
                    }
                }
                Change::Stop(name) => {
                    if let Some((token, rt)) = self.hosts.remove(&name) {
                        info!("container {name} ({rt}) has had no JVM for a while: it is no longer followed");
                        token.cancel();
                        self.spawner.registry.hosts.remove(&name);
                    }
                }
                Change::TooMany(name) => warn!("container {name} is not reached: {} containers are followed through their runtime already", crate::remote::runtime::plan::MAX_HOSTS),
            }
        }
    }

    /// Whether Docker answers this user (said to the discovery), and the names of the Docker
    /// containers `ids` as it gave them.
    async fn docker_round(&mut self, ids: &BTreeSet<String>) -> Vec<(String, Via)> {
        let way = match self.access.check().await {
            Ok(version) => {
                if self.said != Some(Ok(())) {
                    info!("Docker Engine {version} answers this user: JVMs in its containers that this user cannot enter are reached through `docker exec`{}", if self.spawner.settings.far.copy { "" } else { " where the image has jdwpmux (serve --far-copy copies it in)" });
                    self.said = Some(Ok(()));
                }
                if self.spawner.settings.far.copy { DockerWay::Copying } else { DockerWay::NotCopying }
            }
            Err(why) => {
                if self.said.as_ref() != Some(&Err(why.clone())) {
                    debug!("containers are not reached through docker: {why}");
                    self.said = Some(Err(why));
                }
                DockerWay::No
            }
        };
        if let Ok(mut k) = self.known.lock() {
            k.docker = way;
            k.docker_asked = true;
        }
        if way == DockerWay::No {
            return Vec::new();
        }
        for id in ids {
            if !self.asked.contains_key(id) {
                let name = cli::inspect(id).await;
                match &name {
                    Some(n) => debug!(id = %id.get(..12).unwrap_or(id), name = %n.name, compose = n.compose.as_deref().unwrap_or("-"), "docker names the container"),
                    None => debug!(id = %id.get(..12).unwrap_or(id), "docker gave no usable name for the container"),
                }
                self.asked.insert(id.clone(), name);
            }
        }
        if self.asked.len() > MAX_NAMES {
            self.asked.retain(|id, _| ids.contains(id));
        }
        if let Ok(mut k) = self.known.lock() {
            k.names = self.asked.iter().filter_map(|(id, n)| n.as_ref().map(|n| (id.clone(), (n.name.clone(), n.compose.clone())))).collect();
        }
        ids.iter().filter_map(|id| self.asked.get(id)?.as_ref()).map(|n| (n.name.clone(), Via::Docker(n.compose.clone()))).collect()
    }

    /// Whether `sudo -n podman` answers this user now (said to the discovery: its rows say
    /// sudo's words when it does not).
    async fn podman_usable(&mut self) -> bool {
        let answer = self.podman.check().await;
        let state = match &answer {
            Ok(_) if self.spawner.settings.far.copy => PodmanSudo::Copying,
            Ok(_) => PodmanSudo::NotCopying,
            Err(why) => PodmanSudo::Refused(why.clone()),
        };
        let said = answer.as_ref().map(|_| ()).map_err(String::clone);
        if self.podman_said.as_ref() != Some(&said) {
            match &answer {
                Ok(version) => info!(
                    "root's Podman {version} answers this user through `sudo -n podman`: JVMs in root's containers are reached through `sudo -n podman exec`{}",
                    if self.spawner.settings.far.copy { "" } else { " where the image has jdwpmux (serve --far-copy copies it in)" }
                ),
                Err(why) => warn!("--podman-sudo: `sudo -n podman` was refused: {why}"),
            }
            self.podman_said = Some(said);
        }
        if let Ok(mut k) = self.known.lock() {
            k.podman_sudo = state;
        }
        answer.is_ok()
    }

    /// Serves the container `name` as an exec host of its own.
    fn start(&mut self, name: &str, via: &Via) {
        let s = &self.spawner.settings;
        let rt = via.runtime();
        let spec = match via {
            Via::Docker(compose) => cli::exec_spec(name, compose.clone()),
            Via::SudoPodman => cli::sudo_podman_exec_spec(name),
        };
        let Some(spec) = spec else { return };
        if self.spawner.registry.hosts.rows().iter().any(|r| r.host == name) {
            warn!("container {name} ({rt}) is not reached through {rt}: a host of that name is served already (--ssh or --exec)");
            return;
        }
        let Some(dir) = self.dir() else { return };
        let Ok(dest) = name.parse() else { return };
        let cfg = crate::remote::HostConfig { dest, label: name.to_string(), dir, prefix: format!("r{}", self.next), ssh: s.ssh_options.clone(), interval: s.ssh_interval, other_users: s.other_users, keyed_as: None };
        self.next += 1;
        info!("reaching the JVMs of container {name} ({rt}) through `{}`", spec.text);
        let token = self.spawner.cancel.child_token();
        super::remote_vms::start_one_exec(&self.spawner, cfg, spec, s.far.clone(), token.clone());
        self.hosts.insert(name.to_string(), (token, rt));
    }

    /// The private folder of the links' sockets, made now if no host made it before.
    fn dir(&self) -> Option<PathBuf> {
        private_dir(&self.dir, &self.spawner, "containers cannot be reached through their runtime")
    }
}
