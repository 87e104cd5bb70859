//! The near side's connection to the far side's session: one taken (its Hello judged: a new
//! session, one resumed, one taken over from another near side, or refused), its Hello
//! answered and the replay sent; one lost (the hold starts, every channel stays) or let go
//! for good, and the line said when it goes.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::codec::Encoder;
use tracing::{info, warn};

use super::{Accepted, Ended, Session};
use crate::remote::far::conn::{flush_and_close, refuse, split};
use crate::remote::protocol::hello::{agree, gather_limits, grant_hold, judge, new_session, squeezes, taken_over_text, TakenOver, Verdict};
use crate::remote::protocol::frame::{Body, ByeReason, Hello, Role};
use crate::remote::protocol::resume::{Outbound, Resume};
use crate::remote::protocol::squeeze::SqueezeCount;
use crate::remote::protocol::FarCodec;

impl Session {
    pub(super) fn take_connection(&mut self, a: Accepted) {
        let connected = self.writer.as_ref().and(self.near.as_deref());
        let verdict = judge(&a.hello, &self.key, &self.cfg.binary, connected, self.taken.as_ref());
        let name = crate::remote::protocol::hello::split_take_over(&a.hello.binary).0.to_string();
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
                self.placed = agree(a.hello.proto_min, a.hello.proto_max).is_some_and(|p| p >= crate::remote::protocol::hello::PLACE_PROTOCOL);
            }
            Verdict::Resume => {}
        }
        // `judge` took the Hello only with a protocol in common.
        let protocol = agree(a.hello.proto_min, a.hello.proto_max).unwrap_or(crate::remote::protocol::hello::PROTOCOL_MIN);
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
        let (reader, writer) = match split(a.stream, a.rest) {
            Ok(halves) => halves,
            Err(e) => {
                // As a connection lost at once: the near side comes back and resumes.
                warn!("a near side's connection could not be watched: {e}");
                self.lost_at.get_or_insert_with(Instant::now);
                return;
            }
        };
        self.squeeze = squeezes(protocol);
        self.squeezed = SqueezeCount::default();
        self.reader = Some(reader);
        self.writer = Some(writer);
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
    pub(super) fn lose_connection(&mut self, why: &str, bye: Option<(ByeReason, String)>) {
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
