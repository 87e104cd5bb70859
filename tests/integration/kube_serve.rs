//! `serve --kube NAMESPACE:SELECTOR` with the real kubectl against the test kit's stand-in
//! API server, each pod's exec a `docker exec -i` into a real Docker container with a real
//! JVM (agent on the container's own 127.0.0.1, `--network=none`): the selected pod's JVM is
//! listed as `pod NS/NAME`, ready, and jdb stops in it through its port (and steps on after
//! the pod's kubectl exec is killed while it is stopped); a rollout (the new
//! pod made, the old one deleted) lists the new pod's JVM on the same port; a pod of another
//! namespace and one the selector leaves out are not followed; a pod deleted between the
//! list and the watch goes; a pod whose container is restarted, then evicted, under a
//! debugger is said so and its row goes; a pod with two containers shows each in WHERE;
//! five pods' kubectl execs are measured. Exec
//! forbidden: the pod's row says Forbidden in kubectl's words; the API server stopped: the
//! `--kube` row says so, and is up again once the server is.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::Served;
use crate::docker::runs_on;
use crate::remote::SLOW;
use crate::exec::{hosts_until, jdb, list_until, port_of, ready, row, stopped};
use crate::support::containers::{refused_here, DockerContainer, DockerEngine, DockerSpec};
use crate::support::kube::{kubectl_unavailable, KubeApi, StandinPod};

const DOCKER_HOST: (&str, &str) = ("DOCKER_HOST", "unix:///var/run/docker.sock");

macro_rules! need_kubectl {
    () => {
        if let Some(why) = kubectl_unavailable() {
            crate::not_run!(why);
        }
    };
}

/// `serve` following `kube` only, kubectl pointed at the stand-in.
fn serve(api: &KubeApi, kube: &str, extra: &[&str]) -> Served {
    let config = api.kubeconfig();
    let mut args = vec!["--no-proc", "--no-scan", "--no-adb", "--kube", kube];
    args.extend_from_slice(extra);
    Served::start_env(&args, &[("KUBECONFIG", config.to_str().unwrap()), DOCKER_HOST])
}

async fn orders(engine: &'static DockerEngine, tag: &str) -> DockerContainer {
    let cls = crate::exec::classes("Orders").await;
    let mut s = DockerSpec::new(tag, &cls);
    s.class = "Orders".into();
    let c = DockerContainer::run(engine, s).await.unwrap();
    refused_here(c.port()).unwrap();
    c
}

