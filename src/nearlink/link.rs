//! The near link: the one task that owns the stream to one far side (its handle,
//! `NearLink`, and what it is made with are in `api`).
//!
//! The task connects (through `Dial`), says Hello with the session it had (none the first
//! time) and what it has received, and sends again what the far side has not (the farlink
//! `Resume` table). It then relays: the far side's VM lists to a `watch`, each channel's Data
//! to that channel's user (`ChannelEnds`), and what each user sends back as Data.
//! A cut (end of stream, an error, silence past `Liveness::dead_after`) keeps every channel
//! and its stream: the task tries again with a backoff and resumes the session, so the VM
//! session reading a channel sees its bytes go on, none lost, none twice. A far side that
//! no longer knows the session (it restarted, or its hold ran out) ends every channel: the
//! VM sessions see their VM connection close, as with a VM that went away. The task does the
//! same by itself when the far side has not been heard for its hold (`timing::release_after`):
//! the far side has let the VMs go by then, whether or not the host ever comes back.
//!
//! Memory is bounded both ways: what the VM sessions write is taken only while the resume
//! table has room (else they wait on their stream, as on a slow socket); what the far side
//! sends waits for room in a channel's bounded queue, and the stream is not read meanwhile.

use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};
use tracing::{debug, info, warn, Instrument};

use super::api::Cmd;

pub use super::api::{Config, Dial, LinkState, NearLink, OpenError};
use super::channels::{Channels, Opened, Route};
use super::inbound::{self, Broken, First, Inbound};
use super::timing::{release_after, Backoff, Beat, Liveness};
use crate::far::handshake::{PROTOCOL, PROTOCOL_MIN};
use crate::farlink::frame::{Body, ByeReason, CloseReason, Hello, OpenStatus, Role, SessionKey, VmInfo, HEADER_LEN, MAX_DATA};
use crate::farlink::resume::{Outbound, Resume};
use crate::farlink::frame::{Header, Kind};
use crate::farlink::squeeze::{LinkSqueeze, SqueezeCount};
use crate::farlink::{FarCodec, Frame};

/// How long a connection to the far side must last before a cut is tried again from the
/// backoff's first wait: shorter ones are a far side that breaks, and wait longer each time.
const STABLE_AFTER: Duration = Duration::from_secs(10);

/// How long connecting and the far side's Hello may take.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes buffered in a channel's stream (`ChannelEnds::into_stream`), each way.
const STREAM_BUF: usize = 256 * 1024;
/// Data pieces queued for one channel's user before the link stops reading the far side.
const TO_STREAM_QUEUE: usize = 16;
/// What the channels' streams wrote, queued for the task.
const FROM_STREAMS_QUEUE: usize = 8;
/// Open requests queued for the task.
const COMMANDS_QUEUE: usize = 16;
/// How long the goodbye may take to leave when the link ends.
const BYE_TIMEOUT: Duration = Duration::from_secs(2);

/// Someone waiting for an open's result.
#[derive(Debug)]
struct Waiter {
    vm: u32,
    reply: oneshot::Sender<Result<ChannelEnds, OpenError>>,
}

/// What a channel's user did.
#[derive(Debug)]
pub(super) enum FromStream {
    Data(u32, Bytes),
    Ended(u32),
}

/// An open channel as its one user holds it: the far side's bytes come in on `from_far`
/// (which ends when the channel closes), and what the user sends goes straight to the
/// link's task. No stream and no task of its own in between: the user's socket task reads
/// and writes the link's queues itself, one hop a packet each way.
#[derive(Debug)]
pub struct ChannelEnds {
    channel: u32,
    pub from_far: mpsc::Receiver<Bytes>,
    to_far: mpsc::Sender<FromStream>,
    ended: bool,
}

impl ChannelEnds {
    /// The link's queue, for a piece the user sent (`data`).
    pub(super) fn to_far(&self) -> mpsc::Sender<FromStream> {
        self.to_far.clone()
    }

    /// A piece of what the user sent, for `to_far`.
    pub(super) fn data(&self, bytes: Bytes) -> FromStream {
        FromStream::Data(self.channel, bytes)
    }

