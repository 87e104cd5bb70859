//! The ssh link on its own, against a test host (a network namespace running sshd): the
//! master comes up through the user's config and keys, the scan finds the host's JVM, and its
//! forward carries a JDWP handshake from a local socket, also when the folder's path holds
//! what ssh would otherwise take for its own syntax (`%` tokens, a `:` in a forward's spec).
//! (Refusals are tested through `serve`, in `remote.rs` and `remote_paths`.)

use std::time::Duration;

use jdwpmux::remote::{self, Destination, HostConfig, HostReport, LinkState, SshOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

fn host_config(keys: &Keys, alias: &str, dir: &std::path::Path) -> HostConfig {
    HostConfig {
        dest: alias.parse::<Destination>().unwrap(),
        label: alias.to_string(),
        dir: dir.to_path_buf(),
        prefix: "h0".into(),
        ssh: SshOptions { config: Some(keys.ssh_config()), ..SshOptions::default() },
        interval: Duration::from_millis(500),
        other_users: false,
        keyed_as: None,
    }
}

async fn wait_report(rx: &mut watch::Receiver<HostReport>, what: &str, ok: impl Fn(&HostReport) -> bool) -> HostReport {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        {
            let r = rx.borrow_and_update();
            if ok(&r) {
                return r.clone();
            }
        }
        if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
            panic!("{what}: not within 60 s; last report {:?}", rx.borrow());
        }
    }
}

/// Runs a link from `dir` until its JVM is forwarded, shakes hands with the JVM through the
/// forward, and ends the link.
async fn link_and_handshake(keys: &Keys, dir: &std::path::Path) {
    let cfg = host_config(keys, "box", dir);
    let (tx, mut rx) = watch::channel(HostReport::default());
    let cancel = CancellationToken::new();
    let rows = std::sync::Arc::new(remote::status::HostTable::default());
    rows.put(remote::status::HostRow::new("box", "box"));
    let task = tokio::spawn(remote::host::run(cfg, tx, rows.clone(), cancel.clone()));
    let r = wait_report(&mut rx, "the JVM forwarded", |r| r.link == LinkState::Up && r.vms.iter().any(|v| v.forwarded)).await;
    // The host's row was written by the round that found it.
    let row = &rows.rows()[0];
    assert_eq!((row.state, row.jvms, row.last_scan_ms.is_some()), (remote::status::HostState::Up, 1, true), "{row:?}");
    let vm = r.vms.iter().find(|v| v.forwarded).unwrap();
    assert_eq!(vm.key, "ssh:box/Main");
    assert_eq!(vm.found.port, Some(8000));
    assert_eq!(vm.found.main.as_ref().map(|m| m.to_string()).as_deref(), Some("Main"));
    assert!(vm.socket.starts_with(dir), "{}", vm.socket.display());
    // Its owner's only, as the docs say (the master makes it with its umask).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&vm.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}: {mode:o}", vm.socket.display());
    let mut s = tokio::net::UnixStream::connect(&vm.socket).await.unwrap();
    s.write_all(b"JDWP-Handshake").await.unwrap();
    let mut echo = [0u8; 14];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut echo)).await.unwrap().unwrap();
    assert_eq!(&echo, b"JDWP-Handshake");
    drop(s);
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    assert!(!dir.join("h0.ctl").exists(), "the master's control socket is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_finds_the_hosts_jvm_and_forwards_to_it() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "box").unwrap();
    let spec = JvmSpec { prefix: host.prefix(), ..JvmSpec::main_at(std::path::Path::new("java"), false, "8000") };
    let app = JavaApp::spawn(spec).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    link_and_handshake(&keys, dir.path()).await;
    drop(app);
    drop(host);
}

/// A folder named with ssh's tokens (`%h`, `%C`, `%%`, `%d`), and one with `:` (which splits
/// a `-L` spec) and `%` together: each works as a plain one does, and each socket is where
/// the daemon expects it, not where ssh's expansion would have put it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_with_percent_tokens_or_a_colon_works_as_any() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "box").unwrap();
    let spec = JvmSpec { prefix: host.prefix(), ..JvmSpec::main_at(std::path::Path::new("java"), false, "8000") };
    let app = JavaApp::spawn(spec).await.unwrap();
    let base = tempfile::tempdir().unwrap();
    for name in ["100%h%C%%d", "a:b%p"] {
        let dir = base.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        link_and_handshake(&keys, &dir).await;
    }
    // Nothing was made where ssh would have expanded the names to.
    let made: Vec<String> = std::fs::read_dir(base.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(made.len(), 2, "{made:?}");
    drop(app);
    drop(host);
}
