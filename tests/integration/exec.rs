//! Containers reached through their runtime's exec (`serve --exec NAME=COMMAND`), where no
//! login on their host is given: real rootful Podman containers (`--network=none`, nothing
//! published) with real JVMs on their own loopback, the exec command `podman exec -i C`, or a
//! stand-in for `kubectl exec -i` (no API server can run here) that maps it onto `podman
//! exec -i`. jdwpmux runs inside the container: bind-mounted (`--far-path`) or copied in
//! through the exec (`--far-copy`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{Served, BIN};
use crate::remote::SLOW;
use crate::support::containers::{refused_here, AppClasses, Container, ContainerSpec, Engine};
use crate::support::Jdb;

/// Where the bind-mounted jdwpmux is inside the containers.
const MOUNTED: &str = "/opt/jm/jdwpmux";

pub(crate) async fn classes(class: &str) -> Arc<AppClasses> {
    let src = crate::support::java::MAIN_JAVA.replace("Main", class);
    AppClasses::compile(&[(&format!("{class}.java"), &src)]).await.expect("javac")
}

/// A folder holding a copy of the jdwpmux under test, to bind-mount at /opt/jm.
fn bin_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(BIN, d.path().join("jdwpmux")).unwrap();
    d
}

/// A container running `class`, with jdwpmux mounted at `MOUNTED` when `bin` is given.
async fn container(engine: &Arc<Engine>, tag: &str, cls: &Arc<AppClasses>, class: &str, bin: Option<&Path>) -> Container {
    let mut s = ContainerSpec::new(engine, tag, cls);
    s.class = class.into();
    if let Some(b) = bin {
        s.podman_args = vec!["-v".into(), format!("{}:/opt/jm:ro", b.display())];
    }
    let c = Container::run(s).await.unwrap();
    refused_here(c.port()).unwrap();
    c
}

/// `serve` with only the `--exec` hosts (and `extra`), podman's private configuration in its
/// environment for the exec commands it runs.
pub(crate) fn serve(engine: &Engine, extra: &[&str]) -> Served {
    let mut args = vec!["--no-proc", "--no-scan", "--no-adb"];
    args.extend_from_slice(extra);
    let env: Vec<(&str, String)> = engine.env().into_iter().map(|(k, v)| (k, v.display().to_string())).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Served::start_env(&args, &env)
}

pub(crate) fn row<'a>(rows: &'a [Value], host: &str, app: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["host"] == host && r["app"] == app)
}

pub(crate) fn ready(rows: &[Value], host: &str, app: &str) -> bool {
    row(rows, host, app).is_some_and(|r| r["state"] == "ready" && r["debugger_port"].is_u64() && r["note"].is_null())
}

pub(crate) fn port_of(rows: &[Value], host: &str, app: &str) -> u16 {
    row(rows, host, app).and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port") as u16
}

/// The rows of `list --json`, or of `list --hosts --json` (none while serve starts).
pub(crate) fn listed(served: &Served, hosts: bool) -> Vec<Value> {
    let args: &[&str] = if hosts { &["list", "--hosts", "--json"] } else { &["list", "--json"] };
    let (code, out, _) = served.run(args);
    if code != 0 {
        return Vec::new();
    }
    serde_json::from_str(&out).unwrap()
}

