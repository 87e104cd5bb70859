//! Debugger ports for their owner only, through the real binary, run as the test's user
//! (root in CI), with users made by the test (useradd) and debuggers run as them (setpriv).
//!
//! Expected outcomes:
//! - jdb as another user is refused on a VM's own port and on the current-VM port, closed
//!   before the handshake, each with a WARN line naming its uid and name (the 1st, 2nd,
//!   4th... refusal of a user is logged, with the count); the VM never
//!   hears of it, and nothing is logged as a debugger attached;
//! - the daemon's own user gets in on both ports (handshake, then a JDWP reply);
//! - `--allow-user NAME` lets that user's jdb attach and work (one INFO line names it),
//!   while a third user is still refused; `--allow-user any` lets every local user in.
//!
//! Only root can make users and act as them: elsewhere these tests fail saying so, unless
//! skipping is allowed (`JDWPMUX_TEST_ALLOW_SKIP=1`).

use std::time::Duration;

use crate::cli::{port_of, Served};
use crate::support::users::{is_root, TestUser};
use crate::support::{java_available, jdb_available, FakeVm, FakeVmConfig, JavaApp, Jdb, RawClient};

/// jdb and a JVM on a busy 2-core machine can be slow to start.
const SLOW: Duration = Duration::from_secs(60);

/// Ends the test through `not_run!` (a failure unless skipping is allowed) when no users can
/// be made here; java and jdb are required.
macro_rules! need_other_users {
    () => {
        if !is_root() {
            crate::not_run!("not root, so no users can be made (useradd)");
        }
        assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK; ./test.sh does)");
    };
}

