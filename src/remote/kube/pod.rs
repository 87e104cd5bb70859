//! A pod as the API server gives it (a `PodList`'s item, a watch event's object), read into
//! the few fields jdwpmux uses: its name, uid, phase, containers and whether each runs, its
//! labels, its controller, and the workload it belongs to. Pure; every size bounded before
//! or while it is read; odd input is an error value, never a panic.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The largest watch event or pod read (the API server stores objects of at most about
/// 1.5 MiB; a pod is a few KiB).
pub const MAX_EVENT_BYTES: usize = 4 << 20;
/// The largest pod list read at once.
pub const MAX_LIST_BYTES: usize = 64 << 20;
/// The most pods a list may hold.
pub const MAX_PODS: usize = 10_000;
/// The most containers a pod may have (real ones have a handful).
pub const MAX_CONTAINERS: usize = 64;
/// The most labels a pod may carry.
pub const MAX_LABELS: usize = 256;
/// The longest name (namespace, pod, container, owner: DNS subdomains are at most 253) or
/// label key or value kept.
pub const MAX_NAME: usize = 253;

/// Why a pod or an event was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodError {
    #[error("{what} of {len} bytes (at most {max})")]
    TooLarge { what: &'static str, len: usize, max: usize },
    #[error("not a pod's JSON: {0}")]
    Json(String),
    #[error("a pod without {0}")]
    Missing(&'static str),
    #[error("{what}: {n} (at most {max})")]
    TooMany { what: &'static str, n: usize, max: usize },
    #[error("{what} of {len} bytes (at most {MAX_NAME})")]
    NameTooLong { what: &'static str, len: usize },
    #[error("a watch event of type {0:?}")]
    UnknownEvent(String),
}

/// `status.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    /// `Unknown`, absent or another word.
    Unknown,
}

impl Phase {
    fn parse(s: Option<&str>) -> Phase {
        match s {
            Some("Pending") => Phase::Pending,
            Some("Running") => Phase::Running,
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            _ => Phase::Unknown,
        }
    }
}

/// One container of a pod (from `spec.containers`, with its status when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    /// Its status says `state.running`.
    pub running: bool,
    pub restarts: u32,
}

/// The controller owner reference (`controller: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub kind: String,
    pub name: String,
}

/// What a pod belongs to, for keeping its place across a rollout.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Workload {
    /// Owned by ReplicaSet `NAME-HASH` with label `pod-template-hash: HASH`: Deployment NAME.
    Deployment(String),
    /// Owned by this StatefulSet; its pods are `NAME-0`, `NAME-1`...
    StatefulSet(String),
    /// Anything else (a bare pod, a Job's, a DaemonSet's, a ReplicaSet without a Deployment):
    /// the pod itself, by name.
    Pod(String),
}

impl Workload {
    pub fn name(&self) -> &str {
        match self {
            Workload::Deployment(n) | Workload::StatefulSet(n) | Workload::Pod(n) => n,
        }
    }
}

/// A pod, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub phase: Phase,
    /// Being deleted (`metadata.deletionTimestamp` set).
    pub deleting: bool,
    /// `status.reason`: why it is in its phase (`Evicted` for a pod the kubelet evicted).
    pub reason: Option<String>,
    pub containers: Vec<Container>,
    pub labels: BTreeMap<String, String>,
    pub owner: Option<Owner>,
}

/// The label a Deployment's ReplicaSet puts on its pods.
pub const TEMPLATE_HASH: &str = "pod-template-hash";

impl Pod {
    /// Reads one pod's JSON.
    pub fn parse(json: &[u8]) -> Result<Pod, PodError> {
        check_len("a pod", json.len(), MAX_EVENT_BYTES)?;
        let raw: RawPod = serde_json::from_slice(json).map_err(|e| PodError::Json(e.to_string()))?;
        raw.into_pod()
    }

    /// The workload it belongs to (see [`Workload`]).
    pub fn workload(&self) -> Workload {
        match &self.owner {
            Some(o) if o.kind == "ReplicaSet" => {
                let deployment = self.labels.get(TEMPLATE_HASH).and_then(|h| o.name.strip_suffix(h.as_str())?.strip_suffix('-'));
                match deployment {
                    Some(d) if !d.is_empty() => Workload::Deployment(d.to_string()),
                    _ => Workload::Pod(self.name.clone()),
                }
            }
            Some(o) if o.kind == "StatefulSet" => Workload::StatefulSet(o.name.clone()),
            _ => Workload::Pod(self.name.clone()),
        }
    }

    /// A StatefulSet's pod's ordinal (`NAME-N`): its fixed place among the set's pods.
    pub fn ordinal(&self) -> Option<usize> {
        let Workload::StatefulSet(set) = self.workload() else { return None };
        let n = self.name.strip_prefix(set.as_str())?.strip_prefix('-')?;
        if n.is_empty() || n.len() > 9 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        n.parse().ok()
    }

    /// The containers that run now.
    pub fn running(&self) -> impl Iterator<Item = &Container> {
        self.containers.iter().filter(|c| c.running)
    }
}

/// One event of a watch (`?watch=true`: a JSON object a line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    Added(Pod),
    Modified(Pod),
    Deleted(Pod),
    /// Nothing changed; the watch is at this resource version.
    Bookmark(String),
    /// The watch ends with this Status (410 Gone: the resource version is too old, list again).
    Error { code: u16, reason: String, message: String },
}

