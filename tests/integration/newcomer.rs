//! What a newcomer meets: the config file and its precedence, one-line errors with the right
//! exit codes, --allow, and a clean shutdown on SIGTERM.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cli::{port_of, Served};
use crate::harness::wait_until;
use crate::support::consts::*;
use crate::support::{FakeVm, FakeVmConfig, PortHold, RawClient};

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");

/// Runs `serve` with `args`/`env` until the current-VM port is logged; returns that port.
fn current_port_of(args: &[&str], env: &[(&str, &str)]) -> u16 {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--no-scan", "--no-proc", "--no-adb", "--control"]).arg(dir.path().join("c.sock")).args(args);
    cmd.env_remove("JDWPMUX_CURRENT_PORT").env_remove("JDWPMUX_CONFIG").env("XDG_CONFIG_HOME", dir.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let log = dir.path().join("log");
    let mut child = cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let port = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.contains("for the current VM")) {
            break port_of(l);
        }
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "{text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    port
}

#[test]
fn command_line_beats_environment_beats_file_beats_defaults() {
    let dir = tempfile::tempdir().unwrap();
    // Held for the whole test: the daemons listen on them in turn, no other socket takes them.
    let holds = [PortHold::new(), PortHold::new(), PortHold::new()];
    let [f, e, c] = holds.each_ref().map(PortHold::port);
    let file = dir.path().join("jdwpmux.toml");
    std::fs::write(&file, format!("current-port = {f}\nbase-port = 0\n")).unwrap();
    let file_s = file.to_str().unwrap();
    assert_eq!(current_port_of(&["--config", file_s], &[]), f, "file over defaults");
    assert_eq!(current_port_of(&["--config", file_s], &[("JDWPMUX_CURRENT_PORT", &e.to_string())]), e, "env over file");
    let c_s = c.to_string();
    assert_eq!(
        current_port_of(&["--config", file_s, "--current-port", &c_s], &[("JDWPMUX_CURRENT_PORT", &e.to_string())]),
        c,
        "command line over env"
    );
    // The per-user file is found by itself.
    let user = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(user.path().join("jdwpmux")).unwrap();
    std::fs::write(user.path().join("jdwpmux/config.toml"), format!("current-port = {f}\nbase-port = 0\n")).unwrap();
    let out = {
        let d = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args(["serve", "--no-scan", "--no-proc", "--no-adb", "--control"])
            .arg(d.path().join("c.sock"))
            .env("XDG_CONFIG_HOME", user.path())
            .env_remove("JDWPMUX_CONFIG")
            .env_remove("JDWPMUX_CURRENT_PORT")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = child.stderr.take().unwrap();
        let mut seen = String::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !seen.contains("for the current VM") && std::time::Instant::now() < deadline {
            let mut buf = [0u8; 512];
            let n = std::io::Read::read(&mut err, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        let _ = child.kill();
        let _ = child.wait();
        seen
    };
    assert!(out.contains(&format!("127.0.0.1:{f} for the current VM")), "{out}");
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).env_remove("JDWPMUX_CONFIG").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `run` for a command that may serve on instead of exiting: its exit code within 20 s
/// (None: still running then, and stopped), and its stderr.
fn run_within(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("err");
    let mut child = Command::new(BIN).args(args).env_remove("JDWPMUX_CONFIG").stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(&log).unwrap_or_default())
}

#[test]
fn config_errors_name_file_line_and_key_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "listen = \"127.0.0.1\"\n\ncurrent-prot = 9000\n").unwrap();
    let (code, err) = run(&["serve", "--config", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml") && err.contains("line 3") && err.contains("current-prot"), "{err}");

    std::fs::write(&file, "base-port = 99999\n").unwrap();
    let (code, err) = run(&["serve", "--config", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 1") && err.trim().lines().count() == 1, "{err}");

    let (code, err) = run(&["serve", "--config", dir.path().join("missing.toml").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.toml"), "{err}");

    // A mistyped --ssh-config: ssh would refuse every try, the host down forever.
    let sock = dir.path().join("c.sock");
    let typo = dir.path().join("ssh_cofnig");
    let (code, err) = run_within(&["serve", "--no-scan", "--no-adb", "--no-proc", "--ssh", "box", "--ssh-config", typo.to_str().unwrap(), "--control", sock.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--ssh-config") && err.contains(typo.to_str().unwrap()) && err.contains("no such file"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = run_within(&["serve", "--no-scan", "--no-adb", "--no-proc", "--ssh", "box", "--ssh-config", dir.path().to_str().unwrap(), "--control", sock.to_str().unwrap()]);
    assert_eq!(code, Some(2), "a folder: {err}");
}

#[test]
fn runtime_and_usage_errors_are_one_clear_line() {
    // A port already in use.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let (code, err) = run(&["serve", "--no-scan", "--no-proc", "--no-adb", "--current-port", &port, "--control", sock.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot listen") && err.contains(&port) && err.contains("--current-port"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("jdwpmux:")).count(), 1, "{err}");
    // A bad flag value.
    let (code, err) = run(&["serve", "--vm", "nonsense"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("HOST:PORT"), "{err}");
    let (code, err) = run(&["serve", "--allow", "10.0.0.0/99"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("PREFIX"), "{err}");
}

#[test]
fn serve_started_twice_the_same_way_says_another_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let port = crate::support::ports::free_port().to_string();
    let args = ["serve", "--no-scan", "--no-adb", "--no-proc", "--base-port", "0", "--current-port", &port, "--control", sock.to_str().unwrap()];
    let log = dir.path().join("first.log");
    let mut first = Command::new(BIN).args(args).env_remove("JDWPMUX_CONFIG").stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("control socket at") {
        assert!(std::time::Instant::now() < deadline && first.try_wait().unwrap().is_none(), "{}", std::fs::read_to_string(&log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The same settings again: the port is the running daemon's.
    let (code, err) = run(&args);
    // Another current port, the same control socket: that one says so already.
    let other = crate::support::ports::free_port().to_string();
    let (other_code, other_err) = run(&["serve", "--no-scan", "--no-adb", "--no-proc", "--current-port", &other, "--control", sock.to_str().unwrap()]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("another jdwpmux serve runs") && err.contains(&port) && err.contains("c.sock"), "{err}");
    assert!(!err.contains("pick another"), "no blame on the port: {err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("jdwpmux:")).count(), 1, "{err}");
    assert_eq!(other_code, 1, "{other_err}");
    assert!(other_err.contains("another jdwpmux daemon already answers"), "{other_err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_refuses_peers_outside_the_block() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--allow", "127.0.0.1/32"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    // From 127.0.0.2: refused before any handshake.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut s = sock.connect(([127, 0, 0, 1], current).into()).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = s.write_all(crate::support::wire::HANDSHAKE).await;
    let mut buf = [0u8; 14];
    let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await.unwrap().unwrap_or(0);
    assert_eq!(n, 0, "a refused peer got an answer");
    served.wait_log("refused a debugger").await;
    // From 127.0.0.1: welcome.
    let mut ok = RawClient::connect(("127.0.0.1", current)).await.unwrap();
    assert_eq!(ok.request(1, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap().error_code(), Some(ERR_NONE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_detaches_cleanly_flushes_the_capture_and_exits_0() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("session.jsonl");
    let mut served = Served::start(&["--vm", &vm.addr().to_string(), "--capture", cap.to_str().unwrap()]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let mut dbg = RawClient::connect(("127.0.0.1", current)).await.unwrap();
    dbg.request(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0], Duration::from_secs(20)).await.unwrap();
    dbg.request(2, SET_VM, VM_SUSPEND, &[], Duration::from_secs(20)).await.unwrap();
    let started = std::time::Instant::now();
    let status = served.terminate(Duration::from_secs(10));
    assert_eq!(status, Some(0), "exit code after SIGTERM\n{}", served.log_text());
    assert!(started.elapsed() < Duration::from_secs(10));
    // The VM was told and cleaned up.
    wait_until("DBGD", || vm.dbgd_count() >= 1).await.unwrap();
    wait_until("requests cleared", || vm.event_requests().is_empty()).await.unwrap();
    wait_until("resumed", || !vm.any_suspended()).await.unwrap();
    dbg.expect_closed(Duration::from_secs(20)).await.unwrap();
    // The capture is complete: every line parses, and it ends with the connections closing.
    let text = std::fs::read_to_string(&cap).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["kind"] == "close"), "{text}");
    assert!(lines.iter().any(|l| l["command"] == "VirtualMachine.Suspend"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_port_in_use_is_reported_and_retried() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut child = Command::new(BIN)
        .args(["serve", "--vm", &vm.addr().to_string(), "--base-port", &port, "--current-port", "0", "--control"])
        .arg(dir.path().join("c.sock"))
        .env_remove("JDWPMUX_CONFIG")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the bind failure", || text().contains("cannot bind the VM's debugger port")).await.unwrap();
    assert!(child.try_wait().unwrap().is_none(), "the daemon keeps running");
    drop(taken);
    let want = format!("listening on 127.0.0.1:{port} for vm");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !text().contains(&want) {
        assert!(tokio::time::Instant::now() < deadline, "{}", text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = RawClient::connect(("127.0.0.1", port.parse::<u16>().unwrap())).await.unwrap();
    assert_eq!(c.request(1, SET_VM, VM_VERSION, &[], Duration::from_secs(20)).await.unwrap().error_code(), Some(ERR_NONE));
    let _ = child.kill();
    let _ = child.wait();
}
