//! The link's counts (Data frames each way; what a connection sent again; the replay buffer),
//! against a far side played by the test on a Unix socket.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixListener;
use tokio_util::codec::{Decoder, Encoder};

use crate::remote::protocol::hello::PROTOCOL;
use crate::remote::protocol::frame::{Body, Hello, OpenStatus, Role, SessionKey};
use crate::remote::protocol::figures::{LinkFigures, ReplayHeld};
use crate::remote::protocol::resume::{Outbound, Resume};
use crate::remote::protocol::squeeze::{LinkSqueeze, SqueezeCount};
use crate::remote::protocol::{FarCodec, Frame};
use crate::remote::near::link::{start, Config, Dial, LinkState, NearLink};

const WAIT: Duration = Duration::from_secs(10);

/// One test here at a time: the test reading the log must not race another's first use of
/// the same log lines (tracing caches whether a line is wanted, per line, for every thread).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The far side's end of one connection: its frames are numbered by its own `Resume`.
struct Far {
    rd: OwnedReadHalf,
    wr: OwnedWriteHalf,
    buf: BytesMut,
    resume: Resume,
}

impl Far {
    /// Takes the near side's connection and answers its Hello with a new session's.
    async fn accept(listener: &UnixListener) -> Far {
        let (sock, _) = tokio::time::timeout(WAIT, listener.accept()).await.expect("the near side connects").expect("accept");
        let (rd, wr) = sock.into_split();
        let mut far = Far { rd, wr, buf: BytesMut::new(), resume: Resume::new(Outbound::new(1 << 20)) };
        assert!(matches!(far.next().await.body, Body::Hello(_)));
        let hello = Hello { role: Role::Far, proto_min: PROTOCOL, proto_max: PROTOCOL, binary: "test".into(), session: SessionKey { id: [7; 16], token: [8; 16] }, hold_secs: 300, resumed: false, gather: false };
        let hello = far.resume.link(Body::Hello(hello));
        far.write(&hello, false).await;
        far
    }

    async fn next(&mut self) -> Frame {
        loop {
            if let Some(f) = FarCodec.decode(&mut self.buf).expect("a frame from the near side") {
                return f;
            }
            let n = tokio::time::timeout(WAIT, self.rd.read_buf(&mut self.buf)).await.expect("the near side writes").expect("read");
            assert!(n > 0, "the near side closed the stream");
        }
    }

    /// The next frame that is not a Ping, Pong or Ack, taken as the far side takes it.
    async fn next_numbered(&mut self) -> Frame {
        loop {
            let f = self.next().await;
            if !matches!(f.body, Body::Ping(_) | Body::Pong(_) | Body::Ack) {
                let _ = self.resume.receive(&f);
                return f;
            }
        }
    }

    /// Writes `frame`, compressed when it pays (`squeeze`); its count.
    async fn write(&mut self, frame: &Frame, squeeze: bool) -> SqueezeCount {
        let (mut out, mut count) = (BytesMut::new(), SqueezeCount::default());
        if squeeze {
            FarCodec::encode_squeezed(frame, &mut out, &mut count).expect("encode");
        } else {
            FarCodec.encode(frame, &mut out).expect("encode");
        }
        self.wr.write_all(&out).await.expect("write");
        count
    }
}

/// A class-list-like run of bytes: compresses well.
fn big(n: usize) -> Bytes {
    (0..n).map(|i| b"Lcom/example/Handler;"[i % 21] ^ (i / 4096) as u8).collect::<Vec<u8>>().into()
}

async fn squeezed_until(link: &NearLink, mut f: impl FnMut(&LinkSqueeze) -> bool) -> LinkSqueeze {
    figures_until(link, |l| f(&l.squeezed)).await.squeezed
}

async fn figures_until(link: &NearLink, f: impl FnMut(&LinkFigures) -> bool) -> LinkFigures {
    let mut rx = link.figures();
    let got = *tokio::time::timeout(WAIT, rx.wait_for(f)).await.expect("the link counts").expect("the link runs");
    got
}

