//! The session task on real sockets: a VM (a TCP server here) that writes a long numbered
//! stream as fast as it may, and a near side on a Unix socket that cuts the stream again and
//! again. Every byte arrives once and in order, and while the stream is cut the VM is left
//! waiting on its socket instead of being read into memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};
use tokio_util::codec::{Decoder, Encoder};

use super::*;
use crate::discovery::jvms::decide::decide;
use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::{FoundJvm, Reach};
use crate::remote::protocol::hello::new_session;
use crate::remote::protocol::frame::{CloseReason, Frame, OpenStatus, Role, MAX_DATA};
use crate::remote::protocol::resume::Received;
use crate::remote::protocol::FarCodec;

/// What the VM writes: a stream where byte i is i mod 251, so a byte lost, repeated or out of
/// place shows.
const TOTAL: usize = 48 * 1024 * 1024;
const LIMIT: usize = 256 * 1024;
const WAIT: Duration = Duration::from_secs(60);

/// A session task started with `cfg`: where near sides are handed to it and scans are sent,
/// its stop token and the task.
struct Started {
    accepted: mpsc::Sender<Accepted>,
    scans: mpsc::Sender<Scan>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Ended>,
}

/// Waits for the far side's list and opens channel 1 to its first VM.
async fn open_first(near: &mut Near, resume: &mut Resume) {
    let vm = loop {
        if let Body::VmListPlaced(vms) = near.next(resume).await.body {
            break vms[0].key;
        }
    };
    let open = resume.send(1, Body::Open { vm }).unwrap();
    near.write(&open).await;
}

fn start(cfg: Config) -> Started {
    let (accepted, accepted_rx) = mpsc::channel(1);
    let (scans, scans_rx) = mpsc::channel(1);
    let stop = CancellationToken::new();
    let task = tokio::spawn(Session::new(cfg, new_session().unwrap()).run(accepted_rx, scans_rx, stop.clone()));
    Started { accepted, scans, stop, task }
}

fn pattern(from: usize, len: usize) -> Vec<u8> {
    (from..from + len).map(|i| (i % 251) as u8).collect()
}

/// A VM that writes `TOTAL` bytes to its first connection and closes it; `written` counts.
async fn writing_vm(written: Arc<AtomicUsize>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut at = 0;
        while at < TOTAL {
            let n = (TOTAL - at).min(16 * 1024);
            s.write_all(&pattern(at, n)).await.unwrap();
            at += n;
            written.store(at, Ordering::SeqCst);
        }
    });
    addr
}

struct Near {
    stream: UnixStream,
    buf: BytesMut,
}

impl Near {
    /// Connects through the session's accept channel, as `accept_loop` would.
    async fn connect(accepted: &mpsc::Sender<Accepted>, session: SessionKey, resume: &mut Resume) -> (Near, Hello) {
        let (mut near, far, replay) = Near::connect_lazy(accepted, session, resume).await;
        for f in &replay {
            near.write(f).await;
        }
        (near, far)
    }

    /// Like `connect`, and returns the frames to send again instead of writing them.
    async fn connect_lazy(accepted: &mpsc::Sender<Accepted>, session: SessionKey, resume: &mut Resume) -> (Near, Hello, Vec<Frame>) {
        let (mine, theirs) = UnixStream::pair().unwrap();
        let mut near = Near { stream: mine, buf: BytesMut::new() };
        let hello = Hello { role: Role::Near, proto_min: crate::remote::protocol::hello::PROTOCOL_MIN, proto_max: crate::remote::protocol::hello::PROTOCOL, binary: "test".into(), session, hold_secs: 0, resumed: false, gather: false };
        near.write(&resume.link(Body::Hello(hello))).await;
        let a = crate::remote::far::read_hello(theirs).await.unwrap();
        accepted.send(a).await.unwrap();
        let first = near.frame().await;
        let Body::Hello(far) = first.body else { panic!("{first:?}") };
        let replay = resume.reconnect(first.ack).unwrap();
        (near, far, replay)
    }

    async fn write(&mut self, f: &Frame) {
        let mut out = BytesMut::new();
        FarCodec.encode(f, &mut out).unwrap();
        self.stream.write_all(&out).await.unwrap();
    }

