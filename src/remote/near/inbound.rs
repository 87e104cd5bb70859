//! What each frame from the far side means for the near link: the first frame of a
//! connection (its Hello, or a goodbye saying why not), and every frame after it, judged
//! against the session's resume state. Pure: the link's task does what the answer says, and
//! the `nearlink` fuzz target drives these with any frames a hostile far side could send.
//!
//! Anything a far side must not send is a `Broken` (typed, its text bounded by the frame's
//! own limits), and the task drops the connection for it, keeping the session.

use bytes::Bytes;

use crate::remote::protocol::hello::{protocols, PROTOCOL, PROTOCOL_MIN};
use crate::remote::protocol::frame::{Body, ByeReason, CloseReason, Hello, Kind, OpenStatus, Role, VmInfo};
use crate::remote::protocol::resume::{Received, Resume, ResumeError};
use crate::remote::protocol::Frame;

/// What a connection's first frame from the far side says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum First {
    /// Its Hello, fit for this near side: the connection goes on.
    Hello(Hello),
    /// It will never take this near side (another protocol): do not try again.
    Refused(String),
    /// It no longer has the session asked for: start a new one, at once.
    SessionGone(String),
    /// Not now: try again after the backoff.
    Retry(String),
    /// It serves another near side now (the text names it): try again, after a longer wait.
    Busy(String),
    /// Another near side took it over, this one's session with it (the text names who):
    /// wait as for `Busy`, and never ask to take it back.
    TakenOver(String),
}

/// The first frame of a connection, judged; `new_session`: the near side's Hello asked for a
/// new session (it had none to resume).
pub fn first(frame: Frame, new_session: bool) -> First {
    let far = match frame.body {
        Body::Hello(far) => far,
        // The far side's text is the refusal's line: one without words still says why.
        Body::Bye { reason: ByeReason::Version, text } if text.trim().is_empty() => {
            return First::Refused("the far side speaks another protocol version (its goodbye said no more)".into())
        }
        Body::Bye { reason: ByeReason::Version, text } => return First::Refused(text),
        // Asked for a new session, a far side cannot rightly say the session is unknown: at
        // once again would ask the same, in a tight loop. After the backoff.
        Body::Bye { reason: reason @ (ByeReason::UnknownSession | ByeReason::BadToken), text } if new_session => {
            return First::Retry(format!("the far side refused a new session ({reason:?}): {text}"))
        }
        Body::Bye { reason: reason @ (ByeReason::UnknownSession | ByeReason::BadToken), text } => return First::SessionGone(format!("{text} ({reason:?})")),
        Body::Bye { reason: ByeReason::Busy, text } => return First::Busy(said_or(text, "the far side serves another near side (its goodbye said no more)")),
        Body::Bye { reason: ByeReason::Replaced, text } => return First::TakenOver(said_or(text, TAKEN_OVER)),
        Body::Bye { reason, text } => return First::Retry(format!("the far side said goodbye ({reason:?}): {text}")),
        other => return First::Retry(format!("the far side began with a {:?} frame", other.kind())),
    };
    // The far side answers with the one protocol it chose (min = max), one this side offered.
    if let Some(why) = odd_hello(&far) {
        return First::Refused(format!("the far side (jdwpmux {}) {why}: it cannot be used by this one (jdwpmux {})", far.binary, env!("CARGO_PKG_VERSION")));
    }
    First::Hello(far)
}

/// A take-over's reason when the far side's goodbye gave none.
const TAKEN_OVER: &str = "another near side took the far side over (its goodbye said no more)";

/// The far side's words, or what its goodbye's kind says when it said none: a row's reason
/// is never empty.
fn said_or(text: String, none: &str) -> String {
    if text.trim().is_empty() {
        none.to_string()
    } else {
        text
    }
}

