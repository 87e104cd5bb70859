//! The current VM by default, and selectors.

use super::*;

/// A registry listing VMs named on the command line, ready, each `(app, pid, started)`.
fn registry(vms: &[(&str, u32, Option<u64>)]) -> Registry {
    let reg = Registry::default();
    for (i, (app, pid, started)) in vms.iter().enumerate() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 8000 + i as u16));
        let status = VmStatus { app: Some(app.to_string()), pid: Some(*pid), state: crate::session::VmState::Ready, ..VmStatus::default() };
        let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::fixed(status));
        reg.set_started(id, *started);
    }
    reg
}

fn current_app(reg: &Registry) -> Option<String> {
    reg.current().and_then(|e| e.handle.status().app)
}

#[test]
fn the_most_recently_started_jvm_is_current_whatever_the_order_found() {
    let reg = registry(&[("Old", 10, Some(500)), ("Newest", 30, Some(900)), ("Middle", 20, Some(700))]);
    assert_eq!(current_app(&reg).as_deref(), Some("Newest"));
    // Started in the same clock tick: the one found later (/proc lists pids in order).
    let reg = registry(&[("Old", 10, Some(500)), ("Twin", 11, Some(900)), ("Later twin", 12, Some(900))]);
    assert_eq!(current_app(&reg).as_deref(), Some("Later twin"));
}

#[test]
fn a_known_start_beats_an_unknown_one_and_without_any_the_first_found_is_current() {
    let reg = registry(&[("Remote", 1, None), ("Local", 2, Some(100)), ("Later", 3, None)]);
    assert_eq!(current_app(&reg).as_deref(), Some("Local"));
    let reg = registry(&[("First", 1, None), ("Second", 2, None)]);
    assert_eq!(current_app(&reg).as_deref(), Some("First"));
    assert_eq!(registry(&[]).current().map(|e| e.id), None);
}

#[test]
fn a_vm_that_cannot_be_reached_is_current_only_when_no_other_can_be() {
    let reg = Registry::default();
    let add = |app: &str, port: u16, state: crate::session::VmState, started: Option<u64>| {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let status = VmStatus { app: Some(app.to_string()), state, ..VmStatus::default() };
        let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::fixed(status));
        reg.set_started(id, started);
    };
    // A container's JVM started last, a far host's JVM (start unknown), an older local one.
    add("Local", 8000, crate::session::VmState::Ready, Some(100));
    add("Container", 8001, crate::session::VmState::Unreachable, Some(900));
    assert_eq!(current_app(&reg).as_deref(), Some("Local"));
    let reg2 = Registry::default();
    let only = |reg: &Registry, app: &str, port: u16, state| {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let status = VmStatus { app: Some(app.to_string()), state, ..VmStatus::default() };
        reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::fixed(status))
    };
    let c = only(&reg2, "Container", 8001, crate::session::VmState::Unreachable);
    reg2.set_started(c, Some(900));
    only(&reg2, "Far", 8002, crate::session::VmState::Connecting);
    assert_eq!(current_app(&reg2).as_deref(), Some("Far"), "a VM still connecting can be reached");
    // With nothing else, no VM is current, and why is said.
    let reg3 = Registry::default();
    only(&reg3, "Container", 8001, crate::session::VmState::Unreachable);
    assert_eq!(current_app(&reg3), None);
    assert_eq!(reg3.current_or_why().err(), Some(NoCurrent::NoneReachable));
    assert_eq!(Registry::default().current_or_why().err(), Some(NoCurrent::NoneFound));
}

/// A VM listed for a discovery, with `app` and `pid`, at `port`.
fn add(reg: &Registry, app: &str, pid: u32, port: u16, state: crate::session::VmState) -> VmId {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let status = VmStatus { app: Some(app.to_string()), pid: Some(pid), state, ..VmStatus::default() };
    let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Proc, VmHandle::fixed(status));
    reg.set_held(id, true, None);
    id
}

#[test]
fn a_selection_is_the_vm_it_named_not_its_words() {
    use crate::session::VmState::Ready;
    let reg = Registry::default();
    let first = add(&reg, "Main", 10, 8000, Ready);
    assert_eq!(reg.select("Main"), Ok(first));
    // Another Main appears: the words are ambiguous now, the selection is not.
    let second = add(&reg, "Main", 20, 8001, Ready);
    assert!(matches!(reg.resolve("Main"), Err(SelectError::Ambiguous { .. })));
    assert_eq!(reg.current().map(|e| e.id), Some(first));
    assert!(reg.list().iter().any(|v| v.id == first && v.current));
    // The selected VM goes away: none is current (the other Main does not stand in), and why
    // names the one awaited, its pid once.
    let ended = VmStatus { app: Some("Main".into()), pid: Some(10), ..VmStatus::default() };
    reg.replace_handle(first, "127.0.0.1:8000".into(), VmHandle::unreachable(ended));
    reg.set_held(first, false, None);
    assert!(!reg.list().iter().any(|v| v.id == first));
    match reg.current_or_why() {
        Err(NoCurrent::Away { vm }) => assert_eq!(vm, "127.0.0.1:8000 Main pid 10"),
        other => panic!("{other:?}"),
    }
    // It comes back (its entry, by its key, with a new session): current again.
    let back = VmStatus { app: Some("Main".into()), pid: Some(11), state: Ready, ..VmStatus::default() };
    reg.replace_handle(first, "127.0.0.1:8000".into(), VmHandle::fixed(back));
    reg.set_held(first, true, None);
    assert_eq!(reg.current().map(|e| e.id), Some(first));
    assert_eq!(reg.select("20"), Ok(second));
    assert_eq!(reg.current().map(|e| e.id), Some(second));
}

