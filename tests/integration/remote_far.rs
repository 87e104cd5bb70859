//! `serve --ssh HOST --far ...`: a test host (a network namespace with Debian's sshd) where
//! jdwpmux is found at the same path as here (namespaces share the file system), a real JVM
//! on the host's loopback. Through the far side, jdb breaks, steps and quits through the
//! VM's local port and the app runs on; with no usable far side, `auto` says why in one line
//! and the VM is reached through ssh forwards as before. `stats` shows the near side's replay
//! buffer for the link: bounded, and empty when idle.

use crate::remote::{debug_once, one_vm, OneVm};

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");

/// A jdwpmux for one test host: the real binary, its far side in a folder of the test's own.
/// Test hosts share this machine's file system, where real hosts have their own: without
/// it, the far sides of hosts tested at once would find each other's folder and socket.
pub struct FarBin {
    _dir: tempfile::TempDir,
    pub path: String,
}

impl FarBin {
    /// The far side's private folder on the host (`--dir`).
    pub fn far_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("far")
    }

    /// The far side's processes (found by the folder named on their command line; the host
    /// has a process list of its own, so its pid file holds another number).
    pub fn pids(&self) -> Vec<u32> {
        crate::support::process::pids_with_cmdline(&[BIN, "far", &self.far_dir().display().to_string()])
    }

    /// Waits until no far side runs; how long that took.
    pub async fn wait_gone(&self, within: std::time::Duration) -> std::time::Duration {
        let start = std::time::Instant::now();
        while !self.pids().is_empty() {
            assert!(start.elapsed() < within, "the far side {:?} still runs after {within:?}", self.pids());
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        start.elapsed()
    }
}

