//! The stand-in Kubernetes API server (testkit's `kube`) with the real kubectl: pods listed by
//! namespace and label selector (and read by jdwpmux's own pod reading), a watch that sees
//! pods added, replaced and deleted, an exec that relays stdin, stdout and the exit code
//! through a real Docker container, exec forbidden as RBAC answers it, and the server stopped
//! and started again on its port (a running exec ended with it).

use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::containers::{AppClasses, DockerContainer, DockerEngine, DockerSpec};
use crate::support::kube::{kubectl_unavailable, KubeApi, StandinPod};

/// Any one kubectl command (it starts in well under a second here).
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

macro_rules! need_kubectl {
    () => {
        if let Some(why) = kubectl_unavailable() {
            crate::not_run!(why);
        }
    };
}

async fn kubectl(api: &KubeApi, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = api.kubectl();
    cmd.args(args);
    if stdin.is_some() {
        cmd.stdin(std::process::Stdio::piped());
    }
    let mut child = cmd.spawn().expect("run kubectl");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input).await.unwrap();
        drop(pipe);
    }
    tokio::time::timeout(KUBECTL_TIMEOUT, child.wait_with_output()).await.unwrap_or_else(|_| panic!("kubectl {args:?} timed out")).unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The pod names of `kubectl get pods -o json`'s list.
