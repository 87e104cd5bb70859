//! A far side that is not one: `--far-path` names a program that starts as `jdwpmux far
//! --detach` does (its ready line, a Unix socket, a process of its own) and then answers
//! every connection with what it was given: garbage, a frame longer than any allowed, or a
//! goodbye refusing the session. The daemon stays up and says so in one line naming the
//! host; with `auto` the host's VMs are reached through ssh forwards (jdb works through
//! them), with `always` the link tries again at its backoff's pace, never in a tight loop.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use jdwpmux::remote::protocol::frame::{Body, ByeReason, Header, Kind};
use jdwpmux::remote::protocol::{FarCodec, Frame};
use tokio_util::codec::Encoder;

use crate::remote::{debug_once, one_vm, serve, OneVm, SLOW};
use crate::support::testhost::{Keys, TestHost};

/// What the fake far side serves: it binds its socket, prints the ready line, leaves in a
/// process of its own, and answers each connection (counted in `connections`) with the
/// bytes of `answer`, then waits for the near side to hang up.
const FAKE: &str = r#"
import os, socket, sys, time
folder = sys.argv[1]
sock = os.path.join(folder, "far.sock")
try:
    os.unlink(sock)
except FileNotFoundError:
    pass
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sock)
listener.listen(8)
answer = open(os.path.join(folder, "answer"), "rb").read()
ready = open(os.path.join(folder, "ready")).read()
child = os.fork()
if child > 0:
    print(ready.replace("pid unknown", "pid %d" % child), flush=True)
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    conn, _ = listener.accept()
    with open(os.path.join(folder, "connections"), "a") as f:
        f.write("%f\n" % time.monotonic())
    try:
        conn.sendall(answer)
        while conn.recv(65536):
            pass
    except OSError:
        pass
    conn.close()
"#;

/// A fake far side answering with `answer`, in a folder of the test's own.
struct Fake {
    dir: tempfile::TempDir,
    path: String,
}

