//! Which pod containers have an exec host now, and the key their JVMs' debugger ports are
//! kept by. Pure: the caller says what the watch said (a pod added, changed or deleted, or a
//! fresh list), and starts and stops hosts as told.
//!
//! The rule, one place:
//! - each running container of a `Running` pod that is not being deleted has a host;
//! - its key is (namespace, workload, slot, container) ([`super::workloads`]): a pod takes a
//!   slot per container when first seen, and gives it up when it is deleted or starts being
//!   deleted, so a rollout's new pod ends in the slot of the pod it replaces, and its JVM
//!   (keyed by this and its main class) on that pod's port;
//! - a host whose key changes (its pod moved down a slot when another went) is stopped and
//!   started again under the new key, and so is one whose container's restart count went up
//!   (the kubelet restarted it: its JVM is a new one); stops come before starts in every
//!   answer (a pod's host row is named by the pod);
//! - each stop says why, as the log line that closes its debuggers does: deleted, evicted,
//!   not running, its container stopped or restarted, moved.

use std::collections::{BTreeMap, BTreeSet};

use super::pod::{Phase, Pod, WatchEvent, Workload};
use super::workloads::{SlotKey, Workloads};

/// One exec host: a running container of a running pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub container: String,
    /// The pod has several containers: its label names the container too.
    pub several: bool,
    /// What its JVMs' keys start with: `kube:NS/KIND/WORKLOAD/SLOT/CONTAINER`.
    pub key: String,
    /// Its container's restart count when it was started: a higher one means the kubelet
    /// restarted the container (its JVM is a new one), seen or not while it was down.
    pub restarts: u32,
}

impl Host {
    /// The name of its host row and its JVMs' HOST: `NS/POD`, `NS/POD/CONTAINER` when the
    /// pod has several.
    pub fn label(&self) -> String {
        if self.several {
            format!("{}/{}/{}", self.namespace, self.pod, self.container)
        } else {
            format!("{}/{}", self.namespace, self.pod)
        }
    }

    fn id(&self) -> (String, String) {
        (self.uid.clone(), self.container.clone())
    }
}

/// Why a host was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The pod was deleted (or is being deleted, or a fresh list no longer has it).
    Deleted,
    /// The pod's phase is no longer Running.
    NotRunning(Phase),
    /// The kubelet evicted the pod (phase Failed, reason `Evicted`).
    Evicted,
    /// Its container stopped (it may be restarted by the kubelet: then a new host).
    ContainerStopped,
    /// Its container was restarted (its restart count went up): a new host for it.
    Restarted,
    /// Its pod took another slot: started again under its new key.
    Moved,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Deleted => f.write_str("the pod was deleted"),
            Why::NotRunning(p) => write!(f, "the pod is {p:?} now"),
            Why::Evicted => f.write_str("the pod was evicted"),
            Why::ContainerStopped => f.write_str("its container stopped"),
            Why::Restarted => f.write_str("its container was restarted"),
            Why::Moved => f.write_str("the pod took the place of one that went"),
        }
    }
}

/// What the caller does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Start(Host),
    Stop(Host, Why),
}

/// The pods seen, their slots, and the hosts started.
#[derive(Debug, Default)]
pub struct PodHosts {
    /// By uid: the pods that are (or may become) served.
    pods: BTreeMap<String, Pod>,
    slots: Workloads<SlotKey>,
    /// By (uid, container).
    hosts: BTreeMap<(String, String), Host>,
}

impl PodHosts {
    /// One watch event.
    pub fn event(&mut self, ev: WatchEvent) -> Vec<Change> {
        match ev {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => self.put(p),
            WatchEvent::Deleted(p) => self.remove(&p.uid),
            WatchEvent::Bookmark(_) | WatchEvent::Error { .. } => {}
        }
        self.reconcile()
    }

    /// A fresh list of every pod selected: pods not in it are gone.
    pub fn listed(&mut self, pods: Vec<Pod>) -> Vec<Change> {
        let uids: BTreeSet<String> = pods.iter().map(|p| p.uid.clone()).collect();
        let gone: Vec<String> = self.pods.keys().filter(|u| !uids.contains(*u)).cloned().collect();
        for uid in gone {
            self.remove(&uid);
        }
        for p in pods {
            self.put(p);
        }
        self.reconcile()
    }

