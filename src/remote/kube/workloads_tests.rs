use super::*;
use proptest::prelude::*;

fn key(workload: Workload) -> SlotKey {
    SlotKey { namespace: "shop".into(), workload, container: "app".into() }
}

#[test]
fn replicas_take_slots_in_order_and_a_rollout_keeps_them() {
    let mut t = Workloads::default();
    let k = key(Workload::Deployment("orders".into()));
    // Scale from 1 to 3.
    assert_eq!(t.seen(&k, "a", None), Some(0));
    assert_eq!(t.seen(&k, "b", None), Some(1));
    assert_eq!(t.seen(&k, "c", None), Some(2));
    assert_eq!(t.seen(&k, "b", None), Some(1), "seen again: the same slot");
    // A rolling update, one surge pod at a time: the new pod, then the old one goes.
    for (old, new) in [("a", "a2"), ("b", "b2"), ("c", "c2")] {
        let surge = t.seen(&k, new, None).unwrap();
        assert_eq!(surge, 3);
        let was = t.slot_of(&k, old).unwrap();
        let moved = t.gone(&k, old).expect("the new pod moves into the old one's slot");
        assert_eq!(moved, Moved { uid: new.into(), from: 3, to: was });
    }
    assert_eq!(t.slots(&k), [Some("a2"), Some("b2"), Some("c2")]);
    // Recreate: all gone, then new ones take 0.. again.
    for u in ["a2", "b2", "c2"] {
        t.gone(&k, u);
    }
    assert_eq!(t.keys(), 0);
    assert_eq!(t.seen(&k, "n", None), Some(0));
}

#[test]
fn a_busy_pod_keeps_its_slot() {
    let mut t = Workloads::default();
    let k = key(Workload::Deployment("orders".into()));
    t.seen(&k, "a", None);
    t.seen(&k, "b", None);
    t.seen(&k, "c", None);
    t.set_busy(&k, "c", true);
    // b goes: c is attached and stays in slot 2; slot 1 waits for the next pod.
    assert_eq!(t.gone(&k, "b"), None);
    assert_eq!(t.slots(&k), [Some("a"), None, Some("c")]);
    assert_eq!(t.seen(&k, "d", None), Some(1));
    t.set_busy(&k, "c", false);
    assert_eq!(t.gone(&k, "a"), Some(Moved { uid: "c".into(), from: 2, to: 0 }));
}

#[test]
fn a_statefulsets_pods_hold_their_ordinals() {
    let mut t = Workloads::default();
    let k = key(Workload::StatefulSet("db".into()));
    assert_eq!(t.seen(&k, "db-1 uid", Some(1)), Some(1));
    assert_eq!(t.seen(&k, "db-0 uid", Some(0)), Some(0));
    // db-0 deleted: db-1 does not move; db-0 made again takes 0.
    assert_eq!(t.gone(&k, "db-0 uid"), None);
    assert_eq!(t.slot_of(&k, "db-1 uid"), Some(1));
    assert_eq!(t.seen(&k, "db-0 new uid", Some(0)), Some(0));
    // Made again before the old one was said gone: the new one holds it.
    assert_eq!(t.seen(&k, "db-1 new uid", Some(1)), Some(1));
    assert_eq!(t.slots(&k), [Some("db-0 new uid"), Some("db-1 new uid")]);
    assert_eq!(t.gone(&k, "db-1 uid"), None, "the replaced one is no longer held");
}

