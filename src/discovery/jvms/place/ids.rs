//! The container ids a process's own files name: its cgroup paths (Podman's `libpod-<id>`,
//! Docker's `docker-<id>` or `/docker/<id>`, containerd's, CRI-O's, and the pod folder around
//! them) and a `conmon` ancestor's command line (rootless Podman). Pure; what `place`
//! decides a process's place from.

use super::{name, Conmon, ProcFacts, Runtime};

/// What one cgroup path says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cgroup {
    pub(super) pod_uid: Option<String>,
    pub(super) runtime: Option<Runtime>,
    pub(super) id: Option<String>,
}

/// The container (and pod) a cgroup path names, if any: its last container id, with the
/// runtime its prefix tells, and the pod around it.
pub(super) fn from_cgroup(path: &str) -> Option<Cgroup> {
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

/// A full container id: 64 lowercase hex digits (only such words are given to a runtime's CLI).
pub fn is_id(s: &str) -> bool {
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
pub(super) fn conmon(argv: &[String]) -> Option<Conmon> {
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
