//! JVMs in real Docker Engine containers (`--network=none`, agents on the containers' own
//! 127.0.0.1:5005, nothing published), reached by root: by entering the container's network
//! namespace (`serve --proc`), and through `docker exec -i` with this binary copied in
//! (`--exec NAME='docker exec -i CT' --far-copy`). A root container and one running as uid
//! 4321, which has no user on this machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::Served;
use crate::exec::{execs_of, hosts_until, jdb, list_until, one_exec, port_of, ready, row, stopped};
use crate::remote::SLOW;
use crate::support::containers::{refused_here, AppClasses, DockerContainer, DockerEngine, DockerSpec};

const DOCKER_HOST: (&str, &str) = ("DOCKER_HOST", "unix:///var/run/docker.sock");

/// A container running `Main` renamed `class`, with `-D<marker>` (for --proc-match), as
/// `uid` when given.
async fn run(engine: &'static DockerEngine, tag: &str, class: &str, marker: &str, uid: Option<u32>) -> DockerContainer {
    let cls: Arc<AppClasses> = crate::containers::classes(class).await;
    run_classes(engine, tag, &cls, class, marker, uid).await
}

async fn run_classes(engine: &'static DockerEngine, tag: &str, cls: &Arc<AppClasses>, class: &str, marker: &str, uid: Option<u32>) -> DockerContainer {
    let mut s = DockerSpec::new(tag, cls);
    s.class = class.into();
    s.jvm = vec![format!("-D{marker}")];
    s.user = uid.map(|u| format!("{u}:{u}"));
    let c = DockerContainer::run(engine, s).await.unwrap();
    refused_here(c.port()).unwrap();
    c
}

