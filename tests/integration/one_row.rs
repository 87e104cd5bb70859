//! One JVM, one row, whatever finds it: a user's own rootless container's JVM, found by its
//! process (the user's daemon enters the container's namespaces) and through `--exec
//! NAME='podman exec -i C'` (jdwpmux inside the container), is listed once; jdwpmux never
//! calls its own connection "another debugger", and the container's root (the user, seen
//! from inside) is not shown as another user. Real rootless Podman, a real JVM, jdb.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{Served, BIN};
use crate::remote::SLOW;
use crate::support::containers::{refused_here, Container, ContainerSpec, Engine};
use crate::support::users::TestUser;
use crate::support::Jdb;

fn rows_of<'a>(rows: &'a [Value], app: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["app"] == app).collect()
}

fn listed(served: &Served, hosts: bool) -> Vec<Value> {
    let args: &[&str] = if hosts { &["list", "--hosts", "--json"] } else { &["list", "--json"] };
    let (code, out, _) = served.run(args);
    if code != 0 {
        return Vec::new();
    }
    serde_json::from_str(&out).unwrap_or_default()
}

async fn until(served: &Served, hosts: bool, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + SLOW;
    loop {
        let rows = listed(served, hosts);
        if cond(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "{what}: {rows:?}\nhosts {:?}\n{}", listed(served, true), served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The owner's `serve ARGS`: its own copy of jdwpmux (also mounted in the container at /opt),
/// its control socket in its home, podman's test configuration in its environment.
fn serve_as_owner(owner: &TestUser, engine: &Engine, args: &[&str]) -> Served {
    let home = owner.home.clone().expect("a home");
    let dir = home.join("jdwpmux");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(owner.uid), Some(owner.gid)).unwrap();
    let mut wrapper = owner.prefix();
    wrapper.extend([
        "env".to_string(),
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into(),
        format!("HOME={}", home.display()),
        format!("XDG_RUNTIME_DIR={}", home.join("run").display()),
        "RUST_LOG=info".into(),
    ]);
    wrapper.extend(engine.env().iter().map(|(k, v)| format!("{k}={}", v.display())));
    Served::start_bin_as(&wrapper, &home.join("jm").join("jdwpmux"), &dir.join("control.sock"), args)
}

/// jdb as the owner through `port`: stops in Ledger.tick, steps, clears, quits.
async fn debug_as(owner: &TestUser, port: u64) {
    let mut j = Jdb::attach_as(&owner.prefix(), &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    j.expect("> ", SLOW).await.expect("jdb attaches");
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_found_by_its_process_and_through_an_exec_is_one_row() {
    crate::need_podman!();
    let engine = Engine::rootless("onerow").unwrap();
    let owner = engine.user().expect("a rootless engine has a user");
    let home = owner.home.clone().expect("a home");
    let own = |p: &Path| std::os::unix::fs::chown(p, Some(owner.uid), Some(owner.gid)).unwrap();
    let bin = home.join("jm");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(BIN, bin.join("jdwpmux")).unwrap();
    own(&bin);
    own(&bin.join("jdwpmux"));
    let marker = format!("jdwpmux.test=onerow-{}", std::process::id());
    let cls = crate::containers::classes("Ledger").await;
    let mut s = ContainerSpec::new(&engine, "onerow", &cls);
    s.class = "Ledger".into();
    s.jvm = vec![format!("-D{marker}")];
    s.podman_args = vec!["-v".into(), format!("{}:/opt:ro", bin.display())];
    let c = Container::run(s).await.unwrap();
    refused_here(c.port()).unwrap();
    let exec = format!("ledger=podman exec -i {}", c.name());

    // Both ways at once: by its process, and through the exec.
    let both = ["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5", "--exec", &exec, "--far-path", "/opt/jdwpmux"];
    let served = serve_as_owner(owner, &engine, &both);
    until(&served, false, "Ledger ready", |r| rows_of(r, "Ledger").iter().any(|v| v["state"] == "ready")).await;
    // The far side in the container lists it too (the host's JVM count), and keeps doing so.
    until(&served, true, "the exec's far side lists the JVM", |h| h.iter().any(|r| r["host"] == "ledger" && r["state"] == "up" && r["jvms"] == 1)).await;
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut looked = 0;
    while Instant::now() < deadline {
        let rows = listed(&served, false);
        let ledgers = rows_of(&rows, "Ledger");
        assert_eq!(ledgers.len(), 1, "one JVM, one row: {rows:?}\n{}", served.log_text());
        let row = ledgers[0];
        assert!(!row["note"].as_str().unwrap_or("").contains("another debugger"), "jdwpmux's own connection called another debugger: {row}");
        assert!(row["user"].is_null(), "the container's root is the user: {row}");
        looked += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(looked >= 5, "looked {looked} times");
    let rows = until(&served, false, "the row ready", |r| rows_of(r, "Ledger").first().is_some_and(|v| v["state"] == "ready")).await;
    let port = rows_of(&rows, "Ledger")[0]["debugger_port"].as_u64().expect("a debugger port");
    debug_as(owner, port).await;
    drop(served);

    // Through the exec alone: the row is not another user's either.
    let only_exec = ["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--far-path", "/opt/jdwpmux"];
    let served = serve_as_owner(owner, &engine, &only_exec);
    let rows = until(&served, false, "Ledger through the exec", |r| r.iter().any(|v| v["host"] == "ledger" && v["app"] == "Ledger" && v["state"] == "ready")).await;
    let row = rows_of(&rows, "Ledger")[0];
    assert!(row["user"].is_null(), "the container's root is the user: {row}");
    let (_, text, _) = served.run(&["list"]);
    assert!(!text.contains("(user root)"), "{text}");
    drop(served);
    drop(c);
}
