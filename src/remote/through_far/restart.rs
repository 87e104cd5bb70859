//! Whether the far side a near link spoke to still runs. A far side can end under a running
//! `serve` (killed, crashed, its hold ran out): its stream then closes while the ssh master
//! stays up, and the link alone would knock at a forward to nothing for ever. So when the
//! link goes down, the host's task runs the far side's start again through the master (it
//! finds the running far side, or starts one) and sets its answer beside the one before.
//! Pure: the tables here say what the answers mean; `host` runs the start and does it.

use std::time::Duration;

use crate::remote::far_choice::FarMode;
use crate::remote::protocol::ready::Ready;
use crate::remote::ssh::start_far::FarUnusable;

/// The first and the longest wait between checks while the link stays down and the far
/// side was found running (the cut is the stream's: the link tries again by itself).
pub const FIRST_CHECK_WAIT: Duration = Duration::from_secs(1);
pub const MAX_CHECK_WAIT: Duration = Duration::from_secs(30);

/// What a start's answer says about the far side the link spoke to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The same far side runs (same process, same socket): the link goes on trying.
    Same,
    /// The far side the link spoke to has ended and another runs now (this start made it,
    /// or another near side did): the session is gone, and the VM connections it held with
    /// it. `forward`: the new one listens elsewhere, the local socket must be forwarded anew.
    Restarted { was: Option<u32>, now: Option<u32>, forward: bool },
}

/// `before`: the answer the link's far side gave; `now`: this start's.
pub fn judge(before: &Ready, now: &Ready) -> Check {
    // A far side found running whose pid is not told (`pid unknown`) is taken as the same
    // one: no evidence of a restart, and a false one would close every debugger.
    let same_process = now.already && (now.pid.is_none() || before.pid.is_none() || now.pid == before.pid);
    let forward = now.socket != before.socket;
    if same_process && !forward {
        Check::Same
    } else {
        Check::Restarted { was: before.pid, now: now.pid, forward }
    }
}

/// What to do when the far side cannot be started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Reach the host's VMs through ssh forwards from now on (`--far auto`).
    FallBack,
    /// Say why (once) and check again later.
    TryLater,
}

/// Only a far side that is gone for good (not on the host any more, or another protocol)
/// falls back, and only under `auto`: a start that failed otherwise (ssh timed out, the link
/// is being cut) says nothing about the far side.
pub fn on_unusable(mode: FarMode, why: &FarUnusable) -> Unusable {
    match (mode, why) {
        (FarMode::Auto, FarUnusable::NotFound(_) | FarUnusable::Version { .. } | FarUnusable::Refused(_)) => Unusable::FallBack,
        _ => Unusable::TryLater,
    }
}

/// The one line that says the far side ended and what became of it; `by_us`: this start
/// made the new one (else another near side had).
pub fn restarted_line(label: &str, was: Option<u32>, now: Option<u32>, by_us: bool) -> String {
    let pid = |p: Option<u32>| p.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    let how = if by_us { "started it again" } else { "another one runs there" };
    // A pid is reused (a host's pid namespace counts from 1 again): one pid twice must not
    // read as "nothing happened".
    let now = match (was, now) {
        (Some(w), Some(n)) if w == n => format!("a new process, given pid {n} again"),
        _ => pid(now),
    };
    format!("jdwpmux on {label} ended ({}); {how} ({now}): the VM connections it held were closed, and the debuggers on them", pid(was))
}