    /// The channel as an in-process byte stream, for a user that wants one (a task moves
    /// the bytes, one hop more each way than a socket's own task).
    pub fn into_stream(self) -> tokio::io::DuplexStream {
        let (ours, theirs) = tokio::io::duplex(STREAM_BUF);
        let (r, w) = tokio::io::split(ours);
        tokio::spawn(super::sockets::pump(self, r, w));
        theirs
    }

    /// The user is done sending: the channel closes (the far side closes its VM connection).
    /// What the far side sent before it heard so still comes on `from_far`.
    pub(super) async fn close(&mut self) {
        if !std::mem::replace(&mut self.ended, true) {
            let _ = self.to_far.send(FromStream::Ended(self.channel)).await;
        }
    }
}

impl Drop for ChannelEnds {
    /// A user that went without `end` (its task aborted, its wait given up) closes the
    /// channel too, as its stream's end did: else the far side would hold the VM connection.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let ev = FromStream::Ended(self.channel);
        if let Err(mpsc::error::TrySendError::Full(ev)) = self.to_far.try_send(ev) {
            let tx = self.to_far.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = tx.send(ev).await;
                });
            }
        }
    }
}

/// How this near side names itself in its Hello: the version, and the machine and pid of
/// this `serve`, within the Hello's limit (`MAX_VERSION`): what a far side that refuses a
/// second near side says of the first.
pub fn near_name() -> String {
    // SAFETY: uname fills the struct it is given; a zeroed utsname is a valid one.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    let node = if unsafe { libc::uname(&mut uts) } == 0 {
        // SAFETY: uname wrote a NUL-terminated name within the field.
        unsafe { std::ffi::CStr::from_ptr(uts.nodename.as_ptr()) }.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    let host = node.chars().filter(|c| c.is_ascii_graphic()).take(28).collect::<String>();
    let host = if host.is_empty() { "this machine".to_string() } else { host };
    let name = format!("{} ({host} pid {})", env!("CARGO_PKG_VERSION"), std::process::id());
    name.chars().take(crate::farlink::frame::MAX_VERSION).collect()
}

/// The first and the longest wait before trying again a far side that serves another near
/// side: that one may be stopped any time, but it is not asked every second.
const BUSY_FIRST: Duration = Duration::from_secs(5);
const BUSY_MAX: Duration = Duration::from_secs(60);

/// Starts the link to the far side reached by `dial`.
pub fn start(dial: Dial, cfg: Config) -> NearLink {
    let (cmds_tx, cmds) = mpsc::channel(COMMANDS_QUEUE);
    let (vms_tx, vms) = watch::channel(Vec::new());
    let (state_tx, state) = watch::channel(LinkState::Connecting);
    let (squeezed_tx, squeezed) = watch::channel(LinkSqueeze::default());
    let (from_streams_tx, from_streams) = mpsc::channel(FROM_STREAMS_QUEUE);
    let span = tracing::info_span!("nearlink", far = %dial);
    let task = Task {
        resume: Resume::new(Outbound::new(cfg.limit)),
        backoff: Backoff::new(cfg.first_retry, cfg.max_retry),
        busy: Backoff::new(BUSY_FIRST, BUSY_MAX),
        take_over: cfg.take_over,
        dial,
        cfg,
        key: SessionKey::default(),
        channels: Channels::default(),
        rd: None,
        wr: None,
        heard: Instant::now(),
        hold: None,
        pinged: None,
        stamp: 0,
        retry_at: Some(Instant::now()),
        up_since: None,
        ack_at: None,
        stalled: None,
        connections: 0,
        from_streams_tx,
        from_streams,
        cmds,
        vms_tx,
        state_tx,
        squeezed_before: LinkSqueeze::default(),
        squeezed_said: LinkSqueeze::default(),
        squeezed_tx,
    };
    tokio::spawn(task.run().instrument(span));
    NearLink { cmds: cmds_tx, vms, state, squeezed }
}

struct ReadSide {
    half: Box<dyn AsyncRead + Send + Unpin>,
    buf: BytesMut,
    /// Data frames read on this connection, and of them those that came compressed
    /// (`farlink::squeeze`).
    squeezed: SqueezeCount,
}

struct WriteSide {
    half: Box<dyn AsyncWrite + Send + Unpin>,
    out: BytesMut,
    /// The far side agreed on protocol 5: big Data frames go out compressed when that pays.
    squeeze: bool,
    /// Data frames written on this connection, and of them those sent compressed.
    squeezed: SqueezeCount,
}