    async fn frame(&mut self) -> Frame {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some(f) = FarCodec.decode(&mut self.buf).unwrap() {
                    return f;
                }
                self.buf.reserve(64 * 1024);
                assert!(self.stream.read_buf(&mut self.buf).await.unwrap() > 0, "the far side closed the stream");
            }
        })
        .await
        .expect("a frame in time")
    }

    /// The next numbered frame; acks each, as a near side would.
    async fn next(&mut self, resume: &mut Resume) -> Frame {
        loop {
            let f = self.frame().await;
            if resume.receive(&f).unwrap() == Received::Deliver {
                let ack = resume.link(Body::Ack);
                self.write(&ack).await;
                return f;
            }
        }
    }
}

#[tokio::test]
async fn a_long_stream_through_many_cuts_arrives_once_in_order_and_bounded() {
    let written = Arc::new(AtomicUsize::new(0));
    let addr = writing_vm(written.clone()).await;
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into(), liveness: crate::remote::protocol::liveness::DEFAULT };
    let Started { accepted: accepted_tx, scans: scans_tx, stop, task: session } = start(cfg);
    let found = vec![FoundJvm::sample(4242, "Writer", addr.port(), addr.port(), Reach::At(addr))];
    let decisions = decide(&found, None, &mut KeyBook::default());
    scans_tx.send((found, decisions)).await.unwrap();

    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, hello) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    open_first(&mut near, &mut resume).await;

    let mut received = 0usize;
    let mut cuts = 0;
    let mut checked_bound = false;
    loop {
        let f = near.next(&mut resume).await;
        match f.body {
            Body::Opened { status, .. } => assert_eq!(status, OpenStatus::Ok),
            Body::Data(b) => {
                assert!(b[..] == pattern(received, b.len())[..], "bytes {received}..{} differ", received + b.len());
                received += b.len();
            }
            Body::Close { reason, .. } => {
                assert_eq!(reason, CloseReason::VmClosed);
                break;
            }
            other => panic!("{other:?}"),
        }
        // Every 4 MiB a cut; the first time, wait until the VM is left waiting and check
        // that only the limit's worth (and the sockets' own buffers) was taken from it.
        if received >= (cuts + 1) * 4 * 1024 * 1024 && received < TOTAL {
            cuts += 1;
            drop(near);
            if !checked_bound {
                checked_bound = true;
                let stalled_at = wait_until_still(&written).await;
                assert!(stalled_at < TOTAL, "the whole stream was read while the link was cut");
                // The far side's share (the limit, the event queue, one piece being read) and
                // the two sockets' buffers at their largest.
                let held = LIMIT + (EVENT_QUEUE + 1) * MAX_DATA + tcp_max("tcp_wmem") + tcp_max("tcp_rmem");
                assert!(received + held < TOTAL, "the stream ({TOTAL} bytes) is too short to tell on this machine: {held} may be held");
                assert!(stalled_at - received <= held, "{} bytes taken from the VM while cut (at most {held})", stalled_at - received);
            }
            let (again, far) = Near::connect(&accepted_tx, hello.session, &mut resume).await;
            assert!(far.resumed);
            near = again;
        }
    }
    assert_eq!(received, TOTAL);
    assert!(cuts >= 5, "{cuts} cuts");
    stop.cancel();
    assert_eq!(session.await.unwrap(), Ended::Stopped);
}

/// Waits until the VM's writes stop moving (it waits on its socket), and returns how much it
/// wrote by then.
async fn wait_until_still(written: &AtomicUsize) -> usize {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = written.load(Ordering::SeqCst);
    let mut still = 0;
    // Still for a second in a row: the socket buffers are full and nobody reads.
    while still < 20 {
        assert!(tokio::time::Instant::now() < deadline, "the VM's writes never stopped: {last} bytes");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = written.load(Ordering::SeqCst);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    last
}

/// The largest buffer the kernel gives a TCP socket (`net.ipv4.tcp_wmem` or `tcp_rmem`).
fn tcp_max(name: &str) -> usize {
    let text = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).unwrap();
    text.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap()
}

