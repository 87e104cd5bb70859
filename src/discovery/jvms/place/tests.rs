//! Where a process runs (container engines' cgroup paths, pods, namespaces) as `place/` reads
//! it, and the remedies it names.

use super::*;

const ID: &str = "3f1c9e0b7d2a4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";
const UID: &str = "0f5a2c1e-7b3d-4e9a-8c6f-1d2e3f4a5b6c";

fn cgroups(text: &str) -> ProcFacts {
    let mut p = ProcFacts::default();
    p.set_cgroups(text);
    p
}

/// conmon's command line as rootful Podman 4.3 started it here (runc, cgroupfs).
fn conmon_args() -> Vec<String> {
    format!(
        "/usr/bin/conmon --api-version 1 -c {ID} -u {ID} -r /usr/bin/runc -b /var/lib/containers/storage/overlay-containers/{ID}/userdata \
         -p /run/containers/storage/overlay-containers/{ID}/userdata/pidfile -n billing-api --exit-dir /run/libpod/exits --full-attach \
         -l k8s-file:/var/lib/containers/storage/overlay-containers/{ID}/userdata/ctr.log --log-level warning --runtime-arg --log-format=json \
         --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg /var/lib/containers/storage --exit-command-arg -n \
         --exit-command-arg container --exit-command-arg cleanup --exit-command-arg {ID}"
    )
    .split_whitespace()
    .map(String::from)
    .collect()
}

fn host() -> HostFacts {
    let mut h = HostFacts::default();
    h.set_pods(&format!(
        "pods/shop_orders-7d9f8b6c4-x2z9q_{UID}\npods/kube-system_coredns-5d78c9869d-8kxgb_11111111-2222-3333-4444-555555555555\ncontainers/orders-7d9f8b6c4-x2z9q_shop_app-{ID}.log\ncontainers/orders-7d9f8b6c4-x2z9q_shop_istio-proxy-{}.log\n",
        "a".repeat(64)
    ));
    h.set_netns("4026532388 /run/netns/jmh1\n4026532252 /run/netns/jmh2\n");
    h
}

fn container(runtime: Runtime, name: &str, id: Option<&str>) -> Place {
    Place::Container { runtime, name: name.into(), id: id.map(String::from), compose: None }
}

