//! What each side must remember so that a cut stream loses nothing and repeats nothing: a
//! pure table per direction, called from the task that owns the stream.
//!
//! - [`Outbound`]: numbered frames this side sent (1, 2, 3 ...), kept until the other side
//!   acknowledges them, at most `limit` bytes of them (past it only what `push_beyond` takes:
//!   a few answers to frames already taken, bounded by the channels): when that is reached the owner stops
//!   reading from the VMs (the VM's agent then waits on its socket as it would for a slow
//!   debugger), so a long cut costs bounded memory, never an unbounded queue.
//! - [`Inbound`]: the last numbered frame received; only the next one is taken.
//! - [`Resume`]: both, for one side of one session: stamps what goes out with its number and
//!   the current ack, takes what comes in, and after a reconnect gives what to replay.
//!
//! The resume protocol (as Eternal Terminal's): on a new connection each side's Hello says
//! the last numbered frame it received (its header's ack); the other side drops everything up
//! to that as acknowledged and sends the rest again, in order, before anything new. A frame
//! is therefore delivered exactly once whatever was in flight when the stream was cut.
//! Nothing is ever dropped on the sending side before the receiver said it has it.

use std::collections::VecDeque;
use std::time::Duration;

use super::codec::{wire_len, CodecError};
use super::frame::{Body, Frame};

/// Frames delivered and not yet acknowledged that make an Ack go out at once.
pub const ACK_EVERY: u64 = 32;
/// How long a delivered frame waits for its Ack otherwise (a reply going the other way
/// usually carries it sooner).
pub const ACK_DELAY: Duration = Duration::from_millis(20);

/// The timer an owner's acks wait on, apart from when the ack is due (`ack_at`): armed at
/// `ack_at` when nothing was armed, and left armed when `ack_at` is cleared (a frame going
/// the other way carried the ack) or set again later. So under request and reply traffic,
/// where each command sets `ack_at` and its reply clears it, the timer is not armed anew per
/// frame: a timer armed earlier than every other one of the runtime's wakes its time driver
/// through the driver's eventfd (a system call, and a turn of the runtime to read it), which
/// was one more of each per command on both sides. An armed timer that fires before `ack_at`
/// is moved on to it (later: nothing to wake). Acks go out exactly when they did. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckTimer<I> {
    armed: Option<I>,
}

impl<I> Default for AckTimer<I> {
    fn default() -> Self {
        AckTimer { armed: None }
    }
}

impl<I: Copy + Ord> AckTimer<I> {
    /// When the timer fires next, given when the ack is due: the armed deadline, else
    /// `ack_at` (then armed).
    pub fn due(&mut self, ack_at: Option<I>) -> Option<I> {
        if self.armed.is_none() {
            self.armed = ack_at;
        }
        self.armed
    }

    /// The timer fired at `now`: whether the ack is due. It is disarmed either way; `due`
    /// arms it at `ack_at` again when one is still to come.
    pub fn fired(&mut self, ack_at: Option<I>, now: I) -> bool {
        self.armed = None;
        ack_at.is_some_and(|t| t <= now)
    }

    /// A new connection: nothing armed.
    pub fn reset(&mut self) {
        self.armed = None;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The frame would take the unacknowledged bytes past the limit: wait for acks.
    #[error("{need} bytes do not fit: {held} of {limit} unacknowledged bytes held")]
    Full { need: usize, held: usize, limit: usize },
    #[error("the other side acknowledged frame {ack}, but only {sent} were sent")]
    AckAhead { ack: u64, sent: u64 },
    #[error("frame {seq} came after frame {last}: frames {} to {} are missing", last + 1, seq - 1)]
    Gap { seq: u64, last: u64 },
    #[error("frame {seq} came again (frame {last} was the last one taken)")]
    Again { seq: u64, last: u64 },
    #[error("the other side says it has frame {peer_last} and before, but it had acknowledged {acked}: it is not the side this session spoke to")]
    PeerBehind { peer_last: u64, acked: u64 },
    #[error(transparent)]
    Frame(#[from] CodecError),
}

/// One kept frame and what it costs on the wire.
#[derive(Debug, Clone)]
struct Kept {
    seq: u64,
    channel: u32,
    body: Body,
    cost: usize,
}

/// Numbered frames sent and not yet acknowledged.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The number of the last frame pushed (0: none yet).
    sent: u64,
    /// Every frame up to this one has arrived on the other side.
    acked: u64,
    kept: VecDeque<Kept>,
    bytes: usize,
    limit: usize,
}

impl Outbound {
    /// A table holding at most `limit` unacknowledged bytes (but always one frame, so a frame
    /// larger than the limit is not stuck forever).
    pub fn new(limit: usize) -> Outbound {
        Outbound { sent: 0, acked: 0, kept: VecDeque::new(), bytes: 0, limit }
    }

