//! The current VM when none was selected: the JVM started last, found by its process, so
//! that `jdb -attach 127.0.0.1:8700` right after starting an app reaches that app. Said in
//! one log line; a JVM started later takes over; `select` pins one.

use crate::cli::{port_of, Served};
use crate::remote::{agent, debug_once, program};
use crate::support::{java_available, jdb_available, JavaApp, JvmSpec};

fn current_app(rows: &[serde_json::Value]) -> Option<&str> {
    rows.iter().find(|r| r["current"] == true).and_then(|r| r["app"].as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_recently_started_jvm_is_current_until_one_is_selected() {
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    let marker = format!("jdwpmux.test=newest-{}", std::process::id());
    let spec = |class: &str| JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, "127.0.0.1:0"),
        sources: program(class),
        class: class.into(),
        ..JvmSpec::default()
    };
    // Started one after the other: each listens before the next starts.
    let first = JavaApp::spawn(spec("First")).await.unwrap();
    let second = JavaApp::spawn(spec("Second")).await.unwrap();
    let third = JavaApp::spawn(spec("Third")).await.unwrap();

    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let rows = served.list_until("three JVMs ready", |r| r.len() == 3 && r.iter().all(|v| v["state"] == "ready")).await;
    assert_eq!(current_app(&rows), Some("Third"), "{rows:?}");
    let said = served.wait_log("the current VM is").await;
    assert!(said.contains("Third") && said.contains("most recently started"), "{said}");

    // 8700 (here an ephemeral current-VM port) leads to Third: jdb stops in Third.tick.
    let current_port = port_of(&served.wait_log("for the current VM").await);
    debug_once(current_port, "Third", &third).await;
    let announced = |s: &Served| s.log_text().lines().filter(|l| l.contains("the current VM is")).count();
    assert_eq!(announced(&served), 1, "one line for the three found at once:\n{}", served.log_text());

    // A JVM started now takes over, said in one more line.
    let fourth = JavaApp::spawn(spec("Fourth")).await.unwrap();
    served.list_until("Fourth current", |r| current_app(r) == Some("Fourth")).await;
    let says_fourth = || served.log_text().lines().any(|l| l.contains("the current VM is") && l.contains("Fourth"));
    crate::harness::wait_until("Fourth announced", says_fourth).await.unwrap_or_else(|e| panic!("{e}:\n{}", served.log_text()));
    assert_eq!(announced(&served), 2, "{}", served.log_text());

    // `select` pins one: the newest no longer leads.
    let (code, _, err) = served.run(&["select", "First"]);
    assert_eq!(code, 0, "{err}");
    let rows = served.list_until("First current", |r| current_app(r) == Some("First")).await;
    assert_eq!(rows.len(), 4, "{rows:?}");
    debug_once(current_port, "First", &first).await;
    drop((second, fourth));
}