#[tokio::test]
async fn data_frames_are_counted_each_way_and_kept_across_a_cut() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("far.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let link = start(Dial::Unix(path), Config::default());
    assert_eq!(*link.figures().borrow(), LinkFigures { squeezed: LinkSqueeze::default(), replay: ReplayHeld::new(Config::default().limit) });
    let mut far = Far::accept(&listener).await;

    let opener = link.clone();
    let open = tokio::spawn(async move { opener.open_channel(1).await });
    let f = far.next_numbered().await;
    assert!(matches!(f.body, Body::Open { vm: 1 }), "{f:?}");
    let channel = f.channel;
    let opened = far.resume.send(channel, Body::Opened { status: OpenStatus::Ok, text: String::new() }).expect("numbered");
    far.write(&opened, false).await;
    let mut ends = open.await.expect("joined").expect("the channel opens");

    // From the far side: a small frame as it is, a big one compressed.
    let (small, large) = (Bytes::from_static(b"small"), big(40_000));
    let plain = far.resume.send(channel, Body::Data(small.clone())).expect("numbered");
    far.write(&plain, true).await;
    let data = far.resume.send(channel, Body::Data(large.clone())).expect("numbered");
    let packed = far.write(&data, true).await;
    assert_eq!(packed.squeezed, 1, "the big frame went compressed");
    let mut got = 0;
    while got < small.len() + large.len() {
        got += tokio::time::timeout(WAIT, ends.from_far.recv()).await.expect("data").expect("the channel is open").len();
    }
    let counts = squeezed_until(&link, |s| s.received.frames == 2).await;
    assert_eq!(counts.received, SqueezeCount { frames: 2, squeezed: 1, raw: large.len() as u64, wire: packed.wire });
    assert!(packed.wire * 10 < packed.raw, "{packed:?}");

    // To the far side: one big frame, compressed when this side compresses at all.
    ends.to_far().send(ends.data(large.clone())).await.expect("the link takes it");
    let f = far.next_numbered().await;
    assert_eq!(f.body, Body::Data(large.clone()), "a DataZ frame decodes to the Data it was");
    let counts = squeezed_until(&link, |s| s.sent.frames == 1).await;
    if crate::remote::protocol::squeeze::enabled() {
        assert_eq!((counts.sent.squeezed, counts.sent.raw), (1, large.len() as u64));
        assert!(counts.sent.wire > 0 && counts.sent.wire < counts.sent.raw, "{counts:?}");
    }

    // A cut: the connection's counts stay with the link's.
    drop(far);
    let mut state = link.state();
    let down = tokio::time::timeout(WAIT, state.wait_for(|s| matches!(s, LinkState::Down { .. }))).await.expect("the link sees the cut").expect("the link runs").clone();
    assert!(matches!(down, LinkState::Down { silent: false, .. }), "a stream that ended is no silence: {down:?}");
    assert_eq!(link.figures().borrow().squeezed, counts);
    drop(ends);
    link.shutdown().await;
}

/// What the link logs, for a test on the current thread.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).into_owned()
    }
}

/// An open asked for before a new session's first connection is sent on it for the first
/// time: the line saying the link is up counts it as queued, never as replayed.
#[tokio::test]
async fn a_new_sessions_queued_open_is_not_counted_as_replayed() {
    let _one = ONE_AT_A_TIME.lock().await;
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt().with_writer({
        let logs = logs.clone();
        move || logs.clone()
    });
    let _log = tracing::subscriber::set_default(subscriber.with_ansi(false).finish());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("far.sock");
    let link = start(Dial::Unix(path.clone()), Config::default());
    let mut state = link.state();
    tokio::time::timeout(WAIT, state.wait_for(|s| matches!(s, LinkState::Down { .. }))).await.expect("no far side yet").expect("the link runs");
    // Asked while no far side answers: its command is sent at the first poll.
    let opener = link.clone();
    let mut open = Box::pin(async move { opener.open_channel(1).await });
    tokio::select! {
        biased;
        _ = open.as_mut() => panic!("opened without a far side"),
        () = std::future::ready(()) => {}
    }
    let listener = UnixListener::bind(&path).expect("bind");
    // Tests on other threads, with no subscriber, may have had the line's interest cached
    // as none while this one's subscriber was being registered: asked again.
    tracing::callsite::rebuild_interest_cache();
    // After the open, in the same queue: the link takes the open first.
    link.retry_now();
    let mut far = Far::accept(&listener).await;
    let f = far.next_numbered().await;
    assert!(matches!(f.body, Body::Open { vm: 1 }), "{f:?}");
    let opened = far.resume.send(f.channel, Body::Opened { status: OpenStatus::Ok, text: String::new() }).expect("numbered");
    far.write(&opened, false).await;
    let ends = tokio::time::timeout(WAIT, open).await.expect("answered").expect("the channel opens");
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("connected to the far side")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("resumed=false") && line.contains("replayed=0") && line.contains("queued=1"), "{line}");
    drop(ends);
    drop(far);
    link.shutdown().await;
}