    /// Marks each host's pod busy (a debugger attached to one of its JVMs) or idle, as
    /// `busy` says: a busy pod is never moved to another slot when a pod below it goes, so
    /// its host is not started again under it (which would drop the debugger).
    pub fn set_busy(&mut self, busy: impl Fn(&Host) -> bool) {
        for h in self.hosts.values() {
            if let Some(p) = self.pods.get(&h.uid) {
                self.slots.set_busy(&slot_key(p, &h.container), &h.uid, busy(h));
            }
        }
    }

    /// The hosts started now.
    pub fn hosts(&self) -> impl Iterator<Item = &Host> {
        self.hosts.values()
    }

    fn put(&mut self, pod: Pod) {
        if pod.deleting {
            self.remove(&pod.uid);
            return;
        }
        // A pod whose containers changed names (never, in Kubernetes) gives up the old slots.
        if let Some(old) = self.pods.get(&pod.uid) {
            let old_keys: Vec<SlotKey> = old.containers.iter().filter(|c| !pod.containers.iter().any(|n| n.name == c.name)).map(|c| slot_key(old, &c.name)).collect();
            for k in old_keys {
                self.slots.gone(&k, &pod.uid);
            }
        }
        for c in &pod.containers {
            self.slots.seen(&slot_key(&pod, &c.name), &pod.uid, pod.ordinal());
        }
        self.pods.insert(pod.uid.clone(), pod);
    }

    fn remove(&mut self, uid: &str) {
        if let Some(old) = self.pods.remove(uid) {
            for c in &old.containers {
                self.slots.gone(&slot_key(&old, &c.name), uid);
            }
        }
    }

    /// The hosts wanted now against those started: stops, then starts.
    fn reconcile(&mut self) -> Vec<Change> {
        let mut want: BTreeMap<(String, String), Host> = BTreeMap::new();
        for p in self.pods.values().filter(|p| p.phase == Phase::Running) {
            let several = p.containers.len() > 1;
            for c in p.running() {
                let k = slot_key(p, &c.name);
                let Some(slot) = self.slots.slot_of(&k, &p.uid) else { continue };
                let h = Host { namespace: p.namespace.clone(), pod: p.name.clone(), uid: p.uid.clone(), container: c.name.clone(), several, key: key_text(&k, slot), restarts: c.restarts };
                want.insert(h.id(), h);
            }
        }
        let mut stops = Vec::new();
        let mut starts = Vec::new();
        for (id, h) in &self.hosts {
            match want.get(id) {
                Some(w) if w == h => {}
                Some(w) if w.restarts > h.restarts => stops.push(Change::Stop(h.clone(), Why::Restarted)),
                Some(_) => stops.push(Change::Stop(h.clone(), Why::Moved)),
                None => stops.push(Change::Stop(h.clone(), self.why_gone(h))),
            }
        }
        for (id, w) in &want {
            if self.hosts.get(id) != Some(w) {
                starts.push(Change::Start(w.clone()));
            }
        }
        self.hosts = want;
        stops.extend(starts);
        stops
    }

    fn why_gone(&self, h: &Host) -> Why {
        match self.pods.get(&h.uid) {
            None => Why::Deleted,
            Some(p) if p.phase == Phase::Failed && p.reason.as_deref() == Some("Evicted") => Why::Evicted,
            Some(p) if p.phase != Phase::Running => Why::NotRunning(p.phase),
            Some(_) => Why::ContainerStopped,
        }
    }
}

fn slot_key(p: &Pod, container: &str) -> SlotKey {
    SlotKey { namespace: p.namespace.clone(), workload: p.workload(), container: container.to_string() }
}

/// `kube:NS/KIND/WORKLOAD/SLOT/CONTAINER`: no pod name in it, so the pod that takes a slot
/// takes its JVMs' ports.
fn key_text(k: &SlotKey, slot: usize) -> String {
    let (kind, name) = match &k.workload {
        Workload::Deployment(n) => ("deploy", n),
        Workload::StatefulSet(n) => ("sts", n),
        Workload::Pod(n) => ("pod", n),
    };
    format!("kube:{}/{kind}/{name}/{slot}/{}", k.namespace, k.container)
}

#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
