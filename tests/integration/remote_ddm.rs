//! Android-like VMs on an ssh host: the in-repo DDM-aware fake VM run there as a process
//! with a JVM's agent option (found by its process, identified as Android, spoken to with
//! DDM through the link), and the fake adb server on the host's loopback with a device whose
//! VM is listed under the host with its serial.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::remote::{ready, row, serve, SLOW};
use crate::support::fake_adb::FakeAdb;
use crate::support::testhost::{Keys, TestHost};
use crate::support::{FakeVm, FakeVmConfig, RawClient};

/// The fake VM example built beside this test binary (`cargo test` builds examples).
fn fake_vm_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join("fake_vm")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ddm_vm_and_an_adb_server_on_a_remote_host() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "droid").unwrap();
    let prefix = host.prefix();
    let mut vm_proc = tokio::process::Command::new(&prefix[0])
        .args(&prefix[1..])
        .arg(fake_vm_example())
        .args(["-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000", "com.example.remote", "4242"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the fake VM example runs (cargo test builds it)");
    let mut out = BufReader::new(vm_proc.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(SLOW, out.next_line()).await.unwrap().unwrap().unwrap();
    assert!(first.contains("listening on 127.0.0.1:8000"), "{first}");
    let adb = FakeAdb::start_in_netns(&host.net.name).await.unwrap();
    let alpha = FakeVm::start(FakeVmConfig { app_name: "com.example.alpha".into(), pid: 1111, ..Default::default() }).await;
    adb.add_device("emulator-5554");
    adb.set_vm("emulator-5554", 1111, alpha.addr());

    let served = serve(&keys, &["droid"], &[]);
    let rows = served.list_until("both DDM VMs of droid", |r| ready(r, "droid", "com.example.remote") && ready(r, "droid", "com.example.alpha")).await;
    let remote = row(&rows, "droid", "com.example.remote").unwrap();
    assert_eq!((&remote["ddm"], &remote["source"], &remote["addr"]), (&true.into(), &"ssh".into(), &"127.0.0.1:8000".into()), "{rows:?}");
    let device = row(&rows, "droid", "com.example.alpha").unwrap();
    assert_eq!((&device["ddm"], &device["source"], &device["addr"], &device["pid"]), (&true.into(), &"adb".into(), &"emulator-5554:1111".into(), &1111.into()), "{rows:?}");

    // DDM through the link: the features of each, and their threads.
    for sel in ["droid:com.example.remote", "droid:com.example.alpha"] {
        let (code, out, err) = served.run(&["features", sel]);
        assert_eq!(code, 0, "{sel}: {err}");
        assert!(!out.trim().is_empty(), "{sel}");
        let (code, out, err) = served.run(&["threads", sel, "--once"]);
        assert_eq!(code, 0, "{sel}: {err}");
        assert!(out.contains("main"), "{sel}: {out}");
    }
    // A debugger through the local port of each gets the VM's answers.
    for app in ["com.example.remote", "com.example.alpha"] {
        let p = row(&rows, "droid", app).unwrap()["debugger_port"].as_u64().unwrap() as u16;
        let mut dbg = RawClient::connect(("127.0.0.1", p)).await.unwrap();
        let reply = dbg.request(1, 1, 1, &[], Duration::from_secs(20)).await.unwrap();
        assert_eq!(reply.error_code(), Some(0), "{app}: Version answered");
    }
    let _ = vm_proc.kill().await;
    adb.stop().await;
    drop(served);
}
