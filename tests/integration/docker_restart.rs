//! The Docker Engine itself restarted under a debugger: a root `serve` reaching a container's
//! JVM through `--exec 'docker exec -i C' --far-copy`, jdb stopped at a breakpoint, and the
//! engine stopped and started again (`--live-restore`: its containers run on, as in
//! production). The exec drops with the engine: a cut, which the far side in the container
//! holds; once the engine answers again the next exec resumes the session, jdb's step
//! completes, and the app never ran meanwhile. An engine of the test's own (the shared one
//! serves other tests at the same time).

use std::time::{Duration, Instant};

use crate::cli::Served;
use crate::exec::{jdb, list_until, port_of, ready, stopped};
use crate::remote::SLOW;
use crate::support::containers::{AppClasses, PrivateDockerd, JDK17_HOME};

fn ticks(engine: &PrivateDockerd, name: &str) -> u64 {
    let logs = engine.command().args(["logs", name]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    logs.lines().rev().filter_map(|l| l.strip_prefix("tick ")).find_map(|n| n.trim().parse().ok()).unwrap_or(0)
}

async fn runs_on(engine: &PrivateDockerd, name: &str) {
    let start = ticks(engine, name);
    let deadline = Instant::now() + SLOW;
    while ticks(engine, name) < start + 2 {
        assert!(Instant::now() < deadline, "{name} did not run on");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_engine_restarted_while_a_debugger_is_stopped() {
    crate::need_docker!();
    let mut engine = tokio::task::spawn_blocking(PrivateDockerd::start).await.unwrap().expect("a private dockerd");
    let tag = format!("jm-restart:{}", std::process::id());
    let e = &engine;
    tokio::task::block_in_place(|| e.import_jdk(&tag)).expect("the JDK image");
    let src = crate::support::java::MAIN_JAVA.replace("Main", "Ledger");
    let cls = AppClasses::compile(&[("Ledger.java", &src)]).await.expect("javac");
    let name = format!("jmrestart{}", std::process::id());
    let java = format!("{JDK17_HOME}/bin/java");
    let classes = format!("{}:/app:ro", cls.dir().display());
    engine
        .docker(&[
            "run", "-d", "--name", &name, "--network=none", "-v", &classes, &tag, &java, "-Xmx64m", "-XX:+UseSerialGC",
            "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:5005", "-cp", "/app", "Ledger",
        ])
        .expect("docker run");
    let exec = format!("ledger=docker exec -i {name}");
    let host = engine.host();
    let served = Served::start_env(&["--no-proc", "--no-scan", "--no-adb", "--exec", &exec, "--far-copy", "--far-hold", "120"], &[("DOCKER_HOST", &host)]);
    let rows = list_until(&served, "Ledger through the private engine", |r| ready(r, "ledger", "Ledger")).await;
    let port = port_of(&rows, "ledger", "Ledger");
    let mut j = stopped(port, "Ledger").await;
    let at_stop = ticks(&engine, &name);

    // The engine goes (its containers run on), and comes back.
    tokio::task::block_in_place(|| engine.stop()).expect("dockerd stops");
    list_until(&served, "the row saying the exec is down", |r| r.iter().any(|v| v["note"].as_str().is_some_and(|n| n.contains("the exec to ledger is down")))).await;
    tokio::task::block_in_place(|| engine.restart_after_stop()).expect("dockerd starts again");
    served.wait_log("the exec to ledger is back").await;
    // (Its log is the engine's: read once it is back, with what was printed meanwhile.)
    assert_eq!(ticks(&engine, &name), at_stop, "the app ran while stopped");
    // The session was resumed, not begun again: jdb is still stopped, and steps.
    j.send("step").await.unwrap();
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    assert!(ticks(&engine, &name) <= at_stop + 1, "the app ran on past one step");
    j.send("clear Ledger.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Ledger.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    runs_on(&engine, &name).await;
    let log = served.log_text();
    assert!(!log.contains("let its VMs go"), "the far side held the session through the restart: {log}");
    let rows = list_until(&served, "Ledger ready on its port", |r| ready(r, "ledger", "Ledger")).await;
    assert_eq!(port_of(&rows, "ledger", "Ledger"), port);
    let mut j = jdb(port).await;
    crate::remote::break_step_clear_quit(&mut j, "Ledger").await;
    drop(served);
}
