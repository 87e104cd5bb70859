//! `--spin-us`: the daemon polls for an answer for a while after each write before it
//! sleeps. It relays a real HotSpot VM as without it, and spins only while packets flow:
//! idle, it sleeps.

use std::time::{Duration, Instant};

use crate::cli::Served;
use crate::support::consts::*;
use crate::support::faults::ready_port;
use crate::support::{java_available, JavaApp, RawClient};

/// Round trips relayed with the spin on.
const ROUND_TRIPS: u32 = 5_000;
/// How long the daemon is watched while nobody speaks.
const IDLE_WINDOW: Duration = Duration::from_secs(2);

/// User plus system CPU time of a process, from /proc/PID/stat (fields 14 and 15, in ticks).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the daemon runs");
    let fields = crate::support::process::parse_stat_fields(&stat).expect("a stat line");
    let f: Vec<u64> = fields.iter().map(|v| v.parse().unwrap_or(0)).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis((f[11] + f[12]) * 1000 / hz)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_daemon_relays_hotspot_and_sleeps_when_idle() {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let mut app = JavaApp::start(false).await.unwrap();
    let vm = app.host_port();
    let served = Served::start(&["--vm", &vm, "--no-adb", "--spin-us", "200"]);
    let rows = served.list_until("the VM ready", |r| ready_port(r, &vm).is_some()).await;
    let port = ready_port(&rows, &vm).unwrap();
    let mut dbg = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    let at_start = cpu_time(served.pid());
    let started = Instant::now();
    for id in 1..=ROUND_TRIPS {
        let r = dbg.request(id, SET_VM, VM_VERSION, &[], Duration::from_secs(10)).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE), "reply {id}");
    }
    let busy = started.elapsed();
    assert!(dbg.take_other_packets().is_empty(), "nothing but the replies");
    let busy_cpu = cpu_time(served.pid()).saturating_sub(at_start);
    assert!(!busy_cpu.is_zero(), "the CPU time is read (relaying took some)");

    // Nobody speaks: the spin ends with the last packet, and the daemon sleeps.
    let before = cpu_time(served.pid());
    let watch = Instant::now();
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_cpu = cpu_time(served.pid()).saturating_sub(before);
    let watched = watch.elapsed();
    assert!(idle_cpu * 10 < watched, "the daemon used {idle_cpu:?} of CPU in {watched:?} while idle (spinning?)");
    println!("{ROUND_TRIPS} round trips in {busy:?} ({busy_cpu:?} of CPU); idle: {idle_cpu:?} of CPU in {watched:?}");
    drop(dbg);
    drop(served);
    app.kill().await.unwrap();
}

#[test]
fn a_spin_longer_than_a_millisecond_is_refused() {
    let out = std::process::Command::new(crate::cli::BIN)
        .env_remove("JDWPMUX_CONFIG")
        .args(["serve", "--no-adb", "--spin-us", "5000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--spin-us 5000: expected 0 to 1000"), "{err}");
}
