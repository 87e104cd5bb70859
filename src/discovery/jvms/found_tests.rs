//! Tests of `found`: JVMs told from what a host view shows, how each is reached, and the
//! advice given when it cannot be.

use super::*;
use crate::discovery::jvms::net::{LISTEN, ESTABLISHED};
use crate::discovery::jvms::view::{CommandLine, ThreadMarks};

fn marks(names: &[&str]) -> ThreadMarks {
    ThreadMarks::from_names(names.iter().copied())
}

fn sock(local: &str, state: u8, inode: u64) -> Socket {
    Socket { local: local.parse().unwrap(), remote: "0.0.0.0:0".parse().unwrap(), state, uid: 0, inode }
}

fn proc_(args: &str, fds: Option<Vec<u64>>) -> ProcView {
    ProcView {
        net: Some(1),
        pids: Some(7),
        uid: Some(1000),
        user: Some("ann".into()),
        command: Some(CommandLine::from_args(&args.split(' ').map(String::from).collect::<Vec<_>>())),
        fd_sockets: fds,
        threads: Some(marks(&["java", "JDWP Event Help", "Common-Cleaner"])),
        ..Default::default()
    }
}

fn view(procs: Vec<(u32, ProcView)>, sockets: Vec<Socket>) -> HostView {
    HostView { uid: Some(1000), own_net: Some(1), own_pids: Some(7), sockets, procs: procs.into_iter().collect(), ..Default::default() }
}

