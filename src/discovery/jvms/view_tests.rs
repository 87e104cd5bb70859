//! The scan's records read into the view of JVMs, and which network namespaces' tables a round
//! reads (`view.rs`).

use super::super::wire::write_record;
use super::*;

fn records(list: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, arg, body) in list {
        write_record(&mut out, tag, arg, body, "n");
    }
    out
}

fn apply(view: &mut HostView, bytes: &[u8]) {
    let mut buf = bytes;
    let mut recs = Vec::new();
    while let Some((r, n)) = super::super::wire::next_record(buf, "n").expect("well-formed") {
        recs.push(r);
        buf = &buf[n..];
    }
    view.apply(&recs);
}

const NS: &[u8] = b"lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/self/ns/net -> net:[100]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/self/ns/pid -> pid:[300]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/42/ns/net -> net:[100]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/42/ns/pid -> pid:[300]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/43/ns/net -> net:[200]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/43/ns/pid -> pid:[400]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/44/ns/net -> net:[500]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/44/ns/pid -> pid:[300]
";

#[test]
fn a_round_asks_only_for_what_is_new() {
    let mut v = HostView::default();
    apply(&mut v, &records(&[("id", "-", b"0"), ("tcp", "-", b""), ("ns", "-", NS)]));
    assert_eq!((v.uid, v.own_net, v.own_pids, v.procs.len()), (Some(0), Some(100), Some(300), 3));
    // 44 is in another network namespace that shares our process list (`ip netns exec`,
    // a `--pid=host` container): on this machine all the same, and looked at.
    assert!(v.in_other_net(&v.procs[&44]) && v.in_other_net(&v.procs[&43]));
    assert_eq!(v.requests(), vec![Request { command: "jdwpmux_proc", pids: vec![42, 43, 44] }]);
    let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000\0Main\0";
    apply(&mut v, &records(&[("proc", "42", b"0 root"), ("cmdline", "42", cmd), ("proc", "43", b"1000 ann"), ("cmdline", "43", b"bash\0"), ("proc", "44", b"0 root"), ("cmdline", "44", b"sleep\0")]));
    assert_eq!(v.procs[&42].user.as_deref(), Some("root"));
    // 42 is a JVM with an agent: its sockets are wanted; 43 is not a JVM.
    assert_eq!(v.requests(), vec![Request { command: "jdwpmux_fd", pids: vec![42] }]);
    let tcp = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5001 1 0 100 0 0 10 0";
    apply(&mut v, &records(&[("tcp", "-", tcp), ("fd", "42", b"l 3 -> socket:[5001]\n")]));
    assert!(v.requests().is_empty(), "nothing changed");
    // The listening socket is gone (a debugger came): its sockets are read again.
    apply(&mut v, &records(&[("tcp", "-", b"")]));
    assert_eq!(v.requests(), vec![Request { command: "jdwpmux_fd", pids: vec![42] }]);
    // 43 left; 42 is still there.
    apply(&mut v, &records(&[("ns", "-", b"/proc/self/ns/net -> net:[100]\n/proc/42/ns/net -> net:[100]\n/proc/42/ns/pid -> pid:[300]\n")]));
    assert_eq!(v.procs.keys().copied().collect::<Vec<_>>(), vec![42]);
}

#[test]
fn environment_only_agents_need_their_threads_and_waiting_ones_are_watched() {
    let mut v = HostView::default();
    apply(&mut v, &records(&[("ns", "-", NS)]));
    let env = b"JAVA_TOOL_OPTIONS=-agentlib:jdwp=transport=dt_socket,server=y,address=8000\nPATH=/bin\n";
    apply(&mut v, &records(&[("cmdline", "42", b"java\0Main\0"), ("environ", "42", env), ("fd", "42", b"x")]));
    assert_eq!(v.procs[&42].env.len(), 1, "only the JDWP variables are kept");
    let r = v.requests();
    assert!(r.contains(&Request { command: "jdwpmux_threads", pids: vec![42] }), "{r:?}");
    apply(&mut v, &records(&[("threads", "42", b"java\nJDWP Transport \nJDWP Event Help\n")]));
    // suspend defaults to y and the VM has not started: still watched.
    assert!(v.requests().iter().any(|r| r.command == "jdwpmux_threads"));
    apply(&mut v, &records(&[("threads", "42", b"java\nJDWP Event Help\nCommon-Cleaner\n")]));
    assert!(!v.requests().iter().any(|r| r.command == "jdwpmux_threads"));
}

