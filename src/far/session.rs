//! The far side's one session: a task that owns the near side's connection (when there is
//! one), every channel's end, the resume state and the VM list, and decides everything in the
//! wake-up that brought it.
//!
//! - Input from the near side is read only while no channel's queue to its VM is full (a
//!   frame that does not fit waits in `stalled`, and reading stops until it fits), so a VM
//!   that does not read slows the near side down instead of filling memory here.
//! - Output is encoded into the connection's buffer and written as the socket takes it.
//!   Channels' events are taken only while the resume table has room for one more Data frame:
//!   with the link cut, VMs keep writing until `limit` bytes wait unacknowledged, then they
//!   wait on their own sockets.
//!   The stream is one queue for every channel: a VM that stops reading (its agent busy in
//!   an InvokeMethod while more than `TO_VM_QUEUE` pieces of commands wait) holds up the
//!   other channels' input, and the acks in it, until it reads again. JDWP agents read
//!   their commands as they come, so this is rare; per-channel credit would remove it.
//! - The connection going (end of stream, an error, a protocol error, nothing heard for
//!   `Liveness::dead_after` while reading: a quiet near side is pinged, as the near side
//!   pings the far side) starts the hold: the channels stay, the VMs see nothing. A cut link
//!   ends no socket here (sshd keeps its end while TCP retries), so for a connection lost to
//!   silence the hold runs from when the near side was last heard: the VMs are released a
//!   hold after the cut began. A near side that comes back within the hold resumes; after
//!   it, the session ends and every VM connection is closed, as a debugger leaving closes
//!   it.

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::farlink::frame::VmInfo;

use super::channel::{self, Channel, Event};
use super::conn::{flush_and_close, read_some, refuse, reserve, sleep_until, write_some, ConnReader, ConnWriter};
use super::handshake::{agree, gather_limits, grant_hold, judge, new_session, squeezes, taken_over_text, TakenOver, Verdict};
use super::vms::VmTable;
use crate::daemon::proc_vms::Decision;
use crate::discovery::jvms::FoundJvm;
use crate::farlink::codec::wire_len;
use crate::farlink::liveness::{self, Beat};
use crate::farlink::frame::{Body, ByeReason, Frame, Hello, OpenStatus, Role, SessionKey, HEADER_LEN, MAX_DATA};
use crate::farlink::resume::{Outbound, Received, Resume};
use crate::farlink::squeeze::SqueezeCount;
use crate::farlink::FarCodec;

/// Channel events queued for the session. With the link cut, what the far side holds of
/// the VMs' output is at most the resume table's limit, this many Data pieces, and one piece
/// being read per channel (each piece at most `MAX_DATA`).
const EVENT_QUEUE: usize = 8;

#[derive(Debug, Clone)]
pub struct Config {
    /// The hold when the near side asks for none.
    pub hold: Duration,
    /// Bytes sent and not yet acknowledged before the VMs are left waiting.
    pub limit: usize,
    /// This binary's version, for the Hello.
    pub binary: String,
    /// When a quiet near side is pinged, and when a silent one is taken for gone.
    pub liveness: liveness::Liveness,
}

/// A connection whose first frame was a Hello.
#[derive(Debug)]
pub struct Accepted {
    pub stream: UnixStream,
    pub hello: Hello,
    /// The Hello's ack: the last numbered frame the near side has.
    pub ack: u64,
    /// Bytes read after the Hello.
    pub rest: BytesMut,
}

/// Why the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// No near side came back within the hold.
    HoldExpired,
    /// The near side said it is leaving for good.
    NearLeft,
    /// The far side was told to stop.
    Stopped,
}

/// One round of a scan, as `daemon::proc_vms::decide` saw it.
pub type Scan = (Vec<FoundJvm>, Vec<Decision>);

enum Wake {
    Accepted(Accepted),
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
    Unstalled(Result<mpsc::OwnedPermit<Bytes>, mpsc::error::SendError<()>>),
    Event(Event),
    Scan(Scan),
    HoldExpired,
    Beat,
    AckDue,
    Stop,
}

