//! `jdwpmux far` (the real binary) on a real Unix socket with a real JVM, and a near side
//! made of the library's stream codec and resume table: the far side lists the JVM, opens a
//! channel to it, relays the JDWP handshake and commands; the stream is cut in the middle of
//! a command, with replies in flight and in the middle of a large reply, and each time the
//! near side comes back with its session key and gets every reply exactly once. Then nobody
//! comes back: the far side ends by itself after the hold and the VM is free again.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::{Buf, Bytes, BytesMut};
use jdwpmux::remote::protocol::frame::{Body, ByeReason, Hello, OpenStatus, Role, SessionKey, VmInfo};
use jdwpmux::remote::protocol::resume::{Outbound, Received, Resume};
use jdwpmux::remote::protocol::{FarCodec, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::Command;
use tokio_util::codec::{Decoder, Encoder};

use crate::support::console::Console;
use crate::support::{java_available, JavaApp};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");
/// A JVM and the far side on a busy 2-core machine can be slow.
pub(crate) const SLOW: Duration = Duration::from_secs(60);
/// The far side's hold in this test: short, so its ending is seen.
const HOLD_SECS: u64 = 5;
const CHANNEL: u32 = 1;

/// The near side of the stream, as the test drives it.
pub(crate) struct Near {
    stream: UnixStream,
    buf: BytesMut,
    /// Frames that came compressed (DataZ, protocol 5): they decode to Data.
    compressed: usize,
}

impl Near {
    /// Connects, says Hello for `session` (empty: a new one) with what `resume` has received,
    /// reads the far side's Hello and sends again what the far side has not received.
    async fn connect(socket: &Path, session: SessionKey, resume: &mut Resume) -> Result<(Near, Hello)> {
        use jdwpmux::remote::protocol::hello::{PROTOCOL, PROTOCOL_MIN};
        Near::connect_as(socket, session, resume, (PROTOCOL_MIN, PROTOCOL), false).await
    }

    /// Like `connect`, for a near side speaking `protocols` that asks for gathered answers
    /// or not.
    pub(crate) async fn connect_as(socket: &Path, session: SessionKey, resume: &mut Resume, protocols: (u16, u16), gather: bool) -> Result<(Near, Hello)> {
        let stream = UnixStream::connect(socket).await.with_context(|| format!("connect {}", socket.display()))?;
        let mut near = Near { stream, buf: BytesMut::new(), compressed: 0 };
        let hello = Hello { role: Role::Near, proto_min: protocols.0, proto_max: protocols.1, binary: "test".into(), session, hold_secs: 0, resumed: false, gather };
        let hello = resume.link(Body::Hello(hello));
        near.write(&hello).await?;
        let first = near.read_frame().await?;
        let Body::Hello(far) = first.body else { bail!("the far side's first frame is {:?}", first.body) };
        for f in resume.reconnect(first.ack)? {
            near.write(&f).await?;
        }
        Ok((near, far))
    }

    async fn write(&mut self, f: &Frame) -> Result<()> {
        let mut out = BytesMut::new();
        FarCodec.encode(f, &mut out)?;
        self.stream.write_all(&out).await?;
        Ok(())
    }

    pub(crate) async fn send(&mut self, resume: &mut Resume, channel: u32, body: Body) -> Result<()> {
        let f = resume.send(channel, body)?;
        self.write(&f).await
    }

    async fn read_frame(&mut self) -> Result<Frame> {
        tokio::time::timeout(SLOW, async {
            loop {
                let kind = jdwpmux::remote::protocol::frame::Header::parse(&self.buf).and_then(Result::ok).map(|h| h.kind);
                if let Some(f) = FarCodec.decode(&mut self.buf)? {
                    if kind == Some(jdwpmux::remote::protocol::Kind::DataZ) {
                        self.compressed += 1;
                    }
                    return Ok(f);
                }
                self.buf.reserve(64 * 1024);
                if self.stream.read_buf(&mut self.buf).await? == 0 {
                    bail!("the far side closed the stream");
                }
            }
        })
        .await
        .context("no frame from the far side")?
    }

    /// The next numbered frame, taken through `resume` (acks and the like are taken too).
    pub(crate) async fn next(&mut self, resume: &mut Resume) -> Result<Frame> {
        loop {
            let f = self.read_frame().await?;
            if resume.receive(&f)? == Received::Deliver {
                return Ok(f);
            }
        }
    }

    /// The next numbered frame that is not a VM list: a far side sends its list after each
    /// of its scans while a near side is connected, between any other frames.
    pub(crate) async fn next_not_list(&mut self, resume: &mut Resume) -> Result<Frame> {
        loop {
            let f = self.next(resume).await?;
            if !matches!(f.body, Body::VmList(_) | Body::VmListPlaced(_)) {
                return Ok(f);
            }
        }
    }
}

/// A JDWP command packet.
fn command(id: u32, set: u8, cmd: u8) -> Vec<u8> {
    let mut p = 11u32.to_be_bytes().to_vec();
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0, set, cmd]);
    p
}

