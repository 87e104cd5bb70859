//! `netns::connect`: a socket connected inside another network namespace, both ways in.
//! Root's thread, into a namespace of `ip netns` named by a process living in it; and the
//! rootless helper, run by the real binary as a real non-root user (`setpriv`) into the
//! namespaces of a user's own `unshare --user --net` (a rootless container's shape), the
//! test (root) receiving the socket. Each way's connect time is printed, not asserted.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jdwpmux::netns::{self, NsError, NsTarget};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::testnet::{bind_in_netns, Netns};
use crate::support::users::{is_root, TestUser};
use crate::support::PortHold;

/// Generous: connects here take milliseconds, but machines under load stall.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Connects timed per way.
const ROUNDS: usize = 10;

/// A process the test started: killed and reaped when the test ends, however it ends.
struct Reaped(Child);

impl Reaped {
    fn spawn(cmd: &mut Command) -> Reaped {
        Reaped(cmd.stdin(Stdio::null()).spawn().expect("the process starts"))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn end(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        self.end();
    }
}

fn inode(path: &str) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// Polls `ready` until it holds, up to 20 s; panics naming `what`.
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Bytes both ways between `ours` and `theirs`.
async fn round_trip(ours: &mut TcpStream, theirs: &mut TcpStream) {
    ours.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    theirs.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    theirs.write_all(b"pong").await.unwrap();
    ours.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong");
}

/// The user's echo server's greeting.
const GREETING: &[u8] = b"echo inside the user's namespace\n";

/// The greeting of the echo server at the other end, then bytes through it.
async fn echoed(s: &mut TcpStream, what: &[u8]) {
    let mut hello = vec![0u8; GREETING.len()];
    tokio::time::timeout(TIMEOUT, s.read_exact(&mut hello)).await.expect("the greeting in time").unwrap();
    assert_eq!(hello, GREETING, "the server inside the namespace answered");
    s.write_all(what).await.unwrap();
    let mut buf = vec![0u8; what.len()];
    tokio::time::timeout(TIMEOUT, s.read_exact(&mut buf)).await.expect("the echo in time").unwrap();
    assert_eq!(buf, what);
}

fn print_times(way: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    let (min, med, max) = (ms[0], ms[ms.len() / 2], ms[ms.len() - 1]);
    eprintln!("netns connect, {way}: min {min:.2} ms, median {med:.2} ms, max {max:.2} ms over {} connects", ms.len());
}

/// Root's way: a thread joins the namespace of a process living in it. The listener there
/// answers; the same address here has nothing; a wrong inode or a dead process is `Gone`.
#[tokio::test]
async fn root_enters_the_namespace_of_a_process() {
    crate::need_test_hosts!();
    let ns = Netns::new().unwrap();
    // The port is held (bound, never listening) here too: 127.0.0.1:PORT in this namespace
    // is refused, whatever else runs on the machine.
    let hold = PortHold::new();
    let addr: SocketAddr = ([127, 0, 0, 1], hold.port()).into();
    let listener = tokio::net::TcpListener::from_std(bind_in_netns(&ns.name, addr).unwrap()).unwrap();
    let mut sleeper = Reaped::spawn(Command::new("ip").args(["netns", "exec", &ns.name, "sleep", "600"]));
    let pid = sleeper.pid();
    let net = inode(&format!("/run/netns/{}", ns.name)).expect("the namespace's inode");
    until("the process inside the namespace", || inode(&format!("/proc/{pid}/ns/net")) == Some(net)).await;
    let t = NsTarget { pid, net, addr };

    let mut ours = netns::connect(&t, TIMEOUT).await.expect("a connection inside the namespace");
    let (mut theirs, _) = listener.accept().await.unwrap();
    round_trip(&mut ours, &mut theirs).await;
    drop((ours, theirs));

    let here = TcpStream::connect(addr).await.expect_err("nothing listens here");
    assert_eq!(here.kind(), std::io::ErrorKind::ConnectionRefused, "{here}");
    let empty = NsTarget { addr: ([127, 0, 0, 1], hold.port().wrapping_add(1).max(1)).into(), ..t.clone() };
    match netns::connect(&empty, TIMEOUT).await {
        Err(NsError::Connect { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused),
        other => panic!("a port with nothing inside: {other:?}"),
    }
    let wrong = NsTarget { net: net + 1, ..t.clone() };
    match netns::connect(&wrong, TIMEOUT).await {
        Err(e @ NsError::Gone { now: Some(now), .. }) if now == net => eprintln!("wrong inode: {e}"),
        other => panic!("a wrong inode: {other:?}"),
    }

    let mut ms = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let s = netns::connect(&t, TIMEOUT).await.unwrap();
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        let (them, _) = listener.accept().await.unwrap();
        drop((s, them));
    }
    print_times("root, thread (ip netns)", ms);

    // Our own namespace: an ordinary connect, still checked against the process.
    let local = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let me = NsTarget { pid: std::process::id(), net: inode("/proc/self/ns/net").unwrap(), addr: local.local_addr().unwrap() };
    let mut ours = netns::connect(&me, TIMEOUT).await.expect("a connection in our own namespace");
    let (mut theirs, _) = local.accept().await.unwrap();
    round_trip(&mut ours, &mut theirs).await;

    sleeper.end();
    match netns::connect(&t, TIMEOUT).await {
        Err(e @ NsError::Gone { now: None, .. }) => eprintln!("dead process: {e}"),
        other => panic!("a dead process: {other:?}"),
    }
}

/// Why this machine cannot make unprivileged user namespaces, or None when it can.
fn no_unprivileged_userns() -> Option<String> {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some("unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)".into());
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("user namespaces are disabled (user.max_user_namespaces = 0)".into());
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)".into());
    }
    None
}

