//! A developer in the `docker` group, not root, debugging the JVMs of Docker containers that
//! run as root or as a uid with no user here, their agents on the containers' own loopback,
//! nothing published: `jdwpmux serve` finds them by their process, cannot enter their
//! namespaces, and reaches them through `docker exec` (the far side copied in with
//! `--far-copy`), named by their container names. A real Docker Engine and real JVMs.

use std::time::Duration;

use serde_json::Value;

use crate::cli::{Served, BIN};
use crate::docker::runs_on;
use crate::exec::classes;
use crate::remote::SLOW;
use crate::support::containers::{refused_here, DockerContainer, DockerEngine, DockerSpec};
use crate::support::users::TestUser;
use crate::support::Jdb;

pub(crate) fn row<'a>(rows: &'a [Value], app: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["app"] == app)
}

fn listed(served: &Served) -> Vec<Value> {
    let (code, out, _) = served.run(&["list", "--json"]);
    if code != 0 {
        return Vec::new();
    }
    serde_json::from_str(&out).unwrap_or_default()
}

pub(crate) async fn list_until(served: &Served, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + SLOW;
    loop {
        let rows = listed(served);
        if cond(&rows) {
            return rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: rows {rows:?}\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until no process of jdwpmux is left in the container, dead or alive.
async fn nothing_left(c: &DockerContainer) {
    let deadline = tokio::time::Instant::now() + SLOW;
    loop {
        let procs = c.processes().await.unwrap();
        if !procs.iter().any(|p| p.comm.starts_with("jdwpmux")) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "jdwpmux left in {}: {procs:?}", c.name());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What `serve` as the docker group member (or any test user) `dev` needs: the words that run a command as
/// them (with their groups, a login's environment), a copy of jdwpmux they own, and a
/// folder of theirs for the control socket.
pub(crate) fn member_serves(dev: &TestUser) -> (Vec<String>, std::path::PathBuf, std::path::PathBuf) {
    let home = dev.home.clone().expect("a home");
    let own = |p: &std::path::Path| std::os::unix::fs::chown(p, Some(dev.uid), Some(dev.gid)).unwrap();
    let (bin, dir) = (home.join("jm"), home.join("jdwpmux"));
    for d in [&bin, &dir] {
        std::fs::create_dir_all(d).unwrap();
        own(d);
    }
    std::fs::copy(BIN, bin.join("jdwpmux")).unwrap();
    own(&bin.join("jdwpmux"));
    let mut wrapper = dev.prefix_with_groups();
    wrapper.extend(["env".to_string(), "PATH=/usr/local/bin:/usr/bin:/bin".into(), format!("HOME={}", home.display()), "RUST_LOG=info".into()]);
    (wrapper, bin, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_group_member_debugs_root_containers_through_docker() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let marker = format!("dkuser{}", std::process::id());
    let (ledger_cls, billing_cls) = (classes("Ledger").await, classes("Billing").await);
    let mut spec = DockerSpec::new("dkledger", &ledger_cls);
    spec.class = "Ledger".into();
    spec.jvm = vec![format!("-Djdwpmux.test={marker}")];
    let ledger = DockerContainer::run(engine, spec).await.expect("a root container");
    let mut spec = DockerSpec::as_user("dkbilling", &billing_cls, 4321);
    spec.class = "Billing".into();
    spec.jvm = vec![format!("-Djdwpmux.test={marker}")];
    let billing = DockerContainer::run(engine, spec).await.expect("a container as uid 4321");
    refused_here(ledger.port()).unwrap();

    let dev = TestUser::docker_member("dkdev").expect("a docker group member");
    let (wrapper, bin, dir) = member_serves(&dev);
    let base = ["--proc", "--proc-match", marker.as_str(), "--no-scan", "--no-adb", "--scan-interval", "0.5"];

    // Without --far-copy: listed by container name, unreachable, told how to allow it; never
    // the current VM.
    {
        let served = Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &base);
        let rows = list_until(&served, "both JVMs, with advice naming --far-copy", |r| {
            ["Ledger", "Billing"].iter().all(|a| row(r, a).is_some_and(|v| v["note"].as_str().is_some_and(|n| n.contains("serve --far-copy"))))
        })
        .await;
        for (app, c) in [("Ledger", &ledger), ("Billing", &billing)] {
            let v = row(&rows, app).unwrap();
            assert_eq!(v["process"]["place"], format!("container {} (docker)", c.name()), "{rows:?}");
            assert_eq!(v["current"], false, "{rows:?}");
            assert!(!v["note"].as_str().unwrap().contains("run jdwpmux as"), "{rows:?}");
        }
        served.wait_log("reached through `docker exec`").await;
    }

    // With --far-copy: both reached through docker, ready, under their container names.
    let mut args = base.to_vec();
    args.push("--far-copy");
    let served = Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &args);
    let ready = |r: &[Value], app: &str, host: &str| row(r, app).is_some_and(|v| v["state"] == "ready" && v["host"] == host && v["debugger_port"].is_u64());
    let rows = list_until(&served, "both JVMs ready through docker", |r| ready(r, "Ledger", ledger.name()) && ready(r, "Billing", billing.name())).await;
    assert_eq!(rows.len(), 2, "one row per JVM: {rows:?}");
    for (app, c) in [("Ledger", &ledger), ("Billing", &billing)] {
        assert_eq!(row(&rows, app).unwrap()["process"]["place"], format!("container {} (docker)", c.name()), "{rows:?}");
    }
    let port = |app: &str| row(&rows, app).and_then(|v| v["debugger_port"].as_u64()).unwrap();
    for (app, c) in [("Ledger", &ledger), ("Billing", &billing)] {
        let mut j = Jdb::attach_as(&dev.prefix(), &format!("127.0.0.1:{}", port(app))).await.expect("jdb starts");
        j.expect("> ", SLOW).await.expect("jdb attaches");
        crate::remote::break_step_clear_quit(&mut j, app).await;
        runs_on(c).await;
    }
    // The container restarted (its JVM and the far side in it end): the same port, ready again
    // through docker, and a debugger stops in it.
    let mut ledger = ledger;
    ledger.restart().await.expect("docker restart");
    let before = port("Ledger");
    // The far side there is a new one (the old one ended with the container).
    served.wait_log(&format!("jdwpmux in {} is another one now", ledger.name())).await;
    let again = list_until(&served, "Ledger back after its container's restart", |r| {
        row(r, "Ledger").is_some_and(|v| v["state"] == "ready" && v["pid"] == 1 && v["debugger_port"].as_u64() == Some(before)) && r.len() == 2
    })
    .await;
    assert_eq!(row(&again, "Ledger").unwrap()["host"], ledger.name(), "{again:?}");
    let mut j = Jdb::attach_as(&dev.prefix(), &format!("127.0.0.1:{before}")).await.expect("jdb starts");
    j.expect("> ", SLOW).await.expect("jdb attaches");
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&ledger).await;
    // Removed and made again under its name (a new container, with nothing of what was
    // copied into the old one): the same port, jdwpmux looked for and copied in again.
    let spec = ledger.spec().clone();
    drop(ledger);
    let ledger = DockerContainer::run(engine, spec).await.expect("the container made again");
    served.wait_log(&format!("jdwpmux is no longer at /root/.cache/jdwpmux/{}/jdwpmux in {}", env!("CARGO_PKG_VERSION"), ledger.name())).await;
    let again = list_until(&served, "Ledger back in the container made again", |r| {
        row(r, "Ledger").is_some_and(|v| v["state"] == "ready" && v["debugger_port"].as_u64() == Some(before)) && r.len() == 2
    })
    .await;
    assert_eq!(row(&again, "Ledger").unwrap()["process"]["place"], format!("container {} (docker)", ledger.name()), "{again:?}");
    let mut j = Jdb::attach_as(&dev.prefix(), &format!("127.0.0.1:{before}")).await.expect("jdb starts");
    j.expect("> ", SLOW).await.expect("jdb attaches");
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&ledger).await;
    // The current VM is one that can be reached.
    let (_, text, _) = served.run(&["list"]);
    assert!(text.lines().any(|l| l.starts_with('*') && (l.contains("Ledger") || l.contains("Billing"))), "{text}");
    // `serve` ended as a user ends it (Ctrl-C, SIGTERM): nothing of jdwpmux runs on in
    // either container, dead or alive.
    let mut served = served;
    assert_eq!(served.terminate(SLOW), Some(0), "{}", served.log_text());
    nothing_left(&ledger).await;
    nothing_left(&billing).await;
}

/// A container Compose made (its labels), running as root, to a docker group member: its row
/// names the container and its Compose project and service, whether it can be reached yet or
/// not; an IDE-shaped JDI session (the Stepper: breakpoint, steps, frames, locals, `this`,
/// both suspend policies) run as that user through its port sees what it sees of the same
/// program run here directly, detaches, and the app runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_group_member_steps_a_compose_service_with_a_jdi_program() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let marker = format!("dkjdi{}", std::process::id());
    let cls = crate::support::containers::AppClasses::compile(&[("Ledger.java", crate::support::jdi::LEDGER_JAVA)]).await.expect("javac");
    let mut spec = DockerSpec::new("dkshop", &cls);
    spec.class = "Ledger".into();
    spec.jvm = vec![format!("-Djdwpmux.test={marker}")];
    spec.docker_args = ["com.docker.compose.project=shop", "com.docker.compose.service=orders"].iter().flat_map(|l| ["--label".to_string(), l.to_string()]).collect();
    let orders = DockerContainer::run(engine, spec).await.expect("a root container");
    refused_here(orders.port()).unwrap();
    let place = format!("container {} (docker, compose shop/orders)", orders.name());

    let dev = TestUser::docker_member("dkjdi").expect("a docker group member");
    let (wrapper, bin, dir) = member_serves(&dev);
    let base = ["--proc", "--proc-match", marker.as_str(), "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    // Not reachable yet (nothing may be copied in): named by the runtime, Compose and all.
    {
        let served = Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &base);
        let rows = list_until(&served, "the Ledger, named with its compose service", |r| row(r, "Ledger").is_some_and(|v| v["process"]["place"] == place.as_str())).await;
        assert!(row(&rows, "Ledger").unwrap()["note"].as_str().is_some_and(|n| n.contains("serve --far-copy")), "{rows:?}");
    }
    let mut args = base.to_vec();
    args.push("--far-copy");
    let served = Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &args);
    let rows = list_until(&served, "the Ledger ready through docker", |r| row(r, "Ledger").is_some_and(|v| v["state"] == "ready" && v["host"] == orders.name() && v["debugger_port"].is_u64())).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(row(&rows, "Ledger").unwrap()["process"]["place"], place.as_str(), "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&place), "{text}");
    let port = row(&rows, "Ledger").and_then(|v| v["debugger_port"].as_u64()).unwrap() as u16;
    crate::containers::same_as_here_as(&dev.prefix(), port, "as a docker group member through docker exec").await;
    runs_on(&orders).await;
    let mut served = served;
    assert_eq!(served.terminate(SLOW), Some(0), "{}", served.log_text());
    nothing_left(&orders).await;
}
