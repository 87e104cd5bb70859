//! JVMs in containers and bare network namespaces, reached where they listen: real Podman
//! containers (rootful and rootless, `--network=none`) and `ip netns` / `unshare --net`
//! namespaces, with real JVMs whose agents listen on their own loopback and nothing published.
//! jdwpmux lists each one, says where it runs, and serves it on a debugger port of its own:
//! jdb attaches, breaks, steps, detaches, and the app runs on.

use std::time::Duration;

use serde_json::Value;

use crate::cli::Served;
use crate::remote::SLOW;
use crate::support::containers::{refused_here, AppClasses, Container, ContainerSpec, Engine, Jdk, NetnsJvm};
use crate::support::users::TestUser;
use crate::support::Jdb;

/// `Main` renamed `class`, compiled once for the containers that run it.
pub(crate) async fn classes(class: &str) -> std::sync::Arc<AppClasses> {
    let src = crate::support::java::MAIN_JAVA.replace("Main", class);
    AppClasses::compile(&[(&format!("{class}.java"), &src)]).await.expect("javac")
}

/// A container running `class` with `marker` on its command line (for --proc-match).
pub(crate) fn spec(engine: &std::sync::Arc<Engine>, tag: &str, classes: &std::sync::Arc<AppClasses>, class: &str, marker: &str) -> ContainerSpec {
    let mut s = ContainerSpec::new(engine, tag, classes);
    s.class = class.into();
    s.jvm = vec![format!("-D{marker}")];
    s
}

fn row<'a>(rows: &'a [Value], app: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["host"] == "local" && r["app"] == app)
}

fn ready(rows: &[Value], app: &str) -> bool {
    row(rows, app).is_some_and(|r| r["state"] == "ready" && r["debugger_port"].is_u64())
}

fn port_of(rows: &[Value], app: &str) -> u16 {
    row(rows, app).and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port") as u16
}

