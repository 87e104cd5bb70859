use super::*;
use crate::remote::kube::pod::{Container, Owner};
use proptest::prelude::*;

/// A running replica of Deployment `deploy` (ReplicaSet `deploy-hash`), one container `app`.
fn replica(ns: &str, deploy: &str, hash: &str, suffix: &str) -> Pod {
    Pod {
        namespace: ns.into(),
        name: format!("{deploy}-{hash}-{suffix}"),
        uid: format!("uid-{deploy}-{hash}-{suffix}"),
        resource_version: "1".into(),
        phase: Phase::Running,
        deleting: false,
        reason: None,
        containers: vec![Container { name: "app".into(), running: true, restarts: 0 }],
        labels: [("app".to_string(), deploy.to_string()), ("pod-template-hash".to_string(), hash.to_string())].into(),
        owner: Some(Owner { kind: "ReplicaSet".into(), name: format!("{deploy}-{hash}") }),
    }
}

fn starts(c: &[Change]) -> Vec<(String, String)> {
    c.iter().filter_map(|c| if let Change::Start(h) = c { Some((h.label(), h.key.clone())) } else { None }).collect()
}

fn stops(c: &[Change]) -> Vec<(String, Why)> {
    c.iter().filter_map(|c| if let Change::Stop(h, w) = c { Some((h.label(), w.clone())) } else { None }).collect()
}

