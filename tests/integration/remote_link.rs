//! The ssh link on its own, against a test host (a network namespace running sshd): the
//! master comes up through the user's config and keys, the scan finds the host's JVM, and its
//! forward carries a JDWP handshake from a local socket. (Refusals are tested through
//! `serve`, in `remote.rs`.)

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_finds_the_hosts_jvm_and_forwards_to_it() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "box").unwrap();
    let spec = JvmSpec { prefix: host.prefix(), ..JvmSpec::main_at(std::path::Path::new("java"), false, "8000") };
    let app = JavaApp::spawn(spec).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = host_config(&keys, "box", dir.path());
    let (tx, mut rx) = watch::channel(HostReport::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(remote::host::run(cfg, tx, cancel.clone()));
    let r = wait_report(&mut rx, "the JVM forwarded", |r| r.link == LinkState::Up && r.vms.iter().any(|v| v.forwarded)).await;
    let vm = r.vms.iter().find(|v| v.forwarded).unwrap();
    assert_eq!(vm.key, "ssh:box/Main");
    assert_eq!(vm.found.port, Some(8000));
    assert_eq!(vm.found.main.as_ref().map(|m| m.to_string()).as_deref(), Some("Main"));
    drop(app);
    let mut s = tokio::net::UnixStream::connect(&vm.socket).await.unwrap();
    s.write_all(b"JDWP-Handshake").await.unwrap();
    let mut echo = [0u8; 14];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut echo)).await.unwrap().unwrap();
    assert_eq!(&echo, b"JDWP-Handshake");
    drop(s);
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    assert!(!dir.path().join("h0.ctl").exists(), "the master's control socket is gone");
    drop(host);
}
