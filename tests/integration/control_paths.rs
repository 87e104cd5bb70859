//! One user, two shells: one with `XDG_RUNTIME_DIR` set, one without (a `su`, a cron job,
//! an ssh session without a login manager). The daemon started in either is found by
//! `list` from the other, and a `serve` from the other says that this user's own jdwpmux
//! runs, where it answers, instead of a bare "address in use". The real binary, as a test
//! user of its own (whose default paths no other test or daemon uses).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::cli::{port_of, Served, BIN};
use crate::support::users::{is_root, TestUser};
use crate::support::PortHold;

/// A test user with its own copy of jdwpmux, run from either shell.
struct Shells {
    user: TestUser,
    bin: PathBuf,
    /// Where the daemons' logs go (root's: the parent opens the files).
    logs: tempfile::TempDir,
    /// The user's /run/user/UID, made for the test (no login manager here).
    runtime: PathBuf,
}

impl Shells {
    fn new() -> Shells {
        let user = TestUser::with_home("twoshell").unwrap();
        let home = user.home.clone().expect("a home");
        let bin = home.join("jdwpmux");
        std::fs::copy(BIN, &bin).unwrap();
        std::os::unix::fs::chown(&bin, Some(user.uid), Some(user.gid)).unwrap();
        let runtime = PathBuf::from(format!("/run/user/{}", user.uid));
        std::fs::create_dir_all(&runtime).unwrap();
        std::os::unix::fs::chown(&runtime, Some(user.uid), Some(user.gid)).unwrap();
        std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        Shells { user, bin, logs: tempfile::tempdir().unwrap(), runtime }
    }

    /// `jdwpmux ARGS` as the user, `XDG_RUNTIME_DIR` set to `xdg` or unset.
    fn command(&self, xdg: Option<&Path>, args: &[&str]) -> Command {
        let mut c = self.user.command("env");
        if let Some(x) = xdg {
            c.arg(format!("XDG_RUNTIME_DIR={}", x.display()));
        }
        c.arg("RUST_LOG=info").arg(&self.bin).args(args).stdin(Stdio::null());
        c
    }

    fn run(&self, xdg: Option<&Path>, args: &[&str]) -> Output {
        self.command(xdg, args).output().unwrap()
    }

    /// `serve` on `port` (nothing to find), its log in `name`.
    fn serve(&self, xdg: Option<&Path>, port: u16, name: &str) -> (Child, PathBuf) {
        let log = self.logs.path().join(name);
        let port = port.to_string();
        let child = self
            .command(xdg, &["serve", "--no-scan", "--no-adb", "--no-proc", "--base-port", "0", "--current-port", &port])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        (child, log)
    }
}

impl Drop for Shells {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runtime);
        let _ = std::fs::remove_dir_all(format!("/tmp/jdwpmux-{}", self.user.uid));
    }
}

/// Waits for a line with `needle` in the log at `path`.
fn wait_line(path: &Path, child: &mut Child, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.contains(needle)) {
            return l.to_string();
        }
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "no {needle:?}:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops a daemon with SIGTERM (it removes its socket) and waits for it.
fn stop(mut child: Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_daemon_is_found_from_either_shell() {
    if !is_root() {
        crate::not_run!("a test user of its own needs root (useradd)");
    }
    let shells = Shells::new();
    let uid = shells.user.uid;
    let hold = PortHold::new();
    let port = hold.port();
    drop(hold);

    // Started where XDG_RUNTIME_DIR is unset: it answers at /tmp/jdwpmux-UID.
    let (mut first, log) = shells.serve(None, port, "unset.log");
    let line = wait_line(&log, &mut first, "control socket at");
    let fallback = format!("/tmp/jdwpmux-{uid}/control.sock");
    assert!(line.ends_with(&fallback), "{line}");
    let xdg = Some(shells.runtime.as_path());
    let listed = shells.run(xdg, &["list"]);
    assert_eq!(listed.status.code(), Some(0), "list where XDG_RUNTIME_DIR is set: {}", text(&listed));
    let selected = shells.run(xdg, &["select", "nothing-like-it"]);
    assert_eq!(selected.status.code(), Some(2), "select reaches the daemon: {}", text(&selected));
    assert!(text(&selected).contains("no VM matches"), "{}", text(&selected));
    // A second serve there: this user's jdwpmux holds the port, and where it answers.
    let again = shells.run(xdg, &["serve", "--no-scan", "--no-adb", "--no-proc", "--base-port", "0", "--current-port", &port.to_string()]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    let said = text(&again);
    assert!(said.contains("another jdwpmux serve") && said.contains(&fallback), "{said}");
    stop(first);

    // Started where it is set: found where it is not.
    let (mut second, log) = shells.serve(xdg, port, "set.log");
    let line = wait_line(&log, &mut second, "control socket at");
    let standard = format!("/run/user/{uid}/jdwpmux/control.sock");
    assert!(line.ends_with(&standard), "{line}");
    let listed = shells.run(None, &["list"]);
    assert_eq!(listed.status.code(), Some(0), "list where XDG_RUNTIME_DIR is unset: {}", text(&listed));
    let again = shells.run(None, &["serve", "--no-scan", "--no-adb", "--no-proc", "--base-port", "0", "--current-port", &port.to_string()]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains(&standard), "{}", text(&again));
    stop(second);
}

/// A daemon with a control socket of its own (`--control`) holds the current-VM port: a
/// second serve says that it is this user's jdwpmux, with its pid, not just "address in use".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_held_by_ones_own_jdwpmux_is_said_so() {
    let first = Served::start(&["--no-scan", "--no-adb", "--no-proc"]);
    let port = port_of(&first.wait_log("for the current VM").await).to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--no-scan", "--no-adb", "--no-proc", "--base-port", "0", "--current-port", &port, "--control"])
        .arg(dir.path().join("other.sock"))
        .env_remove("JDWPMUX_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("your own jdwpmux") && said.contains(&format!("pid {}", first.pid())), "{said}");
}
