//! One JVM, one row, whatever finds it: the rule both finders that can see the same JVM
//! follow (this machine's /proc discovery, `proc_vms`, and an `--exec` host's far side,
//! `remote_vms`; `discovery::jvms::same` tells that two of their JVMs are one).
//!
//! A HotSpot agent takes one debugger: two rows would mean two sessions fighting for it, the
//! loser listed "busy: another debugger holds it" with jdwpmux's own connection. So the row
//! listed first keeps the JVM and the other finder lists nothing for it, until that row is
//! gone (then it follows the JVM again, on its old port). Two rows made in the same round
//! are settled by the same rule: the one made later goes. A row that cannot reach the JVM
//! (a root container seen by a user, which the exec enters) keeps nothing. Pure.

use crate::registry::VmId;

/// What a finder holds of a JVM now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    Nothing,
    /// A row with a session.
    Session(VmId),
    /// A row that says why the JVM cannot be reached (no session).
    Unreachable(VmId),
    /// Nothing: the other finder's row has the JVM.
    LeftToTwin,
}

/// What the finder does with the JVM this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Go on as usual (follow it, or keep following it).
    Follow,
    /// The twin's row has it: list nothing.
    Skip,
    /// Its own row goes (its session ends, its port kept), then as `Skip`.
    Yield,
    /// Its row saying the JVM cannot be reached goes, then as `Skip`.
    Unlist,
    /// The twin's row is gone: forget having left it, and follow it as new.
    Resume,
}

/// The step for a JVM held as `held`, whose twin row (another finder's, listed now, with a
/// session) is `twin`.
pub(super) fn step(held: Held, twin: Option<VmId>) -> Step {
    match (held, twin) {
        (Held::LeftToTwin, None) => Step::Resume,
        (Held::LeftToTwin, Some(_)) => Step::Skip,
        (Held::Session(own), Some(t)) if t < own => Step::Yield,
        (Held::Session(_), _) => Step::Follow,
        (Held::Unreachable(_), Some(_)) => Step::Unlist,
        (Held::Unreachable(_), None) => Step::Follow,
        (Held::Nothing, Some(_)) => Step::Skip,
        (Held::Nothing, None) => Step::Follow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_row_keeps_the_jvm() {
        // No twin: as if the other finder did not exist.
        for held in [Held::Nothing, Held::Session(3), Held::Unreachable(3)] {
            assert_eq!(step(held, None), Step::Follow, "{held:?}");
        }
        // The other finder's row came first: this one lists nothing, or lets its row go.
        assert_eq!(step(Held::Nothing, Some(1)), Step::Skip);
        assert_eq!(step(Held::Session(3), Some(1)), Step::Yield);
        // This row came first: it stays (the other finder yields).
        assert_eq!(step(Held::Session(1), Some(3)), Step::Follow);
        // A row that cannot reach the JVM keeps nothing, whenever it came.
        assert_eq!(step(Held::Unreachable(1), Some(3)), Step::Unlist);
        // Left to the twin until its row is gone.
        assert_eq!(step(Held::LeftToTwin, Some(1)), Step::Skip);
        assert_eq!(step(Held::LeftToTwin, None), Step::Resume);
    }

    #[test]
    fn two_rows_made_at_once_settle_on_one() {
        // Each finder sees the other's row: exactly one of them yields.
        let (a, b) = (4, 9);
        let steps = [step(Held::Session(a), Some(b)), step(Held::Session(b), Some(a))];
        assert_eq!(steps.iter().filter(|s| **s == Step::Yield).count(), 1, "{steps:?}");
    }
}
