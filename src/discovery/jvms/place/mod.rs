//! Where a JVM runs, named: on the host itself, in a container (Podman, Docker), in a
//! Kubernetes pod, or in a bare network namespace. Decided from what the host's /proc and a
//! few well-known folders show of the process (`ProcFacts`, `HostFacts`), by these rules
//! (the shapes measured with rootful and rootless Podman; Docker's and Kubernetes' as their
//! cgroup drivers name them):
//!
//! | what is seen                                                     | where it runs          |
//! |------------------------------------------------------------------|------------------------|
//! | a cgroup `.../kubepods.../pod<uid>/...`                          | pod, named by the `/var/log/pods/<ns>_<pod>_<uid>` entry |
//! | a cgroup `libpod-<64 hex>[.scope]`                               | Podman container (rootful) |
//! | a cgroup `docker-<64 hex>.scope` or `/docker/<64 hex>`           | Docker container, named by its `config.v2.json` |
//! | a cgroup `cri-containerd-<id>.scope` / `crio-<id>` outside a pod | containerd / CRI-O container |
//! | an ancestor `conmon ... -n NAME -c ID` (up to `MAX_ANCESTORS` up) | Podman container (rootless, cgroup `/`, too) |
//! | `container=X` in its environment                                 | container of runtime X |
//! | another network namespace, none of the above                     | network namespace, named by `/run/netns` |
//! | none of these                                                    | the host               |
//!
//! Rows are tried top to bottom; a container in our pid namespace (`--pid=host`) is still a
//! container. Everything here came from processes that anyone may start and name: every
//! name is cut at `MAX_NAME` characters and kept printable. Pure.

use std::fmt;

use crate::safe_text;

mod ids;

use ids::{conmon, from_cgroup, Cgroup};
pub use ids::{docker_id, is_id};

/// Ancestors of a JVM whose command lines are read: a JVM may be started by a shell (or
/// two, an entrypoint script and `sh -c`) under the container's `conmon`.
pub const MAX_ANCESTORS: usize = 4;
/// Longest name kept (a container, pod, namespace or network namespace name).
pub const MAX_NAME: usize = 128;
/// Cgroup paths kept per process (cgroup v1 has one line per hierarchy; most are alike).
pub const MAX_CGROUPS: usize = 16;
/// Bytes kept of each cgroup path.
pub const MAX_CGROUP_PATH: usize = 1024;
/// Entries of `/var/log/pods` and `/var/log/containers` kept, and `/run/netns` names.
pub const MAX_HOST_ENTRIES: usize = 4096;
/// Bytes of a Docker container's `config.v2.json` parsed at most (it holds the container's
/// whole configuration; a few KiB is usual).
pub const MAX_DOCKER_CONFIG: usize = 1024 * 1024;

/// The container runtime a container was started by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runtime {
    Podman,
    Docker,
    Containerd,
    CriO,
    /// What `container=` said (`lxc`, `systemd-nspawn`, ...).
    Other(String),
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtime::Podman => "podman",
            Runtime::Docker => "docker",
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
            Runtime::Other(s) => s,
        })
    }
}

/// Where a process runs, as seen from its host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Place {
    #[default]
    Host,
    /// `name` may be empty when nothing named it; `id` is the runtime's container id;
    /// `compose` the Compose service that made it (`shop/orders`: project and service), as
    /// its labels say. Shown only: the container is known by its name.
    Container { runtime: Runtime, name: String, id: Option<String>, compose: Option<String> },
    /// `namespace` and `name` are empty when no `/var/log/pods` entry named the pod (then
    /// `name` is its hostname when that was readable). `several`: the pod is known to have
    /// several containers (a pod followed through the API server says so; `/proc` cannot
    /// tell): then its WHERE names the container too, `pod shop/orders-5f7c9-x8k2p (app)`.
    Pod { namespace: String, name: String, uid: String, container: Option<String>, several: bool },
    Netns { name: Option<String> },
    /// As jdwpmux on another host said it (`Display` of one of the above there), already
    /// bounded by the link's frame; its name is kept as the workload, as there.
    Reported(String),
}

