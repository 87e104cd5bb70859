//! A connection's start and end: connecting, the Hello (this side's name in it) and the
//! resume, the backoff after a cut, a session the far side no longer has, a far side taken
//! over or refusing this near side, and the goodbye when the link ends.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};
use tracing::{debug, info, warn};

use super::frames::read_some;
use super::{LinkState, OpenError, ReadSide, Task, WriteSide};
use crate::remote::protocol::hello::{PROTOCOL, PROTOCOL_MIN};
use crate::remote::protocol::frame::{Body, ByeReason, Hello, Role, SessionKey};
use crate::remote::protocol::resume::{Outbound, Resume};
use crate::remote::protocol::squeeze::SqueezeCount;
use crate::remote::protocol::FarCodec;
use crate::remote::near::inbound::{self, First};

/// How long a connection to the far side must last before a cut is tried again from the
/// backoff's first wait: shorter ones are a far side that breaks, and wait longer each time.
const STABLE_AFTER: Duration = Duration::from_secs(10);

/// How long connecting and the far side's Hello may take.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the goodbye may take to leave when the link ends.
const BYE_TIMEOUT: Duration = Duration::from_secs(2);

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
    name.chars().take(crate::remote::protocol::frame::MAX_VERSION).collect()
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

impl Task {
    /// One attempt to connect and resume; Some(text) when the far side refused this near side.
    pub(super) async fn connect(&mut self) -> Option<String> {
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
            let changed = !matches!(s, LinkState::Down { why: w, .. } if *w == why);
            *s = LinkState::Down { why, silent: false };
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
            proto_max: if crate::remote::protocol::squeeze::enabled() { PROTOCOL } else { crate::remote::protocol::hello::SQUEEZE_PROTOCOL - 1 },
            // Asking to take over only for a new session: one resumed is this side's own.
            binary: if self.take_over && self.key.is_none() { crate::remote::protocol::hello::take_over_name(&near_name()) } else { near_name() },
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
        // Frames queued before a new session's first connection (its channels' opens) are
        // sent for the first time, not replayed: the count says what a resume sent again.
        let (replayed, queued) = if far.resumed { (replay.len(), 0) } else { (0, replay.len()) };
        info!(resumed = far.resumed, replayed, queued, far = %far.binary, protocol = far.proto_max, gathered = self.cfg.gather && far.proto_max >= crate::remote::protocol::hello::GATHER_PROTOCOL, hold_s = far.hold_secs, hold_asked_s = self.cfg.hold_secs, connections = self.connections, "connected to the far side");
        self.rd = Some(ReadSide { half: read, buf, squeezed: SqueezeCount::default() });
        let squeeze = crate::remote::protocol::hello::squeezes(far.proto_max);
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
    pub(super) fn lose(&mut self, why: &str) {
        self.lose_as(why, false);
    }

    /// Nothing was heard from the far side within the liveness deadline: lost as `lose`,
    /// said to be silence (a cut, as a rule) rather than a stream that ended.
    pub(super) fn lose_silent(&mut self) {
        let why = format!("nothing heard from the far side for {:.1?}", Instant::now() - self.heard);
        self.lose_as(&why, true);
    }

    fn lose_as(&mut self, why: &str, silent: bool) {
        let Some(rd) = self.rd.take() else { return };
        let wr = self.wr.take();
        self.retire(&rd, wr.as_ref());
        if self.up_since.take().is_some_and(|t| t.elapsed() >= STABLE_AFTER) {
            self.backoff.reset();
        }
        self.retry_at = Some(Instant::now() + self.backoff.next_wait());
        info!(channels = self.channels.len(), "the stream to the far side is cut ({why}); trying again");
        self.state_tx.send_replace(LinkState::Down { why: why.to_string(), silent });
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
    pub(super) fn lose_session(&mut self, why: &str) {
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
    pub(super) fn taken_over(&mut self, text: String) {
        debug!(channels = self.channels.len(), "the far side was taken over: {text}");
        self.take_over = false;
        self.forget_session();
        self.hold = None;
        self.retry_at = Some(Instant::now() + self.busy.next_wait());
        self.state_tx.send_replace(LinkState::TakenOver(text));
    }

    pub(super) fn refused(&mut self, text: String) {
        debug!("the far side refused this near side: {text}");
        for w in self.channels.reset() {
            let _ = w.reply.send(Err(OpenError::Ended));
        }
        self.state_tx.send_replace(LinkState::Refused(text));
    }

    pub(super) async fn goodbye(&mut self) {
        let bye = self.resume.link(Body::Bye { reason: ByeReason::ShuttingDown, text: "the near side is ending".into() });
        self.emit(&bye);
        let rd = self.rd.take();
        if let Some(r) = &rd {
            let wr = self.wr.take();
            self.retire(r, wr.as_ref());
            // Published now, with no connection up: the goodbye's own write is no Data.
            self.publish_figures();
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
}
