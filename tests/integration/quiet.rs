//! A quiet start: at INFO, the daemon's own ports, one line per VM found and one naming the
//! current VM; a debugger says one line when it attaches and one when it leaves. The rest
//! (connecting, identifying, the JDWP description, reconnecting after a debugger) is at debug.

use crate::cli::{port_of, Served};
use crate::remote::{agent, program, SLOW};
use crate::support::{java_available, jdb_available, Jdb, JavaApp, JvmSpec, PortHold};

/// The log's INFO and WARN lines (the others are debug, not written at `RUST_LOG=info`).
fn said(served: &Served) -> Vec<String> {
    served.log_text().lines().filter(|l| l.contains(" INFO ") || l.contains(" WARN ") || l.contains(" ERROR ")).map(String::from).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_jvms_start_in_eleven_lines_and_a_jdb_session_in_two() {
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
    for class in classes {
        assert_eq!(lines.iter().filter(|l| l.contains("VM ready: ") && l.contains(&format!(", {class}, pid "))).count(), 1, "{class} ready:\n{text}");
    }
    assert_eq!(lines.len(), 11, "a start with four JVMs fits a screen:\n{text}");

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

/// A JVM that sleeps before its agent listens: the agent starts on the first throw of an
/// IllegalStateException (`onthrow`), a few seconds in, as a JVM still starting. Its
/// argument is the agent's port.
const LATE_JAVA: &str = r#"
public class Late {
    public static void main(String[] a) throws Exception {
        Thread.sleep(3000);
        try { throw new IllegalStateException("the agent starts now"); } catch (IllegalStateException e) { }
        // Started this way the agent does not say it listens: said for it, as the tests read it.
        System.out.println("Listening for transport dt_socket at address: " + a[0]);
        for (int i = 0; ; i++) { Thread.sleep(200); }
    }
}
"#;

/// The quick start as written (`java ... &` then `jdwpmux serve &` at once): the daemon finds
/// the JVM by its process before its agent listens. No warning while the agent starts, and
/// one line when the VM is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_found_before_its_agent_listens_gets_no_warning_and_one_ready_line() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=late-{}", std::process::id());
    // Refused until the agent binds it (with SO_REUSEADDR, as HotSpot does).
    let hold = PortHold::new();
    let agent = format!(
        "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{},onthrow=java.lang.IllegalStateException,launch=/bin/true",
        hold.port()
    );
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.2"]);
    let spec = JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: Some(agent),
        sources: vec![("Late.java".into(), LATE_JAVA.into())],
        class: "Late".into(),
        args: vec![hold.port().to_string()],
        ..JvmSpec::default()
    };
    let (jvm, found) = tokio::join!(
        async {
            let jvm = JavaApp::spawn(spec).await.unwrap();
            (jvm, tokio::time::Instant::now())
        },
        async {
            served.wait_log("(Late pid").await;
            tokio::time::Instant::now()
        }
    );
    let (_jvm, listening) = jvm;
    drop(hold);
    assert!(found < listening, "found by its process before its agent listened");
    served.list_until("Late ready", |r| r.len() == 1 && r[0]["state"] == "ready").await;
    let lines = said(&served);
    let text = lines.join("\n");
    assert!(!lines.iter().any(|l| l.contains(" WARN ")), "no warning while the agent starts:\n{text}");
    let ready: Vec<&String> = lines.iter().filter(|l| l.contains("VM ready: ") && l.contains("Late")).collect();
    assert_eq!(ready.len(), 1, "one line when it is ready:\n{text}");
}

/// Waits for a file named by its argument, then exits with 0: a JVM that ends normally.
const LEAVING_JAVA: &str = r#"
public class Leaving {
    public static void main(String[] a) throws Exception {
        java.io.File stop = new java.io.File(a[0]);
        while (!stop.exists()) Thread.sleep(20);
        System.out.println("leaving");
        System.exit(0);
    }
}
"#;

/// A JVM that exits normally is one INFO line, "Leaving (pid N) exited": no WARN for the
/// lost connection nor for the refused reconnects, and its row leaves `list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_that_exits_is_one_info_line() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let marker = format!("jdwpmux.test=leaving-{}", std::process::id());
    let spec = JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, "127.0.0.1:0"),
        sources: vec![("Leaving.java".into(), LEAVING_JAVA.into())],
        class: "Leaving".into(),
        args: vec!["{dir}/stop".into()],
        ..JvmSpec::default()
    };
    let mut app = JavaApp::spawn(spec).await.unwrap();
    let pid = app.pid().unwrap();
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    served.list_until("the JVM ready", |r| r.len() == 1 && r[0]["state"] == "ready").await;
    let before = said(&served).len();

    std::fs::write(app.dir().join("stop"), b"").unwrap();
    let status = app.wait_exit(SLOW).await.unwrap();
    assert!(status.success(), "{status:?}: {}", app.output());
    let line = served.wait_log(&format!("Leaving (pid {pid}) exited")).await;
    assert!(line.contains(" INFO "), "{line}");
    served.list_until("the JVM unlisted", |r| r.is_empty()).await;

    let after = said(&served).split_off(before);
    let text = after.join("\n");
    assert!(!after.iter().any(|l| l.contains(" WARN ") || l.contains(" ERROR ")), "a warning for a JVM that exited:\n{text}");
    assert_eq!(after.iter().filter(|l| l.contains(&format!("pid {pid}"))).count(), 1, "{text}");
}