    pub fn sent(&self) -> u64 {
        self.sent
    }

    pub fn acked(&self) -> u64 {
        self.acked
    }

    pub fn unacked_bytes(&self) -> usize {
        self.bytes
    }

    pub fn unacked_frames(&self) -> usize {
        self.kept.len()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a frame of `cost` wire bytes may be pushed now.
    pub fn has_room(&self, cost: usize) -> bool {
        self.kept.is_empty() || self.bytes + cost <= self.limit
    }

    /// Numbers `body` as the next frame and keeps it until acknowledged; its number.
    pub fn push(&mut self, channel: u32, body: Body) -> Result<u64, ResumeError> {
        let cost = wire_len(&body)?;
        if !self.has_room(cost) {
            return Err(ResumeError::Full { need: cost, held: self.bytes, limit: self.limit });
        }
        self.sent += 1;
        self.kept.push_back(Kept { seq: self.sent, channel, body, cost });
        self.bytes += cost;
        Ok(self.sent)
    }

    /// Like `push`, past the limit: for the few frames whose number something else bounds
    /// (a channel's one open result), which must not wait for room because the frame that
    /// asked for them has been taken already.
    pub fn push_beyond(&mut self, channel: u32, body: Body) -> Result<u64, ResumeError> {
        let cost = wire_len(&body)?;
        self.sent += 1;
        self.kept.push_back(Kept { seq: self.sent, channel, body, cost });
        self.bytes += cost;
        Ok(self.sent)
    }

    /// Checks an ack from the other side without taking it.
    pub fn check_ack(&self, ack: u64) -> Result<(), ResumeError> {
        if ack > self.sent {
            return Err(ResumeError::AckAhead { ack, sent: self.sent });
        }
        Ok(())
    }

    /// The other side has every frame up to `ack`: they are dropped. An ack older than one
    /// already taken (it was overtaken by a newer one) changes nothing. Returns the frames
    /// released.
    pub fn ack(&mut self, ack: u64) -> Result<usize, ResumeError> {
        self.check_ack(ack)?;
        let mut released = 0;
        while let Some(front) = self.kept.front() {
            if front.seq > ack {
                break;
            }
            self.bytes -= front.cost;
            self.kept.pop_front();
            released += 1;
        }
        self.acked = self.acked.max(ack);
        Ok(released)
    }

    /// After a reconnect: the other side says it has every frame up to `peer_last`. Takes
    /// that as an ack and returns what must be sent again, in order: (seq, channel, body).
    pub fn resume(&mut self, peer_last: u64) -> Result<impl Iterator<Item = (u64, u32, &Body)>, ResumeError> {
        if peer_last < self.acked {
            return Err(ResumeError::PeerBehind { peer_last, acked: self.acked });
        }
        self.ack(peer_last)?;
        Ok(self.kept.iter().map(|k| (k.seq, k.channel, &k.body)))
    }
}

/// The other direction: which numbered frame comes next, and what was acknowledged of it.
#[derive(Debug, Clone, Default)]
pub struct Inbound {
    last: u64,
    /// The highest ack this side has put in a header that went out.
    told: u64,
}

impl Inbound {
    /// The last numbered frame taken: what this side's acks and Hello say.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Frames taken since the other side was last told: when many are, an Ack frame should go
    /// out even if nothing else does, so the other side's table empties.
    pub fn unacked(&self) -> u64 {
        self.last - self.told
    }

