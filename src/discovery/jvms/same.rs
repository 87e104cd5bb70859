//! Whether two finders found the same JVM: this machine's /proc discovery (which enters a
//! container's namespaces) and an `--exec` host (jdwpmux run inside the container through
//! its runtime's exec) can both find the JVM of a container on this machine. A HotSpot
//! agent takes one debugger: listed twice, the second row would only ever be "busy", held
//! by jdwpmux itself. So each finder leaves out a JVM another already lists (see
//! `daemon::proc_vms` and `daemon::remote_vms` for which row stays).
//!
//! Nothing on the far link names a machine, so the JVM is known by what both sides read of
//! it: the container or pod it runs in (the exec command names it; this machine's /proc
//! names it by its name and id), its agent's port, its whole command line, and its pid as
//! its own pid namespace counts it (the exec joins the container's; here /proc/PID/status's
//! last `NSpid`). Two JVMs alike in all of it on two machines, one reached through an exec
//! into the other machine, would be taken for one: a container of the same name running the
//! same command line as the same pid on the same port. Pure.

use super::place::Place;

/// What tells a JVM apart, as one finder saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Print {
    /// The container or pod it runs in (only those: a JVM on a host has no twin here).
    pub place: Place,
    /// Its agent's port.
    pub port: u16,
    /// Its command line, as its finder read it (`FoundJvm::command`).
    pub command: String,
    /// Its pid in its own pid namespace, when known.
    pub pid: Option<u32>,
}

impl Print {
    /// The print of a JVM running in `place` (None: not in a container or pod, or its
    /// agent's port is not known).
    pub fn of(place: &Place, port: Option<u16>, command: &str, pid: Option<u32>) -> Option<Print> {
        let contained = matches!(place, Place::Container { .. } | Place::Pod { .. });
        Some(Print { place: place.clone(), port: port.filter(|p| *p != 0)?, command: command.to_string(), pid }).filter(|_| contained)
    }

    /// Whether `self` and `other` are one JVM.
    pub fn same(&self, other: &Print) -> bool {
        let pids = match (self.pid, other.pid) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        self.port == other.port && self.command == other.command && !self.command.is_empty() && pids && same_place(&self.place, &other.place)
    }
}

/// One container or pod, however each side named it: a container by its name, or by its id
/// or a prefix of it (`podman exec -i 3f2a9c1b7d4e`) that the other side knows as its id; a
/// pod by namespace and name (and container, when both say).
fn same_place(a: &Place, b: &Place) -> bool {
    match (a, b) {
        (Place::Container { runtime: ra, name: na, id: ia, .. }, Place::Container { runtime: rb, name: nb, id: ib, .. }) => {
            // An id prefix is what the runtimes accept: at least 12 of its hex digits.
            let by_id = |name: &str, id: &Option<String>| name.len() >= 12 && id.as_deref().is_some_and(|i| i.starts_with(name));
            ra == rb && ((!na.is_empty() && na == nb) || by_id(na, ib) || by_id(nb, ia))
        }
        (Place::Pod { namespace: sa, name: na, container: ca, .. }, Place::Pod { namespace: sb, name: nb, container: cb, .. }) => {
            let containers = match (ca, cb) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            };
            !na.is_empty() && na == nb && sa == sb && containers
        }
        _ => false,
    }
}

/// The pid a process has in its own (innermost) pid namespace: the last number of the
/// `NSpid:` line of its /proc/PID/status.
pub fn innermost_pid(status: &str) -> Option<u32> {
    status.lines().find_map(|l| l.strip_prefix("NSpid:")).and_then(|rest| rest.split_whitespace().last()).and_then(|p| p.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::place::Runtime;

    fn container(name: &str, id: Option<&str>) -> Place {
        Place::Container { runtime: Runtime::Podman, name: name.into(), id: id.map(str::to_string), compose: None }
    }

    const ID: &str = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";
    const CMD: &str = "java -agentlib:jdwp=transport=dt_socket,server=y,address=127.0.0.1:5005 Ledger";

    #[test]
    fn one_jvm_whichever_side_names_it() {
        // Here: /proc names the container and its id; the JVM is pid 1 inside it.
        let here = Print::of(&container("ncapp", Some(ID)), Some(5005), CMD, Some(1)).unwrap();
        // Through `podman exec -i ncapp`: the exec's words name it; the far side sees pid 1.
        let exec = Print::of(&container("ncapp", None), Some(5005), CMD, Some(1)).unwrap();
        assert!(here.same(&exec) && exec.same(&here));
        // By an id prefix of 12 digits or more; a shorter one is not taken.
        assert!(here.same(&Print::of(&container(&ID[..12], None), Some(5005), CMD, Some(1)).unwrap()));
        assert!(!here.same(&Print::of(&container(&ID[..6], None), Some(5005), CMD, Some(1)).unwrap()));
        // Another port, command line, pid, container or runtime: another JVM.
        assert!(!here.same(&Print::of(&container("ncapp", None), Some(5006), CMD, Some(1)).unwrap()));
        assert!(!here.same(&Print::of(&container("ncapp", None), Some(5005), "java Other", Some(1)).unwrap()));
        assert!(!here.same(&Print::of(&container("ncapp", None), Some(5005), CMD, Some(7)).unwrap()));
        assert!(!here.same(&Print::of(&container("other", None), Some(5005), CMD, Some(1)).unwrap()));
        let docker = Place::Container { runtime: Runtime::Docker, name: "ncapp".into(), id: None, compose: None };
        assert!(!here.same(&Print::of(&docker, Some(5005), CMD, Some(1)).unwrap()));
        // A pid not known on one side does not tell them apart.
        assert!(here.same(&Print::of(&container("ncapp", None), Some(5005), CMD, None).unwrap()));
    }

    #[test]
    fn pods_by_namespace_and_name_and_nothing_outside_containers() {
        let pod = |ns: &str, c: Option<&str>| Place::Pod { namespace: ns.into(), name: "orders-5f7c".into(), uid: String::new(), container: c.map(str::to_string), several: false };
        let a = Print::of(&pod("shop", Some("app")), Some(5005), CMD, Some(1)).unwrap();
        assert!(a.same(&Print::of(&pod("shop", None), Some(5005), CMD, Some(1)).unwrap()));
        assert!(!a.same(&Print::of(&pod("shop", Some("sidecar")), Some(5005), CMD, Some(1)).unwrap()));
        assert!(!a.same(&Print::of(&pod("other", None), Some(5005), CMD, Some(1)).unwrap()));
        // The host, a bare namespace, a place another jdwpmux reported, an unknown port: no print.
        assert_eq!(Print::of(&Place::Host, Some(5005), CMD, Some(1)), None);
        assert_eq!(Print::of(&Place::Netns { name: None }, Some(5005), CMD, Some(1)), None);
        assert_eq!(Print::of(&Place::Reported("container ncapp (podman)".into()), Some(5005), CMD, Some(1)), None);
        assert_eq!(Print::of(&container("ncapp", None), None, CMD, Some(1)), None);
        // An empty command line tells nothing.
        let blank = Print::of(&container("ncapp", None), Some(5005), "", Some(1)).unwrap();
        assert!(!blank.same(&blank.clone()));
    }

    #[test]
    fn the_innermost_pid() {
        assert_eq!(innermost_pid("Name:\tjava\nNSpid:\t48213\t1\nNSpgid:\t48213\t1\n"), Some(1));
        assert_eq!(innermost_pid("Name:\tjava\nNSpid:\t4242\n"), Some(4242));
        assert_eq!(innermost_pid("Name:\tjava\n"), None);
    }
}
