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
}