/// Data for a channel's stream that waits for room in its queue.
struct Stalled {
    sink: mpsc::Sender<Bytes>,
    bytes: Bytes,
}

/// Why a connection attempt did not give a connection.
enum Attempt {
    /// Try again after the backoff.
    Retry(String),
    /// Try again at once (the session was lost, a new one is asked for).
    Now(String),
    /// Do not try again.
    Refused(String),
    /// The far side serves another near side: try again after a longer wait.
    Busy(String),
    /// Another near side took the far side over: as `Busy`, and never take it back.
    TakenOver(String),
}

struct Task {
    dial: Dial,
    cfg: Config,
    resume: Resume,
    key: SessionKey,
    channels: Channels<Waiter, mpsc::Sender<Bytes>>,
    rd: Option<ReadSide>,
    wr: Option<WriteSide>,
    heard: Instant,
    /// The hold the far side granted this session (None: no session yet). The near side
    /// keeps the hold's clock too: a link down for it gives the session up itself
    /// (`release_after`), so nothing is shown held that the far side has let go, even when
    /// the host never comes back.
    hold: Option<Duration>,
    pinged: Option<Instant>,
    stamp: u64,
    backoff: Backoff,
    /// When the connection now up was made: the backoff starts again from its first wait
    /// only after a connection that lasted (`STABLE_AFTER`), so a far side that answers the
    /// Hello and then breaks is tried at the backoff's growing pace, not every few 100 ms.
    up_since: Option<Instant>,
    /// Waits while the far side serves another near side.
    busy: Backoff,
    /// This link asks to take the far side over (`Config::take_over`) until another took it
    /// from this one.
    take_over: bool,
    retry_at: Option<Instant>,
    ack_at: Option<Instant>,
    stalled: Option<Stalled>,
    connections: u64,
    from_streams_tx: mpsc::Sender<FromStream>,
    from_streams: mpsc::Receiver<FromStream>,
    cmds: mpsc::Receiver<Cmd>,
    vms_tx: watch::Sender<Vec<VmInfo>>,
    state_tx: watch::Sender<LinkState>,
    /// The Data frames of the connections that ended, each way (the one up counts in its
    /// `ReadSide` and `WriteSide`).
    squeezed_before: LinkSqueeze,
    /// What `squeezed_tx` holds: the sum is published only when it changed.
    squeezed_said: LinkSqueeze,
    /// Every connection's Data frames so far, for `jdwpmux stats` (`NearLink::squeezed`).
    squeezed_tx: watch::Sender<LinkSqueeze>,
}

impl Task {
    async fn run(mut self) {
        loop {
            self.publish_squeezed();
            if self.rd.is_none() && self.retry_at.is_some_and(|t| t <= Instant::now()) {
                if let Some(text) = self.connect().await {
                    return self.refused(text);
                }
                continue;
            }
            // One more Data frame of the largest size must fit before a stream's write is taken.
            let room = self.resume.out.has_room(HEADER_LEN + MAX_DATA);
            let deadline = self.deadline();
            tokio::select! {
                cmd = self.cmds.recv() => match cmd {
                    Some(Cmd::Open { vm, reply }) => self.open(vm, reply),
                    Some(Cmd::Retry) => {
                        if self.rd.is_none() {
                            self.backoff.reset();
                            self.retry_at = Some(Instant::now());
                        }
                    }
                    Some(Cmd::Shutdown(done)) => {
                        self.goodbye().await;
                        let _ = done.send(());
                        return;
                    }
                    None => return self.goodbye().await,
                },
                Some(ev) = self.from_streams.recv(), if room => self.on_stream(ev),
                got = read_some(self.rd.as_mut()), if self.stalled.is_none() => match got {
                    Ok(0) => self.lose("the far side closed the stream"),
                    Ok(_) => self.take_input(),
                    Err(e) => self.lose(&format!("reading the stream: {e}")),
                },
                wrote = write_some(self.wr.as_mut()) => match wrote {
                    Ok(n) => {
                        if let Some(w) = &mut self.wr {
                            w.out.advance(n);
                        }
                    }
                    Err(e) => self.lose(&format!("writing the stream: {e}")),
                },
                ok = has_room(self.stalled.as_ref()) => self.unstall(ok),
                _ = tokio::time::sleep_until(deadline) => self.on_timer(),
            }
        }
    }