#[test]
fn another_namespace_gets_its_own_table() {
    let mut v = HostView::default();
    apply(&mut v, &records(&[("ns", "-", NS)]));
    let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000\0Main\0";
    apply(&mut v, &records(&[("cmdline", "43", cmd)]));
    let r = v.requests();
    assert!(r.contains(&Request { command: "jdwpmux_net", pids: vec![43] }), "{r:?}");
    assert_eq!(request_line(&r, "n"), "jdwpmux_proc n 42 44; jdwpmux_fd n 43; jdwpmux_net n 43; jdwpmux_done n\n");
}

#[test]
fn a_namespaces_table_is_read_once_a_round_and_not_while_jdwpmux_holds_its_agent() {
    // 43 and 46 share a namespace (a pod's two containers); 44 has its own.
    let ns = format!("{}/proc/46/ns/net -> net:[200]\n/proc/46/ns/pid -> pid:[400]\n", std::str::from_utf8(NS).unwrap());
    let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000\0Main\0";
    let listening = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7001 1 0";
    let held = b"   0: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000 0 0 7002 1 0";
    let mut v = HostView::default();
    let round = |v: &mut HostView| apply(v, &records(&[("ns", "-", ns.as_bytes())]));
    let asked = |v: &HostView| v.requests().into_iter().find(|r| r.command == "jdwpmux_net").map(|r| r.pids).unwrap_or_default();
    round(&mut v);
    for pid in ["43", "44", "46"] {
        apply(&mut v, &records(&[("proc", pid, b"0 root"), ("cmdline", pid, cmd), ("fd", pid, b"l 3 -> socket:[7001]\n")]));
    }
    // One process per namespace is asked; its table is every process's of that namespace.
    assert_eq!(asked(&v), [43, 44]);
    apply(&mut v, &records(&[("nettcp", "43", listening), ("nettcp", "44", listening)]));
    assert_eq!(v.procs[&46].net_sockets.as_ref().map(Vec::len), Some(1));
    assert!(asked(&v).is_empty(), "read once a round");
    // The next round reads them again.
    round(&mut v);
    assert_eq!(asked(&v), [43, 44]);
    // jdwpmux's own sessions hold 43 and 44 now: read once more (the table shows it held),
    // then not again while they do; 46, not held, still has its namespace read.
    v.settled = [43, 44].into();
    apply(&mut v, &records(&[("nettcp", "43", held), ("nettcp", "44", held)]));
    round(&mut v);
    assert_eq!(asked(&v), [46]);
    apply(&mut v, &records(&[("nettcp", "46", held)]));
    round(&mut v);
    v.settled = [43, 44, 46].into();
    assert_eq!(asked(&v), [46], "46's table was read before it was held (43's namespace)");
    apply(&mut v, &records(&[("nettcp", "46", held)]));
    round(&mut v);
    assert!(asked(&v).is_empty(), "nothing to read while jdwpmux holds them");
    // A session ends: its namespace is read again at once.
    v.settled = [43, 46].into();
    assert_eq!(asked(&v), [44]);
}

#[test]
fn another_users_namespace_is_told_apart_by_its_tcp_tables_inode() {
    // To a user, root's container process shows no namespace links; its net/tcp's inode
    // (stat-able by anyone) differs from ours, and its table is still read.
    let ns = "/proc/self/ns/net -> net:[100]\n/proc/self/ns/pid -> pid:[300]\n/proc/self/ns/nettcp -> nettcp:[900]\n\
              /proc/42/ns/nettcp -> nettcp:[901]\n/proc/43/ns/nettcp -> nettcp:[900]\n";
    let mut v = HostView { uid: Some(1000), ..HostView::default() };
    apply(&mut v, &records(&[("id", "-", b"1000"), ("ns", "-", ns.as_bytes())]));
    assert_eq!((v.procs[&42].net, v.procs[&42].net_seen), (None, Some(901)));
    assert!(v.in_other_net(&v.procs[&42]) && !v.in_other_net(&v.procs[&43]));
    let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000\0Main\0";
    for pid in ["42", "43"] {
        apply(&mut v, &records(&[("proc", pid, b"0 root"), ("cmdline", pid, cmd), ("fd", pid, b"")]));
    }
    assert_eq!(v.requests().into_iter().find(|r| r.command == "jdwpmux_net").map(|r| r.pids), Some(vec![42]));
    let listening = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7001 1 0";
    apply(&mut v, &records(&[("nettcp", "42", listening)]));
    let found = super::super::found::found(&v);
    let boxed = found.iter().find(|f| f.pid == 42).expect("root's container JVM is found");
    assert!(boxed.cannot_enter(), "{boxed:?}");
    assert!(matches!(&boxed.reach, super::super::Reach::Unreachable(w) if w.contains("only root can enter")), "{:?}", boxed.reach);
}

