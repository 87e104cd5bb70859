//! When the near side tries again after a cut, and when it judges a connection dead. Pure.

use std::time::Duration;

/// Waits between attempts to reach the far side: short at first (a cut is often brief),
/// doubling to a ceiling, back to the start after a connection works.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { first, max: max.max(first), next: first }
    }

    /// The wait before the next attempt.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// A connection worked: the next cut starts with short waits again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// How liveness is judged on a connection: a Ping goes out every `ping_every` while nothing
/// else is heard, and a connection on which nothing at all came for `dead_after` is dropped
/// (a far side answers every Ping at once, so silence means the stream is stuck somewhere).
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn backoff_doubles_to_its_ceiling_and_starts_again() {
        let mut b = Backoff::new(MS(200), MS(1000));
        let waits: Vec<_> = (0..5).map(|_| b.next_wait()).collect();
        assert_eq!(waits, vec![MS(200), MS(400), MS(800), MS(1000), MS(1000)]);
        b.reset();
        assert_eq!(b.next_wait(), MS(200));
        let mut odd = Backoff::new(MS(500), MS(100));
        assert_eq!((odd.next_wait(), odd.next_wait()), (MS(500), MS(500)), "a ceiling below the start is the start");
    }

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