pub struct Session {
    cfg: Config,
    key: SessionKey,
    hold: Duration,
    resume: Resume,
    channels: HashMap<u32, Channel>,
    /// The session's channels gather stops' answers within these limits: its near side
    /// asked, under protocol 3 (ABSENT_INFORMATION answers too under protocol 6). Set when
    /// the session starts: the near side that resumes a session is the one that started it,
    /// and a channel keeps what its stream began with.
    gather: Option<crate::gather::plan::Limits>,
    /// The session's VM lists say where each VM runs (`VmListPlaced`): its near side speaks
    /// protocol 4. Set when the session starts, as `gather`: frames queued before a cut are
    /// replayed to the same near side.
    placed: bool,
    /// This connection's near side agreed on protocol 5: big Data frames go out compressed
    /// when that makes them smaller (per connection: a replay to an older near side that
    /// came back goes plain). What was compressed, said when the connection ends.
    squeeze: bool,
    squeezed: SqueezeCount,
    vms: VmTable,
    /// The VM list changed since it was last sent in this session.
    list_due: bool,
    /// The first /proc scan is done. No near side is taken before it: a far side started
    /// again (after a crash) would tell the near side with an empty list that its VMs are
    /// gone (their rows and sessions would go and come back a moment later), and refuse the
    /// opens it sends meanwhile for VMs it has not found yet.
    scanned: bool,
    reader: Option<ConnReader>,
    writer: Option<ConnWriter>,
    /// The near side connected (or last connected), as its Hello named itself (without the
    /// take-over mark).
    near: Option<String>,
    /// The session another near side took last: its near side, back, is told so.
    taken: Option<TakenOver>,
    lost_at: Option<Instant>,
    last_heard: Instant,
    /// When this connection's last Ping went out.
    pinged: Option<Instant>,
    ack_at: Option<Instant>,
    /// Data for a channel whose queue was full, and its channel: reading waits for it.
    stalled: Option<(u32, Bytes)>,
    events_tx: mpsc::Sender<Event>,
    events_rx: mpsc::Receiver<Event>,
    ended: Option<Ended>,
}

impl Session {
    pub fn new(cfg: Config, key: SessionKey) -> Session {
        let (events_tx, events_rx) = mpsc::channel(EVENT_QUEUE);
        Session {
            hold: cfg.hold,
            resume: Resume::new(Outbound::new(cfg.limit)),
            cfg,
            key,
            channels: HashMap::new(),
            gather: None,
            placed: false,
            squeeze: false,
            squeezed: SqueezeCount::default(),
            vms: VmTable::default(),
            list_due: true,
            scanned: false,
            reader: None,
            writer: None,
            near: None,
            taken: None,
            // The hold runs from the start: a far side nobody connects to ends by itself.
            lost_at: Some(Instant::now()),
            last_heard: Instant::now(),
            pinged: None,
            ack_at: None,
            stalled: None,
            events_tx,
            events_rx,
            ended: None,
        }
    }