#[test]
fn keys_are_apart_and_bounded() {
    let mut t = Workloads::default();
    let orders = key(Workload::Deployment("orders".into()));
    let sidecar = SlotKey { container: "sidecar".into(), ..orders.clone() };
    let billing = SlotKey { namespace: "billing".into(), ..orders.clone() };
    assert_eq!(t.seen(&orders, "a", None), Some(0));
    assert_eq!(t.seen(&sidecar, "a", None), Some(0));
    assert_eq!(t.seen(&billing, "b", None), Some(0));
    assert_eq!(t.seen(&orders, "x", Some(MAX_SLOTS)), None);
    let mut one: Workloads<u8> = Workloads::default();
    for i in 0..MAX_SLOTS {
        assert_eq!(one.seen(&0, &i.to_string(), None), Some(i));
    }
    assert_eq!(one.seen(&0, "over", None), None);
    let mut many: Workloads<usize> = Workloads::default();
    for k in 0..MAX_KEYS {
        many.seen(&k, "p", None);
    }
    assert_eq!(many.seen(&MAX_KEYS, "p", None), None);
    assert_eq!(many.keys(), MAX_KEYS);
}

#[derive(Debug, Clone)]
enum Op {
    Seen(u8, u8),
    Gone(u8, u8),
    Busy(u8, u8, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3u8, 0..8u8).prop_map(|(k, p)| Op::Seen(k, p)),
        2 => (0..3u8, 0..8u8).prop_map(|(k, p)| Op::Gone(k, p)),
        1 => (0..3u8, 0..8u8, any::<bool>()).prop_map(|(k, p, b)| Op::Busy(k, p, b)),
    ]
}

proptest! {
    /// Whatever pods come and go: a pod holds one slot, a slot one pod; a pod moves only down
    /// and only when another went and it is idle; a busy pod never moves; above a free slot sit
    /// only pods that were busy.
    #[test]
    fn slots_stay_stable_and_packed(ops in prop::collection::vec(op(), 0..200)) {
        let mut t: Workloads<u8> = Workloads::default();
        let mut busy = std::collections::BTreeSet::new();
        // Pods that were busy since they came: they may stay above a slot freed meanwhile
        // (they are not moved when their debugger leaves; the next pod fills the gap).
        let mut was_busy = std::collections::BTreeSet::new();
        for op in ops {
            let before: Vec<Vec<Option<String>>> = (0..3u8).map(|k| t.slots(&k).into_iter().map(|s| s.map(str::to_string)).collect()).collect();
            match op {
                Op::Seen(k, p) => {
                    let was = t.slot_of(&k, &p.to_string());
                    let got = t.seen(&k, &p.to_string(), None);
                    prop_assert!(got.is_some());
                    if was.is_some() { prop_assert_eq!(was, got); }
                }
                Op::Gone(k, p) => {
                    let moved = t.gone(&k, &p.to_string());
                    if let Some(m) = moved {
                        prop_assert!(m.from > m.to);
                        prop_assert!(!busy.contains(&(k, m.uid.parse::<u8>().unwrap())));
                    }
                    busy.remove(&(k, p));
                    was_busy.remove(&(k, p));
                }
                Op::Busy(k, p, b) => {
                    t.set_busy(&k, &p.to_string(), b);
                    if b && t.slot_of(&k, &p.to_string()).is_some() {
                        busy.insert((k, p));
                        was_busy.insert((k, p));
                    } else {
                        busy.remove(&(k, p));
                    }
                }
            }
            for k in 0..3u8 {
                let slots = t.slots(&k);
                let held: Vec<&str> = slots.iter().flatten().copied().collect();
                let mut unique = held.clone();
                unique.sort();
                unique.dedup();
                prop_assert_eq!(unique.len(), held.len());
                prop_assert!(slots.last().is_none_or(|s| s.is_some()), "no free slot at the end");
                // Busy pods never moved.
                for &(bk, bp) in &busy {
                    if bk == k {
                        let now = t.slot_of(&k, &bp.to_string());
                        let then = before[k as usize].iter().position(|s| s.as_deref() == Some(&*bp.to_string()));
                        prop_assert_eq!(now, then);
                    }
                }
                // Packed: above a free slot, only pods that were busy.
                if let Some(free) = slots.iter().position(Option::is_none) {
                    for s in slots[free..].iter().flatten() {
                        prop_assert!(was_busy.contains(&(k, s.parse::<u8>().unwrap())), "idle {} above free slot {}: {:?}", s, free, slots);
                    }
                }
            }
        }
    }
}
