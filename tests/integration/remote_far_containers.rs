//! The far side does on its host what `serve` does here: a JVM in a network namespace of
//! the test host's own, and one in a real Podman container run on the test host (agents on
//! their own loopback, nothing published), found by the far side's scan, named, reached
//! inside their namespaces, and debugged with jdb through `serve --ssh HOST --far always`; a
//! plain ssh forward cannot reach them and says so, with what to do.

use std::path::Path;

use crate::remote::{agent, debug_once, program, row, serve, SLOW};
use crate::remote_far::far_bin;
use crate::support::containers::{refused_here, Engine};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

/// `class` on `host`, in a network namespace of its own inside the host (loopback up), its
/// agent on that namespace's 127.0.0.1:8000.
fn boxed_on(host: &TestHost, class: &str) -> JvmSpec {
    let mut prefix = host.prefix();
    prefix.extend(crate::support::containers::unshare_net());
    JvmSpec { java: Path::new("java").to_path_buf(), prefix, agent: agent(false, "127.0.0.1:8000"), sources: program(class), class: class.into(), ..JvmSpec::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_reaches_a_jvm_in_a_namespace_of_its_host() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "boxhost").unwrap();
    let app = JavaApp::spawn(boxed_on(&host, "Boxed")).await.unwrap();
    app.wait_for_output("Listening for transport", SLOW).await.unwrap();

    // Plain ssh forwards reach only the host's own namespace: listed, with the remedy.
    let served = serve(&keys, &["boxhost"], &["--far", "never"]);
    let rows = served.list_until("listed, not reachable by a forward", |r| row(r, "boxhost", "Boxed").is_some_and(|v| v["note"].is_string())).await;
    let note = row(&rows, "boxhost", "Boxed").unwrap()["note"].as_str().unwrap_or_default().to_string();
    assert!(note.contains("--far always") && note.contains("127.0.0.1:8000"), "{note}");
    assert_eq!(row(&rows, "boxhost", "Boxed").unwrap()["process"]["place"], "network namespace", "{rows:?}");
    drop(served);

    // jdwpmux on the host enters the namespace and serves it like any other.
    let far = far_bin();
    let served = serve(&keys, &["boxhost"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on boxhost").await;
    let rows = served.list_until("reached through the far side", |r| row(r, "boxhost", "Boxed").is_some_and(|v| v["state"] == "ready" && v["debugger_port"].is_u64())).await;
    // Where it runs, as the far side said it (protocol 4 and later).
    assert_eq!(row(&rows, "boxhost", "Boxed").unwrap()["process"]["place"], "network namespace", "{rows:?}");
    let line = served.wait_log("connected to the far side").await;
    assert!(line.contains(&format!("protocol={}", jdwpmux::remote::protocol::hello::PROTOCOL)), "{line}");
    assert!(line.contains("resumed=false") && line.contains("replayed=0"), "a new session replays nothing: {line}");
    let port = row(&rows, "boxhost", "Boxed").and_then(|v| v["debugger_port"].as_u64()).unwrap() as u16;
    debug_once(port, "Boxed", &app).await;
    drop(served);
}

/// A real Podman container on the test host (podman run there, `--network=none`): the far
/// side names it as `serve` names a local one, and serves it; jdb breaks, steps and leaves,
/// and the app runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_reaches_a_podman_container_on_its_host() {
    crate::need_test_hosts!();
    crate::need_podman!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "podhost").unwrap();
    host.allow_containers().unwrap();
    let engine = Engine::rootful_on(host.prefix(), host.init_pid().expect("the host's pid namespace")).unwrap();
    let marker = format!("jdwpmux.test=podhost-{}", std::process::id());
    let classes = crate::containers::classes("Shop").await;
    let shop = crate::support::containers::Container::run(crate::containers::spec(&engine, "shop", &classes, "Shop", &marker)).await.unwrap();
    refused_here(shop.port()).unwrap();
    let place = format!("container {} (podman)", shop.name());

    let served = serve(&keys, &["podhost"], &["--far", "never"]);
    let rows = served.list_until("listed, not reachable by a forward", |r| row(r, "podhost", "Shop").is_some_and(|v| v["note"].is_string())).await;
    let shown = row(&rows, "podhost", "Shop").unwrap();
    assert!(shown["note"].as_str().is_some_and(|n| n.contains("--far always")), "{rows:?}");
    assert_eq!(shown["process"]["place"], place.as_str(), "{rows:?}");
    drop(served);

    let far = far_bin();
    let served = serve(&keys, &["podhost"], &["--far", "always", "--far-path", &far.path]);
    let rows = served.list_until("the container reached through the far side", |r| row(r, "podhost", "Shop").is_some_and(|v| v["state"] == "ready" && v["debugger_port"].is_u64())).await;
    let shown = row(&rows, "podhost", "Shop").unwrap();
    assert_eq!(shown["process"]["place"], place.as_str(), "{rows:?}");
    let port = shown["debugger_port"].as_u64().unwrap() as u16;
    crate::containers::debug_through(&[], port, "Shop").await;
    crate::containers::runs_on(&shop).await;
    drop(served);
    drop(shop);
    drop(engine);
    drop(host);
}

/// The far side logged in as a user who cannot enter a root container's namespace: the
/// container's JVM is listed, named, with what to do (log in as root), and never served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_as_a_user_who_cannot_enter_a_hosts_container_says_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    crate::need_test_hosts!();
    crate::need_podman!();
    // Declared first, dropped last: every process of the host is gone before the account.
    let user = crate::support::users::TestUser::with_home("podlogin").expect("a test user with a home");
    let _far_dir = crate::remote_far_copy::FarDir(std::path::PathBuf::from(format!("/tmp/jdwpmux-far-{}", user.uid)));
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "podroot").unwrap();
    crate::remote_far_copy::login_as(&keys, "podlogin", &host, &user);
    host.allow_containers().unwrap();
    let engine = Engine::rootful_on(host.prefix(), host.init_pid().expect("the host's pid namespace")).unwrap();
    let classes = crate::containers::classes("Vault").await;
    let marker = format!("jdwpmux.test=podlogin-{}", std::process::id());
    let vault = crate::support::containers::Container::run(crate::containers::spec(&engine, "vault", &classes, "Vault", &marker)).await.unwrap();
    // The binary where the user may run it: the build's folder may be closed to others.
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("jdwpmux");
    std::fs::copy(crate::cli::BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();

    let served = serve(&keys, &["podlogin"], &["--far", "always", "--far-path", &bin.display().to_string()]);
    served.wait_log("using jdwpmux on podlogin").await;
    let rows = served.list_until("the root container listed with a note", |r| row(r, "podlogin", "Vault").is_some_and(|v| v["note"].is_string())).await;
    let shown = row(&rows, "podlogin", "Vault").unwrap();
    let note = shown["note"].as_str().unwrap_or_default();
    assert!(note.contains("a container of root's") && note.contains("log in to it as root"), "{rows:?}");
    assert_eq!(shown["process"]["place"], format!("container {} (podman)", vault.name()), "{rows:?}");
    assert!(!shown["debugger_port"].is_u64() || shown["state"] != "ready", "a JVM it cannot enter is never served: {rows:?}");
    let log = served.log_text();
    let said = log.lines().filter(|l| l.contains("log in to it as root")).count();
    assert!(said <= 1, "said once at most: {log}");
    drop(served);
    drop(vault);
    drop(engine);
    drop(host);
}
