//! The stand-in's pods: what a test puts in the store ([`StandinPod`]), the store itself with
//! its resource versions and event history ([`Store`]), label selectors, and the JSON the API
//! server gives for a pod (the fields kubectl and jdwpmux read, as a real one spells them).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};
use tokio::sync::broadcast;

/// How many past events a watcher that names an old resourceVersion can be given.
pub const HISTORY: usize = 4096;
/// How many events a live watcher may lag behind before it is dropped (as a real API server
/// ends a slow watch).
pub const WATCH_QUEUE: usize = 1024;

static NEXT_UID: AtomicU32 = AtomicU32::new(1);

/// One pod as a test describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandinPod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    /// The controller owner reference: (kind, name), e.g. (`ReplicaSet`, `orders-5f7c9`).
    pub owner: Option<(String, String)>,
    /// Its containers' names, in spec order.
    pub containers: Vec<String>,
    /// `status.phase`: Running, Pending, Succeeded, Failed.
    pub phase: String,
    /// `status.reason` (`Evicted` for a pod the kubelet evicted).
    pub reason: Option<String>,
    /// The Docker container every exec into this pod runs in (`docker exec -i NAME ...`);
    /// None: an exec into it fails as a pod whose container is not running.
    pub docker: Option<String>,
    /// Restarts reported for each container (`restartCount`).
    pub restarts: u32,
}

impl StandinPod {
    /// A pod of a Deployment's ReplicaSet, as a real one is named and labelled: name
    /// `DEPLOYMENT-HASH-SUFFIX`, labels `app=DEPLOYMENT` and `pod-template-hash=HASH`, owned
    /// (controller) by ReplicaSet `DEPLOYMENT-HASH`; one container `app`; Running.
    pub fn replica(namespace: &str, deployment: &str, hash: &str, suffix: &str) -> StandinPod {
        let mut labels = BTreeMap::new();
        labels.insert("app".to_string(), deployment.to_string());
        labels.insert("pod-template-hash".to_string(), hash.to_string());
        StandinPod {
            namespace: namespace.into(),
            name: format!("{deployment}-{hash}-{suffix}"),
            uid: new_uid(),
            labels,
            owner: Some(("ReplicaSet".into(), format!("{deployment}-{hash}"))),
            containers: vec!["app".into()],
            phase: "Running".into(),
            reason: None,
            docker: None,
            restarts: 0,
        }
    }

    /// A StatefulSet's pod `SET-ORDINAL`, label `app=SET`, owned by StatefulSet `SET`.
    pub fn stateful(namespace: &str, set: &str, ordinal: u32) -> StandinPod {
        let mut labels = BTreeMap::new();
        labels.insert("app".to_string(), set.to_string());
        StandinPod {
            namespace: namespace.into(),
            name: format!("{set}-{ordinal}"),
            uid: new_uid(),
            labels,
            owner: Some(("StatefulSet".into(), set.into())),
            containers: vec!["app".into()],
            phase: "Running".into(),
            reason: None,
            docker: None,
            restarts: 0,
        }
    }

    /// Execs into it run in Docker container `name`.
    pub fn in_docker(mut self, name: &str) -> StandinPod {
        self.docker = Some(name.into());
        self
    }

    pub fn with_label(mut self, key: &str, value: &str) -> StandinPod {
        self.labels.insert(key.into(), value.into());
        self
    }

    pub fn with_containers(mut self, names: &[&str]) -> StandinPod {
        self.containers = names.iter().map(|n| n.to_string()).collect();
        self
    }

    pub fn with_phase(mut self, phase: &str) -> StandinPod {
        self.phase = phase.into();
        self
    }

    /// Evicted by the kubelet, as a real one shows it: phase Failed, reason Evicted, its
    /// containers no longer running.
    pub fn evicted(mut self) -> StandinPod {
        self.phase = "Failed".into();
        self.reason = Some("Evicted".into());
        self
    }