    /// The next time something is due: an attempt, an ack, a Ping or the dead-connection check.
    fn deadline(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        let mut due = self.ack_at.unwrap_or(far);
        if self.rd.is_none() {
            due = due.min(self.retry_at.unwrap_or(far));
        } else if self.stalled.is_none() {
            let l = self.liveness();
            let last = self.pinged.map_or(self.heard, |p| p.max(self.heard));
            due = due.min(last + l.ping_every).min(self.heard + l.dead_after);
        }
        due.min(self.release_at().unwrap_or(far))
    }

    /// How the connection is judged: within the hold granted (`Liveness::within_hold`), as
    /// the far side judges it.
    fn liveness(&self) -> Liveness {
        self.hold.map_or(self.cfg.liveness, |h| self.cfg.liveness.within_hold(h))
    }

    /// When the session's VMs are taken for let go, while there is a session whose far side
    /// is not being read (cut, or silent): its hold counted from when it was last heard. A
    /// stall is this side's own doing and counts for nothing.
    fn release_at(&self) -> Option<Instant> {
        let hold = self.hold?;
        if self.key.is_none() || self.stalled.is_some() {
            return None;
        }
        Some(self.heard + release_after(hold, self.liveness()))
    }

    /// The link has been down (or silent) for the far side's hold: it has let the session's
    /// VMs go, so they are said released and their debuggers closed now, with one line
    /// naming the host, not when (if ever) the host is back.
    fn release(&mut self) {
        let Some(hold) = self.hold else { return };
        if self.rd.is_some() {
            self.lose(&format!("nothing heard from the far side for {:?}", Instant::now() - self.heard));
        }
        let why = format!("the link to it has been down for its hold ({} s, --far-hold), so they run on", hold.as_secs());
        self.lose_session(&why);
        self.state_tx.send_replace(LinkState::Released { hold_secs: hold.as_secs() });
    }

    fn on_timer(&mut self) {
        let now = Instant::now();
        if self.release_at().is_some_and(|t| t <= now) {
            self.release();
        }
        if self.ack_at.is_some_and(|t| t <= now) {
            self.ack_at = None;
            if self.resume.inn.unacked() > 0 {
                let ack = self.resume.link(Body::Ack);
                self.emit(&ack);
            }
        }
        if self.rd.is_none() || self.stalled.is_some() {
            return;
        }
        match self.liveness().judge(now - self.heard, self.pinged.map(|p| now - p)) {
            Beat::Quiet => {}
            Beat::Ping => {
                self.stamp += 1;
                let ping = self.resume.link(Body::Ping(self.stamp));
                self.emit(&ping);
                self.pinged = Some(now);
            }
            Beat::Dead => self.lose(&format!("nothing heard from the far side for {:?}", now - self.heard)),
        }
    }

    /// One attempt to connect and resume; Some(text) when the far side refused this near side.
    async fn connect(&mut self) -> Option<String> {
        let attempt = match tokio::time::timeout(HELLO_TIMEOUT, self.hello()).await {
            Ok(Ok(())) => return None,
            Ok(Err(a)) => a,
            Err(_) => Attempt::Retry(format!("no hello from the far side within {HELLO_TIMEOUT:?}")),
        };
        match attempt {
            Attempt::Refused(text) => Some(text),
            Attempt::Now(why) => {
                self.retry_at = Some(Instant::now());
                self.down(why);
                None
            }
            Attempt::Retry(why) => {
                self.retry_at = Some(Instant::now() + self.backoff.next_wait());
                self.down(why);
                None
            }
            Attempt::TakenOver(text) => {
                self.taken_over(text);
                None
            }
            Attempt::Busy(text) => {
                let wait = self.busy.next_wait();
                debug!("the far side serves another near side ({text}); trying again in {wait:?}");
                self.retry_at = Some(Instant::now() + wait);
                self.state_tx.send_if_modified(|s| {
                    let changed = !matches!(s, LinkState::Busy(t) if *t == text);
                    *s = LinkState::Busy(text);
                    changed
                });
                None
            }
        }
    }

    fn down(&mut self, why: String) {
        debug!("no connection to the far side: {why}");
        self.state_tx.send_if_modified(|s| {
            let changed = !matches!(s, LinkState::Down { why: w } if *w == why);
            *s = LinkState::Down { why };
            changed
        });
    }

