//! VMs behind an adb server: the in-repo fake adb server with fake VMs, checked against the
//! real `adb` client.

use std::process::Stdio;
use std::time::Duration;

use crate::cli::Served;
use crate::support::fake_adb::FakeAdb;
use crate::support::{FakeVm, FakeVmConfig};

fn vm(app: &str, pid: u32) -> FakeVmConfig {
    FakeVmConfig { app_name: app.into(), pid, ..Default::default() }
}


fn row<'a>(rows: &'a [serde_json::Value], app: &str) -> Option<&'a serde_json::Value> {
    rows.iter().find(|r| r["app"] == app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_vms_come_and_go_and_keep_their_ports_across_a_restart() {
    let adb = FakeAdb::start().await.unwrap();
    let alpha = FakeVm::start(vm("com.example.alpha", 1111)).await;
    let beta = FakeVm::start(vm("com.example.beta", 2222)).await;
    adb.add_device("emulator-5554");
    adb.add_device("R58M1234");
    adb.set_vm("emulator-5554", 1111, alpha.addr());
    adb.set_vm("R58M1234", 2222, beta.addr());
    let served = Served::start(&["--adb", &adb.addr().to_string(), "--no-scan"]);
    served.wait_log("control socket at").await;

    let rows = served.list_until("both apps", |r| {
        r.iter().filter(|v| v["state"] == "ready" && v["debugger_port"].is_u64()).count() == 2
    })
    .await;
    let alpha_port = row(&rows, "com.example.alpha").unwrap()["debugger_port"].clone();
    assert_eq!(row(&rows, "com.example.beta").unwrap()["pid"], 2222);
    assert_eq!(row(&rows, "com.example.beta").unwrap()["ddm"], true);
    assert_eq!(row(&rows, "com.example.alpha").unwrap()["addr"], "emulator-5554:1111");

    // Select by adb serial:pid.
    let (code, out, err) = served.run(&["select", "R58M1234:2222"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("R58M1234:2222"), "{out}");

    // alpha restarts with a new pid: it leaves, comes back, and keeps its port.
    adb.set_pids("emulator-5554", &[]);
    served.list_until("alpha gone", |r| row(r, "com.example.alpha").is_none()).await;
    let alpha2 = FakeVm::start(vm("com.example.alpha", 3333)).await;
    adb.set_vm("emulator-5554", 3333, alpha2.addr());
    let rows = served.list_until("alpha back", |r| {
        row(r, "com.example.alpha").is_some_and(|v| v["pid"] == 3333 && v["state"] == "ready")
    })
    .await;
    assert_eq!(row(&rows, "com.example.alpha").unwrap()["debugger_port"], alpha_port, "the restarted app keeps its port");

    // A device that goes away takes its VMs with it.
    adb.remove_device("R58M1234");
    served.list_until("beta gone", |r| row(r, "com.example.beta").is_none()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_adb_client_agrees_with_the_fake_server() {
    assert!(std::process::Command::new("adb").arg("version").output().is_ok(), "the adb client is needed (apt-get install adb)");
    let adb = FakeAdb::start().await.unwrap();
    adb.add_device("emulator-5554");
    adb.set_pids("emulator-5554", &[1111, 2222]);
    let port = adb.port().to_string();
    let clean = |c: &mut tokio::process::Command| {
        for v in ["ANDROID_SERIAL", "ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT", "ANDROID_ADB_SERVER_ADDRESS"] {
            c.env_remove(v);
        }
    };
    let mut devices = tokio::process::Command::new("adb");
    devices.args(["-P", &port, "devices"]).kill_on_drop(true);
    clean(&mut devices);
    let out = tokio::time::timeout(Duration::from_secs(30), devices.output()).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("emulator-5554\tdevice"), "{text}");

    let mut jdwp = tokio::process::Command::new("adb");
    jdwp.args(["-P", &port, "-s", "emulator-5554", "jdwp"]).stdout(Stdio::piped()).kill_on_drop(true);
    clean(&mut jdwp);
    let mut child = jdwp.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 256];
        while !(seen.contains("1111") && seen.contains("2222")) {
            let n = stdout.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    let _ = child.kill().await;
    assert!(read.is_ok() && seen.contains("1111") && seen.contains("2222"), "adb jdwp printed: {seen:?}");
    assert!(!adb.requests().iter().any(|r| r.contains("kill")), "the client tried to restart the server: {:?}", adb.requests());
}