    /// The pod as the API server gives it, at resource version `rv`.
    pub fn to_json(&self, rv: u64) -> Value {
        let owners: Vec<Value> = self
            .owner
            .iter()
            .map(|(kind, name)| {
                json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("owner-{name}"),
                       "controller": true, "blockOwnerDeletion": true})
            })
            .collect();
        let running = self.phase == "Running";
        let statuses: Vec<Value> = self
            .containers
            .iter()
            .map(|c| {
                let state = if running {
                    json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
                } else {
                    json!({"waiting": {"reason": "ContainerCreating"}})
                };
                json!({"name": c, "ready": running, "started": running, "restartCount": self.restarts,
                       "image": "jdwpmux-test-jdk", "imageID": "",
                       "containerID": format!("docker://{}", self.docker.clone().unwrap_or_default()), "state": state})
            })
            .collect();
        let containers: Vec<Value> = self.containers.iter().map(|c| json!({"name": c, "image": "jdwpmux-test-jdk"})).collect();
        let mut status = json!({"phase": self.phase, "podIP": "10.0.0.1", "containerStatuses": statuses});
        if let Some(r) = &self.reason {
            status["reason"] = r.clone().into();
            status["message"] = "The node was low on resource: memory.".into();
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name, "namespace": self.namespace, "uid": self.uid,
                "resourceVersion": rv.to_string(), "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": self.labels, "ownerReferences": owners,
            },
            "spec": {"containers": containers, "nodeName": "standin", "restartPolicy": "Always"},
            "status": status,
        })
    }
}

fn new_uid() -> String {
    format!("00000000-0000-4000-8000-{:06}{:06}", std::process::id() % 1_000_000, NEXT_UID.fetch_add(1, Ordering::Relaxed))
}

/// A watch event as sent: its type (`ADDED`, `MODIFIED`, `DELETED`) and the pod then.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub kind: &'static str,
    pub pod: StandinPod,
}

impl Event {
    /// One line of a watch response.
    pub fn line(&self) -> String {
        let mut s = json!({"type": self.kind, "object": self.pod.to_json(self.rv)}).to_string();
        s.push('\n');
        s
    }
}

/// A label selector as kubectl sends it (`a=b,c!=d,e,!f`); an unparsable term matches
/// nothing (a real server answers 400; nothing here sends one).
#[derive(Debug, Clone, Default)]
pub struct Selector {
    terms: Vec<Term>,
}

#[derive(Debug, Clone)]
enum Term {
    Eq(String, String),
    Ne(String, String),
    Has(String),
    HasNot(String),
    Never,
}

impl Selector {
    pub fn parse(s: &str) -> Selector {
        let terms = s
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                if let Some((k, v)) = t.split_once("!=") {
                    Term::Ne(k.trim().into(), v.trim().into())
                } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                    Term::Eq(k.trim().into(), v.trim().into())
                } else if let Some(k) = t.strip_prefix('!') {
                    Term::HasNot(k.trim().into())
                } else if t.contains(|c: char| c.is_whitespace() || c == '(') {
                    Term::Never
                } else {
                    Term::Has(t.into())
                }
            })
            .collect();
        Selector { terms }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Eq(k, v) => labels.get(k) == Some(v),
            Term::Ne(k, v) => labels.get(k) != Some(v),
            Term::Has(k) => labels.contains_key(k),
            Term::HasNot(k) => !labels.contains_key(k),
            Term::Never => false,
        })
    }
}

struct State {
    /// (namespace, name) -> the pod and the resource version it was last changed at.
    pods: BTreeMap<(String, String), (StandinPod, u64)>,
    rv: u64,
    history: Vec<Event>,
}

/// The pods of the stand-in, kept across its restarts; each change gets the next resource
/// version and is sent to every watcher.
pub struct Store {
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
}