fn serve(marker: &str, extra: &[&str]) -> Served {
    let mut args = vec!["--proc", "--proc-match", marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    args.extend_from_slice(extra);
    Served::start(&args)
}

/// The last `tick N` a container's JVM printed. The last, not the highest: a restarted
/// container's log still holds its first run's ticks, and the new JVM counts from 1 again.
async fn ticks(c: &Container) -> u64 {
    c.logs().await.lines().rev().filter_map(|l| l.strip_prefix("tick ")).find_map(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Waits until the container's app printed two ticks past now: it runs on.
pub(crate) async fn runs_on(c: &Container) {
    let start = ticks(c).await;
    let deadline = tokio::time::Instant::now() + SLOW;
    while ticks(c).await < start + 2 {
        assert!(tokio::time::Instant::now() < deadline, "{} did not run on after the debugger: {}", c.name(), c.logs().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// jdb through `port` (as `prefix`'s user): a breakpoint in `class.tick`, a step, clear,
/// quit. The app runs on afterwards.
pub(crate) async fn debug_through(prefix: &[String], port: u16, class: &str) {
    let mut jdb = Jdb::attach_as(prefix, &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    jdb.expect("> ", SLOW).await.expect("jdb attaches");
    crate::remote::break_step_clear_quit(&mut jdb, class).await;
}

/// Rootful containers on JDK 17 and 25, agents on their own loopback, nothing published:
/// listed with the container's name, debugged with jdb (two at once on one of them), and a
/// restarted container keeps its debugger port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rootful_containers_are_named_reached_and_keep_their_port() {
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let marker = format!("jdwpmux.test=ctr-{}", std::process::id());
    let (billing_classes, orders_classes) = (classes("Billing").await, classes("Orders").await);
    let mut billing = Container::run(spec(&engine, "billing", &billing_classes, "Billing", &marker)).await.unwrap();
    let mut orders_spec = spec(&engine, "orders", &orders_classes, "Orders", &marker);
    if crate::support::containers::jdk25_home().is_some() {
        orders_spec.jdk = Jdk::J25;
    }
    let orders = Container::run(orders_spec).await.unwrap();
    // Nothing is published: this machine's own loopback port refuses.
    refused_here(billing.port()).unwrap();
    refused_here(orders.port()).unwrap();

    let served = serve(&marker, &[]);
    let rows = served.list_until("both containers ready", |r| ready(r, "Billing") && ready(r, "Orders")).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (app, c) in [("Billing", &billing), ("Orders", &orders)] {
        let r = row(&rows, app).unwrap();
        assert_eq!(r["pid"], c.jvm_pid(), "{rows:?}");
        assert_eq!(r["process"]["place"], format!("container {} (podman)", c.name()), "{rows:?}");
    }
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains("WHERE") && text.contains(&format!("container {} (podman)", billing.name())), "{text}");
    let log = served.log_text();
    assert!(log.contains(&format!("container {} (podman)", billing.name())), "the log names the container: {log}");

    let (bp, op) = (port_of(&rows, "Billing"), port_of(&rows, "Orders"));
    debug_through(&[], op, "Orders").await;
    runs_on(&orders).await;

    // Two debuggers at once on one container's JVM: both attached, both listed, each leaves.
    let mut first = Jdb::attach(&format!("127.0.0.1:{bp}")).await.unwrap();
    first.expect("> ", SLOW).await.unwrap();
    debug_through(&[], bp, "Billing").await;
    served.list_until("the first jdb still attached", |r| row(r, "Billing").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 1))).await;
    first.quit().await.unwrap();
    runs_on(&billing).await;

    // Restarted: a new process in a new network namespace, the same name and debugger port.
    let old_pid = billing.jvm_pid();
    billing.restart().await.unwrap();
    assert_ne!(billing.jvm_pid(), old_pid);
    let new_pid = billing.jvm_pid();
    let rows = served.list_until("the restarted container", |r| ready(r, "Billing") && row(r, "Billing").is_some_and(|v| v["pid"] == new_pid)).await;
    assert_eq!(port_of(&rows, "Billing"), bp, "a restarted container keeps its port: {rows:?}");
    debug_through(&[], bp, "Billing").await;
    runs_on(&billing).await;
    drop(served);
}

/// A rootless container, reached by its owner's own non-root daemon (a short-lived child
/// joins its user and network namespaces); root's daemon leaves it alone unless asked, and
/// with --other-users serves it while another user's jdb is refused at the debugger port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rootless_container_is_reached_by_its_owner_and_left_alone_by_others() {
    crate::need_podman!();
    let engine = Engine::rootless("ctrless").unwrap();
    let owner = engine.user().expect("a rootless engine has a user");
    let owner_prefix = owner.prefix();
    let marker = format!("jdwpmux.test=ctrless-{}", std::process::id());
    let cls = classes("Billing").await;
    let c = Container::run(spec(&engine, "less", &cls, "Billing", &marker)).await.unwrap();
    refused_here(c.port()).unwrap();
    // And one of root's, which the owner's daemon cannot enter.
    let rootful = Engine::rootful().unwrap();
    let vault_cls = classes("Vault").await;
    let vault = Container::run(spec(&rootful, "vault", &vault_cls, "Vault", &marker)).await.unwrap();

    // The owner's daemon: its control socket and log in a folder the owner owns.
    let dir = owner.home.clone().expect("a home").join("jdwpmux");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(owner.uid), Some(owner.gid)).unwrap();
    let control = dir.join("control.sock");
    let args = ["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    let prefix = owner_prefix.clone();
    let served = Served::start_as(&prefix, &control, &args);
    let rows = served.list_until("the owner's container, and root's with a note", |r| ready(r, "Billing") && row(r, "Vault").is_some_and(|v| v["note"].is_string())).await;
    assert_eq!(row(&rows, "Billing").unwrap()["process"]["place"], format!("container {} (podman)", c.name()), "{rows:?}");
    // Root's container: listed where it runs, with who can enter it; never connected to.
    let shown = row(&rows, "Vault").unwrap();
    assert_eq!(shown["process"]["place"], format!("container {} (podman)", vault.name()), "{rows:?}");
    // (Root's Podman, to a user: through sudo's podman, if sudo lets them.)
    let exec = format!("serve --exec {0}='sudo -n podman exec -i {0}' --far-copy` (if sudo lets you run podman)", vault.name());
    assert!(shown["note"].as_str().is_some_and(|n| n.contains("run jdwpmux as root") && n.contains(&exec)), "{rows:?}");
    assert_ne!(shown["state"], "ready", "{rows:?}");
    debug_through(&owner_prefix, port_of(&rows, "Billing"), "Billing").await;
    runs_on(&c).await;
    drop(served);

    // Root's daemon: another user's container is left alone by default.
    let args = ["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"];
    let root = Served::start_with(&args, &[], |c| {
        c.env("RUST_LOG", "info,jdwpmux::daemon=debug");
    });
    let left = root.wait_log("leaving another user's JVM alone").await;
    assert!(left.contains(&owner.name), "{left}");
    // Root's own container is served; the user's is not even listed (root could enter it).
    let rows = root.list_until("root's own container", |r| ready(r, "Vault")).await;
    assert!(row(&rows, "Billing").is_none(), "another user's container was taken: {rows:?}");
    drop(root);
    // Asked for, root serves it (root enters any namespace); a third user's jdb is refused
    // at the debugger port, which only root's own connections may use.
    let root = serve(&marker, &["--other-users"]);
    let rows = root.list_until("taken with --other-users", |r| ready(r, "Billing")).await;
    let port = port_of(&rows, "Billing");
    let stranger = TestUser::create("stranger").unwrap();
    let mut jdb = Jdb::attach_as(&stranger.prefix(), &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    // Refused: jdb gives up without ever initialising a session with the VM.
    let status = jdb.wait_exit(SLOW).await.expect("the stranger's jdb ends by itself");
    assert!(!status.success() || !jdb.output().contains("Initializing jdb"), "another user's jdb attached: {}", jdb.output());
    assert!(!jdb.output().contains("Initializing jdb"), "another user's jdb attached: {}", jdb.output());
    drop(jdb);
    debug_through(&[], port, "Billing").await;
    runs_on(&c).await;
    drop(root);
    drop(vault);
}

/// JVMs in bare network namespaces (`ip netns`, `unshare --net`) and in a `--pid=host`
/// container share our process list: listed as this machine's, named, and debugged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_sharing_our_process_list_are_this_machines() {
    crate::need_podman!();
    let marker = format!("jdwpmux.test=ctrns-{}", std::process::id());
    let named = NetnsJvm::start_marked(Jdk::J17, true, "nsnamed", &marker, "Named").await.unwrap();
    let anon = NetnsJvm::start_marked(Jdk::J17, false, "nsanon", &marker, "Anon").await.unwrap();
    let engine = Engine::rootful().unwrap();
    let cls = classes("Shared").await;
    let mut s = spec(&engine, "pidhost", &cls, "Shared", &marker);
    s.pid_host = true;
    let shared = Container::run(s).await.unwrap();
    for p in [named.port(), anon.port(), shared.port()] {
        refused_here(p).unwrap();
    }
    let served = serve(&marker, &[]);
    let rows = served.list_until("three JVMs", |r| ["Named", "Anon", "Shared"].iter().all(|a| ready(r, a))).await;
    let netns = named.netns().expect("an ip netns name");
    assert_eq!(row(&rows, "Named").unwrap()["process"]["place"], format!("netns {netns}"), "{rows:?}");
    assert!(row(&rows, "Anon").unwrap()["process"]["place"].as_str().is_some_and(|p| p.contains("namespace")), "{rows:?}");
    assert_eq!(row(&rows, "Shared").unwrap()["process"]["place"], format!("container {} (podman)", shared.name()), "{rows:?}");
    for app in ["Named", "Anon", "Shared"] {
        debug_through(&[], port_of(&rows, app), app).await;
    }
    named.app().wait_ticks_advance(SLOW).await.unwrap();
    anon.app().wait_ticks_advance(SLOW).await.unwrap();
    runs_on(&shared).await;
    drop(served);
}

/// An IDE-shaped JDI session (breakpoint, steps, frames, variables, `this.toString()`)
/// through jdwpmux to a container's JVM prints what the same session prints against a JVM
/// here directly: a container's JVM is debugged as any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jdi_session_through_a_container_sees_what_it_sees_directly() {
    use crate::support::jdi::LEDGER_JAVA;
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let marker = format!("jdwpmux.test=ctrjdi-{}", std::process::id());
    let cls = AppClasses::compile(&[("Ledger.java", LEDGER_JAVA)]).await.expect("javac");
    let boxed = Container::run(spec(&engine, "ledger", &cls, "Ledger", &marker)).await.unwrap();
    let served = serve(&marker, &[]);
    let rows = served.list_until("the container's Ledger", |r| ready(r, "Ledger")).await;
    same_as_here(port_of(&rows, "Ledger"), "through jdwpmux to the container").await;
    runs_on(&boxed).await;
    drop(served);
}

/// The Stepper (an IDE-shaped JDI session: breakpoint, steps, frames, locals, `this`) on the
/// Ledger at `port`, under both suspend policies, prints what it prints against a Ledger run
/// here directly; that one runs on after.
pub(crate) async fn same_as_here(port: u16, how: &str) {
    same_as_here_as(&[], port, how).await
}

/// As `same_as_here`, the session through `port` run under `prefix` (as another user).
pub(crate) async fn same_as_here_as(prefix: &[String], port: u16, how: &str) {
    use crate::support::jdi::{Stepper, LEDGER_JAVA};
    let here_port = crate::support::containers::free_port();
    let here = crate::support::JavaApp::spawn(crate::support::JvmSpec {
        agent: crate::remote::agent(false, &format!("127.0.0.1:{here_port}")),
        sources: vec![("Ledger.java".into(), LEDGER_JAVA.into())],
        class: "Ledger".into(),
        ..crate::support::JvmSpec::default()
    })
    .await
    .unwrap();
    let stepper = Stepper::compile().await.unwrap();
    stepper.open_to_all().unwrap();
    for policy in ["all", "thread"] {
        let through = stepper.run(prefix, port, policy, 6).await.unwrap();
        let direct = stepper.run(&[], here_port, policy, 6).await.unwrap();
        assert!(through.contains("hit Ledger.work"), "{through}");
        assert_eq!(unaddressed(&through), unaddressed(&direct), "{policy}: {how}, then directly here");
    }
    here.wait_ticks_advance(SLOW).await.unwrap();
}

/// A session's text without the addresses in hidden classes' names (`Ledger$$Lambda$1/0x7f..`),
/// which are each VM process's own.
fn unaddressed(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("/0x") {
            Some(at) => {
                let end = l[at + 3..].find(|c: char| !c.is_ascii_hexdigit()).map_or(l.len(), |e| at + 3 + e);
                format!("{}/0x?{}", &l[..at], &l[end..])
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