    async fn hello(&mut self) -> Result<(), Attempt> {
        let connected = self.dial.connect().await.map_err(Attempt::Retry)?;
        let (mut read, mut write) = (connected.read, connected.write);
        let hello = Hello {
            role: Role::Near,
            proto_min: PROTOCOL_MIN,
            // With compression off here (`JDWPMUX_SQUEEZE=off`, to measure what it gains)
            // this side speaks as one from before it, so the far side sends nothing
            // compressed either.
            proto_max: if crate::farlink::squeeze::enabled() { PROTOCOL } else { crate::far::handshake::SQUEEZE_PROTOCOL - 1 },
            // Asking to take over only for a new session: one resumed is this side's own.
            binary: if self.take_over && self.key.is_none() { crate::far::handshake::take_over_name(&near_name()) } else { near_name() },
            session: self.key,
            hold_secs: self.cfg.hold_secs,
            resumed: false,
            // Said under every protocol: one of 2 ignores it (see `Hello::gather`).
            gather: self.cfg.gather,
        };
        let hello = self.resume.link(Body::Hello(hello));
        let mut out = BytesMut::new();
        FarCodec.encode(&hello, &mut out).map_err(|e| Attempt::Refused(format!("the hello cannot be encoded: {e}")))?;
        write.write_all(&out).await.map_err(|e| Attempt::Retry(format!("writing the hello: {e}")))?;
        let mut buf = connected.rest;
        let first = loop {
            match FarCodec.decode(&mut buf) {
                Ok(Some(f)) => break f,
                Ok(None) => {}
                Err(e) => return Err(Attempt::Retry(format!("the far side's first frame: {e}"))),
            }
            match read.read_buf(&mut buf).await {
                Ok(0) => return Err(Attempt::Retry("the far side closed the stream before its hello".into())),
                Ok(_) => {}
                Err(e) => return Err(Attempt::Retry(format!("reading the far side's hello: {e}"))),
            }
        };
        let ack = first.ack;
        let new_session = self.key.is_none();
        let far = match inbound::first(first, new_session) {
            First::Hello(far) => far,
            First::Refused(text) => return Err(Attempt::Refused(text)),
            First::SessionGone(text) => {
                self.lose_session(&text);
                return Err(Attempt::Now(text));
            }
            First::Retry(text) => return Err(Attempt::Retry(text)),
            First::Busy(text) => return Err(Attempt::Busy(text)),
            First::TakenOver(text) => return Err(Attempt::TakenOver(text)),
        };
        if !far.resumed && !self.key.is_none() {
            self.lose_session("the far side started a new session");
        }
        let replay = match self.resume.reconnect(ack) {
            Ok(r) => r,
            Err(e) => {
                // The far side's count does not fit what this side sent: it is not the side
                // this session spoke to. Start a new session: at once, unless a new one was
                // what this Hello asked for (then the far side is broken; not in a tight loop).
                self.lose_session(&format!("the far side's acknowledgement does not fit: {e}"));
                return Err(if new_session { Attempt::Retry(e.to_string()) } else { Attempt::Now(e.to_string()) });
            }
        };
        self.key = far.session;
        self.hold = (far.hold_secs > 0).then(|| Duration::from_secs(u64::from(far.hold_secs)));
        self.connections += 1;
        info!(resumed = far.resumed, replayed = replay.len(), far = %far.binary, protocol = far.proto_max, gathered = self.cfg.gather && far.proto_max >= crate::far::handshake::GATHER_PROTOCOL, hold_s = far.hold_secs, hold_asked_s = self.cfg.hold_secs, connections = self.connections, "connected to the far side");
        self.rd = Some(ReadSide { half: read, buf, squeezed: SqueezeCount::default() });
        let squeeze = crate::far::handshake::squeezes(far.proto_max);
        self.wr = Some(WriteSide { half: write, out: BytesMut::new(), squeeze, squeezed: SqueezeCount::default() });
        self.heard = Instant::now();
        self.pinged = None;
        self.retry_at = None;
        self.up_since = Some(Instant::now());
        self.busy.reset();
        for f in &replay {
            self.emit(f);
        }
        let state = LinkState::Up { connections: self.connections, resumed: far.resumed, hold_secs: far.hold_secs };
        self.state_tx.send_replace(state);
        self.take_input();
        Ok(())
    }