    pub async fn run(mut self, mut accepted: mpsc::Receiver<Accepted>, mut scans: mpsc::Receiver<Scan>, stop: CancellationToken) -> Ended {
        loop {
            let wake = self.next(&mut accepted, &mut scans, &stop).await;
            match wake {
                Wake::Accepted(a) => self.take_connection(a),
                Wake::Read(Ok(0)) => self.lose_connection("the near side closed the stream", None),
                Wake::Read(Ok(_)) => {}
                Wake::Read(Err(e)) => self.lose_connection(&format!("reading the stream: {e}"), None),
                Wake::Wrote(Ok(0)) => self.lose_connection("the stream takes no more bytes", None),
                Wake::Wrote(Ok(_)) => {}
                Wake::Wrote(Err(e)) => self.lose_connection(&format!("writing the stream: {e}"), None),
                Wake::Unstalled(permit) => {
                    if let (Ok(permit), Some((_, bytes))) = (permit, self.stalled.take()) {
                        permit.send(bytes);
                    }
                    self.stalled = None;
                    // Nothing was read while stalled: the silence was not the near side's.
                    self.last_heard = Instant::now();
                }
                Wake::Event(e) => self.on_event(e),
                Wake::Scan((found, decisions)) => {
                    // Sent when it changed, and after every round while a near side is
                    // connected: the list's arrival is then the near side's word for when this
                    // side last scanned (its hosts' LAST SCAN), a few hundred bytes a round.
                    self.list_due |= self.vms.update(&found, &decisions) || self.writer.is_some();
                    self.scanned = true;
                }
                Wake::HoldExpired => {
                    info!(hold_s = self.hold.as_secs(), channels = self.channels.len(), "no near side came back within the hold: closing every VM connection");
                    return Ended::HoldExpired;
                }
                Wake::Beat => self.on_beat(),
                Wake::AckDue => {
                    self.ack_at = None;
                    if self.resume.inn.unacked() > 0 {
                        let ack = self.resume.link(Body::Ack);
                        self.emit(&ack);
                    }
                }
                Wake::Stop => {
                    self.ended = Some(Ended::Stopped);
                    self.lose_connection("the far side is stopping", Some((ByeReason::ShuttingDown, "jdwpmux on this host is stopping".into())));
                    return Ended::Stopped;
                }
            }
            // Data that waited for a channel the near side has closed since goes nowhere.
            if self.stalled.as_ref().is_some_and(|(c, _)| !self.channels.contains_key(c)) {
                self.stalled = None;
            }
            self.take_input();
            if let Some(ended) = self.ended {
                return ended;
            }
            self.send_list();
        }
    }

    async fn next(&mut self, accepted: &mut mpsc::Receiver<Accepted>, scans: &mut mpsc::Receiver<Scan>, stop: &CancellationToken) -> Wake {
        let room = self.resume.out.has_room(HEADER_LEN + MAX_DATA);
        let out_held = self.writer.as_ref().map_or(0, |w| w.buf.len());
        // Read while nothing waits for a channel's queue and the output is not piling up
        // (a near side that sends and never reads).
        let reading = self.stalled.is_none() && out_held < self.cfg.limit + MAX_DATA;
        let stall_tx = self.stalled.as_ref().and_then(|(c, _)| self.channels.get(c)).map(|c| c.to_vm.clone());
        let hold_at = self.lost_at.map(|t| t + self.hold);
        // Silence counts only while the stream is read: a stall is this side's own doing.
        let l = self.liveness();
        let beat_at = self.reader.as_ref().filter(|_| reading).map(|_| {
            let last = self.pinged.map_or(self.last_heard, |p| p.max(self.last_heard));
            (last + l.ping_every).min(self.last_heard + l.dead_after)
        });
        let ack_at = self.ack_at;
        tokio::select! {
            Some(a) = accepted.recv(), if self.scanned => Wake::Accepted(a),
            r = read_some(&mut self.reader), if reading => Wake::Read(r),
            r = write_some(&mut self.writer) => Wake::Wrote(r),
            p = reserve(stall_tx) => Wake::Unstalled(p),
            Some(e) = self.events_rx.recv(), if room => Wake::Event(e),
            Some(s) = scans.recv() => Wake::Scan(s),
            _ = sleep_until(hold_at) => Wake::HoldExpired,
            _ = sleep_until(beat_at) => Wake::Beat,
            _ = sleep_until(ack_at) => Wake::AckDue,
            _ = stop.cancelled() => Wake::Stop,
        }
    }