impl Default for Store {
    fn default() -> Self {
        Store { state: Mutex::new(State { pods: BTreeMap::new(), rv: 1, history: Vec::new() }), events: broadcast::channel(WATCH_QUEUE).0 }
    }
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts (`Some`) or deletes (`None`) the pod of that namespace and name, under one lock:
    /// the change's resource version, or None when there was nothing to delete.
    fn change(&self, namespace: &str, name: &str, put: Option<StandinPod>) -> Option<u64> {
        let mut s = self.lock();
        let key = (namespace.to_string(), name.to_string());
        let (kind, pod) = match put {
            Some(p) => (if s.pods.contains_key(&key) { "MODIFIED" } else { "ADDED" }, p),
            None => ("DELETED", s.pods.remove(&key)?.0),
        };
        s.rv += 1;
        let rv = s.rv;
        if kind != "DELETED" {
            s.pods.insert(key, (pod.clone(), rv));
        }
        let event = Event { rv, kind, pod };
        s.history.push(event.clone());
        if s.history.len() > HISTORY {
            s.history.remove(0);
        }
        // Sent under the lock, so that a watcher subscribing under it sees each event once.
        let _ = self.events.send(event);
        Some(rv)
    }

    /// Adds a pod (ADDED), or replaces the one of that name (MODIFIED); its resource version.
    pub fn put(&self, pod: StandinPod) -> u64 {
        let (namespace, name) = (pod.namespace.clone(), pod.name.clone());
        self.change(&namespace, &name, Some(pod)).unwrap_or_default()
    }

    /// Deletes a pod (DELETED); false when there was none of that name.
    pub fn delete(&self, namespace: &str, name: &str) -> bool {
        self.change(namespace, name, None).is_some()
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<(StandinPod, u64)> {
        self.lock().pods.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// The pods of `namespace` (all namespaces: None) that `selector` matches, and the
    /// store's resource version.
    pub fn list(&self, namespace: Option<&str>, selector: &Selector) -> (Vec<(StandinPod, u64)>, u64) {
        let s = self.lock();
        let pods = s
            .pods
            .values()
            .filter(|(p, _)| namespace.is_none_or(|n| p.namespace == n) && selector.matches(&p.labels))
            .cloned()
            .collect();
        (pods, s.rv)
    }

    /// A watch from resource version `from` (None: ADDED events for every pod now, then the
    /// changes): the events to send first, and the receiver of those after them.
    pub fn watch(&self, from: Option<u64>) -> (Vec<Event>, broadcast::Receiver<Event>) {
        let s = self.lock();
        let rx = self.events.subscribe();
        let first = match from {
            Some(rv) => s.history.iter().filter(|e| e.rv > rv).cloned().collect(),
            None => s.pods.values().map(|(p, rv)| Event { rv: *rv, kind: "ADDED", pod: p.clone() }).collect(),
        };
        (first, rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        let pod = StandinPod::replica("shop", "orders", "5f7c9", "x8k2p").with_label("tier", "web");
        for (sel, want) in [
            ("", true),
            ("app=orders", true),
            ("app==orders,tier=web", true),
            ("app=orders,tier=db", false),
            ("app!=billing", true),
            ("tier", true),
            ("!tier", false),
            ("missing", false),
            ("app in (orders)", false),
        ] {
            assert_eq!(Selector::parse(sel).matches(&pod.labels), want, "{sel}");
        }
    }

    #[test]
    fn watch_from_a_version_sees_only_later_changes() {
        let store = Store::default();
        let a = store.put(StandinPod::replica("shop", "orders", "5f7c9", "a"));
        store.put(StandinPod::replica("shop", "orders", "5f7c9", "b"));
        store.put(StandinPod::replica("shop", "orders", "5f7c9", "b").with_phase("Pending"));
        assert!(store.delete("shop", "orders-5f7c9-a"));
        assert!(!store.delete("shop", "orders-5f7c9-a"), "deleted once");
        let (first, _rx) = store.watch(Some(a));
        let kinds: Vec<_> = first.iter().map(|e| (e.kind, e.pod.name.as_str())).collect();
        assert_eq!(kinds, [("ADDED", "orders-5f7c9-b"), ("MODIFIED", "orders-5f7c9-b"), ("DELETED", "orders-5f7c9-a")]);
        let (first, _rx) = store.watch(None);
        assert_eq!(first.len(), 1);
        let json = first[0].pod.to_json(first[0].rv);
        assert_eq!(json["metadata"]["ownerReferences"][0]["name"], "orders-5f7c9");
        assert_eq!(json["metadata"]["labels"]["pod-template-hash"], "5f7c9");
    }
}
