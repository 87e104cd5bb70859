use super::*;
use proptest::prelude::*;
use serde_json::json;

/// A pod as the API server (and the test kit's stand-in) gives it.
fn replica() -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "orders-5f7c9-x8k2p", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                     "labels": {"app": "orders", "pod-template-hash": "5f7c9"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "orders-5f7c9", "uid": "o", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "x"}, {"name": "sidecar", "image": "y"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 2, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}},
            {"name": "sidecar", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    })
}

#[test]
fn a_deployments_pod() {
    let pod = Pod::parse(replica().to_string().as_bytes()).unwrap();
    assert_eq!((pod.namespace.as_str(), pod.name.as_str(), pod.uid.as_str(), pod.resource_version.as_str()), ("shop", "orders-5f7c9-x8k2p", "u-1", "42"));
    assert_eq!(pod.phase, Phase::Running);
    assert!(!pod.deleting);
    assert_eq!(pod.containers, [
        Container { name: "app".into(), running: true, restarts: 2 },
        Container { name: "sidecar".into(), running: false, restarts: 0 },
    ]);
    assert_eq!(pod.running().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["app"]);
    assert_eq!(pod.owner, Some(Owner { kind: "ReplicaSet".into(), name: "orders-5f7c9".into() }));
    assert_eq!(pod.workload(), Workload::Deployment("orders".into()));
    assert_eq!(pod.ordinal(), None);
    assert_eq!(pod.reason, None);
    // Evicted: the kubelet's reason is read; an overlong one is an error.
    let mut v = replica();
    v["status"]["phase"] = "Failed".into();
    v["status"]["reason"] = "Evicted".into();
    let pod = Pod::parse(v.to_string().as_bytes()).unwrap();
    assert_eq!((pod.phase, pod.reason.as_deref()), (Phase::Failed, Some("Evicted")));
    v["status"]["reason"] = "x".repeat(MAX_NAME + 1).into();
    assert!(Pod::parse(v.to_string().as_bytes()).is_err());
}

#[test]
fn workloads_by_owner() {
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = replica();
        f(&mut v);
        Pod::parse(v.to_string().as_bytes()).unwrap()
    };
    // A ReplicaSet whose name does not end in the hash: a bare ReplicaSet, the pod itself.
    let p = with(&|v| v["metadata"]["labels"]["pod-template-hash"] = json!("zzz"));
    assert_eq!(p.workload(), Workload::Pod("orders-5f7c9-x8k2p".into()));
    let p = with(&|v| v["metadata"]["labels"].as_object_mut().unwrap().clear());
    assert_eq!(p.workload(), Workload::Pod("orders-5f7c9-x8k2p".into()));
    // The hash alone as the owner's name: no Deployment name left.
    let p = with(&|v| v["metadata"]["ownerReferences"][0]["name"] = json!("-5f7c9"));
    assert_eq!(p.workload(), Workload::Pod("orders-5f7c9-x8k2p".into()));
    // Not the controller: no owner.
    let p = with(&|v| v["metadata"]["ownerReferences"][0]["controller"] = json!(false));
    assert_eq!((p.owner.clone(), p.workload()), (None, Workload::Pod("orders-5f7c9-x8k2p".into())));
    let p = with(&|v| {
        v["metadata"]["name"] = json!("db-12");
        v["metadata"]["ownerReferences"][0]["kind"] = json!("StatefulSet");
        v["metadata"]["ownerReferences"][0]["name"] = json!("db");
    });
    assert_eq!((p.workload(), p.ordinal()), (Workload::StatefulSet("db".into()), Some(12)));
    let p = with(&|v| {
        v["metadata"]["name"] = json!("db-x");
        v["metadata"]["ownerReferences"][0]["kind"] = json!("StatefulSet");
        v["metadata"]["ownerReferences"][0]["name"] = json!("db");
    });
    assert_eq!(p.ordinal(), None);
    let p = with(&|v| v["metadata"]["ownerReferences"][0]["kind"] = json!("DaemonSet"));
    assert_eq!(p.workload(), Workload::Pod("orders-5f7c9-x8k2p".into()));
    let p = with(&|v| v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z"));
    assert!(p.deleting);
}