#[tokio::test]
async fn a_broken_near_side_is_told_why_and_the_session_goes_on() {
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into(), liveness: crate::remote::protocol::liveness::DEFAULT };
    let Started { accepted: accepted_tx, scans: scans_tx, task: session, .. } = start(cfg);
    scans_tx.send((Vec::new(), Vec::new())).await.unwrap();
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, hello) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    assert!(matches!(near.next(&mut resume).await.body, Body::VmListPlaced(v) if v.is_empty()));

    // A frame out of order: a Bye that says so, then the end of the stream.
    near.write(&Frame { channel: 1, seq: 5, ack: 0, body: Body::Data(Bytes::from_static(b"x")) }).await;
    match near.frame().await.body {
        Body::Bye { reason, text } => {
            assert_eq!(reason, ByeReason::Protocol);
            assert!(text.contains("frame 5 came after frame 0"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    let mut rest = Vec::new();
    near.stream.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());

    // The session is still there: the near side resumes it, and an open of a VM that is not
    // there gets its answer.
    let (mut near, far) = Near::connect(&accepted_tx, hello.session, &mut resume).await;
    assert!(far.resumed);
    let open = resume.send(3, Body::Open { vm: 77 }).unwrap();
    near.write(&open).await;
    let f = near.next(&mut resume).await;
    assert_eq!(f.channel, 3);
    assert!(matches!(f.body, Body::Opened { status: OpenStatus::NoSuchVm, .. }), "{f:?}");

    // A near side that leaves for good: the session ends now, not after the hold.
    near.write(&resume.link(Body::Bye { reason: ByeReason::ShuttingDown, text: "serve stops".into() })).await;
    let ended = tokio::time::timeout(WAIT, session).await.unwrap().unwrap();
    assert_eq!(ended, Ended::NearLeft);
}

/// A VM that reads nothing until `go` is notified, then reads everything and counts it,
/// checking the pattern as it goes.
async fn reading_vm(go: Arc<tokio::sync::Notify>, read: Arc<AtomicUsize>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        go.notified().await;
        let mut buf = vec![0u8; 64 * 1024];
        let mut at = 0;
        while at < TOTAL {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "the far side closed the VM connection at {at}");
            assert!(buf[..n] == pattern(at, n)[..], "bytes {at}..{} differ at the VM", at + n);
            at += n;
            read.store(at, Ordering::SeqCst);
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_that_does_not_read_stops_the_stream_and_nothing_is_lost() {
    let go = Arc::new(tokio::sync::Notify::new());
    let read = Arc::new(AtomicUsize::new(0));
    let addr = reading_vm(go.clone(), read.clone()).await;
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into(), liveness: crate::remote::protocol::liveness::DEFAULT };
    let Started { accepted: accepted_tx, scans: scans_tx, stop, task: session } = start(cfg);
    let found = vec![FoundJvm::sample(4243, "Reader", addr.port(), addr.port(), Reach::At(addr))];
    let decisions = decide(&found, None, &mut KeyBook::default());
    scans_tx.send((found, decisions)).await.unwrap();

    // The near side keeps all it sends (its table is larger than the whole stream), so the
    // only thing that stops it is the far side no longer reading.
    let mut resume = Resume::new(Outbound::new(2 * TOTAL));
    let (mut near, hello) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    open_first(&mut near, &mut resume).await;
    assert!(matches!(near.next(&mut resume).await.body, Body::Opened { status: OpenStatus::Ok, .. }));
    const PIECE: usize = 32 * 1024;
    let frames: Vec<Frame> = (0..TOTAL / PIECE).map(|i| resume.send(1, Body::Data(Bytes::from(pattern(i * PIECE, PIECE)))).unwrap()).collect();
    let last = frames.last().map(|f| f.seq).unwrap();

    // Written by a task of its own, which blocks when the far side stops reading; acks read here.
    let (near_read, near_write) = near.stream.into_split();
    let mut near_read = Reading { half: near_read, buf: near.buf };
    let writer = tokio::spawn(write_all_frames(near_write, frames));
    let acked = near_read.acks_until_still(&mut resume).await;
    assert_eq!(read.load(Ordering::SeqCst), 0);
    assert!(acked < last, "the far side took the whole stream ({acked} frames) with the VM reading nothing");

    // Cut while it stalls: the near side sends again what the far side has not taken.
    writer.abort();
    drop(near_read);
    let (again, far, replay) = Near::connect_lazy(&accepted_tx, hello.session, &mut resume).await;
    assert!(far.resumed);
    assert!(!replay.is_empty() && replay.last().map(|f| f.seq) == Some(last), "{} frames to send again", replay.len());
    let (near_read, near_write) = again.stream.into_split();
    let mut near_read = Reading { half: near_read, buf: again.buf };
    let writer = tokio::spawn(write_all_frames(near_write, replay));
    // The replay meets the same stall; past the far side's silence limit (`Liveness::dead_after`), the far
    // side must not take its own stall for a dead near side.
    go.notify_one();
    let deadline = tokio::time::Instant::now() + WAIT;
    while read.load(Ordering::SeqCst) < TOTAL {
        assert!(tokio::time::Instant::now() < deadline, "the VM got {} of {TOTAL} bytes", read.load(Ordering::SeqCst));
        near_read.ack_or_wait(&mut resume).await;
    }
    let _still_open = writer.await.unwrap();
    stop.cancel();
    assert_eq!(session.await.unwrap(), Ended::Stopped);
}

/// Writes `frames`; returns the write half, so that its end (a shutdown) is the caller's.
async fn write_all_frames(mut w: tokio::net::unix::OwnedWriteHalf, frames: Vec<Frame>) -> tokio::net::unix::OwnedWriteHalf {
    for f in frames {
        let mut out = BytesMut::new();
        FarCodec.encode(&f, &mut out).unwrap();
        w.write_all(&out).await.unwrap();
    }
    w
}

struct Reading {
    half: tokio::net::unix::OwnedReadHalf,
    buf: BytesMut,
}

impl Reading {
    /// Takes what the far side sends for up to 50 ms.
    async fn ack_or_wait(&mut self, resume: &mut Resume) {
        self.buf.reserve(64 * 1024);
        let got = tokio::time::timeout(Duration::from_millis(50), self.half.read_buf(&mut self.buf)).await;
        while let Some(f) = FarCodec.decode(&mut self.buf).unwrap() {
            assert!(!matches!(f.body, Body::Bye { .. }), "{f:?}");
            resume.receive(&f).unwrap();
        }
        if let Ok(r) = got {
            assert!(r.unwrap() > 0, "the far side closed the stream");
        }
    }

    /// Takes acks until none has come for a second (the far side stopped taking the stream);
    /// the last frame acknowledged.
    async fn acks_until_still(&mut self, resume: &mut Resume) -> u64 {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut still = 0;
        let mut last = resume.out.acked();
        while still < 20 {
            assert!(tokio::time::Instant::now() < deadline, "the far side never stopped taking the stream");
            self.ack_or_wait(resume).await;
            let now = resume.out.acked();
            still = if now == last { still + 1 } else { 0 };
            last = now;
        }
        last
    }
}

/// A near side that comes before the far side's first scan is taken after it: its first list
/// holds what the scan found (never an empty list that says every VM is gone), and an open
/// of a VM it found is answered.
#[tokio::test]
async fn no_near_side_is_taken_before_the_first_scan() {
    let addr = writing_vm(Arc::new(AtomicUsize::new(0))).await;
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into(), liveness: crate::remote::protocol::liveness::DEFAULT };
    let Started { accepted: accepted_tx, scans: scans_tx, task: session, .. } = start(cfg);
    let (mine, theirs) = UnixStream::pair().unwrap();
    let mut near = Near { stream: mine, buf: BytesMut::new() };
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let hello = Hello { role: Role::Near, proto_min: crate::remote::protocol::hello::PROTOCOL, proto_max: crate::remote::protocol::hello::PROTOCOL, binary: "test".into(), session: SessionKey::default(), hold_secs: 0, resumed: false, gather: false };
    near.write(&resume.link(Body::Hello(hello))).await;
    accepted_tx.send(crate::remote::far::read_hello(theirs).await.unwrap()).await.unwrap();
    // An observation window, not a wait for a condition: a session that took the connection
    // answers its Hello at once.
    let early = tokio::time::timeout(Duration::from_millis(300), near.stream.readable()).await;
    assert!(early.is_err(), "the near side was taken before the first scan");

    let found = vec![FoundJvm::sample(4242, "Writer", addr.port(), addr.port(), Reach::At(addr))];
    let decisions = decide(&found, None, &mut KeyBook::default());
    scans_tx.send((found, decisions)).await.unwrap();
    let first = near.frame().await;
    assert!(matches!(first.body, Body::Hello(_)), "{first:?}");
    assert!(resume.reconnect(first.ack).unwrap().is_empty());
    let Body::VmListPlaced(vms) = near.next(&mut resume).await.body else { panic!("the first numbered frame is the list") };
    assert_eq!(vms.iter().map(|v| v.pid).collect::<Vec<_>>(), vec![4242]);
    near.write(&resume.send(1, Body::Open { vm: vms[0].key }).unwrap()).await;
    assert!(matches!(near.next(&mut resume).await.body, Body::Opened { status: OpenStatus::Ok, .. }));
    session.abort();
}

/// A near side that falls silent (a cut link ends no socket: sshd keeps its end open while
/// TCP retries) is pinged, then taken for gone after `dead_after`; the hold runs from when it
/// was last heard, so the VMs are released a hold after the silence began, not a hold after
/// it was noticed.
#[tokio::test(start_paused = true)]
async fn a_silent_near_side_is_pinged_then_held_for_from_when_it_was_last_heard() {
    let liveness = crate::remote::protocol::liveness::Liveness { ping_every: Duration::from_secs(5), dead_after: Duration::from_secs(20) };
    let cfg = Config { hold: Duration::from_secs(30), limit: LIMIT, binary: "test".into(), liveness };
    let Started { accepted: accepted_tx, scans: scans_tx, task: session, .. } = start(cfg);
    scans_tx.send((Vec::new(), Vec::new())).await.unwrap();
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, _) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    // The first VM list, acked: the last the far side hears of this near side.
    assert!(matches!(near.next(&mut resume).await.body, Body::VmListPlaced(_)));
    let heard = tokio::time::Instant::now();
    let mut pings = 0;
    loop {
        let f = near.frame().await;
        match f.body {
            Body::Ping(_) => pings += 1,
            Body::Ack => {}
            other => panic!("{other:?}"),
        }
        if pings == 3 {
            break;
        }
    }
    assert!(heard.elapsed() >= Duration::from_secs(10), "pinged every 5 s of silence: {:?}", heard.elapsed());
    assert_eq!(session.await.unwrap(), Ended::HoldExpired);
    let held = heard.elapsed();
    assert!(held >= Duration::from_secs(30) && held < Duration::from_secs(31), "held {held:?} from the last word, not from the silence noticed");
    drop(near);
}

