//! A quiet start: at INFO, the daemon's own ports, one line per VM found and one naming the
//! current VM; a debugger says one line when it attaches and one when it leaves. The rest
//! (connecting, identifying, the JDWP description, reconnecting after a debugger) is at debug.

use crate::cli::{port_of, Served};
use crate::remote::{agent, program, SLOW};
use crate::support::{java_available, jdb_available, Jdb, JavaApp, JvmSpec};

/// The log's INFO and WARN lines (the others are debug, not written at `RUST_LOG=info`).
fn said(served: &Served) -> Vec<String> {
    served.log_text().lines().filter(|l| l.contains(" INFO ") || l.contains(" WARN ") || l.contains(" ERROR ")).map(String::from).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_jvms_start_in_seven_lines_and_a_jdb_session_in_two() {
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    let marker = format!("jdwpmux.test=quiet-{}", std::process::id());
    let spec = |class: &str| JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, "127.0.0.1:0"),
        sources: program(class),
        class: class.into(),
        ..JvmSpec::default()
    };
    let classes = ["Alpha", "Beta", "Gamma", "Delta"];
    let (a, b, c, d) = tokio::join!(
        JavaApp::spawn(spec(classes[0])),
        JavaApp::spawn(spec(classes[1])),
        JavaApp::spawn(spec(classes[2])),
        JavaApp::spawn(spec(classes[3]))
    );
    let _jvms = [a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()];

    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let rows = served.list_until("four JVMs ready", |r| r.len() == 4 && r.iter().all(|v| v["state"] == "ready")).await;
    let lines = said(&served);
    let text = lines.join("\n");
    // The daemon's ports, a line per VM with its port, pid and app, and the current VM.
    assert!(lines[0].contains("for the current VM") && lines[1].contains("control socket at"), "{text}");
    for class in classes {
        let row = rows.iter().find(|r| r["app"] == class).unwrap();
        let port = row["debugger_port"].as_u64().unwrap() as u16;
        let line = lines.iter().filter(|l| l.contains(&format!("({class} pid {}, found by its process)", row["pid"]))).collect::<Vec<_>>();
        assert!(line.len() == 1 && port_of(line[0]) == port, "one line for {class}, with its port {port}:\n{text}");
    }
    assert_eq!(lines.iter().filter(|l| l.contains("the current VM is")).count(), 1, "{text}");
    assert_eq!(lines.len(), 7, "a start with four JVMs fits a screen:\n{text}");

    // jdb through the current port, then quit: one line each way, nothing of the session's
    // reconnection to the VM after it.
    let current = port_of(&served.wait_log("for the current VM").await);
    let before = lines.len();
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{current}")).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    jdb.quit().await.unwrap();
    served.wait_log("debugger detached").await;
    served.wait_ready().await;
    let lines = said(&served);
    let session: Vec<&String> = lines[before..].iter().collect();
    assert_eq!(session.len(), 2, "{session:#?}");
    assert!(session[0].contains("debugger attached") && session[1].contains("debugger detached"), "{session:#?}");
}
