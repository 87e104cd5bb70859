//! After the last debugger leaves: whether the VM connection serves, is being cleaned up
//! (until the VM answers or a deadline, then serving the next debugger or reset), or is to
//! be dropped once what is queued for it is written. One state, so it cannot be both
//! serving and cleaning up, nor cleaning up with nothing to end it.
//!
//! The actor says what happened (`clean_up`, `clean_up_then_reset`, `reset`, `sent`,
//! `answered`) and asks what to do (`may_serve`, `resetting`, `settling`, `check`).

use tokio::time::Instant;

/// What follows a clean-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// The connection is kept: the next debugger is served on it (a DDM-aware VM).
    Serve,
    /// The connection is dropped and made again (a VM that forgets debuggers only so).
    Reset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Serving: debuggers may attach.
    Open,
    /// Undoing what the last debugger left, until its requests are answered or `until`.
    CleaningUp { until: Instant, then: Then },
    /// The connection is dropped once what is queued for the VM is written; a clean-up
    /// under way then ends with it.
    Resetting,
}

/// How a clean-up ended (`check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Done {
    /// Its requests still unanswered at the deadline (0: all answered).
    pub unanswered: usize,
    pub then: Then,
}

/// The state of leaving and settling on one VM connection (a new one starts `Open`).
#[derive(Debug)]
pub(super) struct Leaving {
    phase: Phase,
    /// Clean-up requests sent and not yet answered nor timed out. Their answers may come
    /// after the clean-up ended at its deadline: the count is kept across phases.
    pending: usize,
}

impl Default for Leaving {
    fn default() -> Self {
        Leaving { phase: Phase::Open, pending: 0 }
    }
}

impl Leaving {
    #[cfg(test)]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether a waiting debugger may attach now.
    pub fn may_serve(&self) -> bool {
        self.phase == Phase::Open
    }

    pub fn cleaning_up(&self) -> bool {
        matches!(self.phase, Phase::CleaningUp { .. })
    }

    /// Whether the connection is to be dropped once the VM's queue is written.
    pub fn resetting(&self) -> bool {
        self.phase == Phase::Resetting
    }

    /// Whether a clean-up that ends with a reset is under way (`settle_then_reset`).
    pub fn settling(&self) -> bool {
        matches!(self.phase, Phase::CleaningUp { then: Then::Reset, .. })
    }

    /// The connection is dropped once written (nothing else is done on it).
    pub fn reset(&mut self) {
        self.phase = Phase::Resetting;
    }

    /// A clean-up starts, to end by `until`; the connection serves the next debugger after
    /// it (unless it was to be reset already).
    pub fn clean_up(&mut self, until: Instant) {
        self.phase = match self.phase {
            Phase::Open => Phase::CleaningUp { until, then: Then::Serve },
            Phase::CleaningUp { then, .. } => Phase::CleaningUp { until, then },
            Phase::Resetting => Phase::Resetting,
        };
    }

    /// A clean-up starts, to end by `until`, and then the connection is reset.
    pub fn clean_up_then_reset(&mut self, until: Instant) {
        if self.phase != Phase::Resetting {
            self.phase = Phase::CleaningUp { until, then: Then::Reset };
        }
    }

    /// `n` more clean-up requests (or replies they wait for) are in flight.
    pub fn sent(&mut self, n: usize) {
        self.pending += n;
    }

    /// One of them is answered (or timed out).
    pub fn answered(&mut self) {
        self.pending = self.pending.saturating_sub(1);
    }

