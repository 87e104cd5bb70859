//! With `--cpu-pin` the daemon keeps its thread on one CPU while it relays and that CPU is
//! quiet, and lets it move when something else keeps that CPU busy; by default it never pins.
//! Watched from outside, as a user would: the thread's `Cpus_allowed_list` in /proc.
//!
//! A test binary of its own: pinning is judged against a quiet machine, and cargo runs test
//! binaries one after another, so nothing of the integration tests runs beside these. Its
//! two tests take turns (`TURN`) for the same reason.

use testkit as support;
// The integration tests' daemon driver, shared with this binary.
#[path = "integration/served.rs"]
mod served;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::served::Served;
use crate::support::consts::*;
use crate::support::faults::ready_port;
use crate::support::{java_available, JavaApp, RawClient};

/// Held by each test for its whole run: one relaying daemon at a time.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Round trips per burst of traffic.
const BURST: u32 = 2_000;
/// How long a change of affinity is waited for, traffic flowing.
const DEADLINE: Duration = Duration::from_secs(30);

/// The CPUs a thread of `pid` may run on, from its status file ("0-1", "0,2-3", "1").
fn allowed_cpus(pid: u32) -> Vec<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).expect("the daemon runs");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("a Cpus_allowed_list line")
        .trim();
    list.split(',')
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (a.parse().expect("a CPU number"), b.parse().expect("a CPU number"));
            a..=b
        })
        .collect()
}

/// This process's own CPUs: what the daemon starts with.
fn our_cpus() -> Vec<usize> {
    allowed_cpus(std::process::id())
}

async fn burst(dbg: &mut RawClient, next_id: &mut u32) {
    for _ in 0..BURST {
        *next_id += 1;
        let r = dbg.request(*next_id, SET_VM, VM_VERSION, &[], Duration::from_secs(10)).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE), "reply {next_id}");
    }
}

/// Relays bursts until the daemon's thread's CPUs satisfy `cond`, or the deadline.
async fn relay_until(pid: u32, dbg: &mut RawClient, next_id: &mut u32, cond: impl Fn(&[usize]) -> bool) -> Vec<usize> {
    let until = Instant::now() + DEADLINE;
    loop {
        burst(dbg, next_id).await;
        let now = allowed_cpus(pid);
        if cond(&now) || Instant::now() > until {
            return now;
        }
    }
}

/// A HotSpot app, the daemon serving it (with `extra` arguments) and a debugger on its port.
struct Relayed {
    app: JavaApp,
    served: Served,
    dbg: RawClient,
}

impl Relayed {
    async fn start(extra: &[&str]) -> Relayed {
        assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
        let app = JavaApp::start(false).await.unwrap();
        let vm = app.host_port();
        let mut args = vec!["--vm", vm.as_str(), "--no-adb"];
        args.extend_from_slice(extra);
        let served = Served::start(&args);
        let rows = served.list_until("the VM ready", |r| ready_port(r, &vm).is_some()).await;
        let port = ready_port(&rows, &vm).unwrap();
        let dbg = RawClient::connect(("127.0.0.1", port)).await.unwrap();
        Relayed { app, served, dbg }
    }

    async fn stop(self) {
        let Relayed { mut app, served, dbg } = self;
        drop(dbg);
        drop(served);
        app.kill().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relaying_daemon_stays_on_a_quiet_cpu_and_leaves_a_busy_one() {
    let _turn = TURN.lock().await;
    let ours = our_cpus();
    let mut r = Relayed::start(&["--cpu-pin"]).await;
    let (pid, dbg) = (r.served.pid(), &mut r.dbg);
    assert_eq!(allowed_cpus(pid), ours, "an idle daemon is not pinned");
    let mut id = 0;

    if ours.len() < 2 {
        burst(dbg, &mut id).await;
        assert_eq!(allowed_cpus(pid), ours, "with one CPU there is nothing to choose");
    } else {
        let pinned = relay_until(pid, dbg, &mut id, |c| c.len() == 1).await;
        assert_eq!(pinned.len(), 1, "relaying on a quiet machine keeps the thread on one CPU ({pinned:?})");
        let cpu = pinned[0];

        // Something else keeps that CPU busy: the daemon lets its thread move.
        let stop = Arc::new(AtomicBool::new(false));
        let hog = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // SAFETY: an all-zero cpu_set_t is a valid empty set; pid 0 is this thread.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
                let until = Instant::now() + DEADLINE * 2;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        };
        let freed = relay_until(pid, dbg, &mut id, |c| c.len() > 1).await;
        stop.store(true, Ordering::Relaxed);
        hog.join().unwrap();
        assert_eq!(freed, ours, "a busy loop on CPU {cpu} frees the daemon's thread");
    }
    assert!(dbg.take_other_packets().is_empty(), "nothing but the replies");
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_thread_moves_freely() {
    let _turn = TURN.lock().await;
    let ours = our_cpus();
    let mut r = Relayed::start(&[]).await;
    let mut id = 0;
    // As many round trips as pin a `--cpu-pin` daemon within its first windows, several times.
    for _ in 0..5 {
        burst(&mut r.dbg, &mut id).await;
        assert_eq!(allowed_cpus(r.served.pid()), ours);
    }
    r.stop().await;
}