#[test]
fn a_select_at_start_waits_for_one_vm_and_names_an_ambiguity() {
    use crate::session::VmState::Ready;
    let reg = Registry::default();
    reg.select_later("Main");
    assert_eq!(reg.current_or_why().err(), Some(NoCurrent::NotYet { selector: "Main".into() }));
    let a = add(&reg, "Main", 10, 8000, Ready);
    let b = add(&reg, "Main", 20, 8001, Ready);
    match reg.current_or_why() {
        Err(NoCurrent::Ambiguous { selector, candidates }) => {
            assert_eq!(selector, "Main");
            assert_eq!(candidates, ["127.0.0.1:8000 Main pid 10", "127.0.0.1:8001 Main pid 20"]);
        }
        other => panic!("{other:?}"),
    }
    // Once it names one VM (the other gone), that one is pinned: the other's return does not
    // make it ambiguous again.
    reg.set_held(a, false, None);
    let _ = reg.vms.get_mut(&a).map(|mut e| e.handle = VmHandle::unreachable(VmStatus::default()));
    assert_eq!(reg.current().map(|e| e.id), Some(b));
    reg.set_held(a, true, None);
    assert_eq!(reg.current().map(|e| e.id), Some(b));
}

#[test]
fn a_vm_that_cannot_be_reached_cannot_be_selected_and_its_pid_is_said_once() {
    let reg = Registry::default();
    let addr = SocketAddr::from(([0, 0, 0, 0], 5005));
    let status = VmStatus { app: Some("Vault".into()), pid: Some(14289), ..VmStatus::default() };
    let id = reg.add_unbound("proc:Vault#14289!".into(), "pid 14289".into(), addr, Source::Proc, VmHandle::unreachable(status));
    reg.set_held(id, true, Some("its agent listens on a container's own loopback; run jdwpmux as root".into()));
    assert!(reg.get(id).is_some_and(|e| e.placeholder()));
    match reg.select("Vault") {
        Err(e @ SelectError::Unreachable { .. }) => {
            let text = e.to_string();
            assert_eq!(text, "\"Vault\" names pid 14289 Vault, which cannot be reached: its agent listens on a container's own loopback; run jdwpmux as root");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reg.current().map(|e| e.id), None);
    assert!(matches!(reg.resolve("nothing"), Err(SelectError::Unknown { .. })));
}

#[test]
fn a_selection_pins_the_current_vm_over_the_newest() {
    let reg = registry(&[("Billing", 10, Some(500)), ("Newest", 30, Some(900))]);
    reg.select("Billing").unwrap();
    assert_eq!(current_app(&reg).as_deref(), Some("Billing"));
    // A JVM started after the selection does not take it over.
    let addr = SocketAddr::from(([127, 0, 0, 1], 9000));
    let status = VmStatus { app: Some("Newer".into()), state: crate::session::VmState::Ready, ..VmStatus::default() };
    let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::fixed(status));
    reg.set_started(id, Some(1000));
    assert_eq!(current_app(&reg).as_deref(), Some("Billing"));
}

#[test]
fn a_class_name_without_its_package_selects_its_vm() {
    let reg = registry(&[("com.example.Billing", 10, None), ("com.example.BillingWorker", 11, None), ("org.other.Shipping", 12, None)]);
    let billing = reg.resolve("Billing").unwrap();
    assert_eq!(reg.get(billing).and_then(|e| e.handle.status().app).as_deref(), Some("com.example.Billing"));
    let shipping = reg.resolve("Shipping").unwrap();
    assert_eq!(reg.get(shipping).and_then(|e| e.handle.status().pid), Some(12));
    // The full name and a unique prefix still work; an exact app name wins over a class name.
    assert_eq!(reg.resolve("com.example.Billing"), Ok(billing));
    assert_eq!(reg.resolve("org."), Ok(shipping));
    // Two classes of that name in different packages: both are named as candidates.
    let reg = registry(&[("com.example.Billing", 10, None), ("org.other.Billing", 11, None)]);
    match reg.resolve("Billing") {
        Err(SelectError::Ambiguous { candidates, .. }) => {
            assert!(candidates.len() == 2 && candidates.iter().any(|c| c.contains("org.other.Billing")), "{candidates:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(reg.resolve("Billin"), Err(SelectError::Unknown { .. })));
}