    fn take_connection(&mut self, a: Accepted) {
        let connected = self.writer.as_ref().and(self.near.as_deref());
        let verdict = judge(&a.hello, &self.key, &self.cfg.binary, connected, self.taken.as_ref());
        let name = super::handshake::split_take_over(&a.hello.binary).0.to_string();
        match &verdict {
            Verdict::Refuse(reason, text) => {
                info!(?reason, near = %a.hello.binary, "refused a near side: {text}");
                return refuse(a.stream, *reason, text.clone());
            }
            Verdict::New | Verdict::TakeOver => {
                // The session of another near side is taken: that one, connected now or back
                // later, is told who took it (and does not take it back).
                if let Some(from) = self.near.as_ref().filter(|n| **n != name && !self.key.is_none()) {
                    info!(from = %from, by = %name, channels = self.channels.len(), "a near side took the far side over: the VM connections of the one before are closed");
                    self.taken = Some(TakenOver { id: self.key.id, by: name.clone() });
                }
                if verdict == Verdict::TakeOver {
                    self.let_go(ByeReason::Replaced, taken_over_text(&name));
                }
                self.new_session();
                self.gather = gather_limits(&a.hello);
                self.placed = agree(a.hello.proto_min, a.hello.proto_max).is_some_and(|p| p >= crate::far::handshake::PLACE_PROTOCOL);
            }
            Verdict::Resume => {}
        }
        // `judge` took the Hello only with a protocol in common.
        let protocol = agree(a.hello.proto_min, a.hello.proto_max).unwrap_or(crate::far::handshake::PROTOCOL_MIN);
        let replay = match self.resume.reconnect(a.ack) {
            Ok(r) => r,
            Err(e) => {
                info!("refused a near side that cannot resume: {e}");
                return refuse(a.stream, ByeReason::UnknownSession, e.to_string());
            }
        };
        if self.writer.is_some() {
            self.lose_connection("another near side took the session over", Some((ByeReason::Replaced, "another near side took the session over".into())));
        }
        self.hold = grant_hold(a.hello.hold_secs, self.cfg.hold);
        self.near = Some(name);
        let (half, write) = a.stream.into_split();
        self.squeeze = squeezes(protocol);
        self.squeezed = SqueezeCount::default();
        self.reader = Some(ConnReader { half, buf: a.rest });
        self.writer = Some(ConnWriter { half: write, buf: BytesMut::new() });
        let hello = Hello {
            role: Role::Far,
            proto_min: protocol,
            proto_max: protocol,
            binary: self.cfg.binary.clone(),
            session: self.key,
            hold_secs: u32::try_from(self.hold.as_secs()).unwrap_or(u32::MAX),
            resumed: verdict == Verdict::Resume,
            gather: false,
        };
        let hello = self.resume.link(Body::Hello(hello));
        self.emit(&hello);
        let resumed = verdict == Verdict::Resume;
        info!(resumed, replayed = replay.len(), near = %a.hello.binary, protocol, gather = self.gather.is_some(), absent = self.gather.is_some_and(|l| l.absent), squeeze = self.squeeze, hold_s = self.hold.as_secs(), "a near side connected");
        for f in &replay {
            self.emit(f);
        }
        self.lost_at = None;
        self.last_heard = Instant::now();
        self.pinged = None;
        self.take_input();
    }

    /// A new session: whatever the one before held is released.
    fn new_session(&mut self) {
        if !self.channels.is_empty() {
            info!(channels = self.channels.len(), "a new session: the earlier session's VM connections are closed");
        }
        self.channels.clear();
        self.stalled = None;
        self.resume = Resume::new(Outbound::new(self.cfg.limit));
        self.list_due = true;
        match new_session() {
            Ok(key) => self.key = key,
            Err(e) => warn!("no random session key ({e}); the session keeps its key"),
        }
    }