impl Fake {
    fn new(answer: &[u8]) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("fake.py"), FAKE).unwrap();
        std::fs::write(d.join("answer"), answer).unwrap();
        std::fs::write(d.join("ready"), jdwpmux::remote::protocol::ready::ready_line(&d.join("far.sock"), None, false)).unwrap();
        let path = d.join("jdwpmux");
        // Its command line ends as the start gave it (`far --detach`), as a far side's does.
        std::fs::write(&path, format!("#!/bin/sh\nexec python3 {} {} \"$@\"\n", d.join("fake.py").display(), d.display())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fake { path: path.display().to_string(), dir }
    }

    /// Its processes still running (on the host: the test sees every pid namespace's).
    fn running(&self) -> Vec<u32> {
        crate::support::process::pids_with_cmdline(&["fake.py", &self.dir.path().display().to_string()])
    }

    /// Waits until none of its processes runs.
    async fn wait_ended(&self, why: &str) {
        let deadline = Instant::now() + SLOW;
        while !self.running().is_empty() {
            assert!(Instant::now() < deadline, "{why}: what was started as a far side still runs: {:?}", self.running());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// When each connection came (seconds of the host's monotonic clock).
    fn connections(&self) -> Vec<f64> {
        std::fs::read_to_string(self.dir.path().join("connections")).unwrap_or_default().lines().filter_map(|l| l.parse().ok()).collect()
    }
}

fn encoded(frame: &Frame) -> Vec<u8> {
    let mut out = BytesMut::new();
    FarCodec.encode(frame, &mut out).unwrap();
    out.to_vec()
}

/// A Data header announcing far more than a frame may hold, and a little of it.
fn too_long() -> Vec<u8> {
    let mut out = Vec::new();
    Header { len: u32::MAX, kind: Kind::Data, channel: 1, seq: 1, ack: 0 }.write(&mut out);
    out.extend_from_slice(&[0xAB; 1000]);
    out
}

fn bad_token() -> Vec<u8> {
    encoded(&Frame { channel: 0, seq: 0, ack: 0, body: Body::Bye { reason: ByeReason::BadToken, text: "that is not your session".into() } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_hostile_garbage_with_auto_falls_back_to_forwards_in_one_line() {
    crate::need_test_hosts!();
    let fake = Fake::new(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    let OneVm { keys: _keys, host: _host, app, served, port } = one_vm("farjunk", &["--far", "auto", "--far-path", &fake.path]).await;
    let line = served.wait_log("cannot be used").await;
    assert!(line.contains("jdwpmux on farjunk cannot be used (what was started there does not answer as a far side:"), "{line}");
    assert!(line.contains("its VMs are reached through ssh forwards"), "{line}");
    debug_once(port, "Billing", &app).await;
    let log = served.log_text();
    assert_eq!(log.matches("cannot be used").count(), 1, "one line: {log}");
    assert!(!fake.connections().is_empty());
    // Given up for forwards, what was started there is ended, not left running detached.
    fake.wait_ended("after the fallback to forwards").await;
    drop(served);
}

/// With `always`, each kind of hostile answer: the daemon stays up, one line names the
/// host, and the link tries again at its backoff's pace (200 ms doubling): from the first
/// connection to the fifth at least 200 + 400 + 800 + 1600 ms pass, where a tight loop
/// takes milliseconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_hostile_answers_with_always_are_retried_at_the_backoffs_pace() {
    crate::need_test_hosts!();
    for (alias, answer, said) in [("fartoolong", too_long(), "Data frame of 4294967295 bytes exceeds its maximum"), ("fartoken", bad_token(), "refused a new session (BadToken)")] {
        let fake = Fake::new(&answer);
        let keys = Keys::new().unwrap();
        let host = TestHost::start(&keys, alias).unwrap();
        let mut served = serve(&keys, &[alias], &["--far", "always", "--far-path", &fake.path]);
        let line = served.wait_log(&format!("jdwpmux on {alias} cannot be used")).await;
        assert!(line.contains("WARN") && line.contains(said), "{line}");
        // Its row says so: never `up` with "no JVM with a JDWP agent" while what was started
        // there has not answered as a far side.
        for _ in 0..10 {
            let (_, out, _) = served.run(&["list", "--hosts", "--json"]);
            let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
            let row = rows.iter().find(|r| r["host"] == alias).cloned().unwrap_or_default();
            assert!(row["state"] != "up" && row["reason"].as_str().is_some_and(|r| r.contains(said)), "{alias}: {row}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let deadline = Instant::now() + SLOW;
        while fake.connections().len() < 5 {
            assert!(Instant::now() < deadline, "{alias}: {} connections in {SLOW:?}", fake.connections().len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let at = fake.connections();
        assert!(at[4] - at[0] >= 2.9, "{alias}: five connections in {:.3} s: not at the backoff's pace", at[4] - at[0]);
        assert!(served.is_running(), "{alias}: the daemon ended");
        let log = served.log_text();
        assert_eq!(log.matches("cannot be used").count(), 1, "{alias}: one line, the rest at debug: {log}");
        // Stopped as a user stops it (SIGTERM): what never answered as a far side ends with
        // the serve that started it (a refusal is a far side's own word: it may serve
        // another serve, and is left alone).
        served.terminate(SLOW);
        if alias == "fartoolong" {
            fake.wait_ended("after serve stopped").await;
        }
        drop(host);
    }
}

/// A far side that answers the Hello as a far side does and then sends garbage: each
/// connection lives a moment, and the link tries again at its backoff's growing pace, not
/// every few hundred milliseconds (the backoff starts again only after a connection that
/// lasted); the daemon stays up, and its WARN lines stay few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_hostile_a_hello_then_garbage_is_retried_at_the_backoffs_pace() {
    use jdwpmux::remote::protocol::frame::{Hello, Role, SessionKey};
    crate::need_test_hosts!();
    let hello = Hello {
        role: Role::Far,
        proto_min: jdwpmux::remote::protocol::hello::PROTOCOL,
        proto_max: jdwpmux::remote::protocol::hello::PROTOCOL,
        binary: jdwpmux_version(),
        session: SessionKey { id: [1; 16], token: [2; 16] },
        hold_secs: 60,
        resumed: false,
        gather: false,
    };
    let mut answer = encoded(&Frame { channel: 0, seq: 0, ack: 0, body: Body::Hello(hello) });
    answer.extend_from_slice(b"garbage, not a frame header at all\n");
    let fake = Fake::new(&answer);
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farhello").unwrap();
    let mut served = serve(&keys, &["farhello"], &["--far", "always", "--far-path", &fake.path]);
    let deadline = Instant::now() + SLOW;
    while fake.connections().len() < 6 {
        assert!(Instant::now() < deadline, "{} connections in {SLOW:?}", fake.connections().len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let at = fake.connections();
    // 200 ms doubling: 200 + 400 + 800 + 1600 + 3200 ms at least between the first and sixth.
    assert!(at[5] - at[0] >= 5.5, "six connections in {:.3} s: not at the backoff's pace ({at:?})", at[5] - at[0]);
    assert!(served.is_running(), "the daemon ended");
    let log = served.log_text();
    let warns = log.lines().filter(|l| l.contains(" WARN ")).count();
    assert!(warns <= 6, "{warns} WARN lines for {} tries: {log}", at.len());
    drop(served);
    drop(host);
}

fn jdwpmux_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// A far-side command that never answers (it starts and waits for ever): each start is
/// given up after its timeout, and nothing of it stays on the host, neither during the
/// tries (at most the one under way) nor once serve has stopped, which ends the try under
/// way there at once. Before, every try left a `sh -c ... far --detach` and its child there
/// (4 pairs in 70 s), and later the try under way stayed until the host's watchdog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_hostile_a_start_that_never_answers_leaves_nothing_on_the_host() {
    crate::need_test_hosts!();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jdwpmux");
    let mark = format!("never-answers-{}", std::process::id());
    std::fs::write(&path, format!("#!/bin/sh\nsh -c 'sleep 600; : {mark}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = path.display().to_string();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farnever").unwrap();
    // The host's own processes (it has a process list of its own): their command lines.
    let on_host = || -> Vec<String> {
        let mut cmd = std::process::Command::new(&host.prefix()[0]);
        cmd.args(&host.prefix()[1..]).args(["sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null"]);
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(&path) || l.contains(&mark)).map(str::to_string).collect()
    };
    let mut served = serve(&keys, &["farnever"], &["--far", "always", "--far-path", &path]);
    let line = served.wait_log("did not answer within").await;
    assert!(line.contains("jdwpmux on farnever cannot be used") && line.contains(" WARN "), "{line}");
    // The first try's processes are gone by now; a second may be under way: one at most.
    let scripts = on_host().iter().filter(|l| l.starts_with("/bin/sh ") && l.contains(&path)).count();
    assert!(scripts <= 1, "tries left on the host: {:#?}", on_host());
    // The host's row says why, not `connecting` with no reason.
    let (code, out, err) = served.run(&["list", "--hosts", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let row = rows.iter().find(|r| r["host"] == "farnever").unwrap_or(&serde_json::Value::Null);
    assert!(row["state"] == "down" && row["reason"].as_str().is_some_and(|r| r.contains("did not answer within")), "{rows:?}");
    // What serve started there ends when serve ends: at once, not at the host's watchdog
    // (18 s); and serve itself stops within its grace.
    let stopping = Instant::now();
    assert_eq!(served.terminate(SLOW), Some(0), "{}", served.log_text());
    let stopped_in = stopping.elapsed();
    assert!(!served.log_text().contains("did not stop within"), "{}", served.log_text());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = on_host();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left on the host after serve stopped (in {stopped_in:?}): {left:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(host);
}

/// jdwpmux on the host stopped (SIGSTOP) 22 s with the ssh master up, `--far-hold 30`: the
/// near side says in one WARN line that it runs but does not answer, and the host's row is
/// `down` with that reason (before: nothing said, the host `up`); after SIGCONT, within the
/// hold, one line says it answers again and the row is `up`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_hostile_a_far_side_stopped_is_said_once_and_its_return_too() {
    use crate::support::process::pids_with_cmdline;
    crate::need_test_hosts!();
    let far = crate::remote_far::far_bin();
    let far_dir = far.far_dir().display().to_string();
    let OneVm { keys: _keys, host: _host, app: _app, served, port: _port } = one_vm("farstop", &["--far", "always", "--far-path", &far.path, "--far-hold", "30"]).await;
    served.wait_log("using jdwpmux on farstop").await;
    let pids = pids_with_cmdline(&[env!("CARGO_BIN_EXE_jdwpmux"), "far", &far_dir]);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let host_row = || {
        let (_, out, _) = served.run(&["list", "--hosts", "--json"]);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
        rows.into_iter().find(|r| r["host"] == "farstop").unwrap_or_default()
    };
    crate::support::process::signal(pids[0], libc::SIGSTOP).unwrap();
    let stopped = Instant::now();
    let line = served.wait_log("runs but does not answer").await;
    println!("said {:?} after the stop: {line}", stopped.elapsed());
    assert!(line.contains(" WARN ") && line.contains("jdwpmux on farstop (pid "), "{line}");
    let row = host_row();
    assert!(row["state"] == "down" && row["reason"].as_str().is_some_and(|r| r.contains("runs but does not answer")), "{row}");
    tokio::time::sleep_until((stopped + Duration::from_secs(22)).into()).await;
    crate::support::process::signal(pids[0], libc::SIGCONT).unwrap();
    served.wait_log("jdwpmux on farstop answers again").await;
    let deadline = Instant::now() + SLOW;
    while host_row()["state"] != "up" {
        assert!(Instant::now() < deadline, "{}", host_row());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = served.log_text();
    assert_eq!(log.matches("runs but does not answer").count(), 1, "{log}");
    assert!(!log.contains("ended (pid") && !log.contains("let its VMs go"), "the far side's session was kept: {log}");
    drop(served);
}