impl Place {
    /// The `serve --exec` that reaches it through its runtime's exec (no login needed on
    /// the machine it runs on), when its runtime and name are known.
    pub fn exec_hint(&self) -> Option<String> {
        let safe = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        match self {
            Place::Container { runtime: rt @ (Runtime::Podman | Runtime::Docker), name, .. } if safe(name) => {
                Some(format!("serve --exec {name}='{rt} exec -i {name}' --far-copy"))
            }
            Place::Pod { namespace, name, container, .. } if safe(namespace) && safe(name) => {
                let c = container.as_deref().filter(|c| safe(c)).map(|c| format!(" -c {c}")).unwrap_or_default();
                Some(format!("serve --exec {name}='kubectl exec -i -n {namespace} {name}{c} --' --far-copy"))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Host => f.write_str("-"),
            Place::Container { runtime, name, compose, .. } => {
                f.write_str("container ")?;
                if !name.is_empty() {
                    write!(f, "{name} ")?;
                }
                match compose {
                    Some(c) => write!(f, "({runtime}, compose {c})"),
                    None => write!(f, "({runtime})"),
                }
            }
            Place::Pod { namespace, name, uid, container, several } => {
                match (namespace.is_empty(), name.is_empty()) {
                    (false, _) => write!(f, "pod {namespace}/{name}")?,
                    (true, false) => write!(f, "pod {name}")?,
                    (true, true) => write!(f, "pod {}", uid.get(..8).unwrap_or(uid))?,
                }
                match container {
                    Some(c) if *several => write!(f, " ({c})"),
                    _ => Ok(()),
                }
            }
            Place::Netns { name: Some(n) } => write!(f, "netns {n}"),
            Place::Netns { name: None } => f.write_str("network namespace"),
            Place::Reported(text) => f.write_str(text),
        }
    }
}

impl Place {
    /// It runs in a container or a pod (not merely in a namespace of its own).
    pub fn contained(&self) -> bool {
        matches!(self, Place::Container { .. } | Place::Pod { .. } | Place::Reported(_))
    }

    /// What stays the same when the container is restarted or the pod replaced, so that the
    /// JVM in it may keep its debugger port: a container's name, a pod's name less the
    /// suffix its controller generated (with its namespace: `shop/orders`), a network
    /// namespace's name. None for the host and for what has no name.
    pub fn workload(&self) -> Option<String> {
        match self {
            Place::Host | Place::Netns { name: None } => None,
            Place::Container { name, .. } => (!name.is_empty()).then(|| name.clone()),
            Place::Pod { namespace, name, .. } if !name.is_empty() => {
                let base = pod_base_name(name);
                Some(if namespace.is_empty() { base.to_string() } else { format!("{namespace}/{base}") })
            }
            Place::Pod { .. } => None,
            Place::Netns { name: Some(n) } => Some(n.clone()),
            Place::Reported(text) => Some(text.clone()),
        }
    }
}

/// The characters Kubernetes draws generated name suffixes from (`rand.String` and
/// `rand.SafeEncodeString`: no vowels, no 0, 1 or 3, so that no word is ever made).
const K8S_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A pod's name less what its controller added: `NAME-<hash>-<5>` (a Deployment's
/// ReplicaSet), `NAME-<5>` (a ReplicaSet, DaemonSet or Job), `NAME-<minute>-<5>` (a CronJob's
/// Job). A StatefulSet's `NAME-N`, and any name without such a suffix, is kept whole: a real
/// word always has a vowel or a 0/1/3 in it, which the generated suffixes never hold.
pub fn pod_base_name(name: &str) -> &str {
    let generated = |s: &str, lens: std::ops::RangeInclusive<usize>| lens.contains(&s.len()) && s.bytes().all(|b| K8S_ALPHABET.contains(&b));
    let Some((rest, last)) = name.rsplit_once('-') else { return name };
    if rest.is_empty() || !generated(last, 5..=5) {
        return name;
    }
    // The pod template's hash (a uint32's decimal digits, each drawn from the alphabet:
    // 10 characters, rarely fewer), or the digits of a CronJob's scheduled minute (and of
    // the template hashes Kubernetes before 1.8 gave).
    match rest.rsplit_once('-') {
        Some((base, hash))
            if !base.is_empty() && (generated(hash, 6..=10) || (6..=10).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_digit())) =>
        {
            base
        }
        _ => rest,
    }
}

/// What one process shows of where it runs (`view::ProcView` keeps it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcFacts {
    /// The distinct paths of `/proc/PID/cgroup`.
    pub cgroups: Vec<String>,
    /// `container=` of its environment (readable by its owner and root only).
    pub container_env: Option<String>,
    /// `HOSTNAME=` of its environment: a container's id or name, a pod's name.
    pub hostname_env: Option<String>,
    /// Its ancestors' program names (their command line's first word, less its folder), its
    /// parent's first: only what `conmon` says of them is kept, the rest may be long.
    pub ancestors: Vec<String>,
    /// What the nearest `conmon` among them watches.
    pub conmon: Option<Conmon>,
    /// The `Name` of the Docker container its cgroup names.
    pub docker_name: Option<String>,
    /// That container's Compose service (see [`compose`]), from its labels.
    pub docker_compose: Option<String>,
}

