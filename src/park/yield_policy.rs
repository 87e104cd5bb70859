//! Whether the runtime's thread should yield before it sleeps, learnt from what the yields
//! bought. A yield pays when the peer it let run answers before the thread polls: the poll
//! then returns at once instead of sleeping. With many requests in flight that is the usual
//! case; with one round trip at a time on some machines the peers run on the other CPU and
//! the thread sleeps anyway, and each yield is a system call for nothing.
//!
//! The policy keeps a running share of yielding parks that returned at once (an average with
//! weight 1/8 for the newest). While that share is at least a quarter the thread yields
//! before every park after a write; below it, only before one park in eight, which keeps
//! the share up to date when the traffic changes.

use std::time::Duration;

/// A park that returns sooner than this did not sleep: the answer was already there.
pub const SLEPT_AFTER: Duration = Duration::from_micros(10);
/// The share of yielding parks that did not sleep, in 1/1024.
const ONE: u32 = 1024;
/// Yield before every park while at least this share of them paid.
const KEEP_FROM: u32 = ONE / 4;
/// Below it, yield before one park in this many, to go on learning.
const PROBE_EVERY: u32 = 8;

#[derive(Clone, Copy, Debug)]
pub struct YieldPolicy {
    /// Share of recent yielding parks that returned at once, in 1/1024.
    paid: u32,
    /// Parks after a write without yields since the last probe.
    since_probe: u32,
}

impl Default for YieldPolicy {
    /// Starts by yielding: the first parks show whether it pays.
    fn default() -> Self {
        YieldPolicy { paid: ONE, since_probe: 0 }
    }
}

impl YieldPolicy {
    /// Asked before a park that follows a write: yield first?
    pub fn should_yield(&mut self) -> bool {
        if self.paid >= KEEP_FROM {
            return true;
        }
        self.since_probe += 1;
        if self.since_probe >= PROBE_EVERY {
            self.since_probe = 0;
            return true;
        }
        false
    }

    /// After a park that followed yields: how long the park took.
    pub fn parked_after_yield(&mut self, parked: Duration) {
        let now = if parked < SLEPT_AFTER { ONE } else { 0 };
        self.paid = self.paid - self.paid / 8 + now / 8;
    }

    /// The share of recent yielding parks that did not sleep, in 1/1024.
    pub fn paid_share(&self) -> u32 {
        self.paid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const QUICK: Duration = Duration::from_micros(2);
    const SLEPT: Duration = Duration::from_micros(40);

    /// Runs `parks` parks after writes; `pays(i)` says whether the i-th yielding park
    /// returned at once. Returns how many of them yielded.
    fn run(p: &mut YieldPolicy, parks: usize, mut pays: impl FnMut(usize) -> bool) -> usize {
        let mut yielded = 0;
        for _ in 0..parks {
            if p.should_yield() {
                p.parked_after_yield(if pays(yielded) { QUICK } else { SLEPT });
                yielded += 1;
            }
        }
        yielded
    }

    #[test]
    fn yields_that_always_pay_are_kept() {
        let mut p = YieldPolicy::default();
        assert_eq!(run(&mut p, 1000, |_| true), 1000);
        assert_eq!(p.paid_share(), ONE);
    }

    #[test]
    fn yields_that_never_pay_drop_to_one_park_in_eight() {
        let mut p = YieldPolicy::default();
        run(&mut p, 100, |_| false);
        let yielded = run(&mut p, 800, |_| false);
        assert_eq!(yielded, 100, "one probe in eight parks");
    }

    #[test]
    fn a_change_of_traffic_is_learnt_within_a_few_probes() {
        let mut p = YieldPolicy::default();
        run(&mut p, 200, |_| false);
        assert!(p.paid_share() < KEEP_FROM, "after 200 parks that never paid");
        // Now every yield pays: after the next probe or two it yields every time again.
        run(&mut p, 3 * PROBE_EVERY as usize, |_| true);
        let yielded = run(&mut p, 100, |_| true);
        assert_eq!(yielded, 100);
    }

    #[test]
    fn a_quarter_paying_is_enough_to_keep_yielding() {
        let mut p = YieldPolicy::default();
        // One in three yielding parks finds its answer waiting.
        let yielded = run(&mut p, 3000, |i| i % 3 == 0);
        assert!(yielded > 2900, "yielded {yielded} of 3000");
    }

    proptest! {
        /// Whatever the parks bring, the share stays in range, and the thread yields before
        /// at least one park in eight.
        #[test]
        fn share_in_range_and_probes_never_stop(outcomes in proptest::collection::vec(any::<bool>(), 1..2000)) {
            let mut p = YieldPolicy::default();
            let mut since_yield = 0u32;
            for pays in outcomes {
                if p.should_yield() {
                    since_yield = 0;
                    p.parked_after_yield(if pays { QUICK } else { SLEPT });
                } else {
                    since_yield += 1;
                }
                prop_assert!(p.paid_share() <= ONE);
                prop_assert!(since_yield < PROBE_EVERY);
            }
        }
    }
}