fn names(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "kubectl: {:?} {}", out.status, text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let mut names: Vec<String> = list["items"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

fn shop() -> Vec<StandinPod> {
    vec![
        StandinPod::replica("shop", "orders", "5f7c9", "x8k2p"),
        StandinPod::replica("shop", "orders", "5f7c9", "q2w8n"),
        StandinPod::replica("shop", "cart", "66b4d", "aa111"),
        StandinPod::replica("billing", "orders", "77d9c", "qk2lp"),
        StandinPod::stateful("shop", "db", 0),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_pods_by_namespace_and_selector_across_a_restart() {
    need_kubectl!();
    let mut api = KubeApi::start().await.unwrap();
    for p in shop() {
        api.put(p);
    }
    let args = ["get", "pods", "-n", "shop", "-l", "app=orders", "-o", "json"];
    let out = kubectl(&api, &args, None).await;
    assert_eq!(names(&out), ["orders-5f7c9-q2w8n", "orders-5f7c9-x8k2p"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pod = &list["items"][0];
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], "orders-5f7c9");
    assert_eq!(pod["status"]["phase"], "Running");
    // jdwpmux's own reading of the same list: the workload of each pod.
    let (pods, _) = jdwpmux::remote::kube::pod::parse_list(&out.stdout).expect("kubectl's list read by jdwpmux");
    assert!(pods.iter().all(|p| p.workload() == jdwpmux::remote::kube::Workload::Deployment("orders".into())), "{pods:?}");
    let all = kubectl(&api, &["get", "pods", "-n", "shop", "-o", "json"], None).await;
    assert_eq!(names(&all), ["cart-66b4d-aa111", "db-0", "orders-5f7c9-q2w8n", "orders-5f7c9-x8k2p"]);
    // What kubectl asked: legacy discovery, then the list with the selector.
    let asked = api.requests();
    println!("[kube] kubectl asked: {asked:#?}");
    assert!(asked.iter().any(|r| r.starts_with("GET /api/v1/namespaces/shop/pods?") && r.contains("labelSelector=app%3Dorders")), "{asked:?}");

    // Stopped: refused; started again on the same port: the same pods.
    api.stop().await.unwrap();
    let out = kubectl(&api, &args, None).await;
    assert!(!out.status.success(), "{out:?}");
    assert!(text(&out.stderr).contains("refused"), "{}", text(&out.stderr));
    api.delete("shop", "orders-5f7c9-q2w8n");
    api.restart().await.unwrap();
    assert_eq!(names(&kubectl(&api, &args, None).await), ["orders-5f7c9-x8k2p"]);
}

/// Reads `out` until `want` has appeared, or panics at the deadline with what was read.
async fn read_until(out: &mut tokio::process::ChildStdout, seen: &mut String, want: &str) {
    let deadline = tokio::time::Instant::now() + KUBECTL_TIMEOUT;
    let mut buf = [0u8; 8192];
    while !seen.contains(want) {
        match tokio::time::timeout_at(deadline, out.read(&mut buf)).await {
            Ok(Ok(0)) => panic!("kubectl -w ended before {want:?}; it printed:\n{seen}"),
            Ok(Ok(n)) => seen.push_str(&text(&buf[..n])),
            Ok(Err(e)) => panic!("read kubectl -w: {e}"),
            Err(_) => panic!("no {want:?} from kubectl -w; it printed:\n{seen}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_sees_pods_added_replaced_and_deleted() {
    need_kubectl!();
    let api = KubeApi::start().await.unwrap();
    api.put(StandinPod::replica("shop", "orders", "5f7c9", "x8k2p"));
    api.put(StandinPod::replica("billing", "orders", "77d9c", "qk2lp"));
    let mut cmd = api.kubectl();
    cmd.args(["get", "pods", "-n", "shop", "-w", "-o", "json"]);
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    read_until(&mut out, &mut seen, "orders-5f7c9-x8k2p").await;
    // A rollout's new pod: added, then the old one deleted; another namespace's change is not seen.
    api.put(StandinPod::replica("billing", "orders", "77d9c", "zz999"));
    api.put(StandinPod::replica("shop", "orders", "8c2d1", "m4n5b"));
    read_until(&mut out, &mut seen, "orders-8c2d1-m4n5b").await;
    // Replaced (MODIFIED): the old pod restarting.
    api.put(StandinPod::replica("shop", "orders", "5f7c9", "x8k2p").with_phase("Pending"));
    read_until(&mut out, &mut seen, "\"phase\": \"Pending\"").await;
    let before = seen.matches("orders-5f7c9-x8k2p").count();
    assert!(api.delete("shop", "orders-5f7c9-x8k2p"));
    let deadline = tokio::time::Instant::now() + KUBECTL_TIMEOUT;
    let mut buf = [0u8; 8192];
    while seen.matches("orders-5f7c9-x8k2p").count() == before {
        let n = tokio::time::timeout_at(deadline, out.read(&mut buf)).await.expect("the deleted pod printed").unwrap();
        assert!(n > 0, "kubectl -w ended: {seen}");
        seen.push_str(&text(&buf[..n]));
    }
    assert!(!seen.contains("zz999") && !seen.contains("qk2lp"), "another namespace's pod: {seen}");
    let asked = api.requests();
    assert!(asked.iter().any(|r| r.contains("watch=true")), "{asked:?}");
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_relays_stdin_output_and_exit_code_through_docker() {
    need_kubectl!();
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let classes = AppClasses::main().await.expect("Main compiles");
    let ct = DockerContainer::run(engine, DockerSpec::new("kubeexec", &classes)).await.expect("the pod's container");
    let api = KubeApi::start().await.unwrap();
    let pod = StandinPod::replica("shop", "orders", "5f7c9", "x8k2p").in_docker(ct.name());
    let name = pod.name.clone();
    api.put(pod);

    let input = b"hello through the pod\nsecond line\n";
    let out = kubectl(&api, &["exec", "-i", "-n", "shop", &name, "-c", "app", "--", "sh", "-c", "cat; exit 3"], Some(input)).await;
    println!("[kube] exec: {:?} stdout {:?} stderr {:?}", out.status.code(), text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(out.stdout, input);
    assert!(text(&out.stderr).contains("command terminated with exit code 3"), "{}", text(&out.stderr));

    // Stdout and stderr apart, exit 0; it ran in the container (its JVM is there).
    let out = kubectl(&api, &["exec", "-i", "-n", "shop", &name, "-c", "app", "--", "sh", "-c", "ls /app; echo to-stderr >&2"], Some(b"")).await;
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout).contains("Main.class"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("to-stderr"), "{}", text(&out.stderr));
    let asked = api.requests();
    assert!(asked.iter().any(|r| r.starts_with(&format!("GET /api/v1/namespaces/shop/pods/{name}/exec?"))), "{asked:?}");

    // A container the pod does not have: kubectl says so.
    let out = kubectl(&api, &["exec", "-i", "-n", "shop", &name, "-c", "sidecar", "--", "true"], Some(b"")).await;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("container sidecar is not valid"), "{}", text(&out.stderr));
    // An exec still running when the server stops: its docker exec is ended, kubectl ends.
    let mut cmd = api.kubectl();
    cmd.args(["exec", "-i", "-n", "shop", &name, "-c", "app", "--", "cat"]).stdin(std::process::Stdio::piped());
    let mut running = cmd.spawn().unwrap();
    let deadline = tokio::time::Instant::now() + KUBECTL_TIMEOUT;
    while ct.exec_clients().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no docker exec for kubectl exec -- cat");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut api = api;
    api.stop().await.unwrap();
    let status = tokio::time::timeout(KUBECTL_TIMEOUT, running.wait()).await.expect("kubectl exec ends when the server stops").unwrap();
    assert!(!status.success(), "{status:?}");
    drop(api);
    // No docker exec client is left running once the server is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !ct.exec_clients().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "docker exec clients left: {:?}", ct.exec_clients());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_forbidden_prints_the_servers_words() {
    need_kubectl!();
    let api = KubeApi::start().await.unwrap();
    let pod = StandinPod::replica("shop", "orders", "5f7c9", "x8k2p");
    let name = pod.name.clone();
    api.put(pod);
    api.forbid_exec(true);
    let out = kubectl(&api, &["exec", "-i", "-n", "shop", &name, "-c", "app", "--", "true"], Some(b"")).await;
    let err = text(&out.stderr);
    println!("[kube] forbidden exec: {:?} {err}", out.status.code());
    assert!(!out.status.success());
    assert!(err.contains("Forbidden") || err.contains("forbidden"), "{err}");
    assert!(err.contains(&format!("pods \"{name}\" is forbidden")), "{err}");
    // Listing is still allowed.
    assert_eq!(names(&kubectl(&api, &["get", "pods", "-n", "shop", "-o", "json"], None).await), [name]);
}