/// `conmon ... -n NAME ... -c ID`: the container Podman (or CRI-O) runs it for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conmon {
    pub name: Option<String>,
    pub id: Option<String>,
}

/// The labels Docker Compose puts on the containers it makes.
pub const COMPOSE_PROJECT: &str = "com.docker.compose.project";
pub const COMPOSE_SERVICE: &str = "com.docker.compose.service";

/// How a container's Compose service is shown: `project/service`, or `service` alone when no
/// project is said. None without a service, or when either is no name (Compose's are
/// `[a-zA-Z0-9._-]`, 64 bytes at most here).
pub fn compose(project: &str, service: &str) -> Option<String> {
    let ok = |s: &str| !s.is_empty() && s.len() <= MAX_NAME && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) && !s.starts_with(['.', '-']);
    let (project, service) = (project.trim(), service.trim());
    if !ok(service) {
        return None;
    }
    Some(if ok(project) { format!("{project}/{service}") } else { service.to_string() })
}

/// What the host shows of its containers (`view::HostView` keeps it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// Entries of `/var/log/pods`: `<namespace>_<pod>_<uid>`.
    pub pods: Vec<String>,
    /// Entries of `/var/log/containers`: `<pod>_<namespace>_<container>-<id>.log`.
    pub containers: Vec<String>,
    /// `/run/netns` names with their namespace's inode.
    pub netns: Vec<(u64, String)>,
}

impl ProcFacts {
    /// Takes `/proc/PID/cgroup` (`N:controllers:/path` lines).
    pub fn set_cgroups(&mut self, text: &str) {
        self.cgroups.clear();
        for line in text.lines() {
            let Some(path) = line.splitn(3, ':').nth(2) else { continue };
            let path = cut(path, MAX_CGROUP_PATH);
            if !self.cgroups.contains(&path) {
                if self.cgroups.len() == MAX_CGROUPS {
                    break;
                }
                self.cgroups.push(path);
            }
        }
    }

    /// Takes the `container=` and `HOSTNAME=` entries among `entries`.
    pub fn set_env<'a>(&mut self, entries: impl Iterator<Item = &'a [u8]>) {
        (self.container_env, self.hostname_env) = (None, None);
        for e in entries {
            let value = |v: &[u8]| Some(name(&String::from_utf8_lossy(&v[..v.len().min(MAX_NAME * 4)])));
            if let Some(v) = e.strip_prefix(b"container=") {
                self.container_env = value(v);
            } else if let Some(v) = e.strip_prefix(b"HOSTNAME=") {
                self.hostname_env = value(v);
            }
        }
    }

    /// Adds an ancestor's command line (`/proc/PPID/cmdline`); past `MAX_ANCESTORS`, none.
    pub fn add_ancestor(&mut self, raw: &[u8]) {
        if self.ancestors.len() == MAX_ANCESTORS {
            return;
        }
        let argv = super::cmdline::split_cmdline(raw);
        let prog = argv.first().map(|a| name(a.rsplit('/').next().unwrap_or(a))).unwrap_or_default();
        if self.conmon.is_none() {
            self.conmon = conmon(&argv);
        }
        self.ancestors.push(prog);
    }

    /// Takes a Docker container's `config.v2.json`: only its `Name` (`"/billing"`) and its
    /// Compose labels are kept.
    pub fn set_docker_config(&mut self, json: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Config {
            #[serde(rename = "Name")]
            name: String,
            #[serde(rename = "Config", default)]
            config: Option<Inner>,
        }
        #[derive(serde::Deserialize)]
        struct Inner {
            #[serde(rename = "Labels", default)]
            labels: Option<std::collections::HashMap<String, serde_json::Value>>,
        }
        let c = (json.len() <= MAX_DOCKER_CONFIG).then(|| serde_json::from_slice::<Config>(json).ok()).flatten();
        let labels = c.as_ref().and_then(|c| c.config.as_ref()?.labels.as_ref());
        let label = |k: &str| labels.and_then(|l| l.get(k)?.as_str()).unwrap_or("");
        self.docker_compose = compose(label(COMPOSE_PROJECT), label(COMPOSE_SERVICE));
        self.docker_name = c.map(|c| name(c.name.trim_start_matches('/'))).filter(|n| !n.is_empty());
    }
}