pub fn far_bin() -> FarBin {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jdwpmux");
    let far_dir = dir.path().join("far");
    std::fs::write(&path, format!("#!/bin/sh\nexec {BIN} \"$@\" --dir {}\n", far_dir.display())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    FarBin { path: path.display().to_string(), _dir: dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_jdb_breaks_steps_and_quits_through_jdwpmux_on_the_host() {
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farjdb", &["--far", "always", "--far-path", &far.path]).await;
    let line = served.wait_log("using jdwpmux on farjdb").await;
    assert!(line.contains("far.sock"), "{line}");
    debug_once(port, "Billing", &app).await;
    // A second debugger session on the same port: a new channel to the same VM.
    debug_once(port, "Billing", &app).await;
    assert!(!served.log_text().contains("ssh forwards"), "{}", served.log_text());
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_auto_without_jdwpmux_on_the_host_uses_forwards_and_says_why() {
    crate::need_test_hosts!();
    let missing = "/nonexistent/jdwpmux";
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farnone", &["--far", "auto", "--far-path", missing]).await;
    let line = served.wait_log("cannot be used").await;
    assert!(
        line.contains(&format!("jdwpmux on farnone cannot be used ({missing} was not found on the host); its VMs are reached through ssh forwards")),
        "{line}"
    );
    assert_eq!(served.log_text().matches("cannot be used").count(), 1, "one line: {}", served.log_text());
    debug_once(port, "Billing", &app).await;
    drop(served);
}

/// The link to the host is cut for 10 s while jdb is stopped at a breakpoint, and jdb steps
/// into the cut: the step waits, the VM stays suspended (the far side held its connection:
/// its agent never saw a debugger go), and when the link is back the step completes, later
/// commands are answered, and after jdb quits the app runs on. Nothing was lost or repeated:
/// jdb would hang on a lost reply, and the daemon logs a reply to an id with no request
/// outstanding (a repeated one) as it drops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_link_cut_while_stopped_at_a_breakpoint_loses_nothing() {
    use crate::remote::{jdb, SLOW};
    use std::time::Duration;
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host, app, served, port } = one_vm("farcut", &["--far", "always", "--far-path", &far.path]).await;
    served.wait_log("using jdwpmux on farcut").await;
    let mut j = jdb(port).await;
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Billing.tick").await.unwrap();
    j.expect_all(&["Set breakpoint Billing.tick", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    let stopped = app.ticks_seen();

    host.net.set_link(false).unwrap();
    let cut_at = tokio::time::Instant::now();
    let line = served.wait_cut("farcut").await;
    assert!(line.contains("its VMs are held by jdwpmux there"), "{line}");
    j.send("step").await.unwrap();
    tokio::time::sleep_until(cut_at + Duration::from_secs(10)).await;
    assert_eq!(app.ticks_seen(), stopped, "the VM ran during the cut: it saw its debugger go");
    host.net.set_link(true).unwrap();

    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect("main[1] ", SLOW).await.unwrap();
    println!("the step completed {:?} after the link was restored", cut_at.elapsed() - Duration::from_secs(10));
    j.send("where").await.unwrap();
    j.expect_all(&["Billing.tick", "main[1] "], SLOW).await.unwrap();
    j.send("clear Billing.tick").await.unwrap();
    j.expect_all(&["Removed: breakpoint Billing.tick", "main[1] "], SLOW).await.unwrap();
    j.quit().await.unwrap();
    app.wait_ticks_advance(SLOW).await.unwrap();
    let log = served.log_text();
    let bad: Vec<&str> = log.lines().filter(|l| l.contains("lost the VM connection") || l.contains("VM not reachable") || l.contains("no request of that id is outstanding")).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    drop(served);
}

/// A stand-in for jdwpmux of another version on a test host: a script at the far-side path
/// that says what `jdwpmux far --detach` says (its ready line), naming `protocol` and
/// `version`, and a socket at `socket` (which the test may serve).
fn fake_far(dir: &std::path::Path, socket: &std::path::Path, protocol: &str, version: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("jdwpmux");
    let line = format!("jdwpmux far: listening on {} (pid $$, protocol {protocol}, jdwpmux {version})", socket.display());
    std::fs::write(&path, format!("#!/bin/sh\necho \"{line}\"\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// With no `--far` at all (auto), a host whose jdwpmux speaks another far-side protocol is
/// served through ssh forwards, and one line names the host, both sides' versions and
/// protocols, and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_far_side_of_another_protocol_is_refused_with_one_clear_line() {
    crate::need_test_hosts!();
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_far(dir.path(), &dir.path().join("far.sock"), "9", "9.9.9");
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("faralien", &["--far-path", &fake]).await;
    let line = served.wait_log("speaks far-side protocol").await;
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        line.contains(&format!("jdwpmux on faralien (9.9.9) speaks far-side protocol 9, this one ({ours}) speaks {}: its VMs are reached through ssh forwards", jdwpmux::remote::protocol::hello::protocols(jdwpmux::remote::protocol::hello::PROTOCOL_MIN, jdwpmux::remote::protocol::hello::PROTOCOL))),
        "{line}"
    );
    assert!(line.contains(&format!("install jdwpmux {ours} on faralien")) && line.contains("or use --far never"), "{line}");
    assert!(line.contains(" INFO "), "a fallback is no failure: {line}");
    debug_once(port, "Billing", &app).await;
    assert_eq!(served.log_text().matches("speaks far-side protocol").count(), 1, "one line: {}", served.log_text());
    assert!(!served.log_text().contains("using jdwpmux on"), "{}", served.log_text());
    drop(served);
}

/// A far side whose ready line looks right but whose hello refuses this near side (its
/// protocol differs after all): the refusal, in the far side's own words, is said once with
/// the host's name, and the host goes on through ssh forwards; the near side does not come
/// back to the far side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_far_side_that_refuses_the_hello_leaves_the_host_to_forwards() {
    use bytes::BytesMut;
    use jdwpmux::remote::protocol::frame::{Body, ByeReason};
    use jdwpmux::remote::protocol::{FarCodec, Frame};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::codec::{Decoder, Encoder};
    crate::need_test_hosts!();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("far.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let protocol = jdwpmux::remote::protocol::hello::PROTOCOL;
    let fake = fake_far(dir.path(), &socket, &protocol.to_string(), "9.9.9");
    let text = "jdwpmux 9.9.9 on this host speaks far-side protocol 9: install the same version on both";
    let hellos = Arc::new(AtomicUsize::new(0));
    let counted = hellos.clone();
    // The far side's end: each connection's Hello is answered with Bye(Version).
    let far = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = BytesMut::new();
            let hello = loop {
                match FarCodec.decode(&mut buf) {
                    Ok(Some(f)) => break Some(f),
                    Ok(None) => {}
                    Err(_) => break None,
                }
                if !matches!(stream.read_buf(&mut buf).await, Ok(n) if n > 0) {
                    break None;
                }
            };
            if matches!(hello, Some(Frame { body: Body::Hello(_), .. })) {
                counted.fetch_add(1, Ordering::SeqCst);
                let bye = Frame { channel: 0, seq: 0, ack: 0, body: Body::Bye { reason: ByeReason::Version, text: text.into() } };
                let mut out = BytesMut::new();
                FarCodec.encode(&bye, &mut out).unwrap();
                let _ = stream.write_all(&out).await;
            }
        }
    });
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farbye", &["--far", "auto", "--far-path", &fake]).await;
    let line = served.wait_log("refused this one").await;
    assert!(line.contains(&format!("jdwpmux on farbye refused this one ({text}): its VMs are reached through ssh forwards")), "{line}");
    debug_once(port, "Billing", &app).await;
    let log = served.log_text();
    assert_eq!(log.matches("refused this one").count(), 1, "one line: {log}");
    assert_eq!(hellos.load(Ordering::SeqCst), 1, "the near side came back to a far side that refused it: {log}");
    drop(served);
    far.abort();
}

/// Through jdwpmux on the host, a JVM whose agent listens on all of the host's addresses is
/// marked as a scan of the host marks it (the far side's list carries each agent's bind
/// address); one on the host's loopback beside it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_an_agent_on_all_addresses_is_marked_through_the_far_side() {
    use crate::remote::{agent, jvm_on, row, serve};
    use crate::support::testhost::{Keys, TestHost};
    use crate::support::JavaApp;
    use std::path::Path;
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farwide").unwrap();
    let open = JavaApp::spawn(jvm_on(&host, Path::new("java"), "Open", agent(false, "0.0.0.0:8000"))).await.unwrap();
    let closed = JavaApp::spawn(jvm_on(&host, Path::new("java"), "Closed", agent(false, "127.0.0.1:8001"))).await.unwrap();
    let served = serve(&keys, &["farwide"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on farwide").await;
    let rows = served.list_until("both JVMs listed", |r| row(r, "farwide", "Open").is_some() && row(r, "farwide", "Closed").is_some()).await;
    let exposed = |app: &str| row(&rows, "farwide", app).map(|r| r["process"]["exposed"].clone()).unwrap_or_default();
    let wide = exposed("Open").as_str().unwrap_or_default().to_string();
    assert!(wide.contains("anyone who can reach farwide's port 8000") && wide.contains("address=127.0.0.1:8000"), "{rows:?}");
    assert!(exposed("Closed").is_null(), "{rows:?}");
    assert!(!served.log_text().contains("ssh forwards"), "{}", served.log_text());
    drop(served);
    drop((open, closed, host));
}

/// `serve` stopping tells the far side, which closes its VM connections and ends at once
/// instead of holding them for its hold (5 minutes): the ssh master is closed only after the
/// far side has read the Bye (a master asked to exit drops what it has not passed on). Three
/// rounds, since a lost Bye is a race; after each the VM takes a debugger again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_serve_stopping_ends_the_far_side_at_once() {
    use crate::remote::{port, ready, serve};
    use std::time::Duration;
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys, host: _host, app, mut served, port: _ } = one_vm("farbye", &["--far", "always", "--far-path", &far.path]).await;
    for round in 0..3 {
        if round > 0 {
            served = serve(&keys, &["farbye"], &["--far", "always", "--far-path", &far.path]);
        }
        served.wait_log("using jdwpmux on farbye").await;
        let rows = served.list_until("Billing ready", |r| ready(r, "farbye", "Billing")).await;
        let far_pids = far.pids();
        assert_eq!(far_pids.len(), 1, "round {round}: one far side: {far_pids:?}");
        debug_once(port(&rows, "farbye", "Billing"), "Billing", &app).await;
        assert_eq!(served.terminate(Duration::from_secs(10)), Some(0), "round {round}: {}", served.log_text());
        far.wait_gone(Duration::from_secs(10)).await;
    }
}

/// A leftover far side of an older protocol holds the folder (its lock and socket; its pid
/// file says `PID 1 0.0.9`): `far --detach` reports it with its own protocol and version,
/// and the near side starts its own beside it, says so in one line, and serves the VM
/// through it. The older one is left running. Before, it locked the current one out until
/// its hold ended, with lines alternating "install the same version on both".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_a_leftover_far_side_of_an_older_protocol_gets_this_ones_beside_it() {
    use std::os::unix::fs::DirBuilderExt;
    use std::time::{Duration, Instant};
    crate::need_test_hosts!();
    let far = far_bin();
    let far_dir = far.far_dir();
    std::fs::DirBuilder::new().mode(0o700).create(&far_dir).unwrap();
    // The older far side: the folder's lock held, its record written, its socket bound.
    let holder = "import fcntl, os, socket, sys, time\n\
        d = sys.argv[1]\n\
        f = open(os.path.join(d, 'far.pid'), 'w')\n\
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n\
        f.write('%d 1 0.0.9\\n' % os.getpid()); f.flush()\n\
        s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(d, 'far.sock')); s.listen(1)\n\
        while True: time.sleep(60)\n";
    let mut old = std::process::Command::new("python3").args(["-c", holder, &far_dir.display().to_string()]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(far_dir.join("far.pid")).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the older far side did not take its folder");
        std::thread::sleep(Duration::from_millis(50));
    }
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farold", &["--far", "always", "--far-path", &far.path]).await;
    let line = served.wait_log("which this one does not").await;
    assert!(line.contains(&format!("jdwpmux on farold (pid {}, jdwpmux 0.0.9) speaks far-side protocol 1, which this one does not: this one's runs beside it", old.id())), "{line}");
    assert!(line.contains(" INFO "), "{line}");
    let using = served.wait_log("using jdwpmux on farold").await;
    assert!(using.contains(&format!("protocol-{}", jdwpmux::remote::protocol::hello::PROTOCOL)), "{using}");
    debug_once(port, "Billing", &app).await;
    let log = served.log_text();
    assert_eq!(log.matches("which this one does not").count(), 1, "one line: {log}");
    assert!(!log.contains("install the same version") && !log.contains("ssh forwards"), "{log}");
    assert!(old.try_wait().unwrap().is_none(), "the older far side is left alone");
    drop(served);
    // SAFETY: kill on the pid of this test's own child.
    unsafe { libc::kill(old.id() as i32, libc::SIGKILL) };
    let _ = old.wait();
}

