//! A VM the far side lists, as the JVM a host's scan would have found: the same key, name and
//! notes follow from it (`remote::naming`, `daemon::remote_vms`), so a VM keeps its debugger
//! port whichever way its host is reached. Pure.

use std::net::{Ipv4Addr, SocketAddr};

use crate::discovery::jvms::agent::{Agent, Bind};
use crate::discovery::jvms::cmdline::MainName;
use crate::discovery::jvms::found::AgentFrom;
use crate::discovery::jvms::{FoundJvm, Place, Reach};
use crate::remote::protocol::frame::{MainKind, VmInfo};

/// `vm` as a found JVM of the host; `login`: the uid the far side runs as (the ssh login's),
/// whose JVMs are the ones it lists.
pub fn found_jvm(vm: &VmInfo, login: Option<u32>) -> FoundJvm {
    let main = vm.main.as_ref().map(|(kind, name)| match kind {
        MainKind::Class => MainName::Class(name.clone()),
        MainKind::Jar => MainName::Jar(name.clone()),
        MainKind::Module => MainName::Module(name.clone()),
    });
    let reach = if vm.unreachable.is_empty() {
        // Where the far side reaches it on its host: shown, never connected to from here.
        Reach::At(SocketAddr::from((Ipv4Addr::LOCALHOST, vm.port)))
    } else if vm.other_net {
        // A container there that jdwpmux on the host may not enter: it runs as the ssh login.
        // What the far side says to do is for someone on that host; from here, this is.
        let what = vm.unreachable.split_once("; ").map_or(vm.unreachable.as_str(), |(what, _)| what);
        Reach::Unreachable(format!(
            "{what}; jdwpmux on that host runs as the ssh login: to enter its containers there, log in to it as root (--ssh root@HOST, or User root in its ssh config)"
        ))
    } else {
        Reach::Unreachable(vm.unreachable.clone())
    };
    FoundJvm {
        pid: vm.pid,
        uid: login,
        user: (!vm.user.is_empty()).then(|| vm.user.clone()),
        main,
        agent: Agent { transport: "dt_socket".into(), server: true, suspend: vm.waiting == Some(true), bind: Bind::Default, port: vm.port },
        from: AgentFrom::CommandLine,
        port: (vm.port != 0).then_some(vm.port),
        listening: vm.listening,
        attached: vm.attached,
        held_by: None,
        waiting: vm.waiting,
        other_net: vm.other_net,
        bound: vm.bind,
        reach,
        command: vm.command.clone(),
        // What jdwpmux there said (protocol 4); an older one tells only another namespace.
        place: match (vm.place.is_empty(), vm.other_net) {
            (false, _) => Place::Reported(crate::discovery::jvms::cmdline::printable(&vm.place)),
            (true, true) => Place::Netns { name: None },
            (true, false) => Place::Host,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> VmInfo {
        VmInfo {
            key: 3,
            pid: 77,
            port: 8000,
            listening: true,
            attached: false,
            waiting: Some(false),
            other_net: false,
            bind: Some("127.0.0.1".parse().unwrap()),
            user: "app".into(),
            main: Some((MainKind::Class, "Billing".into())),
            unreachable: String::new(),
            command: "java -agentlib:jdwp=... Billing".into(),
            place: String::new(),
        }
    }

    #[test]
    fn a_container_the_far_side_may_not_enter_says_how_it_could() {
        let what = "it runs in a container of root's and its agent listens on that container's own 127.0.0.1:8000 only";
        let why = format!("{what}; only root can enter its network namespace: run jdwpmux as root, or reach it through `serve --exec b='podman exec -i b' --far-copy`");
        let f = found_jvm(&VmInfo { other_net: true, unreachable: why, ..info() }, Some(1000));
        // What to do on that host is not what to do from here: the login is.
        let ok = |w: &str| w.starts_with(what) && w.contains("log in to it as root") && !w.contains("--exec");
        assert!(matches!(&f.reach, Reach::Unreachable(w) if ok(w)), "{:?}", f.reach);
        // Not a container: said as the far side said it.
        let f = found_jvm(&VmInfo { unreachable: "its agent picked a port".into(), ..info() }, Some(1000));
        assert_eq!(f.reach, Reach::Unreachable("its agent picked a port".into()));
    }

    #[test]
    fn a_place_the_far_side_reported_is_shown_and_keys_its_workload() {
        let f = found_jvm(&VmInfo { other_net: true, place: "container billing-api (podman)\u{1b}[31m".into(), ..info() }, Some(1000));
        assert_eq!(f.place.to_string(), "container billing-api (podman)?[31m", "shown as text, never as terminal controls");
        assert!(f.place.contained() && f.place.workload().is_some());
        // From a far side of protocol 3: another namespace is all it says.
        assert_eq!(found_jvm(&VmInfo { other_net: true, ..info() }, Some(1000)).place.to_string(), "network namespace");
        assert_eq!(found_jvm(&info(), Some(1000)).place.to_string(), "-");
    }

    #[test]
    fn a_listed_vm_is_the_jvm_a_scan_finds() {
        let f = found_jvm(&info(), Some(1000));
        assert_eq!((f.pid, f.uid, f.port, f.listening, f.attached), (77, Some(1000), Some(8000), true, false));
        assert_eq!(f.main, Some(MainName::Class("Billing".into())));
        assert_eq!(f.reach, Reach::At("127.0.0.1:8000".parse().unwrap()));
        assert_eq!(f.name(), "Billing");
        assert!(!f.all_addresses());
        assert!(f.runs_as(Some(1000)));
        let mut names = crate::remote::naming::Names::default();
        let dir = std::path::Path::new("/d");
        let named = names.name("box", dir, "h0", Some(1000), &[f]);
        assert_eq!(named[0].as_ref().map(|n| n.key.as_str()), Some("ssh:box/Billing"), "the key a scan of box gives Billing");
    }

    #[test]
    fn an_agent_on_all_addresses_is_marked_as_a_scan_marks_it() {
        for (bind, all) in [(Some("0.0.0.0"), true), (Some("::"), true), (Some("10.0.0.2"), false), (None, false)] {
            let vm = VmInfo { bind: bind.map(|b| b.parse().unwrap()), ..info() };
            let f = found_jvm(&vm, Some(1000));
            // `list`, the page and the log mark a JVM with a port and this.
            assert_eq!((f.all_addresses(), f.port), (all, Some(8000)), "{bind:?}");
        }
    }

    #[test]
    fn an_unreachable_vm_says_why_and_nameless_fields_stay_empty() {
        let vm = VmInfo { unreachable: "it listens in another network namespace".into(), user: String::new(), port: 0, main: None, waiting: None, ..info() };
        let f = found_jvm(&vm, None);
        assert_eq!(f.reach, Reach::Unreachable("it listens in another network namespace".into()));
        assert_eq!((f.user, f.port, f.main, f.waiting), (None, None, None, None));
    }
}
