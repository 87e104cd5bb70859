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
    /// `name` may be empty when nothing named it; `id` is the runtime's container id.
    Container { runtime: Runtime, name: String, id: Option<String> },
    /// `namespace` and `name` are empty when no `/var/log/pods` entry named the pod (then
    /// `name` is its hostname when that was readable).
    Pod { namespace: String, name: String, uid: String, container: Option<String> },
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
            Place::Container { runtime, name, .. } if name.is_empty() => write!(f, "container ({runtime})"),
            Place::Container { runtime, name, .. } => write!(f, "container {name} ({runtime})"),
            Place::Pod { namespace, name, uid, .. } => match (namespace.is_empty(), name.is_empty()) {
                (false, _) => write!(f, "pod {namespace}/{name}"),
                (true, false) => write!(f, "pod {name}"),
                (true, true) => write!(f, "pod {}", uid.get(..8).unwrap_or(uid)),
            },
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
}

/// `conmon ... -n NAME ... -c ID`: the container Podman (or CRI-O) runs it for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conmon {
    pub name: Option<String>,
    pub id: Option<String>,
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

    /// Takes a Docker container's `config.v2.json`: only its `Name` (`"/billing"`) is kept.
    pub fn set_docker_config(&mut self, json: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Config {
            #[serde(rename = "Name")]
            name: String,
        }
        self.docker_name = (json.len() <= MAX_DOCKER_CONFIG)
            .then(|| serde_json::from_slice::<Config>(json).ok())
            .flatten()
            .map(|c| name(c.name.trim_start_matches('/')))
            .filter(|n| !n.is_empty());
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
        let name = named.or_else(|| id.as_ref().map(|i| i[..12].to_string())).unwrap_or_default();
        return Place::Container { runtime, name, id };
    }
    if let Some(Conmon { name, id }) = conmon {
        let name = name.clone().or_else(|| p.hostname_env.clone()).unwrap_or_default();
        return Place::Container { runtime: Runtime::Podman, name, id: id.clone() };
    }
    if let Some(kind) = &p.container_env {
        let runtime = match kind.as_str() {
            "podman" => Runtime::Podman,
            "docker" => Runtime::Docker,
            _ => Runtime::Other(kind.clone()),
        };
        return Place::Container { runtime, name: p.hostname_env.clone().unwrap_or_default(), id: None };
    }
    match other_net {
        Some(net) => Place::Netns { name: host.netns.iter().find(|(i, _)| *i == net).map(|(_, n)| n.clone()) },
        None => Place::Host,
    }
}

/// What one cgroup path says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Cgroup {
    pod_uid: Option<String>,
    runtime: Option<Runtime>,
    id: Option<String>,
}

/// The container (and pod) a cgroup path names, if any: its last container id, with the
/// runtime its prefix tells, and the pod around it.
fn from_cgroup(path: &str) -> Option<Cgroup> {
    let mut found = Cgroup::default();
    let mut parent = "";
    for part in path.split('/') {
        if let Some(uid) = pod_uid(part, parent) {
            found.pod_uid = Some(uid);
        }
        let scope = part.strip_suffix(".scope").unwrap_or(part);
        let known = [("libpod-", Runtime::Podman), ("docker-", Runtime::Docker), ("cri-containerd-", Runtime::Containerd), ("crio-", Runtime::CriO)];
        let hit = known.into_iter().find_map(|(prefix, r)| scope.strip_prefix(prefix).filter(|id| is_id(id)).map(|id| (Some(r), id)));
        // cgroupfs: the bare id under `docker` or under a pod's folder.
        let bare = || (is_id(part) && (parent == "docker" || found.pod_uid.is_some())).then(|| ((parent == "docker").then_some(Runtime::Docker), part));
        if let Some((runtime, id)) = hit.or_else(bare) {
            found.runtime = runtime;
            found.id = Some(id.to_string());
        }
        parent = part;
    }
    found.id.is_some().then_some(found)
}