/// A far-side host's LAST SCAN is the far side's own scan (it sends its list after each
/// round while connected), not when its list last changed: read over 12 s of a VM that
/// changes nothing, it stays within a few seconds of now (before: 13-30 s ago).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_last_scan_is_the_far_sides_own() {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host: _host, app: _app, served, port: _port } = one_vm("farscan", &["--far", "always", "--far-path", &far.path]).await;
    served.wait_log("using jdwpmux on farscan").await;
    let end = Instant::now() + Duration::from_secs(12);
    let mut ages = Vec::new();
    while Instant::now() < end {
        let (code, out, err) = served.run(&["list", "--hosts", "--json"]);
        assert_eq!(code, 0, "{err}");
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        let row = rows.iter().find(|r| r["host"] == "farscan").cloned().unwrap_or_default();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let scanned = row["last_scan_ms"].as_u64().unwrap_or_else(|| panic!("{rows:?}"));
        ages.push(now.saturating_sub(scanned));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!("LAST SCAN ages (ms): {ages:?}");
    assert!(ages.iter().all(|a| *a < 6_000), "{ages:?}");
    drop(served);
}

/// `stats --json` shows the near side's replay buffer for the far link (what it sent and
/// the far side has not acknowledged yet): after a debug session through it, the most held
/// is above 0 (every command went through it) and within the resume limit, and with the
/// link idle (the far side acknowledges within 20 ms) nothing is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_stats_shows_the_replay_buffer_bounded_and_empty_when_idle() {
    use std::time::{Duration, Instant};
    crate::need_test_hosts!();
    let far = far_bin();
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farreplay", &["--far", "always", "--far-path", &far.path]).await;
    served.wait_log("using jdwpmux on farreplay").await;
    debug_once(port, "Billing", &app).await;
    let replay = || {
        let (code, out, err) = served.run(&["stats", "--json"]);
        assert_eq!(code, 0, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let link = report["links"].as_array().and_then(|l| l.iter().find(|l| l["host"] == "farreplay")).cloned().unwrap_or_else(|| panic!("no far link to farreplay in stats: {out}"));
        let r = link["replay"].clone();
        let keys = ["held_bytes", "held_frames", "most_bytes", "most_frames", "limit_bytes"];
        let n: Vec<u64> = keys.iter().map(|k| r[k].as_u64().unwrap_or_else(|| panic!("no whole number {k} in {link}"))).collect();
        assert_eq!(r.as_object().map(|o| o.len()), Some(keys.len()), "{r}");
        (n[0], n[1], n[2], n[3], n[4])
    };
    // The ack of the last frame comes within 20 ms; a sample may catch one in flight.
    let end = Instant::now() + Duration::from_secs(10);
    let (held, frames, most, most_frames, limit) = loop {
        let r = replay();
        if r.0 == 0 || Instant::now() > end {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("replay buffer after a debug session: held {held} bytes in {frames} frames, most {most} bytes and {most_frames} frames, limit {limit}");
    assert_eq!((held, frames), (0, 0), "idle and acknowledged: nothing held");
    assert!(most > 0 && most_frames > 0, "the session's commands were held until acknowledged: {most} bytes, {most_frames} frames");
    assert!(limit >= 1 << 20 && most <= limit + 64 * 1024, "the most held ({most}) within the limit ({limit}) and the few Opens and Closes past it");
    let (code, text, err) = served.run(&["stats"]);
    assert_eq!(code, 0, "{err}");
    let line = text.lines().find(|l| l.starts_with("far link replay to farreplay: ")).unwrap_or_else(|| panic!("no replay line: {text}"));
    assert!(line.contains(" 0 bytes in 0 frames held unacknowledged, at most "), "{line}");
    drop(served);
}