    pub fn check(&self, seq: u64) -> Result<(), ResumeError> {
        match seq {
            s if s == self.last + 1 => Ok(()),
            s if s <= self.last => Err(ResumeError::Again { seq, last: self.last }),
            _ => Err(ResumeError::Gap { seq, last: self.last }),
        }
    }

    /// Takes frame `seq`: only the one after the last.
    pub fn take(&mut self, seq: u64) -> Result<(), ResumeError> {
        self.check(seq)?;
        self.last = seq;
        Ok(())
    }

    /// An ack of `ack` went out in a header.
    pub fn told(&mut self, ack: u64) {
        self.told = self.told.max(ack.min(self.last));
    }
}

/// What became of a frame that came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A numbered frame, the next one: hand it on.
    Deliver,
    /// A link frame: its ack was taken; what it says is for the connection.
    Link,
}

/// One side of one session: both directions.
#[derive(Debug, Clone)]
pub struct Resume {
    pub out: Outbound,
    pub inn: Inbound,
}

impl Resume {
    pub fn new(out: Outbound) -> Resume {
        Resume { out, inn: Inbound::default() }
    }

    /// Numbers `body` for `channel` and gives the frame to write now.
    pub fn send(&mut self, channel: u32, body: Body) -> Result<Frame, ResumeError> {
        let seq = self.out.push(channel, body.clone())?;
        Ok(self.stamp(channel, seq, body))
    }

    /// Like `send`, past the limit (see `Outbound::push_beyond`).
    pub fn send_beyond(&mut self, channel: u32, body: Body) -> Result<Frame, ResumeError> {
        let seq = self.out.push_beyond(channel, body.clone())?;
        Ok(self.stamp(channel, seq, body))
    }

    /// After a numbered frame was delivered: an Ack to write at once when `ACK_EVERY` frames
    /// wait for one, else `ack_at` is set (once) to `ACK_DELAY` from `now`, when the owner
    /// writes one. Both sides pace their acks this way, so a quiet direction still frees the
    /// other side's replay buffer within `ACK_DELAY`.
    pub fn after_delivery<I: Copy + std::ops::Add<std::time::Duration, Output = I>>(&mut self, ack_at: &mut Option<I>, now: I) -> Option<Frame> {
        if self.inn.unacked() >= ACK_EVERY {
            return Some(self.link(Body::Ack));
        }
        ack_at.get_or_insert(now + ACK_DELAY);
        None
    }

    /// A link frame (Hello, Ack, Ping ...) carrying the current ack.
    pub fn link(&mut self, body: Body) -> Frame {
        self.stamp(0, 0, body)
    }

    fn stamp(&mut self, channel: u32, seq: u64, body: Body) -> Frame {
        let ack = self.inn.last();
        self.inn.told(ack);
        Frame { channel, seq, ack, body }
    }

    /// Takes a frame from the other side: its ack, and its number when it has one. A frame
    /// that is refused changes nothing.
    pub fn receive(&mut self, frame: &Frame) -> Result<Received, ResumeError> {
        let numbered = frame.body.kind().numbered();
        if numbered {
            self.inn.check(frame.seq)?;
        }
        self.out.check_ack(frame.ack)?;
        self.out.ack(frame.ack)?;
        if numbered {
            self.inn.take(frame.seq)?;
            return Ok(Received::Deliver);
        }
        Ok(Received::Link)
    }

    /// A new connection: the other side's Hello said it has every frame up to `peer_last`.
    /// Returns the frames to send again, in order, before anything new.
    pub fn reconnect(&mut self, peer_last: u64) -> Result<Vec<Frame>, ResumeError> {
        let replay: Vec<(u64, u32, Body)> = self.out.resume(peer_last)?.map(|(s, c, b)| (s, c, b.clone())).collect();
        Ok(replay.into_iter().map(|(seq, channel, body)| self.stamp(channel, seq, body)).collect())
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
