//! A remote host shared by several users: real accounts made by the test (`useradd`),
//! their JVMs run as them (`setpriv`) on a test host (a network and pid namespace with
//! Debian's sshd), reached as root through ssh. Only the ssh login's JVMs are taken by
//! default, and the login's JVM held by another user's jdb on the host is listed as busy
//! with that socket's uid; with --other-users every user's JVM keeps a debugger port of its
//! own, also when one of them ends and starts again.

use std::path::Path;

use serde_json::Value;

use crate::cli::Served;
use crate::remote::{agent, debug_once, jvm_on, SLOW};
use crate::support::testhost::{Keys, TestHost};
use crate::support::users::TestUser;
use crate::support::{JavaApp, Jdb, JvmSpec};

/// Billing on `host` with its agent on the host's loopback port `port`, as `user` (None: as
/// root, the ssh login).
fn billing(host: &TestHost, user: Option<&TestUser>, port: u16) -> JvmSpec {
    let mut spec = jvm_on(host, Path::new("java"), "Billing", agent(false, &format!("127.0.0.1:{port}")));
    spec.prefix.extend(user.map(TestUser::prefix).unwrap_or_default());
    spec
}

/// `serve --ssh shared`, its discovery's debug lines in its log.
fn serve(keys: &Keys, extra: &[&str]) -> Served {
    let cfg = keys.ssh_config().display().to_string();
    let mut args = vec!["--no-scan", "--no-proc", "--no-adb", "--ssh-config", &cfg, "--ssh-interval", "0.5", "--ssh", "shared"];
    args.extend_from_slice(extra);
    Served::start_with(&args, &[], |c| {
        c.env("RUST_LOG", "info,jdwpmux::remote=debug");
    })
}

/// The ready Billing of `user` (its process's owner name) on the host, if listed.
fn of<'a>(rows: &'a [Value], user: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["host"] == "shared" && r["app"] == "Billing" && r["process"]["user"] == user && r["state"] == "ready")
}

fn port(rows: &[Value], user: &str) -> u64 {
    of(rows, user).and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port")
}