impl HostFacts {
    /// Takes the `pods` record: `pods/ENTRY` and `containers/ENTRY` lines.
    pub fn set_pods(&mut self, text: &str) {
        self.pods.clear();
        self.containers.clear();
        for line in text.lines() {
            let (list, entry) = match line.split_once('/') {
                Some(("pods", e)) => (&mut self.pods, e),
                Some(("containers", e)) => (&mut self.containers, e),
                _ => continue,
            };
            // A folder with no entries globs to `*`.
            if list.len() < MAX_HOST_ENTRIES && !entry.is_empty() && entry != "*" && entry.len() <= MAX_NAME * 3 {
                list.push(entry.to_string());
            }
        }
        // Globs and folder reads list in different orders.
        self.pods.sort();
        self.containers.sort();
    }

    /// Takes the `netns` record: `INODE /run/netns/NAME` lines (as `ls -iLd` prints them).
    pub fn set_netns(&mut self, text: &str) {
        self.netns.clear();
        for line in text.lines() {
            let Some((inode, path)) = line.trim_start().split_once(' ') else { continue };
            let (Ok(inode), Some(n)) = (inode.parse(), path.trim_start().strip_prefix("/run/netns/")) else { continue };
            if self.netns.len() < MAX_HOST_ENTRIES && !n.is_empty() && n != "*" {
                self.netns.push((inode, name(n)));
            }
        }
        self.netns.sort_by(|a, b| a.1.cmp(&b.1));
    }
}

/// Where a process runs. `other_net`: its network namespace's inode, when that is not the
/// scanner's.
pub fn place_of(p: &ProcFacts, host: &HostFacts, other_net: Option<u64>) -> Place {
    let cg = p.cgroups.iter().find_map(|c| from_cgroup(c));
    if let Some(Cgroup { pod_uid: Some(uid), id, .. }) = &cg {
        return pod(host, uid, id.as_deref(), p.hostname_env.as_deref());
    }
    let conmon = p.conmon.as_ref();
    if let Some(Cgroup { runtime: Some(runtime), id, .. }) = cg {
        let named = match runtime {
            Runtime::Docker => p.docker_name.clone(),
            _ => conmon.and_then(|c| c.name.clone()),
        };
        let compose = if runtime == Runtime::Docker { p.docker_compose.clone() } else { None };
        let name = named.or_else(|| id.as_ref().map(|i| i[..12].to_string())).unwrap_or_default();
        return Place::Container { runtime, name, id, compose };
    }
    if let Some(Conmon { name, id }) = conmon {
        let name = name.clone().or_else(|| p.hostname_env.clone()).unwrap_or_default();
        return Place::Container { runtime: Runtime::Podman, name, id: id.clone(), compose: None };
    }
    if let Some(kind) = &p.container_env {
        let runtime = match kind.as_str() {
            "podman" => Runtime::Podman,
            "docker" => Runtime::Docker,
            _ => Runtime::Other(kind.clone()),
        };
        return Place::Container { runtime, name: p.hostname_env.clone().unwrap_or_default(), id: None, compose: None };
    }
    match other_net {
        Some(net) => Place::Netns { name: host.netns.iter().find(|(i, _)| *i == net).map(|(_, n)| n.clone()) },
        None => Place::Host,
    }
}

/// The pod of `uid`, named by its `/var/log/pods` entry (`<namespace>_<pod>_<uid>`), its
/// container by the `/var/log/containers` entry of its id (`<pod>_<namespace>_<container>-<id>.log`).
fn pod(host: &HostFacts, uid: &str, id: Option<&str>, hostname: Option<&str>) -> Place {
    let named = host.pods.iter().find_map(|e| {
        let (rest, u) = e.rsplit_once('_')?;
        let (ns, pod) = rest.split_once('_')?;
        (u == uid).then(|| (name(ns), name(pod)))
    });
    let container = id.and_then(|id| {
        host.containers.iter().find_map(|e| {
            let rest = e.strip_suffix(".log")?.strip_suffix(id)?.strip_suffix('-')?;
            let mut f = rest.split('_');
            let (_, _, c, None) = (f.next()?, f.next()?, f.next()?, f.next()) else { return None };
            Some(name(c))
        })
    });
    let (namespace, name_) = named.unwrap_or_else(|| (String::new(), hostname.map(name).unwrap_or_default()));
    Place::Pod { namespace, name: name_, uid: uid.to_string(), container, several: false }
}

/// A name from untrusted text: printable, at most `MAX_NAME` characters.
pub(super) fn name(s: &str) -> String {
    let cut: String = s.chars().take(MAX_NAME).collect();
    safe_text::shown(&cut).into_owned()
}

/// `s` cut at `max` bytes, on a character boundary.
fn cut(s: impl Into<String>, max: usize) -> String {
    let mut s = s.into();
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests;