/// Each rule, with cgroups shaped as the machines of design-containers.md show them.
#[test]
fn places_by_rule() {
    let pod = |container: Option<&str>| Place::Pod {
        namespace: "shop".into(),
        name: "orders-7d9f8b6c4-x2z9q".into(),
        uid: UID.into(),
        container: container.map(String::from),
        several: false,
    };
    let uid_ = UID.replace('-', "_");
    let rows: Vec<(String, Place)> = vec![
        // Rootful Podman, cgroupfs (cgroup v1 hybrid: one line per hierarchy).
        (format!("12:pids:/libpod_parent/libpod-{ID}\n1:name=systemd:/libpod_parent/libpod-{ID}\n0::/"), container(Runtime::Podman, &ID[..12], Some(ID))),
        // Rootful Podman under systemd, also with its `container` sub-cgroup.
        (format!("0::/machine.slice/libpod-{ID}.scope"), container(Runtime::Podman, &ID[..12], Some(ID))),
        (format!("0::/machine.slice/libpod-{ID}.scope/container"), container(Runtime::Podman, &ID[..12], Some(ID))),
        // conmon's own cgroup is no container's.
        (format!("0::/machine.slice/libpod-conmon-{ID}.scope"), Place::Host),
        (format!("0::/system.slice/docker-{ID}.scope"), container(Runtime::Docker, &ID[..12], Some(ID))),
        (format!("4:memory:/docker/{ID}"), container(Runtime::Docker, &ID[..12], Some(ID))),
        (format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"), pod(Some("app"))),
        (format!("0::/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"), pod(Some("app"))),
        (format!("4:memory:/kubepods/besteffort/pod{UID}/{ID}"), pod(Some("app"))),
        // A pod's own sandbox folder without a container id, and a sibling's id.
        (format!("4:memory:/kubepods/besteffort/pod{UID}"), Place::Host),
        (format!("4:memory:/kubepods/burstable/pod{UID}/{}", "b".repeat(64)), pod(None)),
        (format!("0::/system.slice/crio-{ID}.scope"), container(Runtime::CriO, &ID[..12], Some(ID))),
        // Not containers: this machine's own sandbox (32 hex), a user session, too short an id.
        ("4:memory:/process_api/117507b6d6ba7030c70a2f004bbbc3a8\n0::/".into(), Place::Host),
        ("0::/user.slice/user-1000.slice/session-3.scope".into(), Place::Host),
        (format!("0::/system.slice/docker-{}.scope", &ID[..63]), Place::Host),
        (String::new(), Place::Host),
    ];
    for (text, want) in rows {
        assert_eq!(place_of(&cgroups(&text), &host(), None), want, "{text}");
    }
}

#[test]
fn names_from_conmon_docker_and_the_environment() {
    // Rootful Podman: the cgroup gives the id, conmon (the JVM's grandparent, under a
    // shell) the name.
    let mut p = cgroups(&format!("1:name=systemd:/libpod_parent/libpod-{ID}"));
    p.add_ancestor(b"/bin/sh\0-c\0java -jar app.jar\0");
    p.add_ancestor(conmon_args().join("\0").as_bytes());
    assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "billing-api", Some(ID)));
    assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container billing-api (podman)");
    // Rootless Podman: cgroup `/`, conmon alone; with `--pid=host` too (our pid namespace).
    let mut p = cgroups("0::/");
    p.add_ancestor(conmon_args().join("\0").as_bytes());
    assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "billing-api", Some(ID)));
    // Its environment alone (conmon's parent chain cut short).
    let mut p = cgroups("0::/");
    p.set_env([&b"PATH=/bin"[..], b"container=podman", b"HOSTNAME=3f1c9e0b7d2a"].into_iter());
    assert_eq!(place_of(&p, &host(), Some(9)), container(Runtime::Podman, "3f1c9e0b7d2a", None));
    p.set_env([&b"container=lxc"[..]].into_iter());
    assert_eq!(place_of(&p, &host(), None).to_string(), "container (lxc)");
    // Docker: the name from config.v2.json; without it, the short id.
    let mut p = cgroups(&format!("0::/system.slice/docker-{ID}.scope"));
    let json = format!(r#"{{"State":{{"Running":true}},"ID":"{ID}","Config":{{"Labels":{{"Name":"/not-this"}}}},"LogPath":"/x","Name":"/billing","Driver":"overlay2"}}"#);
    p.set_docker_config(json.as_bytes());
    assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container billing (docker)");
    p.set_docker_config(b"{\"Name\":");
    assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container 3f1c9e0b7d2a (docker)");
    // Made by Compose: its project and service shown beside the name.
    let json = format!(r#"{{"ID":"{ID}","Config":{{"Labels":{{"com.docker.compose.project":"shop","com.docker.compose.service":"orders","n":1}}}},"Name":"/shop-orders-1"}}"#);
    p.set_docker_config(json.as_bytes());
    assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container shop-orders-1 (docker, compose shop/orders)");
    assert_eq!(place_of(&p, &host(), Some(9)).workload().as_deref(), Some("shop-orders-1"));
    p.set_docker_config(br#"{"Config":{"Labels":null},"Name":"/solo"}"#);
    assert_eq!(place_of(&p, &host(), Some(9)).to_string(), "container solo (docker)");
    // A conmon-looking program that is not conmon.
    let mut p = ProcFacts::default();
    p.add_ancestor(b"/usr/bin/notconmon\0-n\0x\0");
    assert_eq!(place_of(&p, &host(), None), Place::Host);
}

#[test]
fn pods_and_namespaces() {
    let uid_ = UID.replace('-', "_");
    let p = cgroups(&format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"));
    let place = place_of(&p, &host(), Some(9));
    assert_eq!(place.to_string(), "pod shop/orders-7d9f8b6c4-x2z9q");
    assert_eq!(place.workload().as_deref(), Some("shop/orders"));
    // Its container is known (`app`) but not whether it has others: shown as the pod alone;
    // a pod known to have several containers is shown with the container, keyed the same.
    assert!(matches!(&place, Place::Pod { container: Some(c), several: false, .. } if c == "app"), "{place:?}");
    let Place::Pod { namespace, name, uid, container, .. } = place.clone() else { unreachable!() };
    let several = Place::Pod { namespace, name, uid, container, several: true };
    assert_eq!(several.to_string(), "pod shop/orders-7d9f8b6c4-x2z9q (app)");
    assert_eq!(several.workload(), place.workload());
    // No /var/log/pods entry: the pod's hostname names it.
    let mut p = p;
    p.set_env([&b"HOSTNAME=orders-7d9f8b6c4-x2z9q"[..]].into_iter());
    let place = place_of(&p, &HostFacts::default(), Some(9));
    assert_eq!((place.to_string(), place.workload()), ("pod orders-7d9f8b6c4-x2z9q".into(), Some("orders".into())));
    // A bare network namespace, named by `ip netns` when it is one of its.
    assert_eq!(place_of(&ProcFacts::default(), &host(), Some(4026532252)).to_string(), "netns jmh2");
    assert_eq!(place_of(&ProcFacts::default(), &host(), Some(7)).to_string(), "network namespace");
    assert_eq!(place_of(&ProcFacts::default(), &host(), None).to_string(), "-");
}

/// The one id whose `config.v2.json` is read (scan.sh's `jdwpmux_docker` gives the same).
#[test]
fn docker_ids() {
    for (cgroup, want) in [
        (format!("4:memory:/docker/{ID}\n0::/"), Some(ID)),
        (format!("0::/system.slice/docker-{ID}.scope"), Some(ID)),
        (format!("0::/kubepods/besteffort/pod{UID}/docker-{ID}.scope\n0::/docker-{}", &ID[..63]), None),
        (format!("0::/machine.slice/libpod-{ID}.scope"), None),
        (format!("0::/docker/{}", ID.to_uppercase()), None),
    ] {
        assert_eq!(docker_id(&cgroup).as_deref(), want, "{cgroup}");
    }
}

#[test]
fn pod_base_names() {
    for (pod, base) in [
        ("orders-7d9f8b6c4-x2z9q", "orders"),        // Deployment
        ("orders-5f7c", "orders-5f7c"),              // no generated suffix
        ("orders-5f7c-x2z9q", "orders-5f7c"),        // a ReplicaSet whose name has a short word
        ("api-v2-7d9f8b6c4-x2z9q", "api-v2"),
        ("node-exporter-bx7kq", "node-exporter"),    // DaemonSet
        ("web-0", "web-0"),                          // StatefulSet
        ("web-12", "web-12"),
        ("backup-28391520-k2x7p", "backup"),         // CronJob's Job
        ("report-x2z9q", "report"),                  // Job
        ("coredns-5d78c9869d-8kxgb", "coredns"),
        ("billing-north", "billing-north"),          // a word of five: it has a vowel
        ("billing-abcde", "billing-abcde"),
        ("sync-x2z9", "sync-x2z9"),                  // four characters
        ("x2z9q", "x2z9q"),
        ("-x2z9q", "-x2z9q"),
        ("a--x2z9q", "a-"),
        ("sh-0a1b2c3d-x2z9q", "sh-0a1b2c3d"),        // 0, 1 and 3 are never generated
    ] {
        assert_eq!(pod_base_name(pod), base, "{pod}");
    }
}

#[test]
fn workloads() {
    assert_eq!(Place::Host.workload(), None);
    assert_eq!(container(Runtime::Podman, "billing-api", Some(ID)).workload().as_deref(), Some("billing-api"));
    assert_eq!(container(Runtime::Podman, "", None).workload(), None);
    assert_eq!(Place::Netns { name: Some("jmh1".into()) }.workload().as_deref(), Some("jmh1"));
    assert_eq!(Place::Netns { name: None }.workload(), None);
    let sts = Place::Pod { namespace: "db".into(), name: "pg-1".into(), uid: UID.into(), container: None, several: false };
    assert_eq!(sts.workload().as_deref(), Some("db/pg-1"));
}

#[test]
fn exec_hints_name_the_runtimes_own_command() {
    assert_eq!(container(Runtime::Podman, "billing-api", Some(ID)).exec_hint().as_deref(), Some("serve --exec billing-api='podman exec -i billing-api' --far-copy"));
    assert_eq!(container(Runtime::Docker, "orders", None).exec_hint().as_deref(), Some("serve --exec orders='docker exec -i orders' --far-copy"));
    let pod = Place::Pod { namespace: "shop".into(), name: "orders-5f7c".into(), uid: UID.into(), container: Some("app".into()), several: false };
    assert_eq!(pod.exec_hint().as_deref(), Some("serve --exec orders-5f7c='kubectl exec -i -n shop orders-5f7c -c app --' --far-copy"));
    // No name, another runtime, or a name a shell would read otherwise: no hint.
    for p in [container(Runtime::Podman, "", None), container(Runtime::Containerd, "x", None), container(Runtime::Podman, "a'b; rm", None), Place::Netns { name: None }] {
        assert_eq!(p.exec_hint(), None, "{p:?}");
    }
}

/// Names come from anyone who starts a process: cut short, never terminal controls.
#[test]
fn hostile_names_are_bounded_and_printable() {
    let mut p = ProcFacts::default();
    let evil = format!("-n\0\x1b]0;pwned\x07{}\0", "x".repeat(100_000));
    p.add_ancestor(format!("conmon\0{evil}").as_bytes());
    let place = place_of(&p, &HostFacts::default(), None);
    let Place::Container { name, .. } = &place else { panic!("{place:?}") };
    assert!(name.chars().count() <= MAX_NAME && !name.chars().any(safe_text::is_hostile), "{name:?}");
    for _ in 0..10 {
        p.add_ancestor(b"sh\0");
    }
    assert_eq!(p.ancestors.len(), MAX_ANCESTORS);
    let mut p = ProcFacts::default();
    p.set_cgroups(&(0..1000).map(|i| format!("{i}:x:/{}{i}\n", "y".repeat(5000))).collect::<String>());
    assert!(p.cgroups.len() <= MAX_CGROUPS && p.cgroups.iter().all(|c| c.len() <= MAX_CGROUP_PATH));
    p.set_env([format!("HOSTNAME={}\u{202e}", "h".repeat(10_000)).as_bytes()].into_iter());
    assert!(p.hostname_env.as_ref().is_some_and(|h| h.chars().count() <= MAX_NAME));
    p.set_docker_config(&vec![b' '; MAX_DOCKER_CONFIG + 1]);
    assert_eq!(p.docker_name, None);
    let mut h = HostFacts::default();
    h.set_pods(&"pods/a_b_c\n".repeat(MAX_HOST_ENTRIES + 10));
    h.set_netns(&"1 /run/netns/\x1b[2J\n".repeat(MAX_HOST_ENTRIES + 10));
    assert_eq!((h.pods.len(), h.netns.len()), (MAX_HOST_ENTRIES, MAX_HOST_ENTRIES));
    assert_eq!(h.netns[0].1, "?[2J");
    // Globs that matched nothing.
    h.set_pods("pods/*\ncontainers/*\n");
    h.set_netns("ls: cannot access '/run/netns/*'\n");
    assert!(h.pods.is_empty() && h.containers.is_empty() && h.netns.is_empty());
}

#[test]
fn compose_services_as_shown() {
    use super::compose;
    assert_eq!(compose("shop", "orders").as_deref(), Some("shop/orders"));
    assert_eq!(compose("", "orders").as_deref(), Some("orders"));
    assert_eq!(compose("a b", "orders").as_deref(), Some("orders"));
    assert_eq!(compose("shop", ""), None);
    assert_eq!(compose("shop", "<no value>"), None);
    assert_eq!(compose("shop", "x\x1b[2J"), None);
    assert_eq!(compose("shop", &"s".repeat(200)), None);
}
