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
use crate::daemon::proc_vms::decide;
use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::{FoundJvm, Reach};
use crate::farlink::frame::{CloseReason, MAX_DATA};

/// What the VM writes: a stream where byte i is i mod 251, so a byte lost, repeated or out of
/// place shows.
const TOTAL: usize = 48 * 1024 * 1024;
const LIMIT: usize = 256 * 1024;
const WAIT: Duration = Duration::from_secs(60);

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
        let (mine, theirs) = UnixStream::pair().unwrap();
        let mut near = Near { stream: mine, buf: BytesMut::new() };
        let hello = Hello { role: Role::Near, proto_min: 1, proto_max: 1, binary: "test".into(), session, hold_secs: 0, resumed: false };
        near.write(&resume.link(Body::Hello(hello))).await;
        let a = crate::far::read_hello(theirs).await.unwrap();
        accepted.send(a).await.unwrap();
        let first = near.frame().await;
        let Body::Hello(far) = first.body else { panic!("{first:?}") };
        for f in resume.reconnect(first.ack).unwrap() {
            near.write(&f).await;
        }
        (near, far)
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
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into() };
    let (accepted_tx, accepted_rx) = mpsc::channel(1);
    let (scans_tx, scans_rx) = mpsc::channel(1);
    let stop = CancellationToken::new();
    let session = tokio::spawn(Session::new(cfg, new_session().unwrap()).run(accepted_rx, scans_rx, stop.clone()));
    let found = vec![FoundJvm::sample(4242, "Writer", addr.port(), addr.port(), Reach::At(addr))];
    let decisions = decide(&found, &mut KeyBook::default());
    scans_tx.send((found, decisions)).await.unwrap();

    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, hello) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    let vm = loop {
        if let Body::VmList(vms) = near.next(&mut resume).await.body {
            break vms[0].key;
        }
    };
    let open = resume.send(1, Body::Open { vm }).unwrap();
    near.write(&open).await;

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
    let cfg = Config { hold: Duration::from_secs(60), limit: LIMIT, binary: "test".into() };
    let (accepted_tx, accepted_rx) = mpsc::channel(1);
    let (_scans_tx, scans_rx) = mpsc::channel(1);
    let session = tokio::spawn(Session::new(cfg, new_session().unwrap()).run(accepted_rx, scans_rx, CancellationToken::new()));
    let mut resume = Resume::new(Outbound::new(1 << 20));
    let (mut near, hello) = Near::connect(&accepted_tx, SessionKey::default(), &mut resume).await;
    assert!(matches!(near.next(&mut resume).await.body, Body::VmList(v) if v.is_empty()));

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