/// Stops a JVM started with a host's prefix: `nsenter` forks to enter the host's pid
/// namespace, so the JVM is its child, and goes first.
async fn stop_in_host(app: &mut JavaApp) {
    let nsenter = app.pid().expect("running");
    let children = std::fs::read_to_string(format!("/proc/{nsenter}/task/{nsenter}/children")).unwrap_or_default();
    for pid in children.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
        crate::support::process::signal(pid, libc::SIGKILL).expect("the JVM is killed");
    }
    app.kill().await.expect("nsenter stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_of_a_host_each_keep_their_own_port() {
    crate::need_test_hosts!();
    let ann = TestUser::create("ann").expect("a test user");
    let bob = TestUser::create("bob").expect("a test user");
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "shared").unwrap();
    let root_app = JavaApp::spawn(billing(&host, None, 8000)).await.expect("java starts");
    let mut ann_app = JavaApp::spawn(billing(&host, Some(&ann), 8001)).await.expect("java starts as ann");
    let bob_app = JavaApp::spawn(billing(&host, Some(&bob), 8002)).await.expect("java starts as bob");

    // Ann's jdb, on the host, holds the login's Billing when the daemon starts.
    let mut on_host_as_ann = host.prefix();
    on_host_as_ann.extend(ann.prefix());
    let mut jdb = Jdb::attach_as(&on_host_as_ann, "127.0.0.1:8000").await.expect("jdb starts");
    jdb.expect("Initializing jdb", SLOW).await.expect("ann's jdb attaches");
    jdb.expect("> ", SLOW).await.expect("a prompt");

    // By default the login's Billing alone; the others are said once at debug level.
    let served = serve(&keys, &[]);
    for user in [&ann.name, &bob.name] {
        let line = served.wait_log(&format!("user=\"{user}\"")).await;
        assert!(line.contains("leaving a JVM of another user than the ssh login alone"), "{line}");
    }
    // Held by ann's jdb: busy, with the holder's uid, until it leaves.
    let busy = |r: &[Value]| r.iter().any(|v| v["state"] == "busy" && v["note"].as_str().is_some_and(|n| n.contains(&format!("(uid {})", ann.uid))));
    served.list_until("root's Billing busy", busy).await;
    jdb.quit().await.expect("jdb quits");
    let rows = served.list_until("root's Billing", |r| of(r, "root").is_some_and(|v| v["note"].is_null())).await;
    let log = served.log_text();
    assert!(!log.contains("the VM running"), "a busy VM is no fault: {log}");
    assert_eq!(rows.len(), 1, "only the ssh login's JVM: {rows:?}");
    assert!(rows[0]["user"].is_null(), "the login's own JVM names no user: {rows:?}");
    drop(served);

    // With --other-users: three, each its user's, each on a port of its own.
    let served = serve(&keys, &["--other-users"]);
    let all = |r: &[Value]| ["root", &ann.name, &bob.name].iter().all(|u| of(r, u).is_some());
    let rows = served.list_until("three users' Billing", all).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(of(&rows, &ann.name).map(|r| &r["user"]), Some(&Value::from(ann.name.clone())), "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("Billing (user {})", bob.name)), "{text}");
    let ports: Vec<u64> = ["root", &ann.name, &bob.name].iter().map(|u| port(&rows, u)).collect();

    // Ann's ends: nobody takes its port; the others keep theirs.
    stop_in_host(&mut ann_app).await;
    let rows = served.list_until("ann's Billing gone", |r| !r.iter().any(|v| v["process"]["user"] == ann.name.as_str())).await;
    assert_eq!((port(&rows, "root"), port(&rows, &bob.name)), (ports[0], ports[2]), "{rows:?}");
    // Ann's starts again, on another port of the host: it gets ann's debugger port back.
    let ann_app = JavaApp::spawn(billing(&host, Some(&ann), 8003)).await.expect("java starts as ann");
    let rows = served.list_until("ann's Billing back", all).await;
    assert_eq!(
        [port(&rows, "root"), port(&rows, &ann.name), port(&rows, &bob.name)],
        [ports[0], ports[1], ports[2]],
        "each user's JVM keeps its own port: {rows:?}"
    );
    assert_eq!(of(&rows, &ann.name).map(|r| &r["addr"]), Some(&Value::from("127.0.0.1:8003")), "{rows:?}");
    debug_once(ports[1] as u16, "Billing", &ann_app).await;
    debug_once(ports[2] as u16, "Billing", &bob_app).await;

    // The login's Billing ends and, while it is gone, bob starts another Billing: that one
    // gets a port of its own, never the login's; the login's, started again, gets it back.
    let mut root_app = root_app;
    stop_in_host(&mut root_app).await;
    served.list_until("root's Billing gone", |r| of(r, "root").is_none()).await;
    let bob_again = JavaApp::spawn(billing(&host, Some(&bob), 8004)).await.expect("java starts as bob");
    let at = |r: &[Value], addr: &str| r.iter().find(|v| v["addr"] == addr && v["state"] == "ready").and_then(|v| v["debugger_port"].as_u64());
    let rows = served.list_until("bob's second Billing", |r| at(r, "127.0.0.1:8004").is_some()).await;
    let second = at(&rows, "127.0.0.1:8004").unwrap_or_default();
    assert!(!ports.contains(&second), "bob's new JVM took port {second} of {ports:?}: {rows:?}");
    let root_app = JavaApp::spawn(billing(&host, None, 8000)).await.expect("java starts");
    let rows = served.list_until("root's Billing back", |r| of(r, "root").is_some()).await;
    assert_eq!(port(&rows, "root"), ports[0], "{rows:?}");
    debug_once(ports[0] as u16, "Billing", &root_app).await;
    debug_once(second as u16, "Billing", &bob_again).await;
    drop(served);
}
