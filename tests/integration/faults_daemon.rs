//! Faults around the daemon itself, run as its own process: its adb server killed and
//! restarted, its capture file hitting the file size limit, its control socket flooded, and
//! the daemon SIGTERMed while a debugger holds a real VM at a breakpoint.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::cli::Served;
use crate::support::consts::*;
use crate::support::fake_adb::FakeAdb;
use crate::support::faults::{ready_port, row_of, start_big, FAULT_SLACK, SETTLE};
use crate::support::jvm_wire::JvmDebugger;
use crate::support::process::{self, usage, wait_back_to};
use crate::support::{java_available, FakeVm, FakeVmConfig, RawClient};

async fn served_version(c: &mut RawClient, id: u32) {
    let r = c.request(id, SET_VM, VM_VERSION, &[], Duration::from_secs(10)).await.expect("served");
    assert_eq!(r.error_code(), Some(0));
}

/// Lines of the daemon's log holding `needle`.
fn log_count(served: &Served, needle: &str) -> usize {
    served.log_text().lines().filter(|l| l.contains(needle)).count()
}

async fn wait_log_count(served: &Served, needle: &str, n: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while log_count(served, needle) < n {
        assert!(Instant::now() < deadline, "not {n} lines with {needle:?} in the log:\n{}", served.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_adb_server_that_goes_away_and_comes_back_gives_its_devices_back() {
    let adb = FakeAdb::start().await.unwrap();
    let device_vm = FakeVm::start(FakeVmConfig { app_name: "com.example.device".into(), pid: 4242, ..Default::default() }).await;
    adb.add_device("emulator-5554");
    adb.set_vm("emulator-5554", 4242, device_vm.addr());
    let other = FakeVm::start(FakeVmConfig::default()).await;
    let other_addr = other.addr().to_string();
    let mut served = Served::start(&["--adb", &adb.addr().to_string(), "--no-scan", "--vm", &other_addr]);
    let device = |r: &[serde_json::Value]| r.iter().any(|v| v["app"] == "com.example.device" && v["state"] == "ready");
    let rows = served.list_until("the device VM and the other VM", |r| device(r) && ready_port(r, &other_addr).is_some()).await;
    let mut bystander = RawClient::connect(("127.0.0.1", ready_port(&rows, &other_addr).unwrap())).await.unwrap();
    served_version(&mut bystander, 1).await;
    let before = usage(served.pid()).unwrap();

    for round in 1..=3 {
        adb.stop().await;
        served.wait_log("the adb server is gone").await;
        served.list_until("the device VM unlisted", |r| !r.iter().any(|v| v["app"] == "com.example.device")).await;
        served_version(&mut bystander, 10 * round).await;
        adb.restart().await.unwrap();
        served.list_until("the device VM back", device).await;
        served_version(&mut bystander, 10 * round + 1).await;
        assert!(served.is_running());
    }
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("fake adb server restarted 3 times: daemon before {before}, after {after}");
    drop(bystander);
}

/// A real adb server on a port of its own, killed when dropped.
struct RealAdb {
    port: u16,
}

impl RealAdb {
    fn start(port: u16) -> bool {
        Command::new("adb")
            .args(["-P", &port.to_string(), "start-server"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The server's pids (it forks away from `adb start-server`).
    fn pids(&self) -> Vec<u32> {
        process::pids_with_cmdline(&["fork-server", &format!("tcp:{}", self.port)])
    }
}

impl Drop for RealAdb {
    fn drop(&mut self) {
        for pid in self.pids() {
            let _ = process::signal(pid, libc::SIGKILL);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_adb_server_killed_and_restarted_is_found_again() {
    assert!(Command::new("adb").arg("version").stdout(Stdio::null()).status().is_ok(), "the adb client is needed (apt-get install adb; ./test.sh does)");
    let port = crate::support::ports::free_port();
    let adb = RealAdb { port };
    assert!(RealAdb::start(port), "adb start-server");
    let other = FakeVm::start(FakeVmConfig::default()).await;
    let other_addr = other.addr().to_string();
    let mut served = Served::start(&["--adb", &format!("127.0.0.1:{port}"), "--no-scan", "--vm", &other_addr]);
    const UP: &str = "adb server is up; tracking devices";
    wait_log_count(&served, UP, 1, Duration::from_secs(30)).await;
    let rows = served.list_until("the other VM", |r| ready_port(r, &other_addr).is_some()).await;
    let mut bystander = RawClient::connect(("127.0.0.1", ready_port(&rows, &other_addr).unwrap())).await.unwrap();
    served_version(&mut bystander, 1).await;
    let before = usage(served.pid()).unwrap();

    let pids = adb.pids();
    assert_eq!(pids.len(), 1, "one adb server on port {port}");
    process::signal(pids[0], libc::SIGKILL).unwrap();
    served.wait_log("the adb server is gone").await;
    served_version(&mut bystander, 2).await;
    assert!(served.is_running());
    assert!(RealAdb::start(port), "adb start-server again");
    wait_log_count(&served, UP, 2, Duration::from_secs(30)).await;
    served_version(&mut bystander, 3).await;
    // The restarted server is asked for its devices again (the real client agrees it runs).
    let out = Command::new("adb").args(["-P", &port.to_string(), "devices"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("List of devices"));
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("real adb server killed and restarted: daemon before {before}, after {after}");
    drop(bystander);
}

/// The file size limit the daemon runs under in the disk-full test: more than its log will
/// take, far less than the traffic it captures.
const FILE_SIZE_LIMIT: u64 = 512 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_capture_disk_stops_the_capture_and_nothing_else() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let vm_addr = vm.addr().to_string();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("full.pcapng");
    let mut served = Served::start_with(
        &["--vm", &vm_addr, "--no-adb", "--capture", cap.to_str().unwrap()],
        &[],
        |cmd| process::limit_file_size(cmd, FILE_SIZE_LIMIT),
    );
    let rows = served.list_until("ready", |r| ready_port(r, &vm_addr).is_some()).await;
    let port = ready_port(&rows, &vm_addr).unwrap();
    let mut dbg = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    served_version(&mut dbg, 1).await;
    let before = usage(served.pid()).unwrap();
    // 64 commands with 16 KiB bodies: 1 MiB to capture, twice the limit.
    let pad = vec![0x5a; 16 * 1024];
    for id in 2..66 {
        let r = dbg.request(id, SET_VM, VM_VERSION, &pad, Duration::from_secs(10)).await;
        assert!(r.is_ok(), "command {id} not answered; daemon running: {}\n{}", served.is_running(), served.log_text());
    }
    let line = served.wait_log("no longer writing").await;
    assert!(line.contains("File too large") || line.contains("EFBIG") || line.contains("os error 27"), "{line}");
    assert!(served.is_running(), "the daemon died:\n{}", served.log_text());
    // Relaying goes on, on the old connection and on a new one.
    for id in 100..110 {
        served_version(&mut dbg, id).await;
    }
    let mut newcomer = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    served_version(&mut newcomer, 1).await;
    assert!(std::fs::metadata(&cap).unwrap().len() <= FILE_SIZE_LIMIT);
    // `list` works, and the log is still written after the capture stopped.
    let (code, _, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    drop((dbg, newcomer));
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("capture disk full: daemon before {before}, after {after}; capture file {} bytes", std::fs::metadata(&cap).unwrap().len());
}

/// Control clients at once in the flood.
const CONTROL_CLIENTS: usize = 100;

/// What one control client sends; each must be answered or closed.
fn control_input(i: usize) -> Vec<u8> {
    match i % 10 {
        0 => b"{\"cmd\":\"list\"}\n".to_vec(),
        1 => b"{\"cmd\":\"select\",\"selector\":\"nothing.like.it\"}\n".to_vec(),
        2 => (0..4096).map(|k| (k * 7 + i) as u8).collect(),
        3 => vec![b'{'; 200 * 1024],
        4 => b"\n".to_vec(),
        5 => b"{\"cmd\":\"threads\",\"selector\":\"x\",\"interval_ms\":0,\"once\":true}\n".to_vec(),
        6 => b"{\"cmd\":\"list\"".to_vec(),
        7 => vec![0; 100],
        8 => b"{\"cmd\":\"stats\",\"selector\":null}\n".to_vec(),
        _ => Vec::new(),
    }
}

/// Sends `input` (then closes the sending side when `eof`) and reads until the daemon
/// closes; what it answered.
async fn control_client(path: &Path, input: Vec<u8>, eof: bool) -> std::io::Result<Vec<u8>> {
    let mut s = UnixStream::connect(path).await?;
    let (mut rd, mut wr) = s.split();
    let write = async {
        // The daemon may stop reading (a line past its limit) and close: not an error here.
        let _ = wr.write_all(&input).await;
        if eof {
            let _ = wr.shutdown().await;
        }
    };
    let mut out = Vec::new();
    let read = rd.read_to_end(&mut out);
    let (_, r) = tokio::join!(write, read);
    match r {
        Ok(_) => Ok(out),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(out),
        Err(e) => Err(e),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_control_socket_answers_or_closes_every_client_and_list_still_works() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let vm_addr = vm.addr().to_string();
    let served = Served::start(&["--vm", &vm_addr, "--no-adb"]);
    served.list_until("ready", |r| ready_port(r, &vm_addr).is_some()).await;
    let before = usage(served.pid()).unwrap();
    let control = served.control.clone();

    // Half the clients send their input and wait; the other half also close their side.
    let clients: Vec<_> = (0..CONTROL_CLIENTS)
        .map(|i| {
            let path = control.clone();
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(30), control_client(&path, control_input(i), i % 2 == 0)).await
            })
        })
        .collect();
    // `list` through the real client, again and again while they are at it (the silent ones
    // are held until the daemon's read timeout).
    let mut lists = 0;
    while clients.iter().any(|c| !c.is_finished()) {
        let t = Instant::now();
        let (code, out, err) = served.run(&["list", "--json"]);
        assert_eq!(code, 0, "list during the flood: {err}");
        assert!(out.contains(&vm_addr));
        assert!(t.elapsed() < Duration::from_secs(5), "list took {:?} during the flood", t.elapsed());
        lists += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(lists >= 2, "the flood was over before a second list");
    let mut answered = 0;
    for (i, c) in clients.into_iter().enumerate() {
        let got = c.await.unwrap().unwrap_or_else(|_| panic!("control client {i} neither answered nor closed"));
        let got = got.unwrap_or_else(|e| panic!("control client {i}: {e}"));
        if !got.is_empty() {
            let text = String::from_utf8_lossy(&got);
            let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert!(first.get("result").is_some(), "client {i}: {text}");
            answered += 1;
        }
    }
    assert!(answered >= CONTROL_CLIENTS / 2, "only {answered} answered");
    println!("control flood: {CONTROL_CLIENTS} clients, {answered} answered, the rest closed; {lists} lists meanwhile");
    let (code, out, _) = served.run(&["list"]);
    assert_eq!(code, 0);
    assert!(out.contains(&vm_addr));
    let after = wait_back_to(served.pid(), before, FAULT_SLACK, SETTLE).await.unwrap();
    println!("control flood: daemon before {before}, after {after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_a_debugger_holds_a_breakpoint_stop_exits_and_leaves_the_vm_running() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let big = start_big(Path::new("java")).await.unwrap();
    let big_addr = big.host_port();
    let mut served = Served::start(&["--vm", &big_addr, "--no-adb"]);
    let current = crate::cli::port_of(&served.wait_log("for the current VM").await);
    let rows = served.list_until("ready", |r| ready_port(r, &big_addr).is_some()).await;
    let port = ready_port(&rows, &big_addr).unwrap();
    let mut dbg = JvmDebugger::attach(("127.0.0.1", port)).await.unwrap();
    let class = dbg.class_id("LBig;").await.unwrap();
    let request = dbg.break_at(class, "tick", SUSPEND_ALL).await.unwrap();
    let ev = dbg.c.next_event(Duration::from_secs(20)).await.unwrap();
    let (policy, kind) = (ev.data[0], ev.data[5]);
    assert_eq!((policy, kind), (SUSPEND_ALL, KIND_BREAKPOINT), "{ev:?}");
    assert_eq!(u32::from_be_bytes(ev.data[6..10].try_into().unwrap()), request);
    // Stopped: no tick for a while (the breakpoint is at the start of tick()).
    let stopped_at = big.ticks_seen().unwrap_or(0);
    assert!(big.wait_ticks_advance(Duration::from_secs(2)).await.is_err(), "the VM ticks on at a breakpoint");
    assert!(served.list_until("listed", |r| row_of(r, &big_addr).is_some()).await.len() == 1);

    let t = Instant::now();
    let code = served.terminate(Duration::from_secs(15));
    let took = t.elapsed();
    assert_eq!(code, Some(0), "exit code; log:\n{}", served.log_text());
    assert!(!served.control.exists(), "the control socket file is left behind");
    dbg.c.expect_closed(Duration::from_secs(5)).await.unwrap();
    for p in [port, current] {
        assert!(std::net::TcpStream::connect(("127.0.0.1", p)).is_err(), "port {p} still open");
    }
    // The VM was let go: it runs on past the breakpoint, and the breakpoint is gone.
    let ticks = big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    assert!(ticks > stopped_at);
    let again = big.wait_ticks_advance(Duration::from_secs(20)).await.unwrap();
    assert!(again > ticks);
    // A debugger can attach to it directly again.
    let mut direct = JvmDebugger::attach(big.addr()).await.unwrap();
    direct.cmd(SET_VM, VM_VERSION, &[]).await.unwrap();
    println!("sigterm at a breakpoint: daemon exited 0 in {took:?}; VM ticks {stopped_at} -> {again}");
}
