//! When the near side tries again after a cut. Pure. (When a connection is dead is judged
//! alike on both sides: `remote::protocol::liveness`.)

use std::time::Duration;

pub use crate::remote::protocol::liveness::{Beat, Liveness};

/// How much sooner than the far side the near side gives a cut session up (besides a Ping's
/// interval): for the round trip a last frame of this side may still have been on its way.
pub const RELEASE_MARGIN: Duration = Duration::from_secs(1);

/// How long after the far side was last heard the near side takes a cut session's VMs for
/// let go: the far side lets them go `hold` after it last heard this side, which may be up to
/// a Ping's interval (and a round trip) before this side last heard it. So this side says so
/// a little early, never late: `list` never shows a suspension the far side has let go, and
/// a link back in between finds a new session (the far side then lets go of the old one).
pub fn release_after(hold: Duration, liveness: Liveness) -> Duration {
    hold.saturating_sub(liveness.ping_every + RELEASE_MARGIN)
}

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

    /// The longest wait.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// A connection worked: the next cut starts with short waits again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// How a host's ssh link is tried again once lost: how long one connect may take, the waits
/// between attempts, and whether a change of this machine's network starts one at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub connect_timeout: Duration,
    pub first: Duration,
    pub max: Duration,
    pub on_network_change: bool,
}

/// While a far side holds the session: a connect sent into the cut gives up after this (its
/// SYN was sent again after 1 s; a new attempt sends one at once)...
pub const HELD_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// ...and attempts follow each other after these waits.
pub const HELD_FIRST: Duration = Duration::from_millis(250);
pub const HELD_MAX: Duration = Duration::from_secs(1);
/// A change of the network makes an attempt again at once when the attempt has run this
/// long: its SYN may have gone into the cut (a younger attempt's is sent again soon anyway).
pub const RESTART_AFTER: Duration = Duration::from_secs(1);

/// The retry for a link lost `since_lost` ago (None: no far side holds anything of this near
/// side yet) whose far side granted `hold`. While the far side holds the VMs and their
/// debuggers' state, a user waits on the link: it is tried promptly and again the moment the
/// network changes. Once the hold has run out there is nothing held to hurry for: `regular`,
/// as for any host (a host down for hours is not tried every second).
pub fn retry_plan(since_lost: Option<Duration>, hold: Duration, regular: Retry) -> Retry {
    match since_lost {
        Some(s) if s < hold => Retry {
            connect_timeout: regular.connect_timeout.min(HELD_CONNECT_TIMEOUT),
            first: HELD_FIRST.min(regular.first),
            max: HELD_MAX.min(regular.max),
            on_network_change: true,
        },
        _ => regular,
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
    fn a_cut_session_is_given_up_a_little_before_the_far_side_lets_go() {
        let s = Duration::from_secs;
        let l = |hold| crate::remote::protocol::liveness::DEFAULT.within_hold(hold);
        // (hold, given up after): the far side lets go at the hold, counted from its own last
        // word, which is at most a Ping's interval before this side's.
        let cases = [(s(300), s(294)), (s(20), MS(16_500)), (s(10), MS(7_750)), (s(2), MS(750)), (s(1), Duration::ZERO)];
        for (hold, want) in cases {
            assert_eq!(release_after(hold, l(hold)), want, "hold {hold:?}");
            assert!(release_after(hold, l(hold)) + l(hold).ping_every <= hold);
        }
    }

    #[test]
    fn a_held_session_is_retried_promptly_until_its_hold_runs_out() {
        let regular = Retry { connect_timeout: Duration::from_secs(6), first: Duration::from_secs(1), max: Duration::from_secs(30), on_network_change: false };
        let held = Retry { connect_timeout: HELD_CONNECT_TIMEOUT, first: HELD_FIRST, max: HELD_MAX, on_network_change: true };
        let hold = Duration::from_secs(300);
        let cases = [
            (None, regular),
            (Some(Duration::ZERO), held),
            (Some(Duration::from_secs(299)), held),
            (Some(Duration::from_secs(300)), regular),
            (Some(Duration::from_secs(3600)), regular),
        ];
        for (since, want) in cases {
            assert_eq!(retry_plan(since, hold, regular), want, "lost {since:?} ago");
        }
        // A user's own shorter timeout or waits stay.
        let brisk = Retry { connect_timeout: Duration::from_secs(1), first: Duration::from_millis(100), max: Duration::from_millis(500), on_network_change: false };
        assert_eq!(retry_plan(Some(Duration::ZERO), hold, brisk), Retry { on_network_change: true, ..brisk });
        assert_eq!(retry_plan(Some(Duration::ZERO), Duration::ZERO, regular), regular, "no hold granted: nothing held");
    }
}