/// The port the user's listener takes inside its own namespace: nothing else is there.
const INSIDE_PORT: u16 = 5005;

/// An echo server, one connection at a time, on 127.0.0.1:INSIDE_PORT; it greets each
/// connection with its first argument, so that the test knows which server it reached.
const ECHO: &str = "import socket, sys
s = socket.socket()
s.bind(('127.0.0.1', 5005))
s.listen(64)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[1].encode())
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
";

fn listens_on(pid: u32, port: u16) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
        .is_ok_and(|t| t.lines().any(|l| l.split_whitespace().nth(1) == Some(&want) && l.split_whitespace().nth(3) == Some("0A")))
}

/// `user`'s words followed by the built binary: the helper run as that user.
fn helper_as(user: &TestUser) -> Vec<OsString> {
    let mut words: Vec<OsString> = user.prefix().into_iter().map(Into::into).collect();
    words.push(env!("CARGO_BIN_EXE_jdwpmux").into());
    words
}

/// The rootless way end to end: a user's own user and network namespaces (`unshare --user
/// --map-root-user --net`, as rootless Podman makes them), entered by the real binary run as
/// that user, the socket received here. Another user is refused with the remedy; root's
/// thread enters the same namespace.
#[tokio::test]
async fn a_user_enters_its_own_rootless_namespace() {
    crate::need_test_hosts!();
    if !is_root() {
        crate::not_run!("making test users needs root");
    }
    if let Some(why) = no_unprivileged_userns() {
        crate::not_run!(why);
    }
    let owner = TestUser::create("nsowner").unwrap();
    let stranger = TestUser::create("nsother").unwrap();
    let probe = owner.command("unshare").args(["--user", "--map-root-user", "--net", "true"]).stdin(Stdio::null()).output().unwrap();
    if !probe.status.success() {
        crate::not_run!(format!("a user cannot make a user namespace here: {}", String::from_utf8_lossy(&probe.stderr).trim()));
    }
    let ip = ["/usr/sbin/ip", "/usr/bin/ip", "/sbin/ip", "/bin/ip"].into_iter().find(|p| std::path::Path::new(p).exists()).expect("ip");
    let script = format!("{ip} link set lo up && exec python3 -c \"$1\" \"$2\"");
    let greeting = std::str::from_utf8(GREETING).unwrap();
    let mut jvm = Reaped::spawn(owner.command("unshare").args(["--user", "--map-root-user", "--net", "sh", "-c", &script, "sh", ECHO, greeting]));
    let pid = jvm.pid();
    until("the user's listener inside its namespace", || listens_on(pid, INSIDE_PORT)).await;
    let net = inode(&format!("/proc/{pid}/ns/net")).unwrap();
    assert_ne!(Some(net), inode("/proc/self/ns/net"), "the listener is in a namespace of its own");
    assert_ne!(inode(&format!("/proc/{pid}/ns/user")), inode("/proc/self/ns/user"), "... owned by a user namespace of its own");
    let t = NsTarget { pid, net, addr: ([127, 0, 0, 1], INSIDE_PORT).into() };
    let as_owner = helper_as(&owner);

    let mut s = netns::connect_through_helper(&t, TIMEOUT, &as_owner).await.expect("the owner's helper connects");
    echoed(&mut s, b"through the helper").await;
    drop(s);

    let empty = NsTarget { addr: ([127, 0, 0, 1], INSIDE_PORT + 1).into(), ..t.clone() };
    match netns::connect_through_helper(&empty, TIMEOUT, &as_owner).await {
        Err(NsError::Connect { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused, "{source}"),
        other => panic!("a port with nothing inside: {other:?}"),
    }
    match netns::connect_through_helper(&NsTarget { net: net + 1, ..t.clone() }, TIMEOUT, &as_owner).await {
        Err(NsError::Gone { now: Some(now), .. }) if now == net => {}
        other => panic!("a wrong inode: {other:?}"),
    }
    match netns::connect_through_helper(&t, TIMEOUT, &helper_as(&stranger)).await {
        Err(e @ NsError::Denied { .. }) => {
            eprintln!("another user: {e}");
            assert!(e.to_string().contains("run jdwpmux as root (with --other-users)"), "{e}");
        }
        other => panic!("another user's helper: {other:?}"),
    }

    // Root's thread needs no helper: it holds CAP_SYS_ADMIN over the user's namespace.
    let mut s = netns::connect(&t, TIMEOUT).await.expect("root's thread connects");
    echoed(&mut s, b"through root's thread").await;
    drop(s);

    let times = |program: Option<&[OsString]>| {
        let t = t.clone();
        let program = program.map(<[OsString]>::to_vec);
        async move {
            let mut ms = Vec::new();
            for _ in 0..ROUNDS {
                let start = Instant::now();
                let s = match &program {
                    Some(p) => netns::connect_through_helper(&t, TIMEOUT, p).await,
                    None => netns::connect(&t, TIMEOUT).await,
                };
                ms.push(start.elapsed().as_secs_f64() * 1e3);
                echoed(&mut s.unwrap(), b"timed").await;
            }
            ms
        }
    };
    print_times("root, thread (rootless namespace)", times(None).await);
    print_times("helper run as root, no setpriv", times(Some(&[env!("CARGO_BIN_EXE_jdwpmux").into()])).await);
    print_times("helper run as the owner (setpriv + helper)", times(Some(&as_owner)).await);

    jvm.end();
    match netns::connect_through_helper(&t, TIMEOUT, &as_owner).await {
        Err(NsError::Gone { now: None, .. }) => {}
        other => panic!("a dead process: {other:?}"),
    }
}

/// A helper that fails says why in its one line; one that hangs is killed at the deadline
/// and reaped (no zombie left). Stand-ins for the binary (`sh`), no namespace needed.
#[tokio::test]
async fn helper_failures_and_hangs() {
    let me = NsTarget { pid: std::process::id(), net: inode("/proc/self/ns/net").unwrap(), addr: ([127, 0, 0, 1], 9).into() };
    let sh = |script: &str| -> Vec<OsString> { ["sh", "-c", script, "sh"].map(Into::into).to_vec() };

    match netns::connect_through_helper(&me, TIMEOUT, &sh("echo 'it broke' >&2; exit 9")).await {
        Err(NsError::Helper { detail, .. }) => assert_eq!(detail, "exit status: 9: it broke"),
        other => panic!("a failing helper: {other:?}"),
    }
    match netns::connect_through_helper(&me, TIMEOUT, &sh("exit 0")).await {
        Err(e @ NsError::Helper { .. }) => assert!(e.to_string().contains("without sending a socket"), "{e}"),
        other => panic!("a helper that sends nothing: {other:?}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let hang = sh(&format!("echo $$ > {}; exec sleep 600", pid_file.display()));
    let start = Instant::now();
    let timeout = Duration::from_millis(100);
    match netns::connect_through_helper(&me, timeout, &hang).await {
        Err(NsError::Timeout { .. }) => {}
        other => panic!("a hanging helper: {other:?}"),
    }
    let waited = start.elapsed();
    assert!(waited < timeout + netns::helper::START_GRACE + Duration::from_secs(5), "{waited:?}");
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
    // Reaped: not even a zombie stays.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the hanging helper {pid} is still there");
    eprintln!("a hanging helper was killed and reaped after {} ms", waited.as_millis());
}
