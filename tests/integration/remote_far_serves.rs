//! The far side and the near sides that use it (`serve --ssh HOST --far always`), on a test
//! host with a real JVM and jdb: a near side that dies is held for, then the far side lets
//! the VM go and ends; a second serve of the same login waits, never taking the VMs from the
//! first, and takes over once the first stops.

use std::time::Duration;

use tokio::time::Instant;

use crate::remote::{jdb, SLOW};
use crate::remote_far::far_bin;
use crate::remote_far_cuts::stopped_at_tick;

/// The near side dies (serve is killed, the link stays up): the far side holds the VM for
/// its hold (8 s here), then lets it go (the app stopped at jdb's breakpoint runs on) and
/// ends itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_near_side_that_dies_is_held_for_and_then_the_far_side_ends() {
    use crate::remote::{one_vm, OneVm};
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host: _host, app, mut served, port: vm_port } = one_vm("farorphan", &["--far", "always", "--far-path", &far.path, "--far-hold", "8"]).await;
    served.wait_log("using jdwpmux on farorphan").await;
    let mut j = jdb(vm_port).await;
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Billing.tick").await.unwrap();
    j.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    let stopped = app.ticks_seen();
    let pids = far.pids();
    assert_eq!(pids.len(), 1, "{pids:?}");

    crate::support::process::signal(served.pid(), libc::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while served.is_running() {
        assert!(Instant::now() < deadline, "serve still runs after SIGKILL");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(far.pids(), pids, "the far side holds the VM for a near side that may come back");
    assert_eq!(app.ticks_seen(), stopped, "the VM is held stopped");
    far.wait_gone(SLOW).await;
    let ended = killed.elapsed();
    println!("the far side ended {ended:?} after its near side was killed");
    assert!(ended >= Duration::from_secs(7), "ended after {ended:?}, before its hold ran out");
    app.wait_ticks_advance(SLOW).await.unwrap();
    j.kill().await;
}

/// Two `serve` daemons of one login on one host (two terminals, or two people sharing a
/// service login): jdb stopped at a breakpoint through the first is not disturbed by the
/// second starting (no loop of sessions taking the far side from each other: the second is
/// refused, with one WARN line naming the first's machine and pid, and waits); once the
/// first stops, the second takes the far side over and serves the VM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_second_serve_of_the_login_waits_and_never_takes_the_vms_from_the_first() {
    use crate::remote::{one_vm, ready, row, serve, OneVm};
    crate::need_test_hosts!();
    let far = far_bin();
    let args = ["--far", "always", "--far-path", &far.path];
    let OneVm { keys, host: _host, app, served: mut first, port: vm_port } = one_vm("fartwo", &args).await;
    first.wait_log("using jdwpmux on fartwo").await;
    let (mut j, stopped) = stopped_at_tick(vm_port, &app).await;

    let second = serve(&keys, &["fartwo"], &args);
    let started = Instant::now();
    let line = second.wait_log("serves another serve now").await;
    println!("the second serve was refused {:?} after it started: {line}", started.elapsed());
    assert!(line.contains("WARN") && line.contains(&format!("pid {})", first.pid())) && line.contains("to take over, start this serve with --far-take-over, or stop that one"), "{line}");
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(app.ticks_seen(), stopped, "the VM ran: the first serve's stop was taken");
    j.send("step").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    let (log1, log2) = (first.log_text(), second.log_text());
    let noisy = |log: &str| log.lines().filter(|l| l.contains(" WARN ") || l.contains(" INFO ")).count();
    let refusals = log2.lines().filter(|l| l.contains("serves another serve now")).count();
    println!("in 20 s beside the first: the second said {} WARN/INFO lines ({refusals} about the first), the first {}", noisy(&log2), noisy(&log1));
    assert_eq!(refusals, 1, "{log2}");
    assert!(noisy(&log2) <= 15, "{log2}");
    assert!(!log1.contains("let its VMs go") && !log1.contains("lost the ssh link") && !log1.contains("ended (pid"), "{log1}");
    let far_log = std::fs::read_to_string(far.far_dir().join("far.log")).unwrap_or_default();
    assert!(!far_log.contains("a new session"), "{far_log}");
    assert!(far_log.lines().filter(|l| l.contains("refused a near side")).count() <= 4, "{far_log}");
    j.send("clear Billing.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Billing.tick", "main[1] "], SLOW).await.unwrap();
    j.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    j.quit().await.unwrap();

    // The first stops (its far side with it): the second takes over and serves the VM.
    first.terminate(SLOW);
    let gone = Instant::now();
    let rows = second.list_until("Billing served by the second", |r| ready(r, "fartwo", "Billing") && row(r, "fartwo", "Billing").is_some_and(|v| v["note"].is_null())).await;
    println!("the second serve took over {:?} after the first stopped", gone.elapsed());
    let mut again = jdb(crate::remote::port(&rows, "fartwo", "Billing")).await;
    again.expect("> ", SLOW).await.unwrap();
    crate::remote::break_step_quit(&mut again, "Billing", &app).await;
    drop(second);
}