fn host<'a>(hosts: &'a [Value], name: &str) -> Option<&'a Value> {
    hosts.iter().find(|h| h["host"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_pods_are_served_and_a_rollout_keeps_the_port() {
    need_kubectl!();
    crate::need_docker!();
    let began = Instant::now();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let old_ct = orders(engine, "kubeold").await;
    let new_ct = orders(engine, "kubenew").await;
    let api = KubeApi::start().await.unwrap();
    let old = StandinPod::replica("shop", "orders", "5f7c9", "x8k2p").in_docker(old_ct.name());
    let old_name = old.name.clone();
    api.put(old);
    // Another namespace's pod of the same app, and a pod of shop the selector leaves out.
    api.put(StandinPod::replica("billing", "orders", "77d9c", "qk2lp").in_docker(old_ct.name()));
    api.put(StandinPod::replica("shop", "cart", "66b4d", "aa111").in_docker(old_ct.name()));

    let served = serve(&api, "shop:app=orders", &["--far-copy", "--far-hold", "60"]);
    let old_host = format!("shop/{old_name}");
    let rows = list_until(&served, "the pod's JVM ready", |r| ready(r, &old_host, "Orders")).await;
    assert_eq!(rows.len(), 1, "only the selected pod's JVM: {rows:?}");
    assert_eq!(row(&rows, &old_host, "Orders").unwrap()["process"]["place"], format!("pod {old_host}"), "{rows:?}");
    let port = port_of(&rows, &old_host, "Orders");
    println!("[kube] {old_host}'s JVM ready on port {port} after {:?}", began.elapsed());
    let hosts = hosts_until(&served, "the --kube row up, counting its pods' JVM", |h| host(h, "kube:shop:app=orders").is_some_and(|r| r["state"] == "up" && r["jvms"] == 1)).await;
    assert!(hosts.iter().all(|h| !h["host"].as_str().unwrap().contains("billing") && !h["host"].as_str().unwrap().contains("cart")), "pods left out are not followed: {hosts:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("pod {old_host}")), "{text}");

    for pid in crate::exec::execs_of(&served) {
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default().lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("").to_string();
        println!("[kube] the pod's kubectl exec (pid {pid}): {rss}");
    }
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Orders").await;
    runs_on(&old_ct).await;

    // The pod's kubectl exec killed while jdb is stopped: a new one reattaches, the far side
    // in the pod held the session, and the step completes.
    let mut j = stopped(port, "Orders").await;
    let first = crate::exec::one_exec(&served).await;
    // SAFETY: kill with a pid of serve's own child, read just now.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    served.wait_log(&format!("the exec to {old_host} is back")).await;
    j.send("step").await.unwrap();
    j.expect_all(&["Step completed", "main[1] "], SLOW).await.unwrap();
    j.send("clear Orders.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Orders.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    runs_on(&old_ct).await;
    assert!(!served.log_text().contains("let its VMs go"), "the far side held the session through the kill");

    // A rollout: the new pod made, then the old one deleted. The new pod's JVM on the same port.
    let new = StandinPod::replica("shop", "orders", "8c2d1", "m4n5b").in_docker(new_ct.name());
    let new_host = format!("shop/{}", new.name);
    api.put(new);
    // Listed first in the next slot, on a port of its own.
    let rows = list_until(&served, "the new pod's JVM listed", |r| row(r, &new_host, "Orders").is_some_and(|v| v["debugger_port"].is_u64())).await;
    assert_ne!(port_of(&rows, &new_host, "Orders"), port, "two replicas, two ports: {rows:?}");
    assert!(api.delete("shop", &old_name));
    let rows = list_until(&served, "the new pod's JVM ready on the old pod's port, the old one gone", |r| {
        ready(r, &new_host, "Orders") && port_of(r, &new_host, "Orders") == port && row(r, &old_host, "Orders").is_none() && r.len() == 1
    })
    .await;
    assert_eq!(row(&rows, &new_host, "Orders").unwrap()["process"]["place"], format!("pod {new_host}"), "{rows:?}");
    println!("[kube] after the rollout {new_host}'s JVM is on port {port} ({:?} in all)", began.elapsed());
    let log = served.log_text();
    assert!(log.contains(&format!("pod {old_host} (app): the pod was deleted")), "{log}");
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Orders").await;
    runs_on(&new_ct).await;
    drop(served);
}

/// Two replicas, jdb stopped in the second; the first deleted: the second is not moved into
/// the freed slot (which would start its exec host again and drop the debugger): it keeps
/// its port, and jdb steps on. Once jdb has left, a new replica takes the freed slot's port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_a_pod_with_a_debugger_attached_keeps_its_port_when_another_goes() {
    need_kubectl!();
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let first_ct = orders(engine, "kubebusy1").await;
    let second_ct = orders(engine, "kubebusy2").await;
    let api = KubeApi::start().await.unwrap();
    let first = StandinPod::replica("shop", "orders", "5f7c9", "aaaaa").in_docker(first_ct.name());
    let second = StandinPod::replica("shop", "orders", "5f7c9", "bbbbb").in_docker(second_ct.name());
    let (first_host, second_host) = (format!("shop/{}", first.name), format!("shop/{}", second.name));
    let first_name = first.name.clone();
    api.put(first);
    let served = serve(&api, "shop:app=orders", &["--far-copy", "--far-hold", "60"]);
    let rows = list_until(&served, "the first replica ready", |r| ready(r, &first_host, "Orders")).await;
    let first_port = port_of(&rows, &first_host, "Orders");
    api.put(second);
    let rows = list_until(&served, "the second replica ready", |r| ready(r, &second_host, "Orders")).await;
    let second_port = port_of(&rows, &second_host, "Orders");
    assert_ne!(first_port, second_port, "{rows:?}");

    let mut j = stopped(second_port, "Orders").await;
    assert!(api.delete("shop", &first_name));
    let rows = list_until(&served, "the first replica gone", |r| row(r, &first_host, "Orders").is_none()).await;
    assert_eq!(port_of(&rows, &second_host, "Orders"), second_port, "a pod with a debugger attached is not moved: {rows:?}");
    j.send("step").await.unwrap();
    j.expect_all(&["Step completed", "main[1] "], SLOW).await.unwrap();
    j.send("clear Orders.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Orders.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    runs_on(&second_ct).await;
    let log = served.log_text();
    assert!(!log.contains(&format!("pod {second_host} (app)")), "the second pod's host was never stopped: {log}");

    // A new replica takes the freed slot, and its port.
    let third = StandinPod::replica("shop", "orders", "5f7c9", "ccccc").in_docker(first_ct.name());
    let third_host = format!("shop/{}", third.name);
    api.put(third);
    let rows = list_until(&served, "the new replica on the freed port", |r| ready(r, &third_host, "Orders") && port_of(r, &third_host, "Orders") == first_port).await;
    assert_eq!(port_of(&rows, &second_host, "Orders"), second_port, "{rows:?}");
    drop(served);
}

/// A container of this test with no JVM (a sidecar's shape: busybox `sleep`), removed on drop.
struct NoJvm(String);

impl Drop for NoJvm {
    fn drop(&mut self) {
        let _ = crate::support::containers::docker_blocking(&["rm", "-f", &self.0]);
    }
}

/// A pod whose container runs no JVM: looked at once (through its exec, jdwpmux copied in),
/// then its exec is ended and its row says it is looked at again later; no kubectl process
/// is left for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_a_container_with_no_jvm_is_put_to_rest() {
    need_kubectl!();
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let image = engine.image().await.unwrap();
    let name = format!("kube-nojvm-{}", std::process::id());
    let label = format!("{}={}", crate::support::containers::PID_LABEL, std::process::id());
    engine.docker(&["run", "-d", "--name", &name, "--label", &label, "--network=none", &image, "/bin/sleep", "600"]).await.expect("a container with no JVM");
    let ct = NoJvm(name);
    let api = KubeApi::start().await.unwrap();
    let pod = StandinPod::replica("shop", "proxy", "77aa1", "zzzzz").in_docker(&ct.0);
    let pod_host = format!("shop/{}", pod.name);
    api.put(pod);
    let started = Instant::now();
    let served = serve(&api, "shop", &["--far-copy"]);
    hosts_until(&served, "the pod looked at: up, no JVM", |h| host(h, &pod_host).is_some_and(|r| r["state"] == "up" && r["jvms"] == 0 && r["last_scan_ms"].is_u64())).await;
    assert_eq!(crate::exec::execs_of(&served).len(), 1, "one exec while it is looked at");
    let deadline = Instant::now() + jdwpmux::remote::kube::rest::IDLE_AFTER + SLOW;
    loop {
        let h = crate::exec::listed(&served, true);
        if host(&h, &pod_host).is_some_and(|r| r["note"].as_str().is_some_and(|n| n.contains("looked at again"))) {
            println!("[kube] put to rest after {:?}: {:?}", started.elapsed(), host(&h, &pod_host));
            break;
        }
        assert!(Instant::now() < deadline, "never put to rest: {h:?}\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let deadline = Instant::now() + SLOW;
    while !crate::exec::execs_of(&served).is_empty() {
        assert!(Instant::now() < deadline, "the exec of a resting pod still runs");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_exec_forbidden_and_the_api_server_down_are_said_in_the_rows() {
    need_kubectl!();
    let mut api = KubeApi::start().await.unwrap();
    api.forbid_exec(true);
    let pod = StandinPod::replica("shop", "orders", "5f7c9", "x8k2p");
    let pod_host = format!("shop/{}", pod.name);
    api.put(pod);
    let served = serve(&api, "shop", &["--far-copy"]);
    let hosts = hosts_until(&served, "the pod's row says Forbidden", |h| host(h, &pod_host).is_some_and(|r| r["state"] == "down" && r["reason"].as_str().is_some_and(|s| s.contains("Forbidden")))).await;
    println!("[kube] forbidden: {:?}", host(&hosts, &pod_host));
    assert_eq!(host(&hosts, "kube:shop").unwrap()["state"], "up", "{hosts:?}");

    // The API server stopped: the --kube row says kubectl's words; started again: up.
    api.stop().await.unwrap();
    let hosts = hosts_until(&served, "the --kube row down", |h| host(h, "kube:shop").is_some_and(|r| r["state"] == "down" && r["reason"].as_str().is_some_and(|s| s.contains("refused")))).await;
    println!("[kube] server down: {:?}", host(&hosts, "kube:shop"));
    // Meanwhile the pod is replaced: no watch sees it; the list run once the server is back does.
    let old_name = pod_host.trim_start_matches("shop/").to_string();
    assert!(api.delete("shop", &old_name));
    let new = StandinPod::replica("shop", "orders", "8c2d1", "m4n5b");
    let new_host = format!("shop/{}", new.name);
    api.put(new);
    let stopped_at = Instant::now();
    api.restart().await.unwrap();
    let hosts = hosts_until(&served, "the --kube row up again, the pod replaced while it was down", |h| {
        host(h, "kube:shop").is_some_and(|r| r["state"] == "up") && host(h, &new_host).is_some() && host(h, &pod_host).is_none()
    })
    .await;
    println!("[kube] after the restart: {:?}", hosts.iter().map(|h| h["host"].as_str().unwrap_or("")).collect::<Vec<_>>());
    println!("[kube] up again {:?} after the server was started", stopped_at.elapsed());
    assert!(stopped_at.elapsed() < Duration::from_secs(45), "retried with a bounded backoff");
    drop(served);
}

/// 50 pods in a namespace: each has its host row within 5 s of `serve`'s start (exec
/// forbidden, so that no container is needed; the list and the rows are what is timed). The
/// near side's memory is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_fifty_pods_are_listed_within_five_seconds() {
    need_kubectl!();
    const PODS: usize = 50;
    let api = KubeApi::start().await.unwrap();
    api.forbid_exec(true);
    for i in 0..PODS {
        api.put(StandinPod::replica("shop", "orders", "5f7c9", &format!("p{i:04}")));
    }
    let started = Instant::now();
    let served = serve(&api, "shop:app=orders", &[]);
    let pods = |h: &[Value]| h.iter().filter(|r| r["host"].as_str().is_some_and(|n| n.starts_with("shop/orders-"))).count();
    hosts_until(&served, "a row for each pod", |h| pods(h) == PODS).await;
    let took = started.elapsed();
    let rss_kib = std::fs::read_to_string(format!("/proc/{}/status", served.pid())).unwrap().lines().find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().unwrap())).unwrap();
    println!("[kube] {PODS} pods listed in {took:?}; serve's RSS then {rss_kib} KiB in all (its kubectl children not counted)");
    assert!(took < Duration::from_secs(5), "{PODS} pods took {took:?}");
    drop(served);
}

/// A pod deleted between the list and the start of the watch (the stand-in deletes it as
/// soon as the first list has been read): the watch starts from the list's resource version,
/// so its DELETED event is seen and the pod's row goes at once, not at the next list (which
/// a healthy watch never runs). Exec forbidden: no container is needed, the rows are what is
/// looked at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_a_pod_deleted_between_the_list_and_the_watch_is_not_followed() {
    need_kubectl!();
    let api = KubeApi::start().await.unwrap();
    api.forbid_exec(true);
    let gone = StandinPod::replica("shop", "orders", "5f7c9", "gggg1");
    let kept = StandinPod::replica("shop", "orders", "5f7c9", "kkkk2");
    let (gone_host, kept_host) = (format!("shop/{}", gone.name), format!("shop/{}", kept.name));
    api.delete_after_next_list("shop", &gone.name);
    api.put(gone);
    api.put(kept);
    let started = Instant::now();
    let served = serve(&api, "shop", &[]);
    hosts_until(&served, "the kept pod's row, the deleted pod's row gone", |h| host(h, &kept_host).is_some() && host(h, &gone_host).is_none() && served.log_text().contains(&format!("pod {gone_host} (app): the pod was deleted"))).await;
    println!("[kube] the pod deleted after the list is gone after {:?}", started.elapsed());
    assert!(api.store().get("shop", gone_host.trim_start_matches("shop/")).is_none(), "the stand-in deleted it after the list");
    let is_list = |r: &str| r.strip_prefix("GET /api/v1/namespaces/shop/pods").is_some_and(|q| (q.is_empty() || q.starts_with('?')) && !q.contains("watch="));
    let lists = api.requests().iter().filter(|r| is_list(r)).count();
    assert_eq!(lists, 1, "no second list was needed: {:?}", api.requests());
    drop(served);
}

/// Rss, Pss and private (Private_Clean + Private_Dirty: USS) KiB of a process, from
/// `/proc/PID/smaps_rollup`; None when it is gone.
fn memory_kib(pid: u32) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()).unwrap_or(0);
    Some((field("Rss:"), field("Pss:"), field("Private_Clean:") + field("Private_Dirty:")))
}

/// Five pods served at once, each through its own `kubectl exec -i` (containers with no JVM:
/// the exec is what is measured, while they are looked at): each kubectl's Rss, Pss and
/// private memory (USS) are printed. kubectl is one static binary: its text is shared by the
/// five, so what a pod costs is its private memory, not its Rss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_the_memory_of_five_pods_execs_is_measured() {
    need_kubectl!();
    crate::need_docker!();
    const PODS: usize = 5;
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let image = engine.image().await.unwrap();
    let label = format!("{}={}", crate::support::containers::PID_LABEL, std::process::id());
    let api = KubeApi::start().await.unwrap();
    let mut cts = Vec::new();
    let mut hosts = Vec::new();
    for i in 0..PODS {
        let name = format!("kube-mem{i}-{}", std::process::id());
        engine.docker(&["run", "-d", "--name", &name, "--label", &label, "--network=none", &image, "/bin/sleep", "600"]).await.expect("a container with no JVM");
        cts.push(NoJvm(name.clone()));
        let pod = StandinPod::replica("shop", "proxy", "77aa1", &format!("mem{i:02}")).in_docker(&name);
        hosts.push(format!("shop/{}", pod.name));
        api.put(pod);
    }
    let served = serve(&api, "shop", &["--far-copy"]);
    hosts_until(&served, "every pod looked at: up, no JVM", |h| hosts.iter().all(|p| host(h, p).is_some_and(|r| r["state"] == "up" && r["last_scan_ms"].is_u64()))).await;
    let pids = crate::exec::execs_of(&served);
    assert_eq!(pids.len(), PODS, "one kubectl exec per pod");
    let mut sum = (0, 0, 0);
    for &pid in &pids {
        let (rss, pss, uss) = memory_kib(pid).expect("the exec runs");
        println!("[kube] kubectl exec pid {pid}: Rss {rss} KiB, Pss {pss} KiB, private (USS) {uss} KiB");
        sum = (sum.0 + rss, sum.1 + pss, sum.2 + uss);
    }
    let n = PODS as u64;
    println!("[kube] per pod's kubectl exec, mean of {PODS}: Rss {} KiB, Pss {} KiB, private {} KiB", sum.0 / n, sum.1 / n, sum.2 / n);
    assert!(sum.1 <= sum.0 && sum.2 <= sum.1, "Pss within Rss, private within Pss: {sum:?}");
    drop(served);
    drop(cts);
}