#[test]
fn watch_events() {
    let line = |kind: &str, object: serde_json::Value| json!({"type": kind, "object": object}).to_string();
    let pod = Pod::parse(replica().to_string().as_bytes()).unwrap();
    assert_eq!(WatchEvent::parse(line("ADDED", replica()).as_bytes()), Ok(WatchEvent::Added(pod.clone())));
    assert_eq!(WatchEvent::parse(line("MODIFIED", replica()).as_bytes()), Ok(WatchEvent::Modified(pod.clone())));
    assert_eq!(WatchEvent::parse(line("DELETED", replica()).as_bytes()), Ok(WatchEvent::Deleted(pod)));
    assert_eq!(
        WatchEvent::parse(line("BOOKMARK", json!({"kind": "Pod", "metadata": {"resourceVersion": "77"}})).as_bytes()),
        Ok(WatchEvent::Bookmark("77".into()))
    );
    let gone = json!({"kind": "Status", "status": "Failure", "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410});
    assert_eq!(
        WatchEvent::parse(line("ERROR", gone).as_bytes()),
        Ok(WatchEvent::Error { code: 410, reason: "Expired".into(), message: "too old resource version: 1 (5)".into() })
    );
    assert_eq!(WatchEvent::parse(line("RENAMED", replica()).as_bytes()), Err(PodError::UnknownEvent("RENAMED".into())));
    assert!(matches!(WatchEvent::parse(b"{\"type\":\"ADDED\"}"), Err(PodError::Missing("object"))));
    assert!(matches!(WatchEvent::parse(line("ADDED", json!({"metadata": {"name": "x"}})).as_bytes()), Err(PodError::Missing(_))));
    assert!(matches!(WatchEvent::parse(b"not json"), Err(PodError::Json(_))));
}

#[test]
fn lists() {
    let list = json!({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [replica(), replica()]});
    let (pods, rv) = parse_list(list.to_string().as_bytes()).unwrap();
    assert_eq!((pods.len(), rv.as_str()), (2, "9"));
    let (pods, rv) = parse_list(b"{}").unwrap();
    assert_eq!((pods.len(), rv.as_str()), (0, ""));
}

#[test]
fn limits() {
    let big = vec![b' '; MAX_EVENT_BYTES + 1];
    assert_eq!(Pod::parse(&big), Err(PodError::TooLarge { what: "a pod", len: MAX_EVENT_BYTES + 1, max: MAX_EVENT_BYTES }));
    assert!(matches!(WatchEvent::parse(&big), Err(PodError::TooLarge { .. })));
    let mut v = replica();
    v["spec"]["containers"] = json!((0..=MAX_CONTAINERS).map(|i| json!({"name": format!("c{i}")})).collect::<Vec<_>>());
    assert!(matches!(Pod::parse(v.to_string().as_bytes()), Err(PodError::TooMany { what: "containers", .. })));
    let mut v = replica();
    v["metadata"]["labels"]["long"] = json!("x".repeat(MAX_NAME + 1));
    assert!(matches!(Pod::parse(v.to_string().as_bytes()), Err(PodError::NameTooLong { .. })));
    let mut v = replica();
    v["metadata"]["name"] = json!("p".repeat(MAX_NAME + 1));
    assert!(matches!(Pod::parse(v.to_string().as_bytes()), Err(PodError::NameTooLong { .. })));
    let mut v = replica();
    v["status"]["containerStatuses"][0]["restartCount"] = json!(u64::MAX);
    assert_eq!(Pod::parse(v.to_string().as_bytes()).unwrap().containers[0].restarts, u32::MAX);
    // Nesting deeper than serde_json's limit is an error, not a stack overflow.
    let deep = format!("{{\"type\":\"ADDED\",\"object\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(WatchEvent::parse(deep.as_bytes()), Err(PodError::Json(_))));
}

/// Any JSON value, a few levels deep, with the keys a pod has among others.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
        "[a-zA-Z0-9-]{0,12}".prop_map(serde_json::Value::from),
        prop_oneof![Just("ReplicaSet"), Just("StatefulSet"), Just("Running"), Just("ADDED"), Just("DELETED"), Just("ERROR"), Just("BOOKMARK")]
            .prop_map(serde_json::Value::from),
    ];
    let keys = prop_oneof![
        Just("type"), Just("object"), Just("metadata"), Just("name"), Just("namespace"), Just("uid"), Just("labels"),
        Just("ownerReferences"), Just("kind"), Just("controller"), Just("spec"), Just("containers"), Just("status"),
        Just("phase"), Just("containerStatuses"), Just("state"), Just("running"), Just("restartCount"), Just("items"),
        Just("resourceVersion"), Just("deletionTimestamp"), Just("pod-template-hash"), Just("code"), Just("x"),
    ];
    leaf.prop_recursive(5, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(keys.clone().prop_map(str::to_string), inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Arbitrary JSON, and arbitrary bytes, never panic; a pod read from them is within bounds
    /// and its workload and ordinal are answered.
    #[test]
    fn odd_input_never_panics(v in any_json(), bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = v.to_string();
        for input in [text.as_bytes(), &bytes[..]] {
            if let Ok(pod) = Pod::parse(input) {
                prop_assert!(pod.containers.len() <= MAX_CONTAINERS && pod.name.len() <= MAX_NAME);
                let _ = (pod.workload(), pod.ordinal());
            }
            if let Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod) | WatchEvent::Deleted(pod)) = WatchEvent::parse(input) {
                let _ = (pod.workload(), pod.ordinal());
            }
            let _ = parse_list(input);
        }
        // The same value as a watch event's object and as a pod's parts.
        let _ = WatchEvent::parse(json!({"type": "ADDED", "object": v.clone()}).to_string().as_bytes());
        let mut pod = replica();
        pod["metadata"]["ownerReferences"] = v.clone();
        let _ = Pod::parse(pod.to_string().as_bytes()).map(|p| (p.workload(), p.ordinal()));
        let mut pod = replica();
        pod["status"] = v;
        let _ = Pod::parse(pod.to_string().as_bytes());
    }
}
