//! When a side of the stream judges it dead: both sides ping a quiet connection and drop one
//! on which nothing was heard for a while. A cut link ends no socket (the ssh session on the
//! host may keep its end open for as long as TCP retries), so silence is the only sign. Pure.

use std::time::Duration;

/// How liveness is judged on a connection, by either side: a Ping goes out every `ping_every`
/// while nothing else is heard, and a connection on which nothing at all came for
/// `dead_after` is dropped (the other side answers every Ping at once, so silence means the
/// stream is stuck somewhere: a link cut without a word, which ends no socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    pub ping_every: Duration,
    pub dead_after: Duration,
}

/// What the connection's timer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    Quiet,
    Ping,
    Dead,
}

impl Liveness {
    /// `heard`: since the last frame came in; `pinged`: since the last Ping went out (None:
    /// none on this connection).
    pub fn judge(&self, heard: Duration, pinged: Option<Duration>) -> Beat {
        if heard >= self.dead_after {
            return Beat::Dead;
        }
        match pinged {
            Some(p) if p < self.ping_every => Beat::Quiet,
            _ if heard >= self.ping_every => Beat::Ping,
            _ => Beat::Quiet,
        }
    }
}

/// What both sides use: a Ping after 5 s of silence, dead after 20 s of it (four Pings
/// unanswered, or a stream stuck that long), well within ssh's own give-up time.
pub const DEFAULT: Liveness = Liveness { ping_every: Duration::from_secs(5), dead_after: Duration::from_secs(20) };

/// The shortest silence taken for a cut, whatever the hold.
pub const MIN_DEAD: Duration = Duration::from_secs(1);

impl Liveness {
    /// This liveness for a session whose far side holds the VMs for `hold` after the near
    /// side was last heard: silence is judged within half the hold (at least `MIN_DEAD`), and
    /// Pings go four times as often as that. So a far side notices a cut while there is hold
    /// left to hold for, and the hold it grants is the hold it keeps (with 20 s of silence
    /// before anything, `--far-hold 10` meant 20 s). Both sides judge alike from the hold the
    /// far side granted; a long hold keeps `self` (the default: 5 s and 20 s).
    pub fn within_hold(self, hold: Duration) -> Liveness {
        if hold.is_zero() {
            return self;
        }
        let dead_after = self.dead_after.min((hold / 2).max(MIN_DEAD));
        Liveness { ping_every: self.ping_every.min(dead_after / 4), dead_after }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn liveness_table() {
        let l = Liveness { ping_every: MS(1000), dead_after: MS(3000) };
        let cases = [
            (MS(0), None, Beat::Quiet),
            (MS(999), None, Beat::Quiet),
            (MS(1000), None, Beat::Ping),
            (MS(1500), Some(MS(500)), Beat::Quiet),
            (MS(2500), Some(MS(1500)), Beat::Ping),
            (MS(2999), Some(MS(10)), Beat::Quiet),
            (MS(3000), Some(MS(10)), Beat::Dead),
            (MS(3000), None, Beat::Dead),
        ];
        for (heard, pinged, want) in cases {
            assert_eq!(l.judge(heard, pinged), want, "heard {heard:?} ago, pinged {pinged:?} ago");
        }
    }

    #[test]
    fn a_short_hold_is_judged_within_it() {
        let s = Duration::from_secs;
        // (hold, ping_every, dead_after)
        let cases = [
            (s(300), s(5), s(20)),
            (s(40), s(5), s(20)),
            (s(20), MS(2500), s(10)),
            (s(10), MS(1250), s(5)),
            (s(1), MS(250), s(1)),
            (Duration::ZERO, s(5), s(20)),
        ];
        for (hold, ping_every, dead_after) in cases {
            assert_eq!(DEFAULT.within_hold(hold), Liveness { ping_every, dead_after }, "hold {hold:?}");
        }
        let brisk = Liveness { ping_every: MS(100), dead_after: MS(400) };
        assert_eq!(brisk.within_hold(s(10)), brisk, "a test's own shorter liveness stays");
    }
}
