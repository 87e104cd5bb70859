//! Containers reached through their runtime as this user (`remote::runtime`): the /proc
//! discovery tells which Docker containers hold a JVM this user cannot enter; this asks
//! Docker's CLI once whether this user may use it, names each container once
//! (`docker inspect`), and serves each as an `--exec` host (`docker exec -i NAME`) while the
//! plan says, its rows followed as any exec host's. The /proc rows of those JVMs give way to
//! the exec host's (`twins`) as soon as its far side lists them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Spawner;
use crate::discovery::jvms::view::DockerWay;
use crate::remote::runtime::cli::{self, Access};
use crate::remote::runtime::names::RuntimeName;
use crate::remote::runtime::plan::{Change, Plan};

/// What the /proc discovery reads of this each round: the names the runtime gave, and
/// whether (and how) Docker's CLI reaches containers for this user.
#[derive(Debug, Default)]
pub(crate) struct Known {
    pub names: BTreeMap<String, String>,
    pub docker: DockerWay,
    /// Docker was asked (whatever it said): `docker` is its answer.
    pub docker_asked: bool,
}

pub(crate) type Shared = Arc<Mutex<Known>>;
/// The daemon's private folder for the links' sockets: made by whoever needs it first.
pub(crate) type SharedDir = Arc<Mutex<Option<PathBuf>>>;

/// How often the plan is looked at when nothing new was seen (to end hosts of containers
/// gone for good).
const TICK: Duration = Duration::from_secs(15);
/// The most container ids whose names are kept.
const MAX_NAMES: usize = 1024;

/// Follows the containers the /proc discovery reports (full ids of Docker containers with a
/// JVM it cannot enter) until the daemon ends.
pub(super) async fn run(spawner: Spawner, mut seen: watch::Receiver<BTreeSet<String>>, known: Shared, dir: SharedDir) {
    let mut f = Follower { spawner, known, dir, access: Access::default(), plan: Plan::default(), asked: HashMap::new(), hosts: HashMap::new(), next: 0, said: None };
    let cancel = f.spawner.cancel.clone();
    loop {
        tokio::select! {
            r = seen.changed() => if r.is_err() { break },
            _ = tokio::time::sleep(TICK) => {}
            _ = cancel.cancelled() => break,
        }
        let ids = seen.borrow_and_update().clone();
        tokio::select! {
            _ = f.round(ids) => {}
            _ = cancel.cancelled() => break,
        }
    }
}

struct Follower {
    spawner: Spawner,
    known: Shared,
    dir: SharedDir,
    access: Access,
    plan: Plan,
    /// What `docker inspect` said of each container id (asked once: None, nothing usable).
    asked: HashMap<String, Option<RuntimeName>>,
    /// The exec host of each container name, ended by its token.
    hosts: HashMap<String, CancellationToken>,
    /// Numbers the hosts' files (`r0`, `r1`...).
    next: u32,
    /// What the log last said of the access (each change said once).
    said: Option<Result<(), String>>,
}

impl Follower {
    async fn round(&mut self, ids: BTreeSet<String>) {
        if ids.is_empty() && self.hosts.is_empty() {
            return;
        }
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
            return;
        }
        for id in &ids {
            if !self.asked.contains_key(id) {
                let name = cli::inspect(id).await;
                match &name {
                    Some(n) => debug!(id = %id.get(..12).unwrap_or(id), name = %n.name, service = n.service.as_deref().unwrap_or("-"), "docker names the container"),
                    None => debug!(id = %id.get(..12).unwrap_or(id), "docker gave no usable name for the container"),
                }
                self.asked.insert(id.clone(), name);
            }
        }
        if self.asked.len() > MAX_NAMES {
            self.asked.retain(|id, _| ids.contains(id));
        }
        if let Ok(mut k) = self.known.lock() {
            k.names = self.asked.iter().filter_map(|(id, n)| Some((id.clone(), n.as_ref()?.name.clone()))).collect();
        }
        let names: Vec<String> = ids.iter().filter_map(|id| Some(self.asked.get(id)?.as_ref()?.name.clone())).collect();
        for change in self.plan.seen(Instant::now(), names.iter().map(String::as_str)) {
            match change {
                Change::Start(name) => self.start(&name),
                Change::Stop(name) => {
                    if let Some(token) = self.hosts.remove(&name) {
                        info!("container {name} (docker) has had no JVM for a while: it is no longer followed");
                        token.cancel();
                        self.spawner.registry.hosts.remove(&name);
                    }
                }
                Change::TooMany(name) => warn!("container {name} (docker) is not reached: {} containers are followed through docker already", crate::remote::runtime::plan::MAX_HOSTS),
            }
        }
    }

    /// Serves the container `name` as an exec host of its own.
    fn start(&mut self, name: &str) {
        let s = &self.spawner.settings;
        let Some(spec) = cli::exec_spec(name) else { return };
        if self.spawner.registry.hosts.rows().iter().any(|r| r.host == name) {
            warn!("container {name} (docker) is not reached through docker: a host of that name is served already (--ssh or --exec)");
            return;
        }
        let Some(dir) = self.dir() else { return };
        let Ok(dest) = name.parse() else { return };
        let cfg = crate::remote::HostConfig { dest, label: name.to_string(), dir, prefix: format!("r{}", self.next), ssh: s.ssh_options.clone(), interval: s.ssh_interval, other_users: s.other_users, keyed_as: None };
        self.next += 1;
        info!("reaching the JVMs of container {name} (docker) through `{}`", spec.text);
        let token = self.spawner.cancel.child_token();
        super::remote_vms::start_one_exec(&self.spawner, cfg, spec, s.far.clone(), token.clone());
        self.hosts.insert(name.to_string(), token);
    }

    /// The private folder of the links' sockets, made now if no host made it before.
    fn dir(&self) -> Option<PathBuf> {
        let mut d = self.dir.lock().ok()?;
        if d.is_none() {
            match crate::remote::ssh::private_dir(self.spawner.settings.control.as_deref()) {
                Ok(made) => *d = Some(made),
                Err(e) => {
                    warn!("containers cannot be reached through docker: no private folder for their sockets: {e}");
                    return None;
                }
            }
        }
        d.clone()
    }
}
