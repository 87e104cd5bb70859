//! `serve --ssh HOST --far ...`: a test host (a network namespace with Debian's sshd) where
//! jdwpmux is found at the same path as here (namespaces share the file system), a real JVM
//! on the host's loopback. Through the far side, jdb breaks, steps and quits through the
//! VM's local port and the app runs on; with no usable far side, `auto` says why in one line
//! and the VM is reached through ssh forwards as before.

use crate::remote::{debug_once, one_vm, OneVm};

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_jdb_breaks_steps_and_quits_through_jdwpmux_on_the_host() {
    crate::need_test_hosts!();
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farjdb", &["--far", "always", "--far-path", BIN]).await;
    let line = served.wait_log("using jdwpmux on farjdb").await;
    assert!(line.contains("far.sock"), "{line}");
    debug_once(port, "Billing", &app).await;
    // A second debugger session on the same port: a new channel to the same VM.
    debug_once(port, "Billing", &app).await;
    assert!(!served.log_text().contains("ssh forwards"), "{}", served.log_text());
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_auto_without_jdwpmux_on_the_host_uses_forwards_and_says_why() {
    crate::need_test_hosts!();
    let missing = "/nonexistent/jdwpmux";
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farnone", &["--far", "auto", "--far-path", missing]).await;
    let line = served.wait_log("cannot be used").await;
    assert!(
        line.contains(&format!("jdwpmux on farnone cannot be used ({missing} was not found on the host); its VMs are reached through ssh forwards")),
        "{line}"
    );
    assert_eq!(served.log_text().matches("cannot be used").count(), 1, "one line: {}", served.log_text());
    debug_once(port, "Billing", &app).await;
    drop(served);
}