/// Whole JDWP packets at the front of `stream`, taken off it: (id, flags, error, length).
fn packets(stream: &mut BytesMut) -> Vec<(u32, u8, u16, usize)> {
    let mut out = Vec::new();
    while stream.len() >= 11 {
        let len = u32::from_be_bytes([stream[0], stream[1], stream[2], stream[3]]) as usize;
        if stream.len() < len {
            break;
        }
        let p = stream.split_to(len);
        out.push((u32::from_be_bytes([p[4], p[5], p[6], p[7]]), p[8], u16::from_be_bytes([p[9], p[10]]), len));
    }
    out
}

/// Data of the channel until `n` whole JDWP packets came after `stream`'s bytes (the rest of
/// the bytes stay in `stream`); `cut_after` frames in, returns early (the caller cuts).
async fn read_packets(near: &mut Near, resume: &mut Resume, stream: &mut BytesMut, got: &mut Vec<(u32, u8, u16, usize)>, n: usize, cut_after: Option<usize>) -> Result<()> {
    let mut frames = 0;
    while got.len() < n {
        if cut_after == Some(frames) {
            return Ok(());
        }
        let f = near.next_not_list(resume).await?;
        match f.body {
            Body::Data(b) if f.channel == CHANNEL => stream.extend_from_slice(&b),
            other => bail!("unexpected frame on channel {}: {other:?}", f.channel),
        }
        frames += 1;
        got.extend(packets(stream));
    }
    Ok(())
}