/// The line said instead when this serve's far side had been taken over by another serve
/// (`--far-take-over`): this one held nothing there since, so nothing was closed now; the
/// far side ended with the serve that took it, and this one serves the host again.
pub fn restarted_after_take_over_line(label: &str, was: Option<u32>, now: Option<u32>, by_us: bool) -> String {
    let pid = |p: Option<u32>| p.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    let how = if by_us { "this serve started it again" } else { "another one runs there" };
    format!("jdwpmux on {label} ({}), taken over by another serve, has ended; {how} ({}), and this serve serves {label} again", pid(was), pid(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn ready(pid: Option<u32>, already: bool, socket: &str) -> Ready {
        Ready { socket: PathBuf::from(socket), pid, protocols: 2..=2, version: "0.1.0".into(), already }
    }

    #[test]
    fn a_start_answer_beside_the_one_before() {
        let before = ready(Some(10), false, "/run/far.sock");
        let cases = [
            (ready(Some(10), true, "/run/far.sock"), Check::Same),
            (ready(None, true, "/run/far.sock"), Check::Same),
            (ready(Some(11), false, "/run/far.sock"), Check::Restarted { was: Some(10), now: Some(11), forward: false }),
            (ready(Some(11), true, "/run/far.sock"), Check::Restarted { was: Some(10), now: Some(11), forward: false }),
            // Pids are reused: a start that made a new far side says so, whatever its pid.
            (ready(Some(10), false, "/run/far.sock"), Check::Restarted { was: Some(10), now: Some(10), forward: false }),
            (ready(Some(12), false, "/tmp/other.sock"), Check::Restarted { was: Some(10), now: Some(12), forward: true }),
            (ready(Some(10), true, "/tmp/other.sock"), Check::Restarted { was: Some(10), now: Some(10), forward: true }),
        ];
        for (now, want) in cases {
            assert_eq!(judge(&before, &now), want, "{now:?}");
        }
        let unknown = ready(None, false, "/run/far.sock");
        assert_eq!(judge(&unknown, &ready(Some(3), true, "/run/far.sock")), Check::Same);
        assert_eq!(judge(&unknown, &ready(None, false, "/run/far.sock")), Check::Restarted { was: None, now: None, forward: false });
    }

    proptest::proptest! {
        /// Any two answers: the far side is taken as the same one exactly when it was found
        /// running on the same socket and nothing says another process runs; a restart
        /// asks for a new forward exactly when the socket moved.
        #[test]
        fn judged_the_same_only_without_evidence_of_another(
            was in proptest::option::of(1u32..4), now in proptest::option::of(1u32..4),
            already: bool, moved: bool,
        ) {
            let before = ready(was, false, "/run/far.sock");
            let now_ready = ready(now, already, if moved { "/tmp/far.sock" } else { "/run/far.sock" });
            let same = already && !moved && (was.is_none() || now.is_none() || was == now);
            match judge(&before, &now_ready) {
                Check::Same => proptest::prop_assert!(same),
                Check::Restarted { was: w, now: n, forward } => {
                    proptest::prop_assert!(!same);
                    proptest::prop_assert_eq!((w, n, forward), (was, now, moved));
                }
            }
        }
    }

    #[test]
    fn only_a_far_side_gone_for_good_falls_back_and_only_under_auto() {
        let gone = [FarUnusable::NotFound("jdwpmux".into()), FarUnusable::Version { version: "9.0.0".into(), protocols: 9..=9, running: None }, FarUnusable::Refused("speaks 9 only".into())];
        let failed = FarUnusable::Failed("jdwpmux far --detach did not answer within 20s".into());
        for why in &gone {
            assert_eq!(on_unusable(FarMode::Auto, why), Unusable::FallBack, "{why}");
            assert_eq!(on_unusable(FarMode::Always, why), Unusable::TryLater, "{why}");
        }
        assert_eq!(on_unusable(FarMode::Auto, &failed), Unusable::TryLater);
        assert_eq!(on_unusable(FarMode::Always, &failed), Unusable::TryLater);
    }

    #[test]
    fn after_a_take_over_the_line_claims_nothing_closed() {
        let line = restarted_after_take_over_line("box", Some(7), Some(9), true);
        assert_eq!(line, "jdwpmux on box (pid 7), taken over by another serve, has ended; this serve started it again (pid 9), and this serve serves box again");
        assert!(!line.contains("closed"), "{line}");
    }

    #[test]
    fn the_line_names_the_host_and_both_processes() {
        assert_eq!(
            restarted_line("box", Some(7), None, true),
            "jdwpmux on box ended (pid 7); started it again (pid unknown): the VM connections it held were closed, and the debuggers on them"
        );
        assert!(restarted_line("box", None, Some(9), false).starts_with("jdwpmux on box ended (pid unknown); another one runs there (pid 9): "));
        // Seen: "ended (pid 12); started it again (pid 12)".
        assert!(restarted_line("box", Some(12), Some(12), true).starts_with("jdwpmux on box ended (pid 12); started it again (a new process, given pid 12 again): "));
    }
}