/// Waits until `needle` appears on `n` lines of the daemon's log; returns those lines.
async fn wait_lines(served: &Served, needle: &str, n: usize) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + SLOW;
    loop {
        let lines: Vec<String> = served.log_text().lines().filter(|l| l.contains(needle)).map(str::to_string).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(tokio::time::Instant::now() < deadline, "not {n} lines with {needle:?} in the log:\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The daemon serving `vm`: (the VM's own debugger port, the current-VM port).
async fn serve(vm: &str, extra: &[&str]) -> (Served, u16, u16) {
    let mut args = vec!["--vm", vm, "--no-adb"];
    args.extend_from_slice(extra);
    let served = Served::start(&args);
    let current = port_of(&served.wait_log("for the current VM").await);
    let rows = served.list_until("the VM ready", |r| r.first().is_some_and(|v| v["state"] == "ready")).await;
    let port = rows[0]["debugger_port"].as_u64().expect("a debugger port") as u16;
    (served, port, current)
}

/// jdb as `user` on `port`: it must fail to attach, having got no handshake.
async fn jdb_refused(user: &TestUser, port: u16) {
    let mut jdb = Jdb::attach_as(&user.prefix(), &format!("127.0.0.1:{port}")).await.unwrap();
    // jdb exits 0 even when it cannot attach: its output tells. The connection was made
    // and ended in the handshake (an end of file or a reset, as the daemon's close meets
    // the handshake jdb sent).
    let status = jdb.wait_exit(SLOW).await.unwrap();
    let out = jdb.output();
    assert!(out.contains("Unable to attach") && out.contains("SocketTransportService.handshake"), "jdb as {} on {port} ({status}):\n{out}", user.name);
    assert!(!out.contains("Initializing jdb"), "{out}");
}

/// A JDWP handshake from `user` on `port` (Python's socket module): what came back.
fn handshake_as(user: &TestUser, port: u16) -> String {
    handshakes_as(user, port, 1)
}

/// `n` handshakes from `user` on `port`, one connection each: what the last one got.
fn handshakes_as(user: &TestUser, port: u16, n: usize) -> String {
    // A refusal may come as an end of file or a reset, while sending or reading.
    const CLIENT: &str = "import socket, sys
for _ in range(int(sys.argv[2])):
    got = b''
    try:
        s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=30)
        s.sendall(b'JDWP-Handshake')
        while len(got) < 14:
            b = s.recv(14 - len(got))
            if not b:
                break
            got += b
        s.close()
    except OSError:
        pass
print(got.decode('ascii', 'replace') or 'closed')
";
    let out = user.command("/usr/bin/python3").args(["-c", CLIENT, &port.to_string(), &n.to_string()]).output().expect("run python3");
    assert!(out.status.success(), "python3 as {}: {}", user.name, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The daemon's own user: a handshake, then VirtualMachine.Version answered.
async fn owner_gets_in(port: u16) {
    let mut c = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    let reply = c.request(1, 1, 1, &[], SLOW).await.unwrap();
    assert_eq!(reply.error_code(), Some(0), "{reply:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_another_users_jdb_is_refused_on_the_vm_port_and_the_current_port() {
    need_other_users!();
    let other = TestUser::create("r").expect("a test user");
    let mut app = JavaApp::start(false).await.unwrap();
    let (served, vm_port, current) = serve(&app.host_port(), &[]).await;

    for (i, port) in [vm_port, current].into_iter().enumerate() {
        jdb_refused(&other, port).await;
        let lines = wait_lines(&served, "refused a debugger", i + 1).await;
        let line = &lines[i];
        let named = format!("its socket belongs to uid {} ({})", other.uid, other.name);
        assert!(line.contains("WARN") && line.contains(&named), "{line}");
        assert!(line.contains(&format!("uid={}", other.uid)) && line.contains(&format!("refusals={}", i + 1)), "{line}");
        eprintln!("port {port}: {line}");
    }
    let log = served.log_text();
    assert_eq!(log.matches("refused a debugger").count(), 2, "one line per refusal:\n{log}");
    assert!(!log.contains("debugger attached") && !log.contains("debugger connection"), "refused before the handshake:\n{log}");

    // Refused in a loop, the user cannot fill the log: 30 more refusals, 4 more lines.
    assert_eq!(handshakes_as(&other, vm_port, 30), "closed");
    served.wait_log("refusals=32").await;
    let lines = wait_lines(&served, "refused a debugger", 6).await;
    assert_eq!(lines.len(), 6, "the 1st, 2nd, 4th, 8th, 16th and 32nd:\n{}", lines.join("\n"));

    // The daemon's own user is let in, on both ports, and the VM serves it.
    owner_gets_in(vm_port).await;
    owner_gets_in(current).await;
    wait_lines(&served, "debugger attached", 2).await;
    drop(served);
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_allow_user_lets_the_named_user_attach_and_nobody_else() {
    need_other_users!();
    let (alice, mallory) = (TestUser::create("a").expect("a test user"), TestUser::create("m").expect("a test user"));
    let mut app = JavaApp::start(false).await.unwrap();
    let (served, vm_port, _) = serve(&app.host_port(), &["--allow-user", &alice.name]).await;

    let mut jdb = Jdb::attach_as(&alice.prefix(), &format!("127.0.0.1:{vm_port}")).await.unwrap();
    jdb.expect("Initializing jdb", SLOW).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    jdb.send("threads").await.unwrap();
    jdb.expect("main", SLOW).await.unwrap();
    let line = served.wait_log("let in by --allow-user").await;
    assert!(line.contains(&format!("uid={}", alice.uid)) && line.contains(&alice.name), "{line}");
    jdb.quit().await.unwrap();

    // A user not named is still refused, by uid as well as by name.
    assert_eq!(handshake_as(&mallory, vm_port), "closed");
    let line = served.wait_log(&format!("uid {} ({})", mallory.uid, mallory.name)).await;
    assert!(line.contains("refused a debugger"), "{line}");
    drop(served);

    let uid = mallory.uid.to_string();
    let (served, vm_port, _) = serve(&app.host_port(), &["--allow-user", &uid]).await;
    assert_eq!(handshake_as(&mallory, vm_port), "JDWP-Handshake");
    served.wait_log("let in by --allow-user").await;
    drop(served);
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_allow_user_any_lets_every_local_user_in() {
    need_other_users!();
    let other = TestUser::create("y").expect("a test user");
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let (served, vm_port, current) = serve(&vm.addr().to_string(), &["--allow-user", "any"]).await;
    for port in [vm_port, current] {
        assert_eq!(handshake_as(&other, port), "JDWP-Handshake", "port {port}");
    }
    wait_lines(&served, "debugger attached", 2).await;
    assert!(!served.log_text().contains("refused"), "{}", served.log_text());
    drop(served);
    // The same user without the option: refused.
    let (served, vm_port, _) = serve(&vm.addr().to_string(), &[]).await;
    assert_eq!(handshake_as(&other, vm_port), "closed");
    served.wait_log("refused a debugger").await;
}

#[test]
fn owner_an_unknown_allow_user_is_a_usage_error() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(crate::cli::BIN)
        .env_remove("JDWPMUX_CONFIG")
        .args(["serve", "--no-scan", "--no-proc", "--no-adb", "--base-port", "0", "--current-port", "0", "--control"])
        .arg(dir.path().join("control.sock"))
        .args(["--allow-user", "jmx-nobody-has-this-name"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + SLOW;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve with an unknown --allow-user kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-user jmx-nobody-has-this-name: no such user"), "{err}");
}