    /// Ends a clean-up whose requests are all answered or whose deadline passed, and says
    /// how; after one ending in a reset the connection is `Resetting`, else `Open`.
    pub fn check(&mut self, now: Instant) -> Option<Done> {
        let Phase::CleaningUp { until, then } = self.phase else { return None };
        if self.pending > 0 && now < until {
            return None;
        }
        self.phase = match then {
            Then::Serve => Phase::Open,
            Then::Reset => Phase::Resetting,
        };
        Some(Done { unanswered: self.pending, then })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const S: Duration = Duration::from_secs(1);

    /// What the actor may ask, as one line: (may_serve, cleaning_up, settling, resetting).
    fn asks(l: &Leaving) -> (bool, bool, bool, bool) {
        (l.may_serve(), l.cleaning_up(), l.settling(), l.resetting())
    }

    #[test]
    fn each_phase_answers_one_way() {
        let now = Instant::now();
        let cases: [(Phase, (bool, bool, bool, bool)); 4] = [
            (Phase::Open, (true, false, false, false)),
            (Phase::CleaningUp { until: now, then: Then::Serve }, (false, true, false, false)),
            (Phase::CleaningUp { until: now, then: Then::Reset }, (false, true, true, false)),
            (Phase::Resetting, (false, false, false, true)),
        ];
        for (phase, want) in cases {
            assert_eq!(asks(&Leaving { phase, pending: 0 }), want, "{phase:?}");
        }
    }

    #[test]
    fn starting_a_clean_up_from_each_phase() {
        let now = Instant::now();
        let later = now + S;
        let serve = |until| Phase::CleaningUp { until, then: Then::Serve };
        let reset = |until| Phase::CleaningUp { until, then: Then::Reset };
        // (from, clean_up, clean_up_then_reset, reset)
        let cases = [
            (Phase::Open, serve(later), reset(later)),
            (serve(now), serve(later), reset(later)),
            (reset(now), reset(later), reset(later)),
            (Phase::Resetting, Phase::Resetting, Phase::Resetting),
        ];
        for (from, by_clean_up, by_then_reset) in cases {
            let mut l = Leaving { phase: from, pending: 0 };
            l.clean_up(later);
            assert_eq!(l.phase(), by_clean_up, "clean_up from {from:?}");
            let mut l = Leaving { phase: from, pending: 0 };
            l.clean_up_then_reset(later);
            assert_eq!(l.phase(), by_then_reset, "clean_up_then_reset from {from:?}");
            let mut l = Leaving { phase: from, pending: 0 };
            l.reset();
            assert_eq!(l.phase(), Phase::Resetting, "reset from {from:?}");
        }
    }

    #[test]
    fn a_clean_up_ends_when_answered_or_at_its_deadline() {
        let now = Instant::now();
        // (then, pending, checked at, ends with, phase after)
        let cases = [
            (Then::Serve, 0, now, Some(Done { unanswered: 0, then: Then::Serve }), Phase::Open),
            (Then::Serve, 2, now, None, Phase::CleaningUp { until: now + S, then: Then::Serve }),
            (Then::Serve, 2, now + S, Some(Done { unanswered: 2, then: Then::Serve }), Phase::Open),
            (Then::Reset, 0, now, Some(Done { unanswered: 0, then: Then::Reset }), Phase::Resetting),
            (Then::Reset, 1, now, None, Phase::CleaningUp { until: now + S, then: Then::Reset }),
            (Then::Reset, 1, now + 2 * S, Some(Done { unanswered: 1, then: Then::Reset }), Phase::Resetting),
        ];
        for (then, pending, at, done, after) in cases {
            let mut l = Leaving::default();
            match then {
                Then::Serve => l.clean_up(now + S),
                Then::Reset => l.clean_up_then_reset(now + S),
            }
            l.sent(pending);
            assert_eq!(l.check(at), done, "{then:?} with {pending} pending at +{:?}", at - now);
            assert_eq!(l.phase(), after);
        }
    }

    #[test]
    fn nothing_ends_outside_a_clean_up() {
        let now = Instant::now();
        for phase in [Phase::Open, Phase::Resetting] {
            let mut l = Leaving { phase, pending: 0 };
            assert_eq!(l.check(now + S), None);
            assert_eq!(l.phase(), phase);
        }
    }

    #[test]
    fn answers_after_a_deadline_still_count_down() {
        let now = Instant::now();
        let mut l = Leaving::default();
        l.clean_up(now + S);
        l.sent(3);
        l.answered();
        assert_eq!(l.check(now + S), Some(Done { unanswered: 2, then: Then::Serve }));
        l.answered();
        l.answered();
        l.answered();
        l.clean_up(now + 2 * S);
        assert_eq!(l.check(now), Some(Done { unanswered: 0, then: Then::Serve }), "late answers counted, never below zero");
    }
}