/// A debugger attached to a pod's JVM when the pod goes: its container restarted by the
/// kubelet (restart count up), then the pod evicted. Each time the log names the pod and
/// why, and after the eviction `list` has no row of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_a_pod_restarted_or_evicted_under_a_debugger_is_said_and_its_row_goes() {
    need_kubectl!();
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let ct = orders(engine, "kubegoes").await;
    let api = KubeApi::start().await.unwrap();
    let pod = StandinPod::replica("shop", "orders", "5f7c9", "ev1ct").in_docker(ct.name());
    let pod_host = format!("shop/{}", pod.name);
    api.put(pod.clone());
    let served = serve(&api, "shop:app=orders", &["--far-copy"]);
    let rows = list_until(&served, "the pod's JVM ready", |r| ready(r, &pod_host, "Orders")).await;
    let port = port_of(&rows, &pod_host, "Orders");

    // Its container restarted (the count up, the stop not seen): said, served again.
    let j = jdb(port).await;
    list_until(&served, "jdb attached", |r| row(r, &pod_host, "Orders").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| !d.is_empty()))).await;
    let mut restarted = pod.clone();
    restarted.restarts = 1;
    api.put(restarted.clone());
    served.wait_log(&format!("pod {pod_host} (app): its container was restarted")).await;
    list_until(&served, "the restarted container's JVM ready again on its port", |r| ready(r, &pod_host, "Orders") && port_of(r, &pod_host, "Orders") == port).await;
    drop(j);

    // Evicted under a debugger: said, and its rows go.
    let j = jdb(port).await;
    list_until(&served, "jdb attached again", |r| row(r, &pod_host, "Orders").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| !d.is_empty()))).await;
    api.put(restarted.evicted());
    served.wait_log(&format!("pod {pod_host} (app): the pod was evicted")).await;
    list_until(&served, "the evicted pod's row gone", |r| row(r, &pod_host, "Orders").is_none()).await;
    let hosts = crate::exec::listed(&served, true);
    assert!(host(&hosts, &pod_host).is_none(), "its host row gone too: {hosts:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(!text.contains(&pod_host), "{text}");
    drop(j);
    drop(served);
}