/// A far side that answered and then says nothing (its stream open: a cut without a word)
/// is lost as silence once the liveness deadline passes, which the host's task says as a cut
/// before any hold can run out.
#[tokio::test]
async fn a_far_side_gone_quiet_is_lost_as_silence() {
    use crate::remote::protocol::liveness::Liveness;
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("far.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let liveness = Liveness { ping_every: Duration::from_millis(100), dead_after: Duration::from_millis(600) };
    let link = start(Dial::Unix(path), Config { liveness, ..Config::default() });
    let far = Far::accept(&listener).await;
    let mut state = link.state();
    tokio::time::timeout(WAIT, state.wait_for(|s| matches!(s, LinkState::Up { .. }))).await.expect("up").expect("the link runs");
    // Its pings go unanswered; the socket stays open.
    let down = tokio::time::timeout(WAIT, state.wait_for(|s| matches!(s, LinkState::Down { .. }))).await.expect("the silence is seen").expect("the link runs").clone();
    match down {
        LinkState::Down { why, silent: true } => assert!(why.starts_with("nothing heard from the far side for"), "{why}"),
        other => panic!("not lost as silence: {other:?}"),
    }
    drop(far);
    link.shutdown().await;
}

/// What the far side has not acknowledged is held, shown now and as the most held; an Ack
/// empties the buffer and the mark stays. What is written while the link is cut is held
/// too, and the mark grows with it.
#[tokio::test]
async fn the_replay_buffer_is_shown_now_and_at_its_most() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("far.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let link = start(Dial::Unix(path), Config::default());
    let mut far = Far::accept(&listener).await;
    let opener = link.clone();
    let open = tokio::spawn(async move { opener.open_channel(1).await });
    let f = far.next_numbered().await;
    let channel = f.channel;
    // The Opened carries the ack of the Open: nothing is held after it.
    let opened = far.resume.send(channel, Body::Opened { status: OpenStatus::Ok, text: String::new() }).expect("numbered");
    far.write(&opened, false).await;
    let ends = open.await.expect("joined").expect("the channel opens");
    let open_cost = figures_until(&link, |l| l.replay.bytes == 0).await.replay.most_bytes;
    assert!(open_cost > 0, "the Open was held until acknowledged");

    // Two Data frames the far side reads and does not acknowledge: both held.
    for n in [3_000, 5_000] {
        ends.to_far().send(ends.data(Bytes::from(vec![7u8; n]))).await.expect("the link takes it");
        far.next_numbered().await;
    }
    let held = figures_until(&link, |l| l.replay.frames == 2).await.replay;
    assert!(held.bytes >= 8_000 && held.bytes < 8_200, "the two frames' bytes on the wire: {held:?}");
    assert_eq!((held.most_bytes, held.most_frames, held.limit), (held.bytes, 2, Config::default().limit as u64));

    // The far side's Ack: none held, the mark stays.
    let ack = far.resume.link(Body::Ack);
    far.write(&ack, false).await;
    let acked = figures_until(&link, |l| l.replay.bytes == 0).await.replay;
    assert_eq!((acked.frames, acked.most_bytes, acked.most_frames), (0, held.bytes, 2));

    // A cut: what is written meanwhile is held for the replay.
    drop(far);
    let mut state = link.state();
    tokio::time::timeout(WAIT, state.wait_for(|s| matches!(s, LinkState::Down { .. }))).await.expect("the link sees the cut").expect("the link runs");
    for _ in 0..3 {
        ends.to_far().send(ends.data(Bytes::from(vec![9u8; 4_000]))).await.expect("the link takes it");
    }
    let cut = figures_until(&link, |l| l.replay.frames == 3).await.replay;
    assert!(cut.bytes > held.bytes && cut.most_bytes == cut.bytes && cut.most_frames == 3, "{cut:?}");
    drop(ends);
    link.shutdown().await;
}