#[test]
fn a_round_read_in_any_batches_leaves_the_same_view() {
    // A JVM whose agent picked its port, and a server socket of its own: which socket is
    // the agent's is decided when the round is whole, not on whatever part came first.
    let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=0\0Main\0";
    let tcp = b"   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7 1 0\n   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 9 1 0";
    let round = records(&[("ns", "-", NS), ("cmdline", "42", cmd), ("fd", "42", b"l 3 -> socket:[9]\nl 4 -> socket:[7]\n"), ("tcp", "-", tcp), ("done", "-", b"")]);
    let whole = {
        let mut v = HostView::default();
        let mut buf = round.clone();
        assert_eq!(crate::discovery::jvms::take_records(&mut v, &mut buf, "n"), Ok(true));
        v
    };
    for cut in 1..round.len() {
        let mut v = HostView::default();
        let mut buf = round[..cut].to_vec();
        let _ = crate::discovery::jvms::take_records(&mut v, &mut buf, "n");
        buf.extend_from_slice(&round[cut..]);
        let _ = crate::discovery::jvms::take_records(&mut v, &mut buf, "n");
        assert_eq!(v, whole, "cut at {cut}");
    }
    assert_eq!(whole.procs[&42].agent_inode, Some(7), "the first socket it opened");
}

#[test]
fn records_before_bad_output_are_taken() {
    let mut round = records(&[("id", "-", b"1000")]);
    round.extend_from_slice("junk\n".repeat(super::super::wire::MAX_JUNK_LINES + 1).as_bytes());
    round.extend_from_slice(&records(&[("done", "-", b"")]));
    let mut v = HostView::default();
    let mut buf = round.clone();
    assert!(crate::discovery::jvms::take_records(&mut v, &mut buf, "n").is_err());
    assert_eq!(v.uid, Some(1000), "what came before the bad output is kept");
}

const CMD: &[u8] = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000\0Main\0";
const ID: &str = "3f1c9e0b7d2a4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";

/// The records a `jdwpmux_proc` request gives, in the order it gives them.
fn proc_records(pid: &str, cgroup: &str, env: &[u8], parents: &[&[u8]]) -> Vec<u8> {
    let mut out = records(&[("proc", pid, b"0 root"), ("cmdline", pid, CMD), ("environ", pid, env), ("cgroup", pid, cgroup.as_bytes())]);
    for p in parents {
        out.extend(records(&[("parent", pid, p)]));
    }
    out
}

#[test]
fn places_from_records() {
    let mut v = HostView::default();
    apply(&mut v, &records(&[("ns", "-", NS)]));
    let conmon = format!("/usr/bin/conmon\0--api-version\x001\0-c\0{ID}\0-u\0{ID}\0-n\0billing-api\0--exit-dir\0/run/libpod/exits\0");
    let mut round = records(&[("pods", "-", b"pods/*\ncontainers/*\n"), ("netns", "-", b"4026532388 /run/netns/jmh1\n500 /run/netns/other\n")]);
    // 42: on the host. 43: rootful Podman under a shell (own pid namespace). 44: a
    // `--pid=host` rootless Podman container, known by its environment and conmon.
    round.extend(proc_records("42", "0::/user.slice/session-2.scope\n", b"HOSTNAME=build1", &[b"bash\0", b"sshd: root@pts/0\0"]));
    round.extend(proc_records("43", &format!("1:name=systemd:/libpod_parent/libpod-{ID}\n0::/\n"), b"container=podman\nHOSTNAME=3f1c9e0b7d2a", &[b"/bin/sh\0-c\0java Main\0", conmon.as_bytes()]));
    round.extend(proc_records("44", "0::/\n", b"container=podman\nHOSTNAME=3f1c9e0b7d2a", &[conmon.as_bytes()]));
    apply(&mut v, &round);
    let shown = |v: &HostView, pid: u32| v.place_of(&v.procs[&pid]).to_string();
    assert_eq!(shown(&v, 42), "-");
    assert_eq!(shown(&v, 43), "container billing-api (podman)");
    assert_eq!(shown(&v, 44), "container billing-api (podman)");
    assert_eq!(v.places.netns.len(), 2);
    // Its records read again (its pid came back): the ancestors are the new ones only.
    apply(&mut v, &proc_records("43", "0::/\n", b"", &[b"bash\0"]));
    assert_eq!((v.procs[&43].place.ancestors.clone(), v.procs[&43].place.conmon.clone()), (vec!["bash".to_string()], None));
    // A bare network namespace named by `ip netns`, then one that is not.
    let ns = b"/proc/self/ns/net -> net:[100]\n/proc/self/ns/pid -> pid:[300]\n/proc/45/ns/net -> net:[4026532388]\n/proc/45/ns/pid -> pid:[301]\n";
    apply(&mut v, &records(&[("ns", "-", ns)]));
    apply(&mut v, &proc_records("45", "0::/\n", b"", &[]));
    assert_eq!(shown(&v, 45), "netns jmh1");
    apply(&mut v, &records(&[("netns", "-", b"")]));
    assert_eq!(shown(&v, 45), "network namespace");
    let f = super::super::found::found(&v);
    assert_eq!(f.iter().map(|j| (j.pid, j.place.to_string())).collect::<Vec<_>>(), [(45, "network namespace".to_string())]);
}

