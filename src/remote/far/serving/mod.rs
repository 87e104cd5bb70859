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
//!
//! The task's state, its wake-ups and its beat are here; its methods on each part are in
//! files of their own:
//! - `near_side`: a near side's connection taken (new session, resumed, taken over) and lost
//!   (the hold starts), or let go.
//! - `frames`: the frames on the connection: the near side's handled, the channels' events
//!   and the VM list sent.

mod near_side;
mod frames;

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::channel::{Channel, Event};
use super::conn::{read_some, reserve, sleep_until, write_some, ConnReader, ConnWriter};
use crate::remote::protocol::hello::TakenOver;
use super::vms::VmTable;
use crate::discovery::jvms::decide::Decision;
use crate::discovery::jvms::FoundJvm;
use crate::remote::protocol::liveness::{self, Beat};
use crate::remote::protocol::frame::{Body, ByeReason, Hello, SessionKey, HEADER_LEN, MAX_DATA};
use crate::remote::protocol::resume::{AckTimer, Outbound, Resume};
use crate::remote::protocol::squeeze::SqueezeCount;

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

/// One round of a scan, as `discovery::jvms::decide::decide` saw it.
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
    gather: Option<crate::remote::stop_answers::plan::Limits>,
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
    /// The timer `ack_at` waits on, not armed anew per frame (see `AckTimer`).
    ack_timer: AckTimer<Instant>,
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
            ack_timer: AckTimer::default(),
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
                    self.let_go_all().await;
                    return Ended::HoldExpired;
                }
                Wake::Beat => self.on_beat(),
                // The timer may fire before the ack is due (it is not pulled earlier): then it
                // waits on for `ack_at`.
                Wake::AckDue => {
                    if self.ack_timer.fired(self.ack_at, Instant::now()) {
                        self.ack_at = None;
                        if self.resume.inn.unacked() > 0 {
                            let ack = self.resume.link(Body::Ack);
                            self.emit(&ack);
                        }
                    }
                }
                Wake::Stop => {
                    self.ended = Some(Ended::Stopped);
                    self.lose_connection("the far side is stopping", Some((ByeReason::ShuttingDown, "jdwpmux on this host is stopping".into())));
                    self.let_go_all().await;
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
        let ack_at = self.ack_timer.due(self.ack_at);
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

    /// How this session's connection is judged: within the hold granted (see
    /// `Liveness::within_hold`), so the VMs are let go a hold after the near side was last
    /// heard, not after the longer silence the default would wait for.
    fn liveness(&self) -> liveness::Liveness {
        self.cfg.liveness.within_hold(self.hold)
    }

    /// A quiet connection is pinged, a silent one dropped: the hold then runs from when the
    /// near side was last heard (the cut began about then; the socket said nothing).
    /// Closes every channel, and waits (at most `channel::LET_GO`) until each has written
    /// what its near side sent and what it sends before letting go of its VM
    /// (`remote::stop_answers::relay::Relay::let_go`): the process may end next.
    async fn let_go_all(&mut self) {
        let deadline = tokio::time::Instant::now() + super::channel::LET_GO;
        let tasks: Vec<_> = self.channels.drain().filter_map(|(_, c)| c.into_task()).collect();
        for mut task in tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                task.abort();
            }
        }
    }

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
}

#[cfg(test)]
mod tests;