/// A pod's uid from its cgroup folder: `pod<uid>` (cgroupfs, under `kubepods...`) or
/// `kubepods-<class>-pod<uid with _>.slice` (systemd).
fn pod_uid(part: &str, parent: &str) -> Option<String> {
    let uid = if let Some(slice) = part.strip_prefix("kubepods").and_then(|s| s.strip_suffix(".slice")) {
        slice.rsplit_once("-pod")?.1.replace('_', "-")
    } else if parent.starts_with("kubepods") || matches!(parent, "burstable" | "besteffort" | "guaranteed") {
        part.strip_prefix("pod")?.to_string()
    } else {
        return None;
    };
    let ok = uid.len() == 36 && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    ok.then_some(uid)
}

/// A container id: 64 lowercase hex digits.
fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The Docker container a process's `/proc/PID/cgroup` names (its `config.v2.json` is read
/// for no other process: `scan.sh`'s `jdwpmux_docker` is the same rule in sh).
pub fn docker_id(cgroup: &str) -> Option<String> {
    let mut p = ProcFacts::default();
    p.set_cgroups(cgroup);
    p.cgroups.iter().find_map(|c| from_cgroup(c).filter(|c| c.runtime == Some(Runtime::Docker) && c.pod_uid.is_none())?.id)
}

/// `conmon ... -n NAME ... -c ID`: the name and id Podman gave the container it watches.
/// The values conmon passes on to others (`--exit-command-arg -n`, say) are no option of
/// its own; the first of each option counts.
fn conmon(argv: &[String]) -> Option<Conmon> {
    let prog = argv.first()?;
    if prog.rsplit('/').next() != Some("conmon") {
        return None;
    }
    let mut c = Conmon::default();
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned());
        match key {
            "-n" | "--name" => {
                let v = value();
                c.name = c.name.take().or(v.map(|n| name(&n)).filter(|n| !n.is_empty()));
            }
            "-c" | "--cid" => {
                let v = value();
                c.id = c.id.take().or(v.filter(|i| is_id(i)));
            }
            "--exit-command-arg" | "--runtime-arg" | "--runtime-opt" | "--exit-command" => {
                value();
            }
            _ => {}
        }
    }
    Some(c)
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
    Place::Pod { namespace, name: name_, uid: uid.to_string(), container }
}