#[test]
fn pods_and_docker_from_records() {
    let uid = "0f5a2c1e-7b3d-4e9a-8c6f-1d2e3f4a5b6c";
    let mut v = HostView::default();
    apply(&mut v, &records(&[("ns", "-", NS)]));
    let pods = format!("pods/shop_orders-7d9f8b6c4-x2z9q_{uid}\ncontainers/orders-7d9f8b6c4-x2z9q_shop_app-{ID}.log\n");
    let cg = format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope\n", uid.replace('-', "_"));
    let mut round = records(&[("pods", "-", pods.as_bytes())]);
    round.extend(proc_records("43", &cg, b"HOSTNAME=orders-7d9f8b6c4-x2z9q", &[b"/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0"]));
    round.extend(proc_records("42", &format!("0::/system.slice/docker-{ID}.scope\n"), b"", &[]));
    round.extend(records(&[("docker", "42", format!(r#"{{"ID":"{ID}","Name":"/billing"}}"#).as_bytes())]));
    apply(&mut v, &round);
    let p = v.place_of(&v.procs[&43]);
    assert_eq!((p.to_string(), p.workload()), ("pod shop/orders-7d9f8b6c4-x2z9q".into(), Some("shop/orders".into())));
    assert!(matches!(&p, Place::Pod { container: Some(c), .. } if c == "app"), "{p:?}");
    assert_eq!(v.place_of(&v.procs[&42]).to_string(), "container billing (docker)");
}

#[test]
fn hostile_records_are_bounded() {
    let mut v = HostView::default();
    let mut ns = String::new();
    for pid in 0..(MAX_PROCS as u32 + 100) {
        ns.push_str(&format!("/proc/{pid}/ns/net -> net:[1]\n"));
    }
    apply(&mut v, &records(&[("ns", "-", ns.as_bytes()), ("proc", "7", "1 ".repeat(10_000).as_bytes())]));
    assert_eq!(v.procs.len(), MAX_PROCS);
    assert!(v.procs[&7].user.as_ref().is_some_and(|u| u.len() <= 64));
    let huge = format!("java\0-cp\0{}\0Main\0", "a:".repeat(1 << 20));
    let env = format!("JAVA_TOOL_OPTIONS={}", "x".repeat(1 << 20));
    apply(&mut v, &records(&[("cmdline", "7", huge.as_bytes()), ("environ", "7", env.as_bytes())]));
    let p = &v.procs[&7];
    let c = p.command.as_ref().unwrap();
    assert_eq!(c.java.main.as_ref().map(|m| m.to_string()).as_deref(), Some("Main"), "read whole, kept short");
    assert!(c.text.len() <= super::super::found::MAX_COMMAND && p.env[0].len() <= MAX_ENV_VALUE);
    apply(&mut v, &records(&[("cmdline", "99999999", b"x"), ("zzz", "1", b"")]));
    // Where it runs: every list bounded, every name short.
    let many = |line: &str| line.repeat(100_000);
    let mut flood = records(&[("cgroup", "7", many("1:x:/libpod_parent/zzzz\n").as_bytes()), ("pods", "-", many("pods/a_b_c\n").as_bytes()), ("netns", "-", many("1 /run/netns/n\n").as_bytes())]);
    for _ in 0..1000 {
        flood.extend(records(&[("parent", "7", format!("conmon\0-n\0{}\0", "n".repeat(1 << 16)).as_bytes())]));
    }
    flood.extend(records(&[("docker", "7", format!("{{\"Name\":\"/{}\"}}", "d".repeat(1 << 20)).as_bytes())]));
    apply(&mut v, &flood);
    let f = &v.procs[&7].place;
    assert!(f.cgroups.len() <= place::MAX_CGROUPS && f.ancestors.len() <= place::MAX_ANCESTORS);
    assert!(f.ancestors.iter().all(|a| a.chars().count() <= place::MAX_NAME), "names cut");
    assert!(v.places.pods.len() <= place::MAX_HOST_ENTRIES && v.places.netns.len() <= place::MAX_HOST_ENTRIES);
    assert!(v.place_of(&v.procs[&7]).to_string().len() < place::MAX_NAME * 4 + 32);
}
