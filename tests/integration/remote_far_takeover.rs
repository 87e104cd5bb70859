//! Taking jdwpmux on a host over from another `serve` of the same login (`serve
//! --far-take-over`), with real components: a test host (a network namespace with Debian's
//! sshd), a real JVM there, jdb. The serve taken from is told in one line, its debugger is
//! closed and the VM runs on; it waits and never takes the far side back; the new one serves
//! the VM; one far process all along.

use std::time::Duration;

use tokio::time::Instant;

use crate::remote::{jdb, one_vm, port, ready, row, serve, OneVm, SLOW};
use crate::remote_far::far_bin;
use crate::support::process::pids_with_cmdline;

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_take_over_tells_the_first_once_and_it_never_takes_it_back() {
    crate::need_test_hosts!();
    let far = far_bin();
    let far_dir = far.far_dir().display().to_string();
    let far_pids = || pids_with_cmdline(&[BIN, "far", &far_dir]);
    // Both ask to take over: the one taken from must not take it back (no loop).
    let args = ["--far", "always", "--far-path", &far.path, "--far-take-over"];
    let OneVm { keys, host: _host, app, served: first, port: vm_port } = one_vm("fartake", &args).await;
    first.wait_log("using jdwpmux on fartake").await;
    let mut j = jdb(vm_port).await;
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Billing.tick").await.unwrap();
    j.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    let pids = far_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");

    let second = serve(&keys, &["fartake"], &args);
    let started = Instant::now();
    let line = first.wait_log("another serve took this far side over").await;
    println!("the first was told {:?} after the second started: {line}", started.elapsed());
    assert!(line.contains(" WARN ") && line.contains(&format!("pid {})", second.pid())) && line.contains("does not take it back"), "{line}");
    // Its debugger is closed, and the VM, let go, runs on.
    j.wait_exit(SLOW).await.expect("jdb closed after the take-over");
    app.wait_ticks_advance(SLOW).await.unwrap();
    let rows = second.list_until("Billing served by the second", |r| ready(r, "fartake", "Billing") && row(r, "fartake", "Billing").is_some_and(|v| v["note"].is_null())).await;
    println!("the second served the VM {:?} after it started", started.elapsed());
    let mut again = jdb(port(&rows, "fartake", "Billing")).await;
    again.expect("> ", SLOW).await.unwrap();
    crate::remote::break_step_quit(&mut again, "Billing", &app).await;

    // 20 s more (the first's waits are 5 s, then longer): it never takes the far side back.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let (log1, log2) = (first.log_text(), second.log_text());
    assert_eq!(log1.matches("another serve took this far side over").count(), 1, "{log1}");
    assert!(!log1.contains("will not take this serve") && !log1.contains("ended (pid") && !log1.contains("let its VMs go"), "{log1}");
    assert!(!log2.contains("took this far side over") && !log2.contains("will not take this serve"), "{log2}");
    let far_log = std::fs::read_to_string(far.far_dir().join("far.log")).unwrap_or_default();
    assert_eq!(far_log.matches("took the far side over").count(), 1, "{far_log}");
    assert_eq!(far_pids(), pids, "one far process all along");
    let rows = second.list_until("Billing still the second's", |r| ready(r, "fartake", "Billing")).await;
    assert!(row(&rows, "fartake", "Billing").is_some(), "{rows:?}");
    // The first's row, meanwhile, says what is so: its ssh link is up, the far side serves
    // another serve (not "the ssh link ... is down").
    let (_, out, _) = first.run(&["list", "--json"]);
    let theirs: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
    let note = row(&theirs, "fartake", "Billing").and_then(|v| v["note"].as_str()).unwrap_or("").to_string();
    assert!(note.contains("another serve") && !note.contains("ssh link to fartake is down"), "{theirs:?}");

    // The second stops, its far side with it: the first starts one again and serves the VM,
    // and its line does not say that VM connections were closed now (it held none).
    let mut second = second;
    second.terminate(SLOW);
    let stopped = Instant::now();
    let line = loop {
        if let Some(l) = first.log_text().lines().find(|l| l.contains("taken over by another serve, has ended")) {
            break l.to_string();
        }
        assert!(stopped.elapsed() < Duration::from_secs(120), "{}", first.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("the first started it again {:?} after the second stopped: {line}", stopped.elapsed());
    assert!(line.contains("this serve serves fartake again") && !line.contains("closed"), "{line}");
    let rows = first.list_until("Billing served by the first again", |r| ready(r, "fartake", "Billing")).await;
    // And its note goes with the take-over: within a few seconds, not 45.
    let back = Instant::now();
    loop {
        let (_, out, _) = first.run(&["list", "--json"]);
        let now: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
        if row(&now, "fartake", "Billing").is_some_and(|v| v["note"].is_null()) {
            break;
        }
        assert!(back.elapsed() < Duration::from_secs(10), "a note stayed on the row with the link up: {now:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut last = jdb(port(&rows, "fartake", "Billing")).await;
    last.expect("> ", SLOW).await.unwrap();
    crate::remote::break_step_quit(&mut last, "Billing", &app).await;
    assert!(!first.log_text().contains("ended (pid"), "{}", first.log_text());
    drop(first);
}