    /// Decodes and handles whole frames read, until a channel's queue is full.
    fn take_input(&mut self) {
        while self.stalled.is_none() && self.ended.is_none() {
            let Some(reader) = &mut self.reader else { return };
            match FarCodec.decode(&mut reader.buf) {
                Ok(Some(frame)) => {
                    self.last_heard = Instant::now();
                    self.on_frame(frame);
                }
                Ok(None) => return,
                Err(e) => return self.lose_connection(&format!("bad stream: {e}"), Some((ByeReason::Protocol, e.to_string()))),
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        match self.resume.receive(&frame) {
            Err(e) => self.lose_connection(&format!("bad stream: {e}"), Some((ByeReason::Protocol, e.to_string()))),
            Ok(Received::Link) => match frame.body {
                Body::Ping(stamp) => {
                    let pong = self.resume.link(Body::Pong(stamp));
                    self.emit(&pong);
                }
                Body::Ack | Body::Pong(_) => {}
                Body::Bye { reason, text } => {
                    info!(?reason, "the near side said goodbye: {text}");
                    if reason == ByeReason::ShuttingDown {
                        self.ended = Some(Ended::NearLeft);
                    }
                    self.lose_connection("the near side said goodbye", None);
                }
                other => self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("a {:?} frame in the middle of a connection", other.kind())))),
            },
            Ok(Received::Deliver) => {
                if let Some(ack) = self.resume.after_delivery(&mut self.ack_at, Instant::now()) {
                    self.emit(&ack);
                }
                let channel = frame.channel;
                match frame.body {
                    Body::Open { vm } => self.open(channel, vm),
                    Body::Close { .. } => {
                        debug!(channel, "the near side closed a channel");
                        self.channels.remove(&channel);
                    }
                    Body::Data(bytes) => self.pass_to_vm(channel, bytes),
                    other => self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("a near side does not send {:?} frames", other.kind())))),
                }
            }
        }
    }

    fn open(&mut self, channel: u32, vm: u32) {
        if self.channels.contains_key(&channel) {
            return self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("channel {channel} is open already"))));
        }
        match self.vms.endpoint(vm) {
            Some(endpoint) => {
                debug!(channel, vm, %endpoint, "opening a channel");
                self.channels.insert(channel, channel::open(channel, endpoint, self.gather, self.events_tx.clone()));
            }
            None => {
                // Past the limit if need be: this answers a frame already taken, and there is
                // one per channel.
                let text = format!("no VM {vm} here (it exited, or it cannot be reached)");
                match self.resume.send_beyond(channel, Body::Opened { status: OpenStatus::NoSuchVm, text }) {
                    Ok(frame) => self.emit(&frame),
                    Err(e) => warn!(channel, "an open result was not sent: {e}"),
                }
            }
        }
    }

    fn pass_to_vm(&mut self, channel: u32, bytes: Bytes) {
        // A channel closed here already: its Close is on the way to the near side.
        let Some(c) = self.channels.get(&channel) else { return };
        match c.to_vm.try_send(bytes) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(bytes)) => self.stalled = Some((channel, bytes)),
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    fn on_event(&mut self, e: Event) {
        match e {
            Event::Opened { channel, result } if self.channels.contains_key(&channel) => match result {
                Ok(()) => self.send(channel, Body::Opened { status: OpenStatus::Ok, text: String::new() }),
                Err((status, text)) => {
                    self.channels.remove(&channel);
                    self.send(channel, Body::Opened { status, text });
                }
            },
            Event::Data { channel, bytes } if self.channels.contains_key(&channel) => self.send(channel, Body::Data(bytes)),
            Event::Closed { channel, reason, text } => {
                if self.channels.remove(&channel).is_some() {
                    self.send(channel, Body::Close { reason, text });
                }
            }
            // Events of a channel the near side closed meanwhile.
            Event::Opened { .. } | Event::Data { .. } => {}
        }
    }

    /// Numbers a frame and writes it when a near side is connected (else the replay will).
    fn send(&mut self, channel: u32, body: Body) {
        match self.resume.send(channel, body) {
            Ok(frame) => {
                self.ack_at = None;
                self.emit(&frame);
            }
            Err(e) => warn!(channel, "a frame was not sent: {e}"),
        }
    }

    fn send_list(&mut self) {
        if !self.list_due {
            return;
        }
        let body = if self.placed {
            Body::VmListPlaced(self.vms.list().to_vec())
        } else {
            // A near side of protocol 3 has no place in its list.
            Body::VmList(self.vms.list().iter().map(|v| VmInfo { place: String::new(), ..v.clone() }).collect())
        };
        match wire_len(&body) {
            Ok(cost) if self.resume.out.has_room(cost) => {
                self.list_due = false;
                self.send(0, body);
            }
            Ok(_) => {}
            Err(e) => {
                warn!("the VM list cannot be sent: {e}");
                self.list_due = false;
            }
        }
    }

    fn emit(&mut self, frame: &Frame) {
        if let Some(w) = &mut self.writer {
            let wrote = if self.squeeze { FarCodec::encode_squeezed(frame, &mut w.buf, &mut self.squeezed) } else { FarCodec.encode(frame, &mut w.buf) };
            if let Err(e) = wrote {
                warn!("a frame could not be encoded: {e}");
            }
        }
    }

    /// How this session's connection is judged: within the hold granted (see
    /// `Liveness::within_hold`), so the VMs are let go a hold after the near side was last
    /// heard, not after the longer silence the default would wait for.
    fn liveness(&self) -> liveness::Liveness {
        self.cfg.liveness.within_hold(self.hold)
    }

    /// A quiet connection is pinged, a silent one dropped: the hold then runs from when the
    /// near side was last heard (the cut began about then; the socket said nothing).
    fn on_beat(&mut self) {
        let now = Instant::now();
        match self.liveness().judge(now - self.last_heard, self.pinged.map(|p| now - p)) {
            Beat::Quiet => {}
            Beat::Ping => {
                let ping = self.resume.link(Body::Ping(0));
                self.emit(&ping);
                self.pinged = Some(now);
            }
            Beat::Dead => {
                let heard = self.last_heard;
                self.lose_connection(&format!("nothing heard for {} s; the hold runs from then", (now - heard).as_secs()), None);
                if self.lost_at.is_some() {
                    self.lost_at = Some(heard);
                }
            }
        }
    }

    /// The connected near side is let go for good, told why in a Bye (it was taken over):
    /// no hold for it, its session ends with the new one's start.
    fn let_go(&mut self, reason: ByeReason, text: String) {
        self.reader = None;
        let Some(mut w) = self.writer.take() else { return };
        self.say_squeezed();
        let frame = self.resume.link(Body::Bye { reason, text });
        if FarCodec.encode(&frame, &mut w.buf).is_ok() {
            tokio::spawn(flush_and_close(w));
        }
    }

    /// What the connection that ends carried compressed (a line when it compressed any).
    fn say_squeezed(&self) {
        let c = self.squeezed;
        if c.squeezed > 0 {
            info!(frames = c.frames, squeezed = c.squeezed, raw = c.raw, wire = c.wire, "to the near side: {c}");
        }
    }

    /// The connection is gone (or is dropped now, after a Bye when one is given): the hold
    /// starts; every channel stays.
    fn lose_connection(&mut self, why: &str, bye: Option<(ByeReason, String)>) {
        self.reader = None;
        let Some(mut w) = self.writer.take() else { return };
        self.say_squeezed();
        if let Some((reason, text)) = bye {
            let frame = self.resume.link(Body::Bye { reason, text });
            if FarCodec.encode(&frame, &mut w.buf).is_ok() {
                tokio::spawn(flush_and_close(w));
            }
        }
        self.lost_at = Some(Instant::now());
        self.ack_at = None;
        info!(channels = self.channels.len(), hold_s = self.hold.as_secs(), "{}", gone_line(why, self.ended, self.channels.len(), self.hold));
    }
}

/// The line said when the near side's connection goes: what becomes of the VM connections.
/// "Holding" only when they are held: not when the far side ends next (the near side left
/// for good, or it is stopped), nor when there are none.
pub(super) fn gone_line(why: &str, ending: Option<Ended>, channels: usize, hold: Duration) -> String {
    let then = match (ending, channels) {
        (Some(_), 0) => "the far side ends".to_string(),
        (Some(_), n) => format!("closing its {n} VM connection(s); the far side ends"),
        (None, 0) => format!("no VM connection to hold; waiting {} s for a near side", hold.as_secs()),
        (None, n) => format!("holding its {n} VM connection(s) for the hold ({} s)", hold.as_secs()),
    };
    format!("the near side is gone ({why}); {then}")
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
