//! When the near side tries again after a cut. Pure. (When a connection is dead is judged
//! alike on both sides: `farlink::liveness`.)

use std::time::Duration;

pub use crate::farlink::liveness::{Beat, Liveness};

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
}
