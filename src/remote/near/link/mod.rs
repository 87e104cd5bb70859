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
//!
//! - `attempt`: a connection's start and end: the Hello and resume, the backoff after a
//!   cut, a session lost, taken over or refused, and the goodbye.
//! - `frames`: the frames of a connection up: written, read and handled, and each
//!   channel's Data on to its user.
//! - `counting`: the Data frames each connection carried, and how many compressed; the
//!   replay buffer's level and high-water mark.

mod attempt;
mod counting;
mod frames;

use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tracing::Instrument;

use super::api::Cmd;

pub use super::api::{Config, Dial, LinkState, NearLink, OpenError};
pub use attempt::{near_name, HELLO_TIMEOUT};
pub use super::ends::ChannelEnds;
pub(super) use super::ends::FromStream;
use super::channels::Channels;
use super::timing::{release_after, Backoff, Beat, Liveness};
use crate::remote::protocol::frame::{Body, SessionKey, VmInfo, HEADER_LEN, MAX_DATA};
use crate::remote::protocol::resume::{AckTimer, Outbound, Resume};
use crate::remote::protocol::figures::{LinkFigures, ReplayHeld};
use crate::remote::protocol::squeeze::{LinkSqueeze, SqueezeCount};
use frames::{has_room, read_some, write_some, Stalled};

/// What the channels' streams wrote, queued for the task.
const FROM_STREAMS_QUEUE: usize = 8;
/// Open requests queued for the task.
const COMMANDS_QUEUE: usize = 16;

/// Someone waiting for an open's result.
#[derive(Debug)]
struct Waiter {
    vm: u32,
    reply: oneshot::Sender<Result<ChannelEnds, OpenError>>,
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
    let (figures_tx, figures) = watch::channel(LinkFigures { replay: ReplayHeld::new(cfg.limit), ..LinkFigures::default() });
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
        ack_timer: AckTimer::default(),
        stalled: None,
        connections: 0,
        from_streams_tx,
        from_streams,
        cmds,
        vms_tx,
        state_tx,
        squeezed_before: LinkSqueeze::default(),
        figures_said: *figures.borrow(),
        figures_tx,
    };
    tokio::spawn(task.run().instrument(span));
    NearLink { cmds: cmds_tx, vms, state, figures }
}

struct ReadSide {
    half: Box<dyn AsyncRead + Send + Unpin>,
    buf: BytesMut,
    /// Data frames read on this connection, and of them those that came compressed
    /// (`remote::protocol::squeeze`).
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
    /// The timer `ack_at` waits on, not armed anew per frame (see `AckTimer`).
    ack_timer: AckTimer<Instant>,
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
    /// What `figures_tx` holds: the figures are published only when they changed; its
    /// `replay` is the replay buffer's high-water table, kept over the link's sessions.
    figures_said: LinkFigures,
    /// Every connection's Data frames so far and the replay buffer, for `jdwpmux stats`
    /// (`NearLink::figures`).
    figures_tx: watch::Sender<LinkFigures>,
}

impl Task {
    async fn run(mut self) {
        loop {
            self.publish_figures();
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
    fn deadline(&mut self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        let mut due = self.ack_timer.due(self.ack_at).unwrap_or(far);
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
            self.lose_silent();
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
        if self.ack_timer.fired(self.ack_at, now) {
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
            Beat::Dead => self.lose_silent(),
        }
    }
}