    /// The connection is gone: every channel stays, an attempt follows after the backoff.
    fn lose(&mut self, why: &str) {
        let Some(rd) = self.rd.take() else { return };
        let wr = self.wr.take();
        self.retire(&rd, wr.as_ref());
        if self.up_since.take().is_some_and(|t| t.elapsed() >= STABLE_AFTER) {
            self.backoff.reset();
        }
        self.retry_at = Some(Instant::now() + self.backoff.next_wait());
        info!(channels = self.channels.len(), "the stream to the far side is cut ({why}); trying again");
        self.state_tx.send_replace(LinkState::Down { why: why.to_string() });
    }

    /// The session's channels fail and its resume state goes: the next Hello asks for a new
    /// session.
    fn forget_session(&mut self) {
        for w in self.channels.reset() {
            let _ = w.reply.send(Err(OpenError::SessionLost { vm: w.vm }));
        }
        self.stalled = None;
        self.ack_at = None;
        self.resume = Resume::new(Outbound::new(self.cfg.limit));
        self.key = SessionKey::default();
    }

    /// The far side no longer has the session: every channel ends, opens not yet answered
    /// fail, and the next Hello asks for a new session.
    fn lose_session(&mut self, why: &str) {
        if !self.channels.is_empty() {
            // The debuggers of those VMs lose their connections next: say once, by host, why.
            let host = if self.cfg.host.is_empty() { self.dial.to_string() } else { self.cfg.host.clone() };
            warn!(channels = self.channels.len(), "jdwpmux on {host} let its VMs go: {why}; their debuggers are disconnected");
        }
        self.forget_session();
    }

    /// Another near side took the far side over, this one's session with it: the channels
    /// end (their debuggers are closed, as when the far side lets the VMs go), the link waits
    /// as for a far side busy with another near side, and never asks to take it back, so two
    /// near sides started to take over cannot take it from each other in turn. Said once, by
    /// the host's task, from the state.
    fn taken_over(&mut self, text: String) {
        debug!(channels = self.channels.len(), "the far side was taken over: {text}");
        self.take_over = false;
        self.forget_session();
        self.hold = None;
        self.retry_at = Some(Instant::now() + self.busy.next_wait());
        self.state_tx.send_replace(LinkState::TakenOver(text));
    }

    fn refused(&mut self, text: String) {
        debug!("the far side refused this near side: {text}");
        for w in self.channels.reset() {
            let _ = w.reply.send(Err(OpenError::Ended));
        }
        self.state_tx.send_replace(LinkState::Refused(text));
    }

