//! The Docker kit itself, with a real Docker Engine and real JVMs: a root container and one
//! running as a uid with no user on the host, each listening on its own 127.0.0.1 only; what
//! Docker 20.10 answers a `docker exec` of a missing program; a `docker` group member's CLI;
//! stop, start and restart; nothing of the test's left once the handles are dropped.

use crate::support::containers::{refused_here, AppClasses, DockerContainer, DockerEngine, DockerSpec};
use crate::support::users::TestUser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_containers_as_root_and_as_a_uid_with_no_user() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    println!("dockerd started by the tests: {}", engine.started_by_tests());
    let classes = AppClasses::main().await.expect("Main compiles");
    let mut made = Vec::new();
    {
        let mut root = DockerContainer::run(engine, DockerSpec::new("dkroot", &classes)).await.expect("the root container");
        let mut uid = DockerContainer::run(engine, DockerSpec::as_user("dkuid", &classes, 4321)).await.expect("the --user 4321 container");
        made.extend([root.name().to_string(), uid.name().to_string()]);
        println!("[docker] run to listening: root {:?}, uid {:?}", root.started_in(), uid.started_in());
        // Both listen on 5005 of their own namespace; ours refuses (nothing published).
        refused_here(root.port()).unwrap();
        let status = std::fs::read_to_string(format!("/proc/{}/status", uid.jvm_pid())).unwrap();
        let real = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|u| u.split_whitespace().next()).unwrap();
        assert_eq!(real, "4321", "the --user container's JVM runs as 4321 on the host");
        let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", root.jvm_pid())).unwrap();
        assert!(cgroup.contains(&format!("/docker/{}", root.id())), "cgroup: {cgroup}");

        // The processes inside, seen from here: the JVM alone, as pid 1's tree.
        let procs = root.processes().await.unwrap();
        assert!(procs.iter().any(|p| p.pid == root.jvm_pid() && p.comm == "java"), "{procs:?}");
        assert!(procs.iter().all(|p| p.state != "Z"), "{procs:?}");

        // Docker 20.10: a missing program is exit 126 and its message on stdout.
        let out = root.exec(&["jdwpmux-nowhere"]).await.unwrap();
        println!("[docker] exec of a missing program: {:?}, stdout {:?}, stderr {:?}", out.status.code(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(matches!(out.status.code(), Some(126 | 127)), "{out:?}");
        let both = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(both.contains("executable file not found"), "{both}");
        // The exit code passes through.
        let out = uid.exec(&["sh", "-c", "id -u; exit 3"]).await.unwrap();
        assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).trim()), (Some(3), "4321"));
        assert!(root.files("/app").await.unwrap().contains(&"/app/Main.class".to_string()));
        assert!(root.diff().await.unwrap().iter().all(|l| !l.contains("jdwpmux")));

        // A `docker` group member's own CLI sees both containers (root-equivalent).
        let dev = TestUser::docker_member("dkdev").expect("a docker group member");
        let out = dev.command_with_groups("docker").args(["ps", "--format", "{{.Names}}"]).env("DOCKER_HOST", "unix:///var/run/docker.sock").output().unwrap();
        let names = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && names.contains(root.name()) && names.contains(uid.name()), "{out:?}");
        // Without the group (the plain prefix clears it) the socket is closed to it.
        let mut plain = dev.command("docker");
        let out = plain.args(["ps"]).output().unwrap();
        assert!(!out.status.success(), "docker ps without the group: {out:?}");

        // Stop and start, restart: the same name, a new JVM each time.
        let before = root.jvm_pid();
        root.stop().await.unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{before}")).exists());
        root.start().await.unwrap();
        let started = root.jvm_pid();
        assert_ne!(started, before);
        uid.restart().await.unwrap();
        println!("[docker] start {:?}, restart {:?}", root.started_in(), uid.started_in());
        assert_eq!(uid.exec_clients(), Vec::<u32>::new());
    }
    // This process's containers: other tests running beside this one may have theirs.
    let left: Vec<String> = engine.names().await.unwrap().into_iter().filter(|n| made.contains(n)).collect();
    assert!(left.is_empty(), "containers left of {made:?}: {left:?}");
}
