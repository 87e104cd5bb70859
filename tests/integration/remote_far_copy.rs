//! `serve --ssh HOST --far-copy`: a test host (a network and pid namespace with Debian's
//! sshd) where ssh logs in as a test user with a home folder of its own, so the copy lands
//! there as on a real host (namespaces share the file system; this user's home is the
//! host's alone), and no jdwpmux on that user's PATH. The user's JVM listens on the host's
//! loopback. The binary is copied into the user's cache folder there, the far side started
//! from it is used (jdb breaks, steps and quits through it), and a second start finds the
//! copy and copies nothing.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::Served;
use crate::remote::{agent, debug_once, jvm_on, port, ready};
use crate::support::testhost::{Keys, TestHost};
use crate::support::users::TestUser;
use crate::support::JavaApp;

/// The far side's private folder of `uid` (no runtime folder without PAM): removed after the
/// test, whatever happened.
pub(crate) struct FarDir(pub(crate) PathBuf);

impl Drop for FarDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `Host` block that logs in to `host` as `user` with the test's key.
pub(crate) fn login_as(keys: &Keys, alias: &str, host: &TestHost, user: &TestUser) {
    let cfg = keys.ssh_config();
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "Host {alias}\n  HostName {}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
        host.net.addr,
        user.name,
        keys.path("id_ed25519").display(),
        keys.path("known_hosts").display()
    ));
    std::fs::write(&cfg, text).unwrap();
    // sshd reads the authorized keys as the user logging in.
    std::fs::set_permissions(keys.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(keys.path("authorized_keys"), std::fs::Permissions::from_mode(0o644)).unwrap();
}

fn serve(keys: &Keys, alias: &str) -> Served {
    let cfg = keys.ssh_config().display().to_string();
    Served::start(&["--no-scan", "--no-proc", "--no-adb", "--ssh-config", &cfg, "--ssh-interval", "0.5", "--ssh", alias, "--far", "auto", "--far-copy"])
}

/// Served until the user's Billing is ready through the far side; its debugger port.
async fn through_far_side(served: &Served, alias: &str) -> u16 {
    let line = served.wait_log(&format!("using jdwpmux on {alias}")).await;
    assert!(line.contains("far.sock"), "{line}");
    let rows = served.list_until("Billing ready", |r| ready(r, alias, "Billing")).await;
    port(&rows, alias, "Billing")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_copy_lands_in_the_users_cache_and_is_found_the_next_time() {
    crate::need_test_hosts!();
    let alias = "fcopy";
    // Declared first, dropped last: every process of the host is gone before the account.
    let user = TestUser::with_home("fcopy").expect("a test user with a home");
    let _far_dir = FarDir(PathBuf::from(format!("/tmp/jdwpmux-far-{}", user.uid)));
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "fcopyroot").unwrap();
    login_as(&keys, alias, &host, &user);
    let home = user.home.clone().expect("a home");

    let mut spec = jvm_on(&host, Path::new("java"), "Billing", agent(false, "127.0.0.1:8000"));
    spec.prefix.extend(user.prefix());
    let app = JavaApp::spawn(spec).await.expect("java starts as the user");

    let served = serve(&keys, alias);
    let line = served.wait_log("copying this jdwpmux").await;
    let copy = home.join(format!(".cache/jdwpmux/{}/jdwpmux", env!("CARGO_PKG_VERSION")));
    assert!(line.contains(&format!("to {alias}:{}", copy.display())), "{line}");
    let port = through_far_side(&served, alias).await;
    let log = served.log_text();
    assert!(log.contains(&format!("copied this jdwpmux to {alias}")), "{log}");
    assert!(!log.contains("ssh forwards"), "the far side was not used: {log}");

    // The copy: whole, mode 0755, the user's, in folders (0700) only the user may enter.
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!(meta.len(), std::fs::metadata(env!("CARGO_BIN_EXE_jdwpmux")).unwrap().len());
    assert_eq!((mode(&copy), meta.uid(), meta.gid()), (0o755, user.uid, user.gid));
    let dir = copy.parent().unwrap();
    for d in [dir, dir.parent().unwrap()] {
        let m = std::fs::metadata(d).unwrap();
        assert_eq!((mode(d), m.uid()), (0o700, user.uid), "{}", d.display());
    }
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1, "no part file left");
    let (inode, mtime) = (meta.ino(), meta.mtime_nsec() + meta.mtime() * 1_000_000_000);

    debug_once(port, "Billing", &app).await;
    let mut served = served;
    served.terminate(Duration::from_secs(20));
    drop(served);

    // A second start finds the copy and copies nothing.
    let served = serve(&keys, alias);
    let line = served.wait_log("nothing copied").await;
    assert!(line.contains(&format!("found in {} on {alias}", copy.display())), "{line}");
    let port = through_far_side(&served, alias).await;
    debug_once(port, "Billing", &app).await;
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!((meta.ino(), meta.mtime_nsec() + meta.mtime() * 1_000_000_000), (inode, mtime), "the copy was written again");
    assert!(!served.log_text().contains("copying this jdwpmux"), "{}", served.log_text());
    drop(served);
    drop(app);
    drop(host);
}