#[test]
fn replicas_get_hosts_keyed_by_slot_and_a_rollout_keeps_the_key() {
    let mut t = PodHosts::default();
    let a = replica("shop", "orders", "5f7c9", "x8k2p");
    let b = replica("shop", "orders", "5f7c9", "q2w8n");
    let c = t.event(WatchEvent::Added(a.clone()));
    assert_eq!(starts(&c), [("shop/orders-5f7c9-x8k2p".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
    let c = t.event(WatchEvent::Added(b.clone()));
    assert_eq!(starts(&c), [("shop/orders-5f7c9-q2w8n".to_string(), "kube:shop/deploy/orders/1/app".to_string())]);
    // The same pod again: nothing to do.
    assert_eq!(t.event(WatchEvent::Modified(a.clone())), []);
    // A rollout: a's replacement made (slot 2 for now), then a deleted: it moves into slot 0.
    let a2 = replica("shop", "orders", "8c2d1", "m4n5b");
    assert_eq!(starts(&t.event(WatchEvent::Added(a2.clone()))), [("shop/orders-8c2d1-m4n5b".to_string(), "kube:shop/deploy/orders/2/app".to_string())]);
    let c = t.event(WatchEvent::Deleted(a.clone()));
    let mut stopped = stops(&c);
    stopped.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(stopped, [("shop/orders-5f7c9-x8k2p".to_string(), Why::Deleted), ("shop/orders-8c2d1-m4n5b".to_string(), Why::Moved)]);
    assert_eq!(starts(&c), [("shop/orders-8c2d1-m4n5b".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
    // Deleted first, then made: the new pod takes the free slot at once.
    let mut gone = b.clone();
    gone.deleting = true;
    assert_eq!(stops(&t.event(WatchEvent::Modified(gone))), [("shop/orders-5f7c9-q2w8n".to_string(), Why::Deleted)]);
    let b2 = replica("shop", "orders", "8c2d1", "zz999");
    assert_eq!(starts(&t.event(WatchEvent::Added(b2))), [("shop/orders-8c2d1-zz999".to_string(), "kube:shop/deploy/orders/1/app".to_string())]);
    assert_eq!(t.event(WatchEvent::Deleted(b)), []);
    assert_eq!(t.hosts().count(), 2);
}

#[test]
fn pods_and_containers_that_do_not_run_have_no_host() {
    let mut t = PodHosts::default();
    let mut p = replica("shop", "orders", "5f7c9", "x8k2p");
    p.phase = Phase::Pending;
    assert_eq!(t.event(WatchEvent::Added(p.clone())), []);
    p.phase = Phase::Running;
    p.containers.push(Container { name: "sidecar".into(), running: false, restarts: 0 });
    // Two containers: the label names the container.
    assert_eq!(starts(&t.event(WatchEvent::Modified(p.clone()))), [("shop/orders-5f7c9-x8k2p/app".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
    p.containers[1].running = true;
    assert_eq!(starts(&t.event(WatchEvent::Modified(p.clone()))), [("shop/orders-5f7c9-x8k2p/sidecar".to_string(), "kube:shop/deploy/orders/0/sidecar".to_string())]);
    p.containers[0].running = false;
    assert_eq!(stops(&t.event(WatchEvent::Modified(p.clone()))), [("shop/orders-5f7c9-x8k2p/app".to_string(), Why::ContainerStopped)]);
    p.phase = Phase::Failed;
    assert_eq!(stops(&t.event(WatchEvent::Modified(p.clone()))), [("shop/orders-5f7c9-x8k2p/sidecar".to_string(), Why::NotRunning(Phase::Failed))]);
    assert_eq!(t.hosts().count(), 0);
}

#[test]
fn a_fresh_list_ends_the_hosts_of_pods_gone_meanwhile() {
    let mut t = PodHosts::default();
    let a = replica("shop", "orders", "5f7c9", "x8k2p");
    let b = replica("shop", "orders", "5f7c9", "q2w8n");
    assert_eq!(starts(&t.listed(vec![a.clone(), b.clone()])).len(), 2);
    let c = t.listed(vec![b.clone()]);
    assert!(stops(&c).contains(&("shop/orders-5f7c9-x8k2p".to_string(), Why::Deleted)), "{c:?}");
    // b moved down into slot 0.
    assert_eq!(starts(&c), [("shop/orders-5f7c9-q2w8n".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
    assert_eq!(t.listed(vec![b]), []);
}

#[test]
fn a_pod_with_a_debugger_attached_keeps_its_slot_and_host() {
    let mut t = PodHosts::default();
    let a = replica("shop", "orders", "5f7c9", "x8k2p");
    let b = replica("shop", "orders", "5f7c9", "q2w8n");
    t.listed(vec![a.clone(), b.clone()]);
    t.set_busy(|h| h.pod == b.name);
    // a goes: b, busy, stays in slot 1 and its host runs on.
    assert_eq!(stops(&t.event(WatchEvent::Deleted(a))), [("shop/orders-5f7c9-x8k2p".to_string(), Why::Deleted)]);
    // The debugger left; a new replica takes the free slot 0.
    t.set_busy(|_| false);
    let c = replica("shop", "orders", "8c2d1", "m4n5b");
    assert_eq!(starts(&t.event(WatchEvent::Added(c))), [("shop/orders-8c2d1-m4n5b".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
}

#[test]
fn a_scale_from_one_to_three_takes_slots_in_order_and_statefulsets_their_ordinals() {
    let mut t = PodHosts::default();
    let keys = |c: &[Change]| starts(c).into_iter().map(|(_, k)| k).collect::<Vec<_>>();
    assert_eq!(keys(&t.listed(vec![replica("shop", "orders", "h", "a")])), ["kube:shop/deploy/orders/0/app"]);
    let c = t.listed(vec![replica("shop", "orders", "h", "a"), replica("shop", "orders", "h", "b"), replica("shop", "orders", "h", "c")]);
    assert_eq!(keys(&c), ["kube:shop/deploy/orders/1/app", "kube:shop/deploy/orders/2/app"]);
    // A StatefulSet's pod takes its ordinal, and the pod made again under its name takes it over.
    let mut db = replica("shop", "x", "h", "y");
    db.name = "db-1".into();
    db.uid = "uid-db-1".into();
    db.labels.clear();
    db.owner = Some(Owner { kind: "StatefulSet".into(), name: "db".into() });
    assert_eq!(keys(&t.event(WatchEvent::Added(db.clone()))), ["kube:shop/sts/db/1/app"]);
    t.event(WatchEvent::Deleted(db.clone()));
    db.uid = "uid-db-1-again".into();
    assert_eq!(keys(&t.event(WatchEvent::Added(db))), ["kube:shop/sts/db/1/app"]);
}

proptest! {
    /// Any run of events: the hosts told started minus those told stopped are the hosts
    /// held; every running container of a running, undeleted pod has one; keys are unique.
    #[test]
    fn changes_follow_the_table(ops in proptest::collection::vec((0u8..6, 0u8..4, any::<bool>(), any::<bool>()), 1..60)) {
        let mut t = PodHosts::default();
        let mut up: BTreeMap<(String, String), Host> = BTreeMap::new();
        let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
        for (i, (pod, kind, running, deleting)) in ops.into_iter().enumerate() {
            let mut p = replica("shop", if pod % 2 == 0 { "orders" } else { "cart" }, "h", &format!("p{pod}"));
            p.phase = if running { Phase::Running } else { Phase::Pending };
            p.deleting = deleting && i % 3 == 0;
            let ev = match kind {
                0 => WatchEvent::Deleted(p.clone()),
                1 => WatchEvent::Added(p.clone()),
                _ => WatchEvent::Modified(p.clone()),
            };
            if kind == 0 || p.deleting { pods.remove(&p.uid); } else { pods.insert(p.uid.clone(), p.clone()); }
            let changes = t.event(ev);
            let first_start = changes.iter().position(|c| matches!(c, Change::Start(_))).unwrap_or(changes.len());
            prop_assert!(changes[first_start..].iter().all(|c| matches!(c, Change::Start(_))), "stops before starts");
            for c in changes {
                match c {
                    Change::Start(h) => prop_assert!(up.insert(h.id(), h).is_none()),
                    Change::Stop(h, _) => prop_assert_eq!(up.remove(&h.id()), Some(h)),
                }
            }
            let held: Vec<&Host> = t.hosts().collect();
            prop_assert_eq!(held, up.values().collect::<Vec<_>>());
            let want = pods.values().filter(|p| p.phase == Phase::Running).count();
            prop_assert_eq!(up.len(), want);
            let keys: BTreeSet<&String> = up.values().map(|h| &h.key).collect();
            prop_assert_eq!(keys.len(), up.len());
        }
    }
}

/// Why a host stops, as its log line says it: evicted (phase Failed, reason Evicted), its
/// container restarted (its restart count up, whether or not its stop was seen), deleted.
#[test]
fn a_pod_that_goes_says_why() {
    let mut t = PodHosts::default();
    let a = replica("shop", "orders", "5f7c9", "x8k2p");
    let b = replica("shop", "orders", "5f7c9", "q2w8n");
    t.event(WatchEvent::Added(a.clone()));
    t.event(WatchEvent::Added(b.clone()));
    // a's container restarted between two events: stopped and started again under its key.
    let mut restarted = a.clone();
    restarted.containers[0].restarts = 1;
    let c = t.event(WatchEvent::Modified(restarted.clone()));
    assert_eq!(stops(&c), [("shop/orders-5f7c9-x8k2p".to_string(), Why::Restarted)]);
    assert_eq!(starts(&c), [("shop/orders-5f7c9-x8k2p".to_string(), "kube:shop/deploy/orders/0/app".to_string())]);
    assert_eq!(Why::Restarted.to_string(), "its container was restarted");
    assert_eq!(t.event(WatchEvent::Modified(restarted)), []);
    // b evicted: Failed with reason Evicted.
    let mut evicted = b.clone();
    evicted.phase = Phase::Failed;
    evicted.reason = Some("Evicted".into());
    evicted.containers[0].running = false;
    assert_eq!(stops(&t.event(WatchEvent::Modified(evicted))), [("shop/orders-5f7c9-q2w8n".to_string(), Why::Evicted)]);
    assert_eq!(Why::Evicted.to_string(), "the pod was evicted");
    // Failed for another reason: said as its phase.
    let mut t = PodHosts::default();
    t.event(WatchEvent::Added(b.clone()));
    let mut failed = b;
    failed.phase = Phase::Failed;
    assert_eq!(stops(&t.event(WatchEvent::Modified(failed))), [("shop/orders-5f7c9-q2w8n".to_string(), Why::NotRunning(Phase::Failed))]);
}