#[test]
fn a_fixed_port_on_loopback() {
    let v = view(
        vec![(10, proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000 -cp . com.example.Billing", Some(vec![5])))],
        vec![sock("127.0.0.1:8000", LISTEN, 5)],
    );
    let f = found(&v);
    assert_eq!(f.len(), 1);
    let j = &f[0];
    assert_eq!((j.pid, j.name(), j.port, j.listening, j.attached), (10, "com.example.Billing".to_string(), Some(8000), true, false));
    assert_eq!(j.reach, Reach::At("127.0.0.1:8000".parse().unwrap()));
    assert_eq!((j.waiting, j.from, j.user.as_deref()), (Some(false), AgentFrom::CommandLine, Some("ann")));
}

#[test]
fn a_picked_port_is_read_from_the_process_sockets() {
    let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=127.0.0.1:0 -jar /srv/app.jar";
    let mut v = view(
        vec![(10, proc_(args, Some(vec![7, 9, 11])))],
        vec![sock("0.0.0.0:8080", LISTEN, 9), sock("127.0.0.1:40411", LISTEN, 7), sock("127.0.0.1:40411", ESTABLISHED, 11)],
    );
    v.remember_agent_sockets();
    let j = &found(&v)[0];
    assert_eq!((j.port, j.attached, j.name()), (Some(40411), true, "app.jar".to_string()));
    assert_eq!(j.reach, Reach::At("127.0.0.1:40411".parse().unwrap()));
    // While a debugger is attached it does not listen: the port it last listened on, not
    // the program's own server.
    let mut later = v.clone();
    later.sockets.retain(|s| s.state != LISTEN || s.local.port() == 8080);
    let j = &found(&later)[0];
    assert_eq!((j.port, j.listening, j.reach.clone()), (Some(40411), false, Reach::At("127.0.0.1:40411".parse().unwrap())));
    // A debugger holds it: busy, and the other end of its connection is named.
    assert!(j.busy() && j.held_by.is_some_and(|h| h.socket.is_none()), "{j:?}");
    assert!(j.runs_as(Some(1000)) && !j.runs_as(Some(0)) && !j.runs_as(None));
    // After the debugger, the agent listens on a new port: that one.
    later.sockets.push(sock("127.0.0.1:45000", LISTEN, 20));
    later.procs.get_mut(&10).unwrap().fd_sockets = Some(vec![9, 20]);
    later.remember_agent_sockets();
    assert_eq!(found(&later)[0].port, Some(45000));
    // Never readable (another user's process): the port is unknown, and the hint says why.
    let mut v = view(vec![(10, proc_(args, None))], v.sockets.clone());
    v.remember_agent_sockets();
    let j = &found(&v)[0];
    assert!(matches!(&j.reach, Reach::Unreachable(why) if why.contains("only ann or root")), "{:?}", j.reach);
}

#[test]
fn a_fixed_port_of_another_user_is_found_in_the_table() {
    let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=*:8001 Main";
    let v = view(vec![(10, proc_(args, None))], vec![sock("[::]:8001", LISTEN, 3)]);
    let j = &found(&v)[0];
    assert_eq!((j.port, j.listening), (Some(8001), true));
    assert_eq!(j.reach, Reach::At("127.0.0.1:8001".parse().unwrap()));
    // Not listening now: still found, reached where it will listen again.
    let v = view(vec![(10, proc_(args, None))], vec![]);
    let j = &found(&v)[0];
    assert_eq!((j.listening, j.reach.clone()), (false, Reach::At("127.0.0.1:8001".parse().unwrap())));
}

#[test]
fn a_jvm_restarted_on_its_port_leaves_its_exiting_predecessor_out() {
    let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=8000 Billing";
    let old = proc_(args, Some(vec![]));
    let new = proc_(args, Some(vec![6]));
    let v = view(vec![(10, old.clone()), (11, new.clone())], vec![sock("127.0.0.1:8000", LISTEN, 6)]);
    let f = found(&v);
    assert_eq!(f.iter().map(|j| (j.pid, j.listening)).collect::<Vec<_>>(), [(11, true)]);
    // One that a debugger holds directly is another JVM, and stays.
    let attached = proc_(args, Some(vec![8]));
    let v = view(vec![(10, attached), (11, new.clone())], vec![sock("127.0.0.1:8000", LISTEN, 6), sock("127.0.0.1:8000", ESTABLISHED, 8)]);
    assert_eq!(found(&v).len(), 2);
    // Nobody listens on the port: the old one is still found, reached where it will listen.
    let v = view(vec![(10, old.clone())], vec![]);
    assert_eq!(found(&v).iter().map(|j| (j.pid, j.listening)).collect::<Vec<_>>(), [(10, false)]);
    // The same port in another network namespace is another JVM's.
    let mut boxed = old;
    boxed.net = Some(2);
    boxed.pids = Some(8);
    boxed.net_sockets = Some(vec![]);
    let v = view(vec![(10, boxed), (11, new)], vec![sock("127.0.0.1:8000", LISTEN, 6)]);
    assert_eq!(found(&v).len(), 2);
}

#[test]
fn environment_agents_count_once_their_threads_show_it() {
    let mut p = proc_("java -cp . Main", Some(vec![5]));
    p.env = vec!["JAVA_TOOL_OPTIONS=-Xmx1g -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=8002".into()];
    p.threads = Some(marks(&["java", "JDWP Transport ", "JDWP Event Help"]));
    let v = view(vec![(10, p.clone())], vec![sock("127.0.0.1:8002", LISTEN, 5)]);
    let j = &found(&v)[0];
    assert_eq!((j.from, j.waiting, j.port), (AgentFrom::JavaToolOptions, Some(true), Some(8002)));
    // The same variable in a shell's environment: no agent threads, no JVM.
    p.threads = Some(marks(&["bash"]));
    assert!(found(&view(vec![(10, p.clone())], vec![])).is_empty());
    p.threads = None;
    assert!(found(&view(vec![(10, p)], vec![])).is_empty());
}

#[test]
fn containers_are_reached_at_their_own_address_or_inside_their_namespace() {
    let mut p = proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000 Main", Some(vec![5]));
    p.net = Some(2);
    p.pids = Some(8);
    p.net_sockets = Some(vec![sock("0.0.0.0:8000", LISTEN, 5)]);
    p.net_addrs = vec![IpAddr::from([172, 17, 0, 2])];
    let j = &found(&view(vec![(10, p.clone())], vec![]))[0];
    assert!(j.other_net);
    assert_eq!(j.reach, Reach::At("172.17.0.2:8000".parse().unwrap()));
    // No address of its own (--network=none): its loopback, inside its namespace, by its
    // owner (the scanner here: a rootless container).
    p.net_addrs.clear();
    let inside = Reach::Inside { pid: 10, net: 2, addr: "127.0.0.1:8000".parse().unwrap() };
    assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
    // On its loopback only: the same, whatever addresses it has.
    p.net_sockets = Some(vec![sock("127.0.0.1:8000", LISTEN, 5)]);
    p.net_addrs = vec![IpAddr::from([172, 17, 0, 2])];
    assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
    // Sharing our process list (`ip netns exec`, `--pid=host`): on this machine all the same.
    p.pids = Some(7);
    assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
    // Root enters anyone's; another user cannot, and is told who can.
    let mut root = view(vec![(10, p.clone())], vec![]);
    root.uid = Some(0);
    assert_eq!(found(&root)[0].reach, inside);
    let mut theirs = view(vec![(10, p.clone())], vec![]);
    theirs.uid = Some(1001);
    assert!(matches!(&found(&theirs)[0].reach, Reach::Unreachable(w) if w.contains("only root or ann") && w.contains("--other-users")), "{:?}", found(&theirs)[0].reach);
    p.uid = Some(0);
    let rootful = view(vec![(10, p)], vec![]);
    assert!(matches!(&found(&rootful)[0].reach, Reach::Unreachable(w) if w.contains("run jdwpmux as root")), "{:?}", found(&rootful)[0].reach);
}

#[test]
fn advice_fits_the_case_at_hand() {
    let id = "2d9d171a7943".to_string() + &"0".repeat(52);
    let mut p = proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:5005 Main", None);
    p.net = Some(2);
    p.pids = Some(8);
    p.net_sockets = Some(vec![sock("127.0.0.1:5005", LISTEN, 5)]);
    p.place.set_cgroups(&format!("0::/docker/{id}\n"));
    // A uid with no user here (`docker run --user 4321`): no "run jdwpmux as uid 4321".
    p.uid = Some(4321);
    p.user = None;
    let mut v = view(vec![(10, p.clone())], vec![]);
    v.uid = Some(1000);
    let why = |v: &HostView| match &found(v)[0].reach {
        Reach::Unreachable(w) => w.clone(),
        other => panic!("{other:?}"),
    };
    let w = why(&v);
    assert!(w.contains("no user of this machine") && w.contains("run jdwpmux as root with --other-users") && !w.contains("run jdwpmux as uid"), "{w}");
    assert!(w.contains("serve --exec 2d9d171a7943='docker exec -i 2d9d171a7943' --far-copy"), "{w}");
    // This user may use docker: reached through it, named by it; copying allowed or not.
    v.runtime_names.insert(id.clone(), ("orders-api".into(), None));
    v.docker = DockerWay::NotCopying;
    let w = why(&v);
    assert!(w.contains("container orders-api (docker)'s own 127.0.0.1:5005") && w.contains("serve --far-copy") && !w.contains("--other-users"), "{w}");
    assert_eq!(found(&v)[0].place, Place::Container { runtime: Runtime::Docker, name: "orders-api".into(), id: Some(id.clone()), compose: None });
    v.docker = DockerWay::Copying;
    assert!(why(&v).ends_with("reaching it through `docker exec -i orders-api`"), "{}", why(&v));
    // A root container: the same.
    let mut rootful = view(vec![(10, p.clone())], vec![]);
    rootful.procs.get_mut(&10).unwrap().uid = Some(0);
    rootful.uid = Some(1000);
    assert!(why(&rootful).contains("run jdwpmux as root"), "{}", why(&rootful));
    rootful.docker = DockerWay::Copying;
    assert!(why(&rootful).contains("through `docker exec -i 2d9d171a7943`"), "{}", why(&rootful));
    // Root enters it whatever docker says.
    rootful.uid = Some(0);
    assert!(matches!(found(&rootful)[0].reach, Reach::Inside { .. }));
    // A rootful Podman's container, to a user: through sudo's podman.
    let mut podman = p.clone();
    podman.uid = Some(0);
    podman.place = Default::default();
    podman.place.set_cgroups(&format!("0::/machine.slice/libpod-{id}.scope\n"));
    let mut v = view(vec![(10, podman)], vec![]);
    v.uid = Some(1000);
    let w = why(&v);
    assert!(w.contains("`serve --exec 2d9d171a7943='sudo -n podman exec -i 2d9d171a7943' --far-copy` (if sudo lets you run podman)"), "{w}");
    assert!(w.contains("let jdwpmux do that: `serve --podman-sudo --far-copy`"), "{w}");
    // --podman-sudo, not tried yet: the same advice.
    v.podman_sudo = PodmanSudo::Untried;
    assert_eq!(why(&v), w);
    // Tried: sudo's podman reaches it, copying allowed or not; or sudo's words.
    v.podman_sudo = PodmanSudo::Copying;
    assert!(why(&v).ends_with("reaching it through `sudo -n podman exec -i 2d9d171a7943`"), "{}", why(&v));
    v.podman_sudo = PodmanSudo::NotCopying;
    assert!(why(&v).contains("serve --far-copy") && !why(&v).contains("serve --exec"), "{}", why(&v));
    v.podman_sudo = PodmanSudo::Refused("sudo: a password is required".into());
    assert!(why(&v).contains("was refused: sudo: a password is required: let this user run podman through sudo without a password"), "{}", why(&v));
    // A Docker container is none of sudo's podman's business.
    rootful.uid = Some(1000);
    rootful.docker = DockerWay::No;
    rootful.podman_sudo = PodmanSudo::Copying;
    assert!(!why(&rootful).contains("sudo"), "{}", why(&rootful));
}

#[test]
fn not_jvms_with_agents() {
    let v = view(
        vec![
            (1, proc_("java -agentlib:jdwp=transport=dt_socket,server=n,address=host:8000 Main", None)),
            (2, proc_("grep -l -e jdw[p] /proc/1/cmdline", None)),
            (3, proc_("java Main -agentlib:jdwp=transport=dt_socket,server=y,address=8000", None)),
        ],
        vec![],
    );
    assert!(found(&v).is_empty());
}
