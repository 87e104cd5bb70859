//! The current VM by default, and selectors.

use super::*;

/// A registry listing VMs named on the command line, each `(app, pid, started)`.
fn registry(vms: &[(&str, u32, Option<u64>)]) -> Registry {
    let reg = Registry::default();
    for (i, (app, pid, started)) in vms.iter().enumerate() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 8000 + i as u16));
        let status = VmStatus { app: Some(app.to_string()), pid: Some(*pid), ..VmStatus::default() };
        let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::unreachable(status));
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
    // With nothing else, the unreachable one is still the current VM (the port says why).
    let reg3 = Registry::default();
    only(&reg3, "Container", 8001, crate::session::VmState::Unreachable);
    assert_eq!(current_app(&reg3).as_deref(), Some("Container"));
}

#[test]
fn a_selection_pins_the_current_vm_over_the_newest() {
    let reg = registry(&[("Billing", 10, Some(500)), ("Newest", 30, Some(900))]);
    reg.select("Billing").unwrap();
    assert_eq!(current_app(&reg).as_deref(), Some("Billing"));
    // A JVM started after the selection does not take it over.
    let addr = SocketAddr::from(([127, 0, 0, 1], 9000));
    let status = VmStatus { app: Some("Newer".into()), ..VmStatus::default() };
    let id = reg.add_unbound(addr.to_string(), addr.to_string(), addr, Source::Cli, VmHandle::unreachable(status));
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