/// Waits until `list --json` satisfies `cond`; the log is shown when it never does.
pub(crate) async fn list_until(served: &Served, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + SLOW;
    loop {
        let rows = listed(served, false);
        if cond(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "{what}: rows {rows:?}\nhosts {:?}\n{}", listed(served, true), served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn hosts_until(served: &Served, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + SLOW;
    loop {
        let h = listed(served, true);
        if cond(&h) {
            return h;
        }
        assert!(Instant::now() < deadline, "{what}: hosts {h:?}\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last `tick N` the container's app printed.
async fn ticks(c: &Container) -> u64 {
    c.logs().await.lines().filter_map(|l| l.strip_prefix("tick ")).filter_map(|n| n.trim().parse().ok()).next_back().unwrap_or(0)
}

pub(crate) async fn runs_on(c: &Container) {
    let start = ticks(c).await;
    let deadline = tokio::time::Instant::now() + SLOW;
    while ticks(c).await < start + 2 {
        assert!(tokio::time::Instant::now() < deadline, "{} did not run on: {}", c.name(), c.logs().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn jdb(port: u16) -> Jdb {
    let mut j = Jdb::attach(&format!("127.0.0.1:{port}")).await.expect("jdb starts");
    j.expect("> ", SLOW).await.expect("jdb attaches");
    j
}

/// jdb stopped at `class.tick`'s breakpoint.
pub(crate) async fn stopped(port: u16, class: &str) -> Jdb {
    let mut j = jdb(port).await;
    j.send(&format!("stop in {class}.tick")).await.unwrap();
    j.expect_all(&[&format!("Set breakpoint {class}.tick"), "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    j
}

/// The exec commands `serve` runs now (its children whose command line ends in `far
/// --attach`), by pid.
pub(crate) fn execs_of(served: &Served) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = crate::support::process::parse_stat_fields(&stat).and_then(|f| f.get(1)?.parse::<u32>().ok());
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(served.pid()) && cmd.ends_with(b"far\0--attach\0") {
            pids.push(pid);
        }
    }
    pids
}

pub(crate) async fn one_exec(served: &Served) -> u32 {
    let deadline = Instant::now() + SLOW;
    loop {
        if let [pid] = execs_of(served)[..] {
            return pid;
        }
        assert!(Instant::now() < deadline, "no exec running\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A stand-in for `kubectl exec -i [-n NS] POD [-c C] -- CMD...`: no API server can run on
/// these machines, so it runs `podman exec -i POD CMD...`. While a file `blocked` lies beside
/// it, it fails as kubectl does when the API server refuses the user.
struct KubectlStandIn {
    dir: tempfile::TempDir,
}

impl KubectlStandIn {
    fn new() -> KubectlStandIn {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"#!/bin/sh
# A stand-in for kubectl exec -i, mapped onto podman exec -i (see tests/integration/exec.rs).
here=$(dirname "$0")
[ "$1" = exec ] || { echo "kubectl stand-in: only exec" >&2; exit 2; }
shift
pod=
while [ $# -gt 0 ]; do
  case "$1" in
    -i|--stdin) ;;
    -n|--namespace|-c|--container) shift ;;
    --) shift; break ;;
    *) pod=$1 ;;
  esac
  shift
done
if [ -e "$here/blocked" ]; then
  echo 'error: You must be logged in to the server (Unauthorized)' >&2
  exit 1
fi
exec podman exec -i "$pod" "$@"
"#;
        let path = dir.path().join("kubectl");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        KubectlStandIn { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("kubectl")
    }

    fn block(&self, on: bool) {
        let f = self.dir.path().join("blocked");
        if on {
            std::fs::write(f, "").unwrap();
        } else {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Through `podman exec -i C`: listed under its name with the container's place, the host row
/// up; jdb breaks, steps, detaches and the app runs on; two debuggers on one JVM; and the
/// exec killed while jdb is stopped at a breakpoint: a new exec reattaches to the far side,
/// which held the VM (the app never ran), and jdb's step completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_jdb_steps_through_podman_exec_and_a_killed_exec_reattaches() {
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let bin = bin_dir();
    let cls = classes("Billing").await;
    let c = container(&engine, "exec", &cls, "Billing", Some(bin.path())).await;
    let exec = format!("billing=podman exec -i {}", c.name());
    let served = serve(&engine, &["--exec", &exec, "--far-path", MOUNTED, "--far-hold", "120"]);
    let rows = list_until(&served, "Billing through the exec", |r| ready(r, "billing", "Billing")).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(row(&rows, "billing", "Billing").unwrap()["process"]["place"], format!("container {} (podman)", c.name()), "{rows:?}");
    let h = hosts_until(&served, "the exec host up with its JVM", |h| h.iter().any(|r| r["host"] == "billing" && r["state"] == "up" && r["jvms"] == 1)).await;
    assert_eq!(h[0]["dest"], format!("exec: podman exec -i {}", c.name()), "{h:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains("billing") && text.contains(&format!("container {} (podman)", c.name())), "{text}");
    let port = port_of(&rows, "billing", "Billing");

    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Billing").await;
    runs_on(&c).await;

    // Two debuggers on the container's JVM: one idle while the other breaks and steps.
    let mut idle = jdb(port).await;
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Billing").await;
    list_until(&served, "the idle jdb still attached", |r| row(r, "billing", "Billing").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 1))).await;
    idle.quit().await.unwrap();
    runs_on(&c).await;

    // The exec killed while jdb is stopped at a breakpoint.
    let mut j = stopped(port, "Billing").await;
    let at_stop = ticks(&c).await;
    let first = one_exec(&served).await;
    // SAFETY: kill with a pid of serve's own child, read just now.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + SLOW;
    let second = loop {
        if let Some(p) = execs_of(&served).into_iter().find(|p| *p != first) {
            break p;
        }
        assert!(Instant::now() < deadline, "no new exec after the kill\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    served.wait_log("the exec to billing is back").await;
    assert_eq!(ticks(&c).await, at_stop, "the app ran while the exec was down");
    j.send("step").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    assert!(ticks(&c).await <= at_stop + 1, "the app ran on past one step");
    j.send("clear Billing.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Billing.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    runs_on(&c).await;
    let rows = list_until(&served, "the same port after the reattach", |r| ready(r, "billing", "Billing")).await;
    assert_eq!(port_of(&rows, "billing", "Billing"), port, "{rows:?}");
    assert!(execs_of(&served).contains(&second), "the second exec carries the link");
    let log = served.log_text();
    assert!(!log.contains("let its VMs go"), "the far side held the session through the kill: {log}");
    // serve ended as a user ends it: nothing of jdwpmux stays in the container, dead or alive
    // (its first process is the JVM, which reaps no orphan: before, each far side and each
    // exec that found one running stayed there a zombie).
    let mut served = served;
    assert_eq!(served.terminate(SLOW), Some(0), "{}", served.log_text());
    let deadline = Instant::now() + SLOW;
    loop {
        let left = crate::support::process::named_in_pid_ns_of(c.jvm_pid(), "jdwpmux");
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left in {}: {left:?}", c.name());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}


/// Through a stand-in for `kubectl exec -i -n shop POD -c app --`: the JVM is listed in `pod
/// shop/POD`. The exec then fails as a refused kubectl does (Unauthorized) while jdb is
/// stopped at a breakpoint: the host row shows kubectl's words, and past the hold (8 s) jdb
/// is closed, the VM is listed released and the app runs on. Once the exec works again, the
/// VM is back on the same port and jdb debugs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_through_a_kubectl_stand_in_shows_its_refusal_and_the_hold_running_out() {
    crate::need_podman!();
    const HOLD: Duration = Duration::from_secs(8);
    let engine = Engine::rootful().unwrap();
    let bin = bin_dir();
    let cls = classes("Orders").await;
    let c = container(&engine, "kube", &cls, "Orders", Some(bin.path())).await;
    let kubectl = KubectlStandIn::new();
    let exec = format!("orders={} exec -i -n shop {} -c app --", kubectl.path().display(), c.name());
    let served = serve(&engine, &["--exec", &exec, "--far-path", MOUNTED, "--far-hold", "8"]);
    let rows = list_until(&served, "Orders through kubectl", |r| ready(r, "orders", "Orders")).await;
    assert_eq!(row(&rows, "orders", "Orders").unwrap()["process"]["place"], format!("pod shop/{}", c.name()), "{rows:?}");
    let port = port_of(&rows, "orders", "Orders");

    let mut j = stopped(port, "Orders").await;
    let at_stop = ticks(&c).await;
    kubectl.block(true);
    let first = one_exec(&served).await;
    // SAFETY: kill with a pid of serve's own child, read just now.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    let cut_at = Instant::now();
    let h = hosts_until(&served, "kubectl's refusal in the host row", |h| h.iter().any(|r| r["host"] == "orders" && r["state"] == "down" && r["reason"].as_str().is_some_and(|s| s.contains("Unauthorized")))).await;
    let reason = h[0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("error: You must be logged in to the server (Unauthorized)"), "kubectl's words, whole: {reason}");
    assert_eq!(ticks(&c).await, at_stop, "the app ran within the hold");
    // Past the hold: jdb is closed, the VM listed released, the app runs on.
    let status = j.wait_exit(HOLD + SLOW).await.expect("jdb closed past the hold");
    let closed = cut_at.elapsed();
    assert!(closed >= HOLD - Duration::from_secs(2), "jdb closed {closed:?} into a hold of {HOLD:?}");
    let _ = status;
    list_until(&served, "the VM listed released", |r| row(r, "orders", "Orders").is_some_and(|v| v["note"].as_str().is_some_and(|n| n.starts_with("released (the hold ran out)")))).await;
    runs_on(&c).await;
    assert!(served.log_text().contains("jdwpmux on orders let its VMs go"), "{}", served.log_text());

    kubectl.block(false);
    let rows = list_until(&served, "Orders back after the exec works again", |r| ready(r, "orders", "Orders")).await;
    assert_eq!(port_of(&rows, "orders", "Orders"), port, "the same port: {rows:?}");
    hosts_until(&served, "the host up again", |h| h.iter().any(|r| r["host"] == "orders" && r["state"] == "up")).await;
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Orders").await;
    runs_on(&c).await;
    drop(served);
}

/// A rootless container, debugged by its owner's own non-root `serve --exec 'podman exec -i
/// C'` (their podman, their user namespace): listed, jdb (as the owner: the debugger port
/// takes the daemon's user only) breaks, steps and detaches, and the app runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_a_rootless_container_through_its_owners_podman() {
    crate::need_podman!();
    let engine = Engine::rootless("execless").unwrap();
    let owner = engine.user().expect("a rootless engine has a user");
    let home = owner.home.clone().expect("a home");
    let own = |p: &Path| std::os::unix::fs::chown(p, Some(owner.uid), Some(owner.gid)).unwrap();
    // jdwpmux and the control socket in folders the owner may use.
    let bin = home.join("jm");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(BIN, bin.join("jdwpmux")).unwrap();
    own(&bin);
    own(&bin.join("jdwpmux"));
    let dir = home.join("jdwpmux");
    std::fs::create_dir_all(&dir).unwrap();
    own(&dir);
    let cls = classes("Ledger").await;
    // On /opt, which the image has: a rootless runc cannot make a mount point in the image's
    // folder, which root owns (this container runs JDK 17, not /opt's JDK 25).
    let mut s = ContainerSpec::new(&engine, "less", &cls);
    s.class = "Ledger".into();
    s.podman_args = vec!["-v".into(), format!("{}:/opt:ro", bin.display())];
    let c = Container::run(s).await.unwrap();
    refused_here(c.port()).unwrap();
    let exec = format!("ledger=podman exec -i {}", c.name());
    let mut wrapper = owner.prefix();
    wrapper.extend([
        "env".to_string(),
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into(),
        format!("HOME={}", home.display()),
        format!("XDG_RUNTIME_DIR={}", home.join("run").display()),
        "RUST_LOG=info".into(),
    ]);
    wrapper.extend(engine.env().iter().map(|(k, v)| format!("{k}={}", v.display())));
    // The owner's own copy: the build's folder may be closed to others.
    let served = Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--far-path", "/opt/jdwpmux"]);
    let rows = list_until(&served, "Ledger through the owner's exec", |r| ready(r, "ledger", "Ledger")).await;
    assert_eq!(row(&rows, "ledger", "Ledger").unwrap()["process"]["place"], format!("container {} (podman)", c.name()), "{rows:?}");
    let port = port_of(&rows, "ledger", "Ledger");
    let mut j = Jdb::attach_as(&owner.prefix(), &format!("127.0.0.1:{port}")).await.expect("jdb starts");
    j.expect("> ", SLOW).await.expect("jdb attaches");
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    runs_on(&c).await;
    drop(served);
}

/// An IDE-shaped JDI session (the Stepper: breakpoint, steps, frames, locals, `this`, both
/// suspend policies) through `--exec 'podman exec -i C'` prints what it prints against the
/// same program run here directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_a_jdi_session_sees_what_it_sees_directly() {
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let bin = bin_dir();
    let cls = AppClasses::compile(&[("Ledger.java", crate::support::jdi::LEDGER_JAVA)]).await.expect("javac");
    let c = container(&engine, "execjdi", &cls, "Ledger", Some(bin.path())).await;
    let exec = format!("ledger=podman exec -i {}", c.name());
    let served = serve(&engine, &["--exec", &exec, "--far-path", MOUNTED]);
    let rows = list_until(&served, "Ledger through the exec", |r| ready(r, "ledger", "Ledger")).await;
    crate::containers::same_as_here(port_of(&rows, "ledger", "Ledger"), "through --exec to the container").await;
    runs_on(&c).await;
    drop(served);
}