    async fn goodbye(&mut self) {
        let bye = self.resume.link(Body::Bye { reason: ByeReason::ShuttingDown, text: "the near side is ending".into() });
        self.emit(&bye);
        let rd = self.rd.take();
        if let Some(r) = &rd {
            let wr = self.wr.take();
            self.retire(r, wr.as_ref());
            // Published now, with no connection up: the goodbye's own write is no Data.
            self.publish_squeezed();
            self.wr = wr;
        }
        if let Some(mut w) = self.wr.take() {
            let _ = tokio::time::timeout(BYE_TIMEOUT, async {
                let _ = w.half.write_all(&w.out).await;
                let _ = w.half.shutdown().await;
                // The ssh master is closed right after this (`ssh -O exit`), and a master
                // leaves at once, dropping what it has not passed on yet: the Bye could be
                // lost and the far side would hold the VMs for its whole hold. The far side
                // closes its end once it has read the Bye (or the end of the stream behind
                // it), so the end of what it sends says the Bye got there.
                if let Some(mut r) = rd {
                    loop {
                        r.buf.clear();
                        match read_some(Some(&mut r)).await {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                    }
                }
            })
            .await;
        }
        self.state_tx.send_replace(LinkState::Ended);
    }

    fn emit(&mut self, frame: &Frame) {
        if let Some(w) = &mut self.wr {
            let wrote = if w.squeeze {
                FarCodec::encode_squeezed(frame, &mut w.out, &mut w.squeezed)
            } else {
                // Counted as `encode_squeezed` counts: a far side of protocol 4 gets every
                // Data frame plain, and `stats` says how many.
                let wrote = FarCodec.encode(frame, &mut w.out);
                if let (Ok(()), Body::Data(bytes)) = (&wrote, &frame.body) {
                    w.squeezed.data(bytes.len(), None);
                }
                wrote
            };
            if let Err(e) = wrote {
                warn!("a frame could not be encoded: {e}");
            }
        }
    }

    /// Numbers a frame for the far side and writes it when connected (else the replay will).
    fn send(&mut self, channel: u32, body: Body, beyond: bool) {
        let sent = if beyond { self.resume.send_beyond(channel, body) } else { self.resume.send(channel, body) };
        match sent {
            Ok(frame) => {
                self.ack_at = None;
                self.emit(&frame);
            }
            Err(e) => warn!(channel, "a frame was not sent: {e}"),
        }
    }

    fn open(&mut self, vm: u32, reply: oneshot::Sender<Result<ChannelEnds, OpenError>>) {
        let channel = self.channels.begin(Waiter { vm, reply });
        debug!(channel, vm, "opening a channel");
        // Past the limit if need be: opens are few (one per VM session), and bounded by the
        // command queue.
        self.send(channel, Body::Open { vm }, true);
    }

    fn on_stream(&mut self, ev: FromStream) {
        match ev {
            FromStream::Data(channel, bytes) => {
                if matches!(self.channels.route(channel), Route::Deliver(_)) {
                    self.send(channel, Body::Data(bytes), false);
                }
            }
            FromStream::Ended(channel) => {
                if self.channels.close(channel) {
                    debug!(channel, "the channel's stream ended; closing it");
                    self.send(channel, Body::Close { reason: CloseReason::Done, text: String::new() }, true);
                }
            }
        }
    }

    /// Decodes and handles whole frames read, until a channel's queue is full.
    fn take_input(&mut self) {
        while self.stalled.is_none() {
            let Some(rd) = &mut self.rd else { return };
            // A compressed frame is counted by its header: it decodes to the Data it was.
            let squeezed = match Header::parse(&rd.buf) {
                Some(Ok(h)) if h.kind == Kind::DataZ && rd.buf.len() >= HEADER_LEN + h.len as usize => Some(h.len as usize),
                _ => None,
            };
            match FarCodec.decode(&mut rd.buf) {
                Ok(Some(frame)) => {
                    if let Body::Data(bytes) = &frame.body {
                        rd.squeezed.data(bytes.len(), squeezed);
                    }
                    self.heard = Instant::now();
                    self.on_frame(frame);
                }
                Ok(None) => return,
                Err(e) => return self.lose(&format!("bad stream: {e}")),
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        let what = inbound::judge(&mut self.resume, frame);
        if what.delivered() {
            if let Some(ack) = self.resume.after_delivery(&mut self.ack_at, Instant::now()) {
                self.emit(&ack);
            }
        }
        match what {
            Inbound::Pong(stamp) => {
                let pong = self.resume.link(Body::Pong(stamp));
                self.emit(&pong);
            }
            Inbound::Nothing => {}
            Inbound::Lose(why) => self.lose(&why.to_string()),
            Inbound::TakenOver(text) => {
                if let Some(rd) = self.rd.take() {
                    let wr = self.wr.take();
                    self.retire(&rd, wr.as_ref());
                }
                self.wr = None;
                self.up_since = None;
                self.taken_over(text);
            }
            Inbound::VmList(vms) => {
                self.vms_tx.send_replace(vms);
            }
            Inbound::Opened { channel, status, text } => self.opened(channel, status, text),
            Inbound::Closed { channel, reason, text } => {
                if self.channels.close(channel) {
                    debug!(channel, ?reason, "the far side closed the channel: {text}");
                }
            }
            Inbound::Data { channel, bytes } => self.deliver(channel, bytes),
        }
    }

    fn opened(&mut self, channel: u32, status: OpenStatus, text: String) {
        match self.channels.opened(channel, status == OpenStatus::Ok) {
            Opened::Ok(w) => {
                let (to_stream, queue) = mpsc::channel(TO_STREAM_QUEUE);
                self.channels.set_open(channel, to_stream);
                debug!(channel, vm = w.vm, "channel open");
                let ends = ChannelEnds { channel, from_far: queue, to_far: self.from_streams_tx.clone(), ended: false };
                // A waiter that gave up: the channel closes at once.
                if let Err(Ok(mut ends)) = w.reply.send(Ok(ends)) {
                    ends.ended = true;
                    self.on_stream(FromStream::Ended(channel));
                }
            }
            Opened::Failed(w) => {
                let vm = w.vm;
                let err = match status {
                    OpenStatus::NoSuchVm => OpenError::NoSuchVm { vm, text },
                    OpenStatus::ConnectFailed => OpenError::ConnectFailed { vm, text },
                    OpenStatus::Ok => OpenError::Other { vm, status: 0, text },
                    OpenStatus::Other(status) => OpenError::Other { vm, status, text },
                };
                let _ = w.reply.send(Err(err));
            }
            Opened::Stray => debug!(channel, "an open result for a channel closed meanwhile"),
        }
    }

    fn deliver(&mut self, channel: u32, bytes: Bytes) {
        match self.channels.route(channel) {
            Route::Deliver(sink) => match sink.try_send(bytes) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(bytes)) => self.stalled = Some(Stalled { sink: sink.clone(), bytes }),
                // The stream's writer ended (its user went): its reader closes the channel.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            },
            Route::Drop => {}
            Route::Protocol(what) => self.lose(&Broken::Channel { what, channel }.to_string()),
        }
    }

    /// The stalled channel has room again (or is gone): hand its piece on and read again.
    fn unstall(&mut self, ok: bool) {
        let Some(s) = self.stalled.take() else { return };
        if ok {
            if let Err(mpsc::error::TrySendError::Full(bytes)) = s.sink.try_send(s.bytes) {
                self.stalled = Some(Stalled { sink: s.sink, bytes });
                return;
            }
        }
        // Time spent waiting on this side's own stream is not the far side's silence.
        self.heard = Instant::now();
        self.take_input();
    }
}

impl Task {
    /// The connection of `rd` and `wr` ends: its Data frames count with those before, and
    /// the log says what it carried compressed.
    fn retire(&mut self, rd: &ReadSide, wr: Option<&WriteSide>) {
        self.squeezed_before = self.squeezed_before.plus(this_connection(Some(rd), wr));
        say_squeezed(rd, wr);
    }

    /// Every connection's Data frames so far, to `NearLink::squeezed`, when they changed.
    fn publish_squeezed(&mut self) {
        let now = self.squeezed_before.plus(this_connection(self.rd.as_ref(), self.wr.as_ref()));
        if now != self.squeezed_said {
            self.squeezed_said = now;
            self.squeezed_tx.send_replace(now);
        }
    }
}

/// The Data frames of the connection up, each way (none when there is none).
fn this_connection(rd: Option<&ReadSide>, wr: Option<&WriteSide>) -> LinkSqueeze {
    LinkSqueeze { sent: wr.map(|w| w.squeezed).unwrap_or_default(), received: rd.map(|r| r.squeezed).unwrap_or_default() }
}

/// What the connection that ends carried compressed, each way (a line when it did).
fn say_squeezed(rd: &ReadSide, wr: Option<&WriteSide>) {
    let (inn, out) = (rd.squeezed, wr.map(|w| w.squeezed).unwrap_or_default());
    if inn.squeezed > 0 || out.squeezed > 0 {
        info!(in_frames = inn.squeezed, in_raw = inn.raw, in_wire = inn.wire, out_frames = out.squeezed, out_raw = out.raw, out_wire = out.wire, "compressed on the link: from the far side {} bytes came as {}, to it {} as {}", inn.raw, inn.wire, out.raw, out.wire);
    }
}

async fn read_some(rd: Option<&mut ReadSide>) -> std::io::Result<usize> {
    match rd {
        Some(r) => {
            r.buf.reserve(MAX_DATA);
            r.half.read_buf(&mut r.buf).await
        }
        None => std::future::pending().await,
    }
}

async fn write_some(wr: Option<&mut WriteSide>) -> std::io::Result<usize> {
    match wr {
        Some(w) if !w.out.is_empty() => w.half.write(&w.out).await,
        _ => std::future::pending().await,
    }
}

/// Waits until the stalled channel's queue has room: true, or false when it closed.
async fn has_room(stalled: Option<&Stalled>) -> bool {
    match stalled {
        Some(s) => s.sink.reserve().await.is_ok(),
        None => std::future::pending().await,
    }
}


#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