/// A copy of another build of this version in the user's cache (a rebuild of the same
/// version, here this binary with bytes appended, which runs and says this version): the
/// serve sees by its size and CRC that it is not this build, says so, copies this one over
/// it, and the far side that runs is this build's bytes, started from the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_copy_replaces_another_build_of_the_same_version() {
    crate::need_test_hosts!();
    let alias = "fstale";
    let user = TestUser::with_home("fstale").expect("a test user with a home");
    let _far_dir = FarDir(PathBuf::from(format!("/tmp/jdwpmux-far-{}", user.uid)));
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "fstaleroot").unwrap();
    login_as(&keys, alias, &host, &user);
    let home = user.home.clone().expect("a home");

    // The other build, left by an earlier copy: the user's, 0755, in folders of 0700.
    let this = std::fs::read(env!("CARGO_BIN_EXE_jdwpmux")).unwrap();
    let mut other = this.clone();
    other.extend_from_slice(b"\nanother build of the same version\n");
    let copy = home.join(format!(".cache/jdwpmux/{}/jdwpmux", env!("CARGO_PKG_VERSION")));
    let dir = copy.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&copy, &other).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (p, m) in [(dir.parent().unwrap(), Some(0o700)), (dir, Some(0o700)), (&copy, None), (&home.join(".cache"), None)] {
        std::os::unix::fs::chown(p, Some(user.uid), Some(user.gid)).unwrap();
        if let Some(m) = m {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        }
    }
    let said = std::process::Command::new(&copy).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&said.stdout).trim(), format!("jdwpmux {}", env!("CARGO_PKG_VERSION")), "the other build says this version");

    let mut spec = jvm_on(&host, Path::new("java"), "Billing", agent(false, "127.0.0.1:8000"));
    spec.prefix.extend(user.prefix());
    let app = JavaApp::spawn(spec).await.expect("java starts as the user");

    let served = serve(&keys, alias);
    let line = served.wait_log("the copy there is another build: replaced").await;
    assert!(line.contains(&format!("{} on {alias}", copy.display())) && line.contains(&format!("({} bytes, cksum ", other.len())), "{line}");
    let port = through_far_side(&served, alias).await;
    let log = served.log_text();
    assert!(log.contains(&format!("copied this jdwpmux to {alias}")) && !log.contains("nothing copied"), "{log}");

    // The copy is this build's bytes, whole, the user's; no part file left.
    assert!(std::fs::read(&copy).unwrap() == this, "the copy there is not this binary");
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!((mode(&copy), meta.uid()), (0o755, user.uid));
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1, "no part file left");
    // The far side runs from that file (a process of the replaced file's bytes would show
    // it deleted), and the VM is debugged through it.
    let far_sides = far_sides_of(&copy);
    assert!(!far_sides.is_empty(), "no far side runs from {}", copy.display());
    for pid in &far_sides {
        assert_eq!(std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(), copy, "pid {pid}");
    }
    debug_once(port, "Billing", &app).await;
    drop(served);
    drop(app);
    drop(host);
}

/// The processes started as `PATH far ...` (the far side proper: its start's `sh -c` has the
/// path in its script, not as its program).
fn far_sides_of(path: &Path) -> Vec<u32> {
    let path = path.as_os_str().as_encoded_bytes();
    crate::support::process::pids_with_cmdline(&["far"])
        .into_iter()
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| raw.split(|&b| b == 0).take(2).eq([path, b"far"])))
        .collect()
}