/// A pod with two containers (both execs land in the one Docker container of the stand-in's
/// pod): each container is a host of its own, `NS/POD/C`, and its JVM's WHERE names the
/// container, `pod NS/POD (C)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_a_pod_with_several_containers_shows_the_container() {
    need_kubectl!();
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let ct = orders(engine, "kubetwo").await;
    let api = KubeApi::start().await.unwrap();
    let pod = StandinPod::replica("shop", "orders", "5f7c9", "tw0cs").with_containers(&["app", "sidecar"]).in_docker(ct.name());
    let name = pod.name.clone();
    api.put(pod);
    let served = serve(&api, "shop:app=orders", &["--far-copy"]);
    let app = format!("shop/{name}/app");
    let rows = list_until(&served, "the app container's JVM ready", |r| ready(r, &app, "Orders")).await;
    assert_eq!(row(&rows, &app, "Orders").unwrap()["process"]["place"], format!("pod shop/{name} (app)"), "{rows:?}");
    let hosts = crate::exec::listed(&served, true);
    assert!(host(&hosts, &format!("shop/{name}/sidecar")).is_some() && host(&hosts, &format!("shop/{name}")).is_none(), "{hosts:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("pod shop/{name} (app)")), "{text}");
    println!("[kube] {text}");
    drop(served);
}