/// With a hold shorter than the default silence (`--far-hold 10`, 20 s of silence before a
/// cut was noticed), the hold is still the hold: silence is judged within it, and the VMs
/// are released 10 s after the near side was last heard, not 20.
#[tokio::test(start_paused = true)]
async fn a_short_hold_is_kept_from_the_last_word_not_after_the_default_silence() {
    let cfg = Config { hold: Duration::from_secs(10), limit: LIMIT, binary: "test".into(), liveness: crate::remote::protocol::liveness::DEFAULT };
    let Started { accepted: accepted_tx, scans: scans_tx, task: session, .. } = start(cfg);
    scans_tx.send((Vec::new(), Vec::new())).await.unwrap();
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, _) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    assert!(matches!(near.next(&mut resume).await.body, Body::VmListPlaced(_)));
    let heard = tokio::time::Instant::now();
    assert_eq!(session.await.unwrap(), Ended::HoldExpired);
    let held = heard.elapsed();
    assert!(held >= Duration::from_secs(10) && held < Duration::from_secs(11), "held {held:?}, not the hold of 10 s");
    drop(near);
}

/// "Holding the VM connections" was said just before "far side ends" (the near side left for
/// good, or the far side was stopped): the line says what becomes of them.
#[test]
fn the_gone_line_says_holding_only_when_something_is_held() {
    let hold = Duration::from_secs(300);
    let cases = [
        (None, 2, "the near side is gone (cut); holding its 2 VM connection(s) for the hold (300 s)"),
        (None, 0, "the near side is gone (cut); no VM connection to hold; waiting 300 s for a near side"),
        (Some(Ended::NearLeft), 2, "the near side is gone (cut); closing its 2 VM connection(s); the far side ends"),
        (Some(Ended::Stopped), 0, "the near side is gone (cut); the far side ends"),
    ];
    for (ending, channels, want) in cases {
        assert_eq!(super::near_side::gone_line("cut", ending, channels, hold), want);
    }
}