impl WatchEvent {
    /// Reads one line of a watch.
    pub fn parse(line: &[u8]) -> Result<WatchEvent, PodError> {
        check_len("a watch event", line.len(), MAX_EVENT_BYTES)?;
        let raw: RawEvent = serde_json::from_slice(line).map_err(|e| PodError::Json(e.to_string()))?;
        let object = raw.object.ok_or(PodError::Missing("object"))?;
        let pod = |o: serde_json::Value| -> Result<Pod, PodError> { RawPod::deserialize(o).map_err(|e| PodError::Json(e.to_string()))?.into_pod() };
        match raw.kind.as_str() {
            "ADDED" => Ok(WatchEvent::Added(pod(object)?)),
            "MODIFIED" => Ok(WatchEvent::Modified(pod(object)?)),
            "DELETED" => Ok(WatchEvent::Deleted(pod(object)?)),
            "BOOKMARK" => {
                let rv = object.pointer("/metadata/resourceVersion").and_then(|v| v.as_str()).unwrap_or("");
                Ok(WatchEvent::Bookmark(bounded(rv, "a resource version")?.to_string()))
            }
            "ERROR" => {
                let text = |k: &str| object.get(k).and_then(|v| v.as_str()).unwrap_or("").chars().take(MAX_NAME * 4).collect::<String>();
                let code = object.get("code").and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok()).unwrap_or(0);
                Ok(WatchEvent::Error { code, reason: text("reason"), message: text("message") })
            }
            other => Err(PodError::UnknownEvent(other.chars().take(32).collect())),
        }
    }
}

/// A `PodList`: its pods and its resource version (where a watch starts).
pub fn parse_list(json: &[u8]) -> Result<(Vec<Pod>, String), PodError> {
    check_len("a pod list", json.len(), MAX_LIST_BYTES)?;
    let raw: RawList = serde_json::from_slice(json).map_err(|e| PodError::Json(e.to_string()))?;
    count("pods in a list", raw.items.len(), MAX_PODS)?;
    let pods = raw.items.into_iter().map(RawPod::into_pod).collect::<Result<Vec<_>, _>>()?;
    let rv = bounded(raw.metadata.resource_version.as_deref().unwrap_or(""), "a resource version")?.to_string();
    Ok((pods, rv))
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), PodError> {
    if len > max {
        return Err(PodError::TooLarge { what, len, max });
    }
    Ok(())
}

fn count(what: &'static str, n: usize, max: usize) -> Result<(), PodError> {
    if n > max {
        return Err(PodError::TooMany { what, n, max });
    }
    Ok(())
}

fn bounded<'a>(s: &'a str, what: &'static str) -> Result<&'a str, PodError> {
    if s.len() > MAX_NAME {
        return Err(PodError::NameTooLong { what, len: s.len() });
    }
    Ok(s)
}

// The JSON as read: every field optional, unknown ones ignored.

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type", default)]
    kind: String,
    object: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawList {
    metadata: RawListMeta,
    items: Vec<RawPod>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawListMeta {
    resource_version: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPod {
    metadata: RawMeta,
    spec: RawSpec,
    status: RawStatus,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    deletion_timestamp: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<RawOwner>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawOwner {
    kind: String,
    name: String,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSpec {
    containers: Vec<RawContainer>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawContainer {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawStatus {
    phase: Option<String>,
    reason: Option<String>,
    container_statuses: Option<Vec<RawContainerStatus>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawContainerStatus {
    name: String,
    restart_count: Option<u64>,
    state: Option<serde_json::Map<String, serde_json::Value>>,
}

impl RawPod {
    fn into_pod(self) -> Result<Pod, PodError> {
        let m = self.metadata;
        let name = bounded(m.name.as_deref().ok_or(PodError::Missing("metadata.name"))?, "a pod's name")?.to_string();
        let namespace = bounded(m.namespace.as_deref().ok_or(PodError::Missing("metadata.namespace"))?, "a namespace")?.to_string();
        let uid = bounded(m.uid.as_deref().ok_or(PodError::Missing("metadata.uid"))?, "a uid")?.to_string();
        let resource_version = bounded(m.resource_version.as_deref().unwrap_or(""), "a resource version")?.to_string();
        let labels = m.labels.unwrap_or_default();
        count("labels", labels.len(), MAX_LABELS)?;
        for (k, v) in &labels {
            bounded(k, "a label's key")?;
            bounded(v, "a label's value")?;
        }
        let owners = m.owner_references.unwrap_or_default();
        count("owner references", owners.len(), MAX_LABELS)?;
        let owner = match owners.into_iter().find(|o| o.controller == Some(true)) {
            Some(o) => Some(Owner { kind: bounded(&o.kind, "an owner's kind")?.to_string(), name: bounded(&o.name, "an owner's name")?.to_string() }),
            None => None,
        };
        count("containers", self.spec.containers.len(), MAX_CONTAINERS)?;
        let statuses = self.status.container_statuses.unwrap_or_default();
        count("container statuses", statuses.len(), MAX_CONTAINERS)?;
        let containers = self
            .spec
            .containers
            .into_iter()
            .map(|c| {
                bounded(&c.name, "a container's name")?;
                let status = statuses.iter().find(|s| s.name == c.name);
                Ok(Container {
                    running: status.and_then(|s| s.state.as_ref()).is_some_and(|s| s.contains_key("running")),
                    restarts: status.and_then(|s| s.restart_count).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                    name: c.name,
                })
            })
            .collect::<Result<Vec<_>, PodError>>()?;
        Ok(Pod {
            namespace,
            name,
            uid,
            resource_version,
            phase: Phase::parse(self.status.phase.as_deref()),
            deleting: m.deletion_timestamp.is_some(),
            reason: match self.status.reason {
                Some(r) => Some(bounded(&r, "a pod's reason")?.to_string()),
                None => None,
            },
            containers,
            labels,
            owner,
        })
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