/// A name from untrusted text: printable, at most `MAX_NAME` characters.
fn name(s: &str) -> String {
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
mod tests {
    use super::*;

    const ID: &str = "3f1c9e0b7d2a4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";
    const UID: &str = "0f5a2c1e-7b3d-4e9a-8c6f-1d2e3f4a5b6c";

    fn cgroups(text: &str) -> ProcFacts {
        let mut p = ProcFacts::default();
        p.set_cgroups(text);
        p
    }

    /// conmon's command line as rootful Podman 4.3 started it here (runc, cgroupfs).
    fn conmon_args() -> Vec<String> {
        format!(
            "/usr/bin/conmon --api-version 1 -c {ID} -u {ID} -r /usr/bin/runc -b /var/lib/containers/storage/overlay-containers/{ID}/userdata \
             -p /run/containers/storage/overlay-containers/{ID}/userdata/pidfile -n billing-api --exit-dir /run/libpod/exits --full-attach \
             -l k8s-file:/var/lib/containers/storage/overlay-containers/{ID}/userdata/ctr.log --log-level warning --runtime-arg --log-format=json \
             --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg /var/lib/containers/storage --exit-command-arg -n \
             --exit-command-arg container --exit-command-arg cleanup --exit-command-arg {ID}"
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    }

    fn host() -> HostFacts {
        let mut h = HostFacts::default();
        h.set_pods(&format!(
            "pods/shop_orders-7d9f8b6c4-x2z9q_{UID}\npods/kube-system_coredns-5d78c9869d-8kxgb_11111111-2222-3333-4444-555555555555\ncontainers/orders-7d9f8b6c4-x2z9q_shop_app-{ID}.log\ncontainers/orders-7d9f8b6c4-x2z9q_shop_istio-proxy-{}.log\n",
            "a".repeat(64)
        ));
        h.set_netns("4026532388 /run/netns/jmh1\n4026532252 /run/netns/jmh2\n");
        h
    }

    fn container(runtime: Runtime, name: &str, id: Option<&str>) -> Place {
        Place::Container { runtime, name: name.into(), id: id.map(String::from) }
    }

    /// Each rule, with cgroups shaped as the machines of design-containers.md show them.
    #[test]
    fn places_by_rule() {
        let pod = |container: Option<&str>| Place::Pod {
            namespace: "shop".into(),
            name: "orders-7d9f8b6c4-x2z9q".into(),
            uid: UID.into(),
            container: container.map(String::from),
        };
        let uid_ = UID.replace('-', "_");
        let rows: Vec<(String, Place)> = vec![
            // Rootful Podman, cgroupfs (cgroup v1 hybrid: one line per hierarchy).
            (format!("12:pids:/libpod_parent/libpod-{ID}\n1:name=systemd:/libpod_parent/libpod-{ID}\n0::/"), container(Runtime::Podman, &ID[..12], Some(ID))),
            // Rootful Podman under systemd, also with its `container` sub-cgroup.
            (format!("0::/machine.slice/libpod-{ID}.scope"), container(Runtime::Podman, &ID[..12], Some(ID))),
            (format!("0::/machine.slice/libpod-{ID}.scope/container"), container(Runtime::Podman, &ID[..12], Some(ID))),
            // conmon's own cgroup is no container's.
            (format!("0::/machine.slice/libpod-conmon-{ID}.scope"), Place::Host),
            (format!("0::/system.slice/docker-{ID}.scope"), container(Runtime::Docker, &ID[..12], Some(ID))),
            (format!("4:memory:/docker/{ID}"), container(Runtime::Docker, &ID[..12], Some(ID))),
            (format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"), pod(Some("app"))),
            (format!("0::/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"), pod(Some("app"))),
            (format!("4:memory:/kubepods/besteffort/pod{UID}/{ID}"), pod(Some("app"))),
            // A pod's own sandbox folder without a container id, and a sibling's id.
            (format!("4:memory:/kubepods/besteffort/pod{UID}"), Place::Host),
            (format!("4:memory:/kubepods/burstable/pod{UID}/{}", "b".repeat(64)), pod(None)),
            (format!("0::/system.slice/crio-{ID}.scope"), container(Runtime::CriO, &ID[..12], Some(ID))),
            // Not containers: this machine's own sandbox (32 hex), a user session, too short an id.
            ("4:memory:/process_api/117507b6d6ba7030c70a2f004bbbc3a8\n0::/".into(), Place::Host),
            ("0::/user.slice/user-1000.slice/session-3.scope".into(), Place::Host),
            (format!("0::/system.slice/docker-{}.scope", &ID[..63]), Place::Host),
            (String::new(), Place::Host),
        ];
        for (text, want) in rows {
            assert_eq!(place_of(&cgroups(&text), &host(), None), want, "{text}");
        }
    }

    #[test]
    fn names_from_conmon_docker_and_the_environment() {
        // Rootful Podman: the cgroup gives the id, conmon (the JVM's grandparent, under a
        // shell) the name.
        let mut p = cgroups(&format!("1:name=systemd:/libpod_parent/libpod-{ID}"));
        p.add_ancestor(b"/bin/sh\0-c\0java -jar app.jar\0");
        p.add_ancestor(conmon_args().join("\0").as_bytes());
        assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "billing-api", Some(ID)));
        assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container billing-api (podman)");
        // Rootless Podman: cgroup `/`, conmon alone; with `--pid=host` too (our pid namespace).
        let mut p = cgroups("0::/");
        p.add_ancestor(conmon_args().join("\0").as_bytes());
        assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "billing-api", Some(ID)));
        // Its environment alone (conmon's parent chain cut short).
        let mut p = cgroups("0::/");
        p.set_env([&b"PATH=/bin"[..], b"container=podman", b"HOSTNAME=3f1c9e0b7d2a"].into_iter());
        assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "3f1c9e0b7d2a", None));
        p.set_env([&b"container=lxc"[..]].into_iter());
        assert_eq!(place_of(&p, &host(), None).to_string(), "container (lxc)");
        // Docker: the name from config.v2.json; without it, the short id.
        let mut p = cgroups(&format!("0::/system.slice/docker-{ID}.scope"));
        let json = format!(r#"{{"State":{{"Running":true}},"ID":"{ID}","Config":{{"Labels":{{"Name":"/not-this"}}}},"LogPath":"/x","Name":"/billing","Driver":"overlay2"}}"#);
        p.set_docker_config(json.as_bytes());
        assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container billing (docker)");
        p.set_docker_config(b"{\"Name\":");
        assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container 3f1c9e0b7d2a (docker)");
        // A conmon-looking program that is not conmon.
        let mut p = ProcFacts::default();
        p.add_ancestor(b"/usr/bin/notconmon\0-n\0x\0");
        assert_eq!(place_of(&p, &host(), None), Place::Host);
    }

    #[test]
    fn pods_and_namespaces() {
        let uid_ = UID.replace('-', "_");
        let p = cgroups(&format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"));
        let place = place_of(&p, &host(), Some(9));
        assert_eq!(place.to_string(), "pod shop/orders-7d9f8b6c4-x2z9q");
        assert_eq!(place.workload().as_deref(), Some("shop/orders"));
        // No /var/log/pods entry: the pod's hostname names it.
        let mut p = p;
        p.set_env([&b"HOSTNAME=orders-7d9f8b6c4-x2z9q"[..]].into_iter());
        let place = place_of(&p, &HostFacts::default(), Some(9));
        assert_eq!((place.to_string(), place.workload()), ("pod orders-7d9f8b6c4-x2z9q".into(), Some("orders".into())));
        // A bare network namespace, named by `ip netns` when it is one of its.
        assert_eq!(place_of(&ProcFacts::default(), &host(), Some(4026532252)).to_string(), "netns jmh2");
        assert_eq!(place_of(&ProcFacts::default(), &host(), Some(7)).to_string(), "network namespace");
        assert_eq!(place_of(&ProcFacts::default(), &host(), None).to_string(), "-");
    }

    /// The one id whose `config.v2.json` is read (scan.sh's `jdwpmux_docker` gives the same).
    #[test]
    fn docker_ids() {
        for (cgroup, want) in [
            (format!("4:memory:/docker/{ID}\n0::/"), Some(ID)),
            (format!("0::/system.slice/docker-{ID}.scope"), Some(ID)),
            (format!("0::/kubepods/besteffort/pod{UID}/docker-{ID}.scope\n0::/docker-{}", &ID[..63]), None),
            (format!("0::/machine.slice/libpod-{ID}.scope"), None),
            (format!("0::/docker/{}", ID.to_uppercase()), None),
        ] {
            assert_eq!(docker_id(&cgroup).as_deref(), want, "{cgroup}");
        }
    }

    #[test]
    fn pod_base_names() {
        for (pod, base) in [
            ("orders-7d9f8b6c4-x2z9q", "orders"),        // Deployment
            ("orders-5f7c", "orders-5f7c"),              // no generated suffix
            ("orders-5f7c-x2z9q", "orders-5f7c"),        // a ReplicaSet whose name has a short word
            ("api-v2-7d9f8b6c4-x2z9q", "api-v2"),
            ("node-exporter-bx7kq", "node-exporter"),    // DaemonSet
            ("web-0", "web-0"),                          // StatefulSet
            ("web-12", "web-12"),
            ("backup-28391520-k2x7p", "backup"),         // CronJob's Job
            ("report-x2z9q", "report"),                  // Job
            ("coredns-5d78c9869d-8kxgb", "coredns"),
            ("billing-north", "billing-north"),          // a word of five: it has a vowel
            ("billing-abcde", "billing-abcde"),
            ("sync-x2z9", "sync-x2z9"),                  // four characters
            ("x2z9q", "x2z9q"),
            ("-x2z9q", "-x2z9q"),
            ("a--x2z9q", "a-"),
            ("sh-0a1b2c3d-x2z9q", "sh-0a1b2c3d"),        // 0, 1 and 3 are never generated
        ] {
            assert_eq!(pod_base_name(pod), base, "{pod}");
        }
    }

    #[test]
    fn workloads() {
        assert_eq!(Place::Host.workload(), None);
        assert_eq!(container(Runtime::Podman, "billing-api", Some(ID)).workload().as_deref(), Some("billing-api"));
        assert_eq!(container(Runtime::Podman, "", None).workload(), None);
        assert_eq!(Place::Netns { name: Some("jmh1".into()) }.workload().as_deref(), Some("jmh1"));
        assert_eq!(Place::Netns { name: None }.workload(), None);
        let sts = Place::Pod { namespace: "db".into(), name: "pg-1".into(), uid: UID.into(), container: None };
        assert_eq!(sts.workload().as_deref(), Some("db/pg-1"));
    }

    #[test]
    fn exec_hints_name_the_runtimes_own_command() {
        assert_eq!(container(Runtime::Podman, "billing-api", Some(ID)).exec_hint().as_deref(), Some("serve --exec billing-api='podman exec -i billing-api' --far-copy"));
        assert_eq!(container(Runtime::Docker, "orders", None).exec_hint().as_deref(), Some("serve --exec orders='docker exec -i orders' --far-copy"));
        let pod = Place::Pod { namespace: "shop".into(), name: "orders-5f7c".into(), uid: UID.into(), container: Some("app".into()) };
        assert_eq!(pod.exec_hint().as_deref(), Some("serve --exec orders-5f7c='kubectl exec -i -n shop orders-5f7c -c app --' --far-copy"));
        // No name, another runtime, or a name a shell would read otherwise: no hint.
        for p in [container(Runtime::Podman, "", None), container(Runtime::Containerd, "x", None), container(Runtime::Podman, "a'b; rm", None), Place::Netns { name: None }] {
            assert_eq!(p.exec_hint(), None, "{p:?}");
        }
    }

    /// Names come from anyone who starts a process: cut short, never terminal controls.
    #[test]
    fn hostile_names_are_bounded_and_printable() {
        let mut p = ProcFacts::default();
        let evil = format!("-n\0\x1b]0;pwned\x07{}\0", "x".repeat(100_000));
        p.add_ancestor(format!("conmon\0{evil}").as_bytes());
        let place = place_of(&p, &HostFacts::default(), None);
        let Place::Container { name, .. } = &place else { panic!("{place:?}") };
        assert!(name.chars().count() <= MAX_NAME && !name.chars().any(safe_text::is_hostile), "{name:?}");
        for _ in 0..10 {
            p.add_ancestor(b"sh\0");
        }
        assert_eq!(p.ancestors.len(), MAX_ANCESTORS);
        let mut p = ProcFacts::default();
        p.set_cgroups(&(0..1000).map(|i| format!("{i}:x:/{}{i}\n", "y".repeat(5000))).collect::<String>());
        assert!(p.cgroups.len() <= MAX_CGROUPS && p.cgroups.iter().all(|c| c.len() <= MAX_CGROUP_PATH));
        p.set_env([format!("HOSTNAME={}\u{202e}", "h".repeat(10_000)).as_bytes()].into_iter());
        assert!(p.hostname_env.as_ref().is_some_and(|h| h.chars().count() <= MAX_NAME));
        p.set_docker_config(&vec![b' '; MAX_DOCKER_CONFIG + 1]);
        assert_eq!(p.docker_name, None);
        let mut h = HostFacts::default();
        h.set_pods(&"pods/a_b_c\n".repeat(MAX_HOST_ENTRIES + 10));
        h.set_netns(&"1 /run/netns/\x1b[2J\n".repeat(MAX_HOST_ENTRIES + 10));
        assert_eq!((h.pods.len(), h.netns.len()), (MAX_HOST_ENTRIES, MAX_HOST_ENTRIES));
        assert_eq!(h.netns[0].1, "?[2J");
        // Globs that matched nothing.
        h.set_pods("pods/*\ncontainers/*\n");
        h.set_netns("ls: cannot access '/run/netns/*'\n");
        assert!(h.pods.is_empty() && h.containers.is_empty() && h.netns.is_empty());
    }
}