/// Opens `channel` to `vm`, again until the VM takes it: the VM takes a debugger again a
/// moment after the last one left.
pub(crate) async fn open_until_taken(near: &mut Near, resume: &mut Resume, channel: u32, vm: &VmInfo) -> Result<()> {
    let deadline = tokio::time::Instant::now() + SLOW;
    loop {
        near.send(resume, channel, Body::Open { vm: vm.key }).await?;
        match near.next_not_list(resume).await?.body {
            Body::Opened { status: OpenStatus::Ok, .. } => return Ok(()),
            other if tokio::time::Instant::now() > deadline => bail!("the channel did not open: {other:?}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The far side's list, until it holds the VM of `pid`.
pub(crate) async fn wait_for_vm(near: &mut Near, resume: &mut Resume, pid: u32) -> Result<VmInfo> {
    loop {
        let f = near.next(resume).await?;
        if let Body::VmList(vms) | Body::VmListPlaced(vms) = f.body {
            if let Some(vm) = vms.into_iter().find(|v| v.pid == pid) {
                return Ok(vm);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_side_holds_a_jvm_through_cuts_and_ends_after_the_hold() -> Result<()> {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::start(false).await?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", &HOLD_SECS.to_string(), "--scan-interval", "0.2", "--dir"]).arg(&dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    let socket = dir.join("far.sock");
    far.expect(&format!("jdwpmux far: listening on {} (pid {}, protocol {}", socket.display(), far.pid().unwrap_or(0), jdwpmux::remote::protocol::hello::protocols(jdwpmux::remote::protocol::hello::PROTOCOL_MIN, jdwpmux::remote::protocol::hello::PROTOCOL)), SLOW).await?;
    assert_eq!(std::fs::metadata(&dir)?.mode() & 0o777, 0o700, "the far side's folder is private");

    // A second start finds the first and leaves it alone.
    let second = Command::new(BIN).args(["far", "--dir"]).arg(&dir).output().await?;
    let text = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "{second:?}");
    assert!(text.contains(&format!("already running on {} (pid {}", socket.display(), far.pid().unwrap_or(0))), "{text}");

    // A new session: the far side names it and lists the JVM.
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, hello) = Near::connect(&socket, SessionKey::default(), &mut resume).await?;
    assert_eq!((hello.role, hello.resumed, hello.hold_secs), (Role::Far, false, HOLD_SECS as u32));
    let ours = jdwpmux::remote::protocol::hello::PROTOCOL;
    assert_eq!((hello.proto_min, hello.proto_max), (ours, ours), "the highest protocol both speak");
    let session = hello.session;
    let pid = app.pid().context("the JVM's pid")?;
    let vm = wait_for_vm(&mut near, &mut resume, pid).await?;
    assert_eq!(vm.port, app.port(), "{vm:?}");
    // Its agent's bind address comes with it (address=127.0.0.1:PORT, its socket seen there).
    assert_eq!(vm.bind, Some(std::net::Ipv4Addr::LOCALHOST.into()), "{vm:?}");

    // A channel to it, and the JDWP handshake through it.
    near.send(&mut resume, CHANNEL, Body::Open { vm: vm.key }).await?;
    let opened = near.next_not_list(&mut resume).await?;
    assert_eq!(opened.body, Body::Opened { status: OpenStatus::Ok, text: String::new() });
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::from_static(b"JDWP-Handshake"))).await?;
    let mut stream = BytesMut::new();
    while stream.len() < 14 {
        match near.next_not_list(&mut resume).await?.body {
            Body::Data(b) => stream.extend_from_slice(&b),
            other => bail!("during the handshake: {other:?}"),
        }
    }
    assert_eq!(&stream[..14], b"JDWP-Handshake");
    stream.advance(14);

    // Cut 1: in the middle of a command (half of VirtualMachine.Version sent).
    let version1 = command(1, 1, 1);
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::copy_from_slice(&version1[..5]))).await?;
    drop(near);
    let (mut near, hello) = Near::connect(&socket, session, &mut resume).await?;
    assert!(hello.resumed && hello.session == session, "{hello:?}");
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::copy_from_slice(&version1[5..]))).await?;

    // Cut 2: commands sent, their replies not read yet (in flight, or kept while cut).
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::from(command(2, 1, 1)))).await?;
    drop(near);
    let (mut near, _) = Near::connect(&socket, session, &mut resume).await?;
    let mut got = Vec::new();
    read_packets(&mut near, &mut resume, &mut stream, &mut got, 2, None).await?;

    // Cut 3: in the middle of the replies' stream: three large replies
    // (VirtualMachine.AllClasses) and a small one asked at once, more than one Data frame can
    // hold, the stream cut after the first Data frame.
    let mut batch = Vec::new();
    for id in 3..=5 {
        batch.extend_from_slice(&command(id, 1, 3));
    }
    batch.extend_from_slice(&command(6, 1, 1));
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::from(batch))).await?;
    read_packets(&mut near, &mut resume, &mut stream, &mut got, 6, Some(1)).await?;
    drop(near);
    let (mut near, _) = Near::connect(&socket, session, &mut resume).await?;
    read_packets(&mut near, &mut resume, &mut stream, &mut got, 6, None).await?;
    // The next reply comes right after: nothing was repeated or lost before it.
    near.send(&mut resume, CHANNEL, Body::Data(Bytes::from(command(7, 1, 1)))).await?;
    read_packets(&mut near, &mut resume, &mut stream, &mut got, 7, None).await?;
    let replies: Vec<(u32, u8, u16)> = got.iter().map(|(id, flags, err, _)| (*id, *flags, *err)).collect();
    let want: Vec<(u32, u8, u16)> = (1..=7).map(|id| (id, 0x80, 0)).collect();
    assert_eq!(replies, want);
    let large: usize = got[2..5].iter().map(|p| p.3).sum();
    assert!(large > jdwpmux::remote::protocol::frame::MAX_DATA, "the batch's replies ({large} bytes) fit one frame: the cut was not in the middle");
    assert!(stream.is_empty(), "{} bytes after the last reply", stream.len());
    assert!(got[0].3 == got[1].3 && got[1].3 == got[5].3 && got[5].3 == got[6].3, "the same Version reply each time");

    // A near side with the wrong token is refused, and the session goes on.
    let mut other = Resume::new(Outbound::new(1 << 20));
    let wrong = SessionKey { token: [0x55; 16], ..session };
    match Near::connect(&socket, wrong, &mut other).await {
        Ok(_) => bail!("a wrong token was accepted"),
        Err(e) => assert!(format!("{e:#}").contains(&format!("{:?}", ByeReason::BadToken)), "{e:#}"),
    }

    // Nobody comes back: after the hold the far side closes the VM connection and ends.
    drop(near);
    let status = far.wait_exit(Duration::from_secs(HOLD_SECS) + SLOW).await?;
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket is removed at the end");
    assert!(far.output().contains("no near side came back within the hold"), "{}", far.output());
    // The VM saw its debugger leave and takes a new one.
    let mut vm_again = tokio::time::timeout(SLOW, async {
        loop {
            if let Ok(s) = tokio::net::TcpStream::connect(app.addr()).await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await?;
    vm_again.write_all(b"JDWP-Handshake").await?;
    let mut echo = [0u8; 14];
    tokio::time::timeout(SLOW, vm_again.read_exact(&mut echo)).await??;
    assert_eq!(&echo, b"JDWP-Handshake");
    Ok(())
}

/// The classes of an AllClasses (`generic`: AllClassesWithGeneric) reply's data, without
/// their ids (the agent numbers them per connection), sorted: (tag, signature, generic
/// signature, status). HotSpot's 8-byte reference type ids.
pub(crate) fn classes_of(data: &[u8], generic: bool) -> Result<Vec<(u8, String, String, u32)>> {
    let mut r = data;
    let n = r.try_get_u32()?;
    let text = |r: &mut &[u8]| -> Result<String> {
        let len = r.try_get_u32()? as usize;
        let s = r.get(..len).context("a cut string")?;
        let s = String::from_utf8(s.to_vec())?;
        r.advance(len);
        Ok(s)
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let tag = r.try_get_u8()?;
        let _id = r.try_get_u64()?;
        let sig = text(&mut r)?;
        let gen = if generic { text(&mut r)? } else { String::new() };
        out.push((tag, sig, gen, r.try_get_u32()?));
    }
    if !r.is_empty() {
        bail!("{} bytes after {n} classes", r.len());
    }
    out.sort();
    Ok(out)
}

/// Big replies (VirtualMachine.AllClasses) come compressed to a near side of protocol 5, and
/// plain, as before, to one of protocol 4; the same bytes either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_side_compresses_big_replies_for_a_near_side_of_5_only() -> Result<()> {
    use jdwpmux::remote::protocol::hello::{PROTOCOL_MIN, SQUEEZE_PROTOCOL};
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::start(false).await?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", "1", "--scan-interval", "0.2", "--dir"]).arg(&dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    let socket = dir.join("far.sock");
    far.expect("jdwpmux far: listening on", SLOW).await?;
    let pid = app.pid().context("the JVM's pid")?;
    let mut replies = Vec::new();
    for protocol in [SQUEEZE_PROTOCOL - 1, SQUEEZE_PROTOCOL] {
        let mut resume = Resume::new(Outbound::new(1 << 20));
        let (mut near, hello) = Near::connect_as(&socket, SessionKey::default(), &mut resume, (PROTOCOL_MIN, protocol), false).await?;
        assert_eq!(hello.proto_max, protocol);
        let vm = wait_for_vm(&mut near, &mut resume, pid).await?;
        open_until_taken(&mut near, &mut resume, CHANNEL, &vm).await?;
        let mut asked = b"JDWP-Handshake".to_vec();
        asked.extend_from_slice(&command(1, 1, 3));
        near.send(&mut resume, CHANNEL, Body::Data(Bytes::from(asked))).await?;
        // The handshake, then the reply whole: its length is in its first 4 bytes.
        let mut stream = BytesMut::new();
        while stream.len() < 18 || stream.len() < 14 + u32::from_be_bytes([stream[14], stream[15], stream[16], stream[17]]) as usize {
            match near.next_not_list(&mut resume).await?.body {
                Body::Data(b) => stream.extend_from_slice(&b),
                other => bail!("before the reply's end: {other:?}"),
            }
        }
        assert_eq!(&stream[..14], b"JDWP-Handshake");
        let reply = stream.split_off(14);
        assert_eq!(packets(&mut reply.clone()).iter().map(|p| (p.0, p.2)).collect::<Vec<_>>(), vec![(1, 0)], "one reply, no error");
        assert!(reply.len() > 20_000, "AllClasses of {} bytes is not big", reply.len());
        replies.push((protocol, near.compressed, reply));
        near.send(&mut resume, CHANNEL, Body::Close { reason: jdwpmux::remote::protocol::frame::CloseReason::Done, text: String::new() }).await?;
        drop(near);
    }
    let counts: Vec<(u16, usize, usize)> = replies.iter().map(|r| (r.0, r.1, r.2.len())).collect();
    assert_eq!(replies[0].1, 0, "a near side of protocol 4 gets no compressed frame: {counts:?}");
    assert!(replies[1].1 > 0, "a near side of protocol 5 gets the big reply compressed: {counts:?}");
    // The agent numbers classes per connection, and the app goes on loading and initialising
    // classes between the two connections (538, then 542, in one CI run): every class of the
    // first reply is in the second, whatever its id and status.
    let (a, b) = (classes_of(&replies[0].2[11..], false)?, classes_of(&replies[1].2[11..], false)?);
    let later: std::collections::HashSet<&String> = b.iter().map(|c| &c.1).collect();
    let lost: Vec<&String> = a.iter().map(|c| &c.1).filter(|sig| !later.contains(sig)).collect();
    assert!(a.len() > 300 && lost.is_empty(), "the same classes either way: {counts:?}, {} / {} classes, not in the second: {lost:?}", a.len(), b.len());
    far.kill().await;
    Ok(())
}

/// `--detach`: the far side goes on in a session of its own with its log in the folder, the
/// command prints the ready line and returns; with no near side it ends after the hold.
#[tokio::test]
async fn a_detached_far_side_outlives_its_starter_and_ends_by_itself() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let out = tokio::time::timeout(SLOW, Command::new(BIN).args(["far", "--detach", "--hold", "1", "--dir"]).arg(&dir).output()).await??;
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{out:?}");
    let socket = dir.join("far.sock");
    assert!(line.starts_with(&format!("jdwpmux far: listening on {} (pid ", socket.display())), "{line}");
    let pid: i32 = line.split("(pid ").nth(1).and_then(|r| r.split(',').next()).and_then(|p| p.parse().ok()).context("the pid in the line")?;
    // Stop it whatever happens below.
    struct Kill(Option<i32>);
    impl Drop for Kill {
        fn drop(&mut self) {
            if let Some(pid) = self.0 {
                // SAFETY: a signal to the process this test started, which has not ended.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    let mut kill = Kill(Some(pid));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let sid = crate::support::process::parse_stat_fields(&stat).and_then(|f| f.get(3)?.parse::<i32>().ok());
    assert_eq!(sid, Some(pid), "it leads a session of its own");
    let log = dir.join("far.log");
    let deadline = tokio::time::Instant::now() + SLOW;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        if tokio::time::Instant::now() > deadline {
            bail!("the far side still runs after {SLOW:?}; its log:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill.0 = None;
    let text = std::fs::read_to_string(&log)?;
    assert!(text.contains("far side ends: no near side came back within the hold"), "{text}");
    assert!(!socket.exists());
    Ok(())
}

/// A folder others can reach is refused, and left as it is.
#[tokio::test]
async fn a_folder_others_can_reach_is_refused() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    std::fs::create_dir(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    let out = tokio::time::timeout(SLOW, Command::new(BIN).args(["far", "--hold", "1", "--dir"]).arg(&dir).output()).await??;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains(&format!("{} has mode 0755: others may reach it", dir.display())), "{err}");
    assert_eq!(std::fs::metadata(&dir)?.mode() & 0o777, 0o755);
    assert!(!dir.join("far.sock").exists());
    Ok(())
}

/// Another user makes a user's default far-side folder in /tmp first (anyone may): that
/// user's far side still starts, in a folder under its own home that nobody else can make,
/// and a second start finds it there; the squatter's folder is left as it is.
#[tokio::test]
async fn a_default_folder_taken_by_another_user_first_is_passed_over() -> Result<()> {
    use crate::support::users::{is_root, TestUser};
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        crate::not_run!("needs root to act as other users" => Ok(()));
    }
    let owner = TestUser::with_home("farown")?;
    let squatter = TestUser::create("farsquat")?;
    let taken = std::path::PathBuf::from(format!("/tmp/jdwpmux-far-{}", owner.uid));
    let _ = std::fs::remove_dir_all(&taken);
    let made = Command::new(&squatter.prefix()[0]).args(&squatter.prefix()[1..]).args(["mkdir", "-m", "0777"]).arg(&taken).status().await?;
    assert!(made.success(), "the squatter's mkdir");
    // The binary where the user may run it: the build's folder may be closed to others.
    let bin_dir = tempfile::tempdir()?;
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let bin = bin_dir.path().join("jdwpmux");
    std::fs::copy(BIN, &bin)?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    let start = || {
        let mut c = Command::new(&owner.prefix()[0]);
        c.args(&owner.prefix()[1..]).arg(&bin).args(["far", "--detach", "--hold", "2"]).stdin(std::process::Stdio::null());
        c
    };
    let out = tokio::time::timeout(SLOW, start().output()).await??;
    let said = String::from_utf8_lossy(&out.stdout);
    let home = owner.home.clone().context("a home")?;
    let socket = home.join(".cache/jdwpmux/far/far.sock");
    assert!(out.status.success() && said.contains(&format!("listening on {}", socket.display())), "{out:?}");
    let again = tokio::time::timeout(SLOW, start().output()).await??;
    assert!(String::from_utf8_lossy(&again.stdout).contains(&format!("already running on {}", socket.display())), "{again:?}");
    // The squatter's folder is theirs still, untouched and empty.
    assert_eq!(std::fs::metadata(&taken)?.uid(), squatter.uid);
    assert_eq!(std::fs::read_dir(&taken)?.count(), 0);
    // With no near side the far side ends at its hold: nothing is left running.
    let pid_file = home.join(".cache/jdwpmux/far/far.pid");
    let pid: i32 = std::fs::read_to_string(&pid_file)?.lines().next().unwrap_or_default().parse()?;
    let deadline = tokio::time::Instant::now() + SLOW;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(tokio::time::Instant::now() < deadline, "the far side (pid {pid}) did not end after its hold");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::remove_dir_all(&taken)?;
    Ok(())
}