/// The last `tick N` the container's JVM printed (the last: a restarted container's log
/// holds its first run's ticks too).
pub(crate) async fn ticks(c: &DockerContainer) -> u64 {
    c.logs().await.lines().rev().filter_map(|l| l.strip_prefix("tick ")).find_map(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Waits until the container's app printed two ticks past now: it runs on.
pub(crate) async fn runs_on(c: &DockerContainer) {
    let start = ticks(c).await;
    let deadline = tokio::time::Instant::now() + SLOW;
    while ticks(c).await < start + 2 {
        assert!(tokio::time::Instant::now() < deadline, "{} did not run on: {}", c.name(), c.logs().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn local_row<'a>(rows: &'a [Value], app: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["host"] == "local" && r["app"] == app)
}

fn local_ready(rows: &[Value], app: &str) -> bool {
    local_row(rows, app).is_some_and(|r| r["state"] == "ready" && r["debugger_port"].is_u64())
}

/// Waits until `list --json` satisfies `cond`; the rows and the log are shown when it never
/// does.
async fn list_local_until(served: &Served, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + SLOW;
    loop {
        let rows = crate::exec::listed(served, false);
        if cond(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "{what}: rows {rows:?}\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// jdb through `port`: a breakpoint in `class.tick`, hit, `cont` (hit again), cleared, and
/// detached.
async fn break_cont_detach(port: u16, class: &str) {
    let mut j = stopped(port, class).await;
    j.send("cont").await.unwrap();
    j.expect("Breakpoint hit", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    j.send(&format!("clear {class}.tick")).await.unwrap();
    j.expect_all(&[&format!("Removed: breakpoint {class}.tick"), "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
}

/// As root, by namespace entry (`--other-users` for the uid-4321 one): root containers and a
/// uid-4321 one are listed as `container NAME (docker)`, ready; jdb breaks, continues and
/// detaches through each one's port, two debuggers share one, a JDI session sees what it
/// sees directly, and the apps run on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_containers_root_and_a_uid_with_no_user_are_served_by_root() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let marker = format!("jdwpmux.test=dkns-{}", std::process::id());
    let billing = run(engine, "dkbill", "Billing", &marker, None).await;
    let orders = run(engine, "dkord", "Orders", &marker, Some(4321)).await;
    let ledger_classes = AppClasses::compile(&[("Ledger.java", crate::support::jdi::LEDGER_JAVA)]).await.expect("javac");
    // One made by Compose (its labels): root reads them with its name from the container's
    // state file.
    let mut s = DockerSpec::new("dkledg", &ledger_classes);
    s.class = "Ledger".into();
    s.jvm = vec![format!("-D{marker}")];
    s.docker_args = ["com.docker.compose.project=shop", "com.docker.compose.service=ledger"].iter().flat_map(|l| ["--label".to_string(), l.to_string()]).collect();
    let ledger = DockerContainer::run(engine, s).await.unwrap();
    refused_here(ledger.port()).unwrap();
    assert!(std::process::Command::new("getent").args(["passwd", "4321"]).output().is_ok_and(|o| !o.status.success()), "uid 4321 has a user here");

    // The uid-4321 JVM is another user's to root, as any JVM not running as root: served
    // with --other-users (left alone without it).
    let served = Served::start_env(&["--proc", "--proc-match", &marker, "--other-users", "--no-scan", "--no-adb", "--scan-interval", "0.5"], &[DOCKER_HOST]);
    let rows = list_local_until(&served, "the Docker containers ready", |r| ["Billing", "Orders", "Ledger"].iter().all(|a| local_ready(r, a))).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (app, c, compose) in [("Billing", &billing, ""), ("Orders", &orders, ""), ("Ledger", &ledger, ", compose shop/ledger")] {
        let r = local_row(&rows, app).unwrap();
        assert_eq!(r["pid"], c.jvm_pid(), "{rows:?}");
        assert_eq!(r["process"]["place"], format!("container {} (docker{compose})", c.name()), "{rows:?}");
    }
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("container {} (docker)", orders.name())), "{text}");
    let port = |app: &str| local_row(&rows, app).and_then(|r| r["debugger_port"].as_u64()).unwrap() as u16;
    for (app, c) in [("Billing", &billing), ("Orders", &orders)] {
        break_cont_detach(port(app), app).await;
        runs_on(c).await;
    }
    // Two debuggers on one container's JVM: one idle while the other breaks and steps; each
    // leaves, and the app runs on.
    let mut idle = jdb(port("Billing")).await;
    let mut j = jdb(port("Billing")).await;
    crate::remote::break_step_clear_quit(&mut j, "Billing").await;
    list_local_until(&served, "the idle jdb still attached", |r| local_row(r, "Billing").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 1))).await;
    idle.quit().await.unwrap();
    runs_on(&billing).await;
    // An IDE-shaped JDI session sees in the container what it sees of the same program here.
    crate::containers::same_as_here(port("Ledger"), "through jdwpmux into the Docker container").await;
    runs_on(&ledger).await;
    drop(served);
}

/// As root, through `docker exec -i CT` with `--far-copy`: Docker 20.10 says the container has
/// no jdwpmux with 126 on stdout, so this binary is copied in, and the JVM is served through
/// it. The `docker exec` killed while jdb is stopped: a new one reattaches, the VM was held
/// (the app never ran), and the step completes. The container restarted: the same port,
/// ready again. Once `serve` has ended, nothing of jdwpmux runs in the container (and no
/// zombie is left under its first process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_exec_far_copy_holds_through_a_killed_exec_and_a_restart() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let mut c = run(engine, "dkexec", "Ledger", "jdwpmux.test=dkexec", None).await;
    let exec = format!("ledger=docker exec -i {}", c.name());
    let served = Served::start_env(&["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--far-copy", "--far-hold", "120"], &[DOCKER_HOST]);
    let rows = list_until(&served, "Ledger through docker exec", |r| ready(r, "ledger", "Ledger")).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(row(&rows, "ledger", "Ledger").unwrap()["process"]["place"], format!("container {} (docker)", c.name()), "{rows:?}");
    let log = served.log_text();
    assert!(log.contains("copied this jdwpmux into ledger"), "{log}");
    let h = hosts_until(&served, "the exec host up", |h| h.iter().any(|r| r["host"] == "ledger" && r["state"] == "up" && r["jvms"] == 1)).await;
    assert_eq!(h[0]["dest"], format!("exec: docker exec -i {}", c.name()), "{h:?}");
    let port = port_of(&rows, "ledger", "Ledger");
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&c).await;

    // The `docker exec` killed while jdb is stopped at a breakpoint.
    let mut j = stopped(port, "Ledger").await;
    let at_stop = ticks(&c).await;
    let first = one_exec(&served).await;
    assert_eq!(c.exec_clients(), vec![first], "serve's docker exec is the one client into the container");
    // SAFETY: kill with a pid of serve's own child, read just now.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + SLOW;
    while !execs_of(&served).iter().any(|p| *p != first) {
        assert!(Instant::now() < deadline, "no new docker exec after the kill\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served.wait_log("the exec to ledger is back").await;
    assert_eq!(ticks(&c).await, at_stop, "the app ran while the exec was down");
    j.send("step").await.unwrap();
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    assert!(ticks(&c).await <= at_stop + 1, "the app ran on past one step");
    j.send("cont").await.unwrap();
    j.expect_all(&["Breakpoint hit", "main[1] "], SLOW).await.unwrap();
    j.send("clear Ledger.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Ledger.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    runs_on(&c).await;
    let log = served.log_text();
    assert!(!log.contains("let its VMs go"), "the far side held the session through the kill: {log}");

    // Restarted: a new JVM (and the far side gone with the old processes), the same port,
    // once the exec is back to the new far side.
    let backs = |s: &Served| s.log_text().matches("the exec to ledger is back").count();
    let before = backs(&served);
    let old = c.jvm_pid();
    c.restart().await.unwrap();
    assert_ne!(c.jvm_pid(), old);
    let deadline = Instant::now() + SLOW;
    while backs(&served) == before {
        assert!(Instant::now() < deadline, "the exec never came back after the restart\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rows = list_until(&served, "Ledger ready after the restart", |r| ready(r, "ledger", "Ledger")).await;
    assert_eq!(port_of(&rows, "ledger", "Ledger"), port, "a restarted container keeps its port: {rows:?}");
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&c).await;

    // serve ends (SIGTERM, as Ctrl-C): it tells the far side it leaves for good, and the far
    // side ends. Nothing of jdwpmux runs in the container then, and no zombie is left under
    // the container's first process (the JVM, which reaps no child): the `far --attach`
    // that started the far side waits for it to end and reaps it.
    let before = c.processes().await.unwrap();
    assert!(before.iter().any(|p| p.comm == "jdwpmux" && p.state != "Z"), "the far side runs in the container while serve does: {before:?}");
    let mut served = served;
    assert!(served.terminate(SLOW).is_some(), "serve did not end on SIGTERM");
    let deadline = Instant::now() + SLOW;
    let procs = loop {
        let procs = c.processes().await.unwrap();
        let running: Vec<_> = procs.iter().filter(|p| p.pid != c.jvm_pid() && p.state != "Z").collect();
        if running.is_empty() && c.exec_clients().is_empty() {
            break procs;
        }
        assert!(Instant::now() < deadline, "running in the container after serve ended: {running:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let zombies: Vec<_> = procs.iter().filter(|p| p.state == "Z").collect();
    println!("after serve ended: {} processes in the container, zombies {zombies:?}", procs.len());
    assert!(zombies.is_empty(), "zombies left in the container: {zombies:?}");
    runs_on(&c).await;
}

/// A container running as uid 4321 (no user here, HOME=/) through `docker exec -i CT
/// --far-copy`: its home's cache cannot be written, so this binary goes to /tmp/jdwpmux-4321
/// in the container, runs there as 4321, and jdb breaks, steps and detaches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_exec_far_copy_into_a_uid_container() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let c = run(engine, "dkexuid", "Ledger", "jdwpmux.test=dkexuid", Some(4321)).await;
    let exec = format!("ledger=docker exec -i {}", c.name());
    let served = Served::start_env(&["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--far-copy"], &[DOCKER_HOST]);
    let rows = list_until(&served, "Ledger through docker exec as 4321", |r| ready(r, "ledger", "Ledger")).await;
    assert_eq!(row(&rows, "ledger", "Ledger").unwrap()["process"]["place"], format!("container {} (docker)", c.name()), "{rows:?}");
    let log = served.log_text();
    assert!(log.contains("copied this jdwpmux into ledger") && log.contains("/tmp/jdwpmux-4321/"), "{log}");
    let far = c.processes().await.unwrap().into_iter().find(|p| p.comm == "jdwpmux" && p.state != "Z").expect("the far side runs in the container");
    let status = std::fs::read_to_string(format!("/proc/{}/status", far.pid)).unwrap();
    assert!(status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("4321")), "the far side runs as the container's user: {status}");
    let mut j = jdb(port_of(&rows, "ledger", "Ledger")).await;
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&c).await;
    drop(served);
}

/// What `docker exec` says is read as Docker says it: without `--far-copy`, a container with
/// no jdwpmux (126 and "executable file not found" on stdout) gets the line saying how to
/// allow the copy, never "exited with 126: it said nothing"; a missing container is shown in
/// Docker's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_exec_answers_are_read_from_either_stream() {
    crate::need_docker!();
    let engine = DockerEngine::get().await.expect("a Docker Engine");
    let c = run(engine, "dkans", "Ledger", "jdwpmux.test=dkans", None).await;
    let exec = format!("ledger=docker exec -i {}", c.name());
    let missing = format!("gone=docker exec -i {}-missing", c.name());
    let served = Served::start_env(&["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--exec", &missing], &[DOCKER_HOST]);
    let h = hosts_until(&served, "both rows say why", |h| h.len() == 2 && h.iter().all(|r| r["state"] == "down" && r["reason"].is_string())).await;
    let reason = |host: &str| h.iter().find(|r| r["host"] == host).and_then(|r| r["reason"].as_str()).unwrap().to_string();
    let ledger = reason("ledger");
    assert!(ledger.starts_with("ledger has no jdwpmux (jdwpmux was not found there): use an image with jdwpmux") && ledger.contains("--far-copy"), "{ledger}");
    let gone = reason("gone");
    assert!(gone.contains("No such container") && gone.contains(&format!("{}-missing", c.name())) && !gone.contains("said nothing"), "Docker's words: {gone}");
    drop(served);
    assert!(c.files("/root").await.unwrap().iter().all(|f| !f.contains("jdwpmux")), "nothing was copied without --far-copy");
}
