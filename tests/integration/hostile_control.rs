//! Hostile use of the control socket, through the real binary: another local user trying to
//! connect, a control path prepared by someone else, and a client that never reads.
//!
//! Expected outcomes:
//! - the socket is 0600 in a 0700 folder, both owned by the daemon's user; a process of
//!   another uid cannot connect (file modes), and if the modes are loosened after start the
//!   daemon still refuses it (SO_PEERCRED) with a log line naming the uid;
//! - a control path that is not a socket, a socket or folder of another uid, a folder others
//!   may write to, or a symlink, is neither used nor removed: `serve` exits 1 with one line
//!   that says why; only a stale socket of the daemon's own user is replaced;
//! - a client that asks for live thread tables and stops reading is dropped once a reply has
//!   waited `CONTROL_WRITE_TIMEOUT`; meanwhile other clients are served, the daemon's memory
//!   stays flat, and thread updates are turned off when it goes; a client that sends no
//!   request is dropped after `CONTROL_READ_TIMEOUT`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::Served;
use crate::support::{FakeThread, FakeVm, FakeVmConfig};

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");
/// The uid (and gid) another local user runs as in these tests.
const NOBODY: u32 = 65534;

fn own_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
}

/// `jdwpmux list --control SOCK` as uid `NOBODY`: (exit code, stdout, stderr). The binary
/// is a copy in `sock`'s grandparent (open to others), as the build's own may lie below a
/// folder only its owner may enter (a checkout in a `mktemp -d` folder).
fn list_as_nobody(sock: &Path) -> (i32, String, String) {
    let bin = sock.parent().and_then(Path::parent).expect("a socket two folders deep").join("jdwpmux");
    if !bin.exists() {
        std::fs::copy(BIN, &bin).unwrap();
        chmod(&bin, 0o755);
    }
    let out = Command::new(&bin)
        .args(["list", "--json", "--control"])
        .arg(sock)
        .uid(NOBODY)
        .gid(NOBODY)
        .env_remove("JDWPMUX_CONFIG")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_socket_is_owner_only_and_other_uids_are_refused() {
    let base = tempfile::tempdir().unwrap();
    // Others may pass through the base folder; the daemon makes `private` itself.
    chmod(base.path(), 0o755);
    let sock = base.path().join("private").join("control.sock");
    let served = Served::start_at(Some(&sock), &["--no-scan", "--no-proc", "--no-adb"], &[]);
    served.wait_log("control socket at").await;

    let folder = sock.parent().unwrap();
    assert_eq!(mode(folder), 0o700, "the control folder is owner-only");
    assert_eq!(mode(&sock), 0o600, "the control socket is owner-only");
    for p in [folder, sock.as_path()] {
        assert_eq!(std::fs::metadata(p).unwrap().uid(), own_uid(), "{} belongs to the daemon's user", p.display());
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
    let (code, out, err) = served.run(&["list", "--json"]);
    assert_eq!((code, out.trim()), (0, "[]"), "the owner is served: {err}");

    if own_uid() != 0 {
        // Modes and owner were checked; what another user meets was not.
        crate::not_run!("acting as another user needs root");
    }
    // Another user: the folder's mode stops it.
    let (code, out, err) = list_as_nobody(&sock);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Permission denied"), "{err}");
    // Folder opened up: the socket's own mode still stops it.
    chmod(folder, 0o755);
    let (code, _, err) = list_as_nobody(&sock);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    // Socket opened up too (a careless chmod): the daemon checks the peer's uid itself.
    chmod(&sock, 0o666);
    let (code, out, err) = list_as_nobody(&sock);
    assert_ne!(code, 0, "another uid was served: {out}");
    assert!(!out.contains('['), "no answer for another uid: {out}");
    let line = served.wait_log("refused a control client").await;
    assert!(line.contains(&NOBODY.to_string()), "{line}");
    eprintln!("another uid, socket 0666: exit {code}, {}", err.trim());
    // The owner is still served.
    let (code, _, err) = served.run(&["list", "--json"]);
    assert_eq!(code, 0, "{err}");
}

/// Runs `serve` on a control path expected to be refused. Returns its exit code (None: it
/// was still running after 10 s, i.e. it took the path) and stderr.
fn serve_on(sock: &Path) -> (Option<i32>, String) {
    let err_file = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(BIN)
        .env_remove("JDWPMUX_CONFIG")
        .args(["serve", "--no-scan", "--no-proc", "--no-adb", "--base-port", "0", "--current-port", "0", "--control"])
        .arg(sock)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file.reopen().unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(err_file.path()).unwrap())
}

/// `serve` refused `sock` with one error line containing `why`.
fn assert_refused(sock: &Path, why: &str) {
    let (code, err) = serve_on(sock);
    assert_eq!(code, Some(1), "serve took {}: {err}", sock.display());
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("jdwpmux:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains(why) && errors[0].contains(&sock.parent().unwrap().display().to_string()), "{err}");
}

#[test]
fn control_path_owned_by_someone_else_is_left_alone() {
    let root = own_uid() == 0;
    let base = tempfile::tempdir().unwrap();

    // A regular file where the socket should be: kept, not replaced.
    let dir = base.path().join("file");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let sock = dir.join("control.sock");
    std::fs::write(&sock, "precious").unwrap();
    assert_refused(&sock, "not a socket");
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "precious");

    // A symlink where the socket should be (to a file of ours): not followed, not removed.
    let dir = base.path().join("link");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let target = dir.join("target");
    std::fs::write(&target, "kept").unwrap();
    let sock = dir.join("control.sock");
    std::os::unix::fs::symlink(&target, &sock).unwrap();
    assert_refused(&sock, "not a socket");
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");

    // A folder others may write to (they could swap the socket): not used.
    let dir = base.path().join("open");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o777);
    assert_refused(&dir.join("control.sock"), "writable by other users");
    assert!(!dir.join("control.sock").exists());

    // The folder is a symlink (to a folder of ours): not used.
    let real = base.path().join("real");
    std::fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    let dir = base.path().join("linked");
    std::os::unix::fs::symlink(&real, &dir).unwrap();
    assert_refused(&dir.join("control.sock"), "symbolic link");
    assert!(!real.join("control.sock").exists());

    // A stale socket of our own (a crashed daemon) is replaced: the daemon starts.
    let dir = base.path().join("stale");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let sock = dir.join("control.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let (code, err) = serve_on(&sock);
    assert_eq!(code, None, "a stale socket of our own is replaced: {err}");
    assert!(err.contains("control socket at"), "{err}");

    if !root {
        // The cases of our own ran; those of another user's files did not.
        crate::not_run!("making files of another user needs root");
    }
    // A folder of another user (made first, say in /tmp): not used.
    let dir = base.path().join("theirs");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    chown(&dir, NOBODY);
    assert_refused(&dir.join("control.sock"), &format!("belongs to uid {NOBODY}"));
    assert!(!dir.join("control.sock").exists());

    // A (stale) socket of another user in our folder: not removed.
    let dir = base.path().join("their-socket");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let sock = dir.join("control.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    chown(&sock, NOBODY);
    assert_refused(&sock, &format!("belongs to uid {NOBODY}"));
    assert_eq!(std::fs::symlink_metadata(&sock).unwrap().uid(), NOBODY, "their socket is still there");
}

/// The daemon's resident memory in KiB.
fn rss_kib(pid: u32) -> u64 {
    crate::support::process::status_kib(pid, "VmRSS").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_client_that_never_reads_is_dropped_and_others_are_served() {
    use jdwpmux::control::server::CONTROL_WRITE_TIMEOUT;
    use tokio::io::AsyncWriteExt;

    // Many threads with long names: each table is tens of KiB, so the socket fills fast.
    let threads = (0..400).map(|i| FakeThread::new(0x1000 + i, &format!("worker-{i:04}-{}", "x".repeat(60)))).collect();
    let vm = FakeVm::start(FakeVmConfig { threads, ..FakeVmConfig::default() }).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    crate::ddm_views::ready(&served, 1).await;
    let rss_before = rss_kib(served.pid());

    // A client that connects and never sends a request is let go too.
    let mut silent = tokio::net::UnixStream::connect(&served.control).await.unwrap();
    let mut stuck = tokio::net::UnixStream::connect(&served.control).await.unwrap();
    stuck.write_all(b"{\"cmd\":\"threads\",\"selector\":\"com.example.fake\",\"interval_ms\":100,\"once\":false}\n").await.unwrap();
    served.wait_log("thread updates on").await;
    let started = Instant::now();
    // While its replies pile up unread, other clients are served promptly.
    let mut slowest = Duration::ZERO;
    let mut rss_peak = rss_before;
    while !served.log_text().contains("control client not reading") {
        assert!(started.elapsed() < CONTROL_WRITE_TIMEOUT + Duration::from_secs(30), "the stuck client was never dropped");
        let t = Instant::now();
        let (code, out, err) = served.run(&["list", "--json"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("\"ready\""), "{out}");
        slowest = slowest.max(t.elapsed());
        rss_peak = rss_peak.max(rss_kib(served.pid()));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let dropped_after = started.elapsed();
    assert!(dropped_after >= CONTROL_WRITE_TIMEOUT, "dropped after {dropped_after:?}");
    served.wait_log("thread updates off: no viewer left").await;
    let rss_after = rss_kib(served.pid());
    eprintln!(
        "stuck client dropped after {dropped_after:?}; slowest list meanwhile {slowest:?}; \
         RSS before {rss_before} KiB, peak {rss_peak} KiB, after {rss_after} KiB"
    );
    assert!(slowest < Duration::from_secs(5), "list took {slowest:?}");
    assert!(rss_peak < rss_before + 32 * 1024, "memory grew from {rss_before} to {rss_peak} KiB");
    served.wait_log("CONTROL_READ_TIMEOUT").await;
    let mut buf = [0u8; 16];
    let n = crate::harness::soon("silent client closed", tokio::io::AsyncReadExt::read(&mut silent, &mut buf)).await;
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    drop(stuck);
}