/// What is wrong with a far side's Hello, in words that say it (None: nothing). A range
/// within this side's own is no version mismatch: said as what it is, an answer that chose
/// nothing.
fn odd_hello(far: &Hello) -> Option<String> {
    let ours = protocols(PROTOCOL_MIN, PROTOCOL);
    if far.role != Role::Far {
        return Some(format!("answered as a {:?} side, not as a far side", far.role));
    }
    let said = protocols(far.proto_min, far.proto_max);
    if far.proto_min != far.proto_max {
        return Some(format!("answered with a range of far-side protocols ({said}), where a far side names the one it chose of this one's {ours}"));
    }
    if !(PROTOCOL_MIN..=PROTOCOL).contains(&far.proto_min) {
        return Some(format!("chose far-side protocol {said}, which this one does not speak (it speaks {ours})"));
    }
    None
}

/// Why a connection is dropped for what the far side sent.
#[derive(Debug, thiserror::Error)]
pub enum Broken {
    #[error("the far side said goodbye ({reason:?}): {text}")]
    Bye { reason: ByeReason, text: String },
    #[error("bad stream: {0}")]
    Resume(#[from] ResumeError),
    #[error("bad stream: a {0:?} frame in the middle of a connection")]
    Unexpected(Kind),
    #[error("bad stream: a far side does not send {0:?} frames")]
    NotFromFar(Kind),
    #[error("bad stream: {what} ({channel})")]
    Channel { what: &'static str, channel: u32 },
}

/// Two reasons are the same when they are of one kind and say the same (a resume error
/// carries no equality of its own).
impl PartialEq for Broken {
    fn eq(&self, other: &Broken) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other) && self.to_string() == other.to_string()
    }
}

/// What a frame after the Hello asks of the link.
#[derive(Debug, PartialEq)]
pub enum Inbound {
    /// Answer the far side's Ping with this stamp.
    Pong(u64),
    /// Nothing more (an Ack or a Pong: the resume state took its ack).
    Nothing,
    /// Drop the connection, keep the session.
    Lose(Broken),
    /// Another near side took the far side over (the text names who): this one's session
    /// is gone with its VM connections.
    TakenOver(String),
    /// The far side's VMs now (numbered frames from here on: delivered, to be acknowledged).
    VmList(Vec<VmInfo>),
    Opened { channel: u32, status: OpenStatus, text: String },
    Closed { channel: u32, reason: CloseReason, text: String },
    Data { channel: u32, bytes: Bytes },
}

impl Inbound {
    /// The frame was taken in order: the far side is owed an acknowledgement.
    pub fn delivered(&self) -> bool {
        matches!(self, Inbound::VmList(_) | Inbound::Opened { .. } | Inbound::Closed { .. } | Inbound::Data { .. })
    }
}

/// A frame after the Hello, through the session's resume state. A kind the far side must
/// not send here is refused before the resume state sees it: it takes neither its number nor
/// its ack, as with any refused frame.
pub fn judge(resume: &mut Resume, frame: Frame) -> Inbound {
    match frame.body.kind() {
        Kind::Hello => return Inbound::Lose(Broken::Unexpected(Kind::Hello)),
        Kind::Open => return Inbound::Lose(Broken::NotFromFar(Kind::Open)),
        _ => {}
    }
    match resume.receive(&frame) {
        Err(e) => Inbound::Lose(e.into()),
        Ok(Received::Link) => match frame.body {
            Body::Ping(stamp) => Inbound::Pong(stamp),
            Body::Ack | Body::Pong(_) => Inbound::Nothing,
            Body::Bye { reason: ByeReason::Replaced, text } => Inbound::TakenOver(said_or(text, TAKEN_OVER)),
            Body::Bye { reason, text } => Inbound::Lose(Broken::Bye { reason, text }),
            // Hello was refused above; a link kind a later version adds lands here.
            other => Inbound::Lose(Broken::Unexpected(other.kind())),
        },
        Ok(Received::Deliver) => {
            let channel = frame.channel;
            match frame.body {
                Body::VmList(vms) | Body::VmListPlaced(vms) => Inbound::VmList(vms),
                Body::Opened { status, text } => Inbound::Opened { channel, status, text },
                Body::Close { reason, text } => Inbound::Closed { channel, reason, text },
                Body::Data(bytes) => Inbound::Data { channel, bytes },
                // Open was refused above; a numbered kind a later version adds lands here.
                other => Inbound::Lose(Broken::NotFromFar(other.kind())),
            }
        }
    }
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;
