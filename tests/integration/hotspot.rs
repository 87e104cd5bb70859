//! A real HotSpot JVM behind the proxy, driven by the real jdb.

use std::time::Duration;

use jdwpmux::settings::DdmMode;

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::tap::Tap;
use crate::support::{java_available, jdb_available, JavaApp, Jdb};

/// jdb and a JVM on a busy 2-core machine can be slow to start.
const SLOW: Duration = Duration::from_secs(60);

fn tools() -> bool {
    // ./test.sh installs a JDK; a machine without one cannot run these tests.
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    true
}

/// jdb output a broken id mapping would produce.
fn assert_clean(jdb: &Jdb) {
    let out = jdb.output();
    for bad in ["Ignoring cmd", "Received reply with no sender", "Exception", "Internal exception"] {
        assert!(!out.contains(bad), "jdb said {bad:?}:\n{out}");
    }
}

/// Attaches jdb; the caller waits for the prompt it expects ("> " or "main[1] ").
async fn attach(port: u16) -> Jdb {
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{port}")).await.unwrap();
    jdb.expect("Initializing jdb", SLOW).await.unwrap();
    jdb
}

/// Sends a command and waits for its answer and the prompt after it: jdb handles events on
/// another thread, and a command typed while it prints an event can hit a jdb-internal race.
async fn command(jdb: &mut Jdb, line: &str, answers: &[&str]) {
    jdb.send(line).await.unwrap();
    for a in answers {
        jdb.expect(a, SLOW).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdb_through_the_proxy_breaks_detaches_and_the_app_runs_on() {
    tools();
    let mut app = JavaApp::start(false).await.unwrap();
    let tap = Tap::start(app.addr()).await;
    let proxy = Proxy::start(&[tap.addr()], DdmMode::Auto).await;
    let info = proxy.ready(0).await;
    assert_eq!(info.status.ddm, Some(false));
    assert!(info.status.vm_ident.as_deref().unwrap_or("").contains("OpenJDK"), "{:?}", info.status.vm_ident);

    // 1. Through the current-VM port: stop, hit, and quit while suspended at the breakpoint.
    let mut jdb = attach(proxy.current_addr().port()).await;
    jdb.expect("> ", SLOW).await.unwrap();
    jdb.send("stop in Main.tick").await.unwrap();
    jdb.expect_all(&["Set breakpoint Main.tick", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    command(&mut jdb, "where", &["Main.main", "main[1] "]).await;
    assert_clean(&jdb);
    jdb.quit().await.unwrap();
    // The VM forgot the debugger: the app runs on and the breakpoint no longer fires.
    app.wait_ticks_advance(SLOW).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();

    // 2. Again, through the VM's own port: it works, and it can step.
    proxy.ready(0).await;
    let mut jdb = attach(info.debugger_port.unwrap()).await;
    jdb.expect("> ", SLOW).await.unwrap();
    jdb.send("stop in Main.tick").await.unwrap();
    jdb.expect_all(&["Set breakpoint Main.tick", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    command(&mut jdb, "step", &["Step completed", "main[1] "]).await;
    command(&mut jdb, "clear Main.tick", &["Removed: breakpoint Main.tick", "main[1] "]).await;
    jdb.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    assert_clean(&jdb);
    jdb.quit().await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();

    // 3. The proxy never sent HotSpot anything it could choke on.
    let sent = tap.sent_to_vm();
    assert!(sent.len() > 10, "the tap saw the traffic");
    for p in &sent {
        if let Some((set, cmd)) = p.command_of() {
            assert!(set < 0x80 && cmd != 0 && cmd < 0x80, "sent set {set} cmd {cmd} to HotSpot");
        } else {
            panic!("sent a reply packet to HotSpot");
        }
    }
    proxy.stop().await;
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_jvm_waits_for_the_first_debugger() {
    tools();
    let mut app = JavaApp::start(true).await.unwrap();
    let proxy = Proxy::start(&[app.addr()], DdmMode::Auto).await;
    proxy.ready(0).await;
    assert_eq!(app.ticks_seen(), None, "suspend=y holds the app before main");
    let mut jdb = attach(proxy.current_addr().port()).await;
    // jdb sees the held VM_START and the VM still suspended; `cont` lets main run.
    jdb.expect("VM Started", SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    jdb.send("cont").await.unwrap();
    wait_until("first tick", || app.ticks_seen().is_some()).await.unwrap();
    assert_clean(&jdb);
    jdb.quit().await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    let _ = SOON;
    proxy.stop().await;
    app.kill().await.unwrap();
}

/// A JVM killed and another started on the same port: `list` shows the new process's pid,
/// not the old one's (the pid is looked up again on each connection after a loss).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_restarted_on_the_same_port_shows_its_new_pid() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let mut first = JavaApp::start(false).await.unwrap();
    let port = first.port();
    let first_pid = first.pid().unwrap();
    let proxy = Proxy::start(&[first.addr()], DdmMode::Auto).await;
    wait_until("the first JVM's pid", || proxy.list()[0].status.pid == Some(first_pid)).await.unwrap();
    first.kill().await.unwrap();
    let mut second = JavaApp::start_at(false, port).await.unwrap();
    let second_pid = second.pid().unwrap();
    assert_ne!(first_pid, second_pid);
    wait_until("the second JVM's pid", || proxy.list()[0].status.pid == Some(second_pid)).await.unwrap();
    proxy.stop().await;
    second.kill().await.unwrap();
}
