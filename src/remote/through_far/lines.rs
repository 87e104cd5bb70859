//! The lines said of a host's far side: one that cannot be used (why, and what would make it
//! usable), one restarted, one that runs and does not answer, one another serve took over,
//! one holding for another time than asked, and a VM it let go. Pure.

use crate::remote::far_choice::FarChoice;
use crate::remote::protocol::hello::{protocols, PROTOCOL, PROTOCOL_MIN};
use crate::remote::through_far::restart;
use crate::remote::ssh::start_far::FarUnusable;

/// The one line a host where the far side cannot be used is said in: why, and what would
/// make it usable (the copy is offered only when it was not asked for).
pub fn fallback_line(label: &str, why: &FarUnusable, far: &FarChoice) -> String {
    let ours = env!("CARGO_PKG_VERSION");
    let path = &far.path;
    match why {
        FarUnusable::Version { version, protocols: theirs, running } => {
            let fix = match running {
                Some(pid) => format!("stop it there (kill {pid}; it ends by itself after its hold when unused) and install jdwpmux {ours} on {label}"),
                None => format!("install jdwpmux {ours} on {label} where `ssh {label} {path}` finds it (or name it with --far-path)"),
            };
            format!(
                "jdwpmux on {label} ({version}) speaks far-side protocol {}, this one ({ours}) speaks {}: its VMs are reached through ssh forwards; {fix}, or use --far never",
                protocols(*theirs.start(), *theirs.end()),
                protocols(PROTOCOL_MIN, PROTOCOL)
            )
        }
        FarUnusable::Refused(text) => format!(
            "jdwpmux on {label} refused this one ({text}): its VMs are reached through ssh forwards; install jdwpmux {ours} on {label} (or name it with --far-path), or use --far never"
        ),
        _ => {
            let copy = if far.copy { "" } else { ", or let serve copy this one there with --far-copy" };
            format!(
                "jdwpmux on {label} cannot be used ({why}); its VMs are reached through ssh forwards. To use it, install jdwpmux {ours} on {label} where `ssh {label} {path}` finds it, or name it with --far-path{copy}"
            )
        }
    }
}

/// The line a restarted far side is said in: after a take-over, this serve held nothing
/// there, and the line must not say its VM connections were closed now.
pub(super) fn restart_line(label: &str, was: Option<u32>, now: Option<u32>, by_us: bool, taken_over: bool) -> String {
    if taken_over {
        restart::restarted_after_take_over_line(label, was, now, by_us)
    } else {
        restart::restarted_line(label, was, now, by_us)
    }
}

/// The one line said when the link to jdwpmux on a host falls silent after it was up (a cut,
/// as a rule: the ssh master notices later, by its own keep-alives), before any of its VMs
/// can be said let go: they are held there for the hold.
pub fn silence_line(label: &str, why: &str) -> String {
    format!("lost the link to jdwpmux on {label} ({why}); its VMs are held by jdwpmux there; reconnecting")
}

/// The one line said when jdwpmux on a host still runs (its start found it, same process)
/// and the master is up, but its stream was lost: it is stopped or stuck. Before, nothing
/// was said and the host stayed `up`.
pub fn silent_line(label: &str, pid: Option<u32>, why: &str) -> String {
    let pid = pid.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    format!("jdwpmux on {label} ({pid}) runs but does not answer ({why}): it may be stopped or stuck there; its VMs stay held for the hold while this serve tries again")
}

/// The one line a serve whose far side another serve took over says: what it lost, and that
/// it waits without taking it back.
pub fn taken_over_line(label: &str, text: &str) -> String {
    format!(
        "jdwpmux on {label}: {text}; the VM connections this serve held there were closed, and their debuggers; this serve waits and serves {label} again once that one stops (it does not take it back)"
    )
}

/// What is said when the far side grants another hold than the one asked (its own limit,
/// or an older far side's rule); None when it granted what was asked.
pub fn hold_line(label: &str, asked: u32, granted: u32) -> Option<String> {
    (asked != granted).then(|| {
        format!("jdwpmux on {label} holds the VM connections through a cut for {granted} s, not the {asked} s asked (--far-hold): its limit")
    })
}

/// The note of a VM that jdwpmux on its host let go when the hold ran out.
pub fn released_note(label: &str, hold_secs: u64) -> String {
    format!("released (the hold ran out): the link to {label} was down past jdwpmux's hold there ({hold_secs} s, --far-hold); the VM runs on, its debuggers were closed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_line_says_why_and_what_to_do() {
        let far = FarChoice::default();
        let line = fallback_line("box", &FarUnusable::NotFound("jdwpmux".into()), &far);
        assert!(line.starts_with("jdwpmux on box cannot be used (jdwpmux was not found on the host); its VMs are reached through ssh forwards."), "{line}");
        assert!(line.contains(&format!("install jdwpmux {} on box", env!("CARGO_PKG_VERSION"))), "{line}");
        assert!(line.ends_with("or name it with --far-path, or let serve copy this one there with --far-copy"), "{line}");
    }

    #[test]
    fn with_far_copy_the_line_says_why_it_was_not_copied_and_offers_no_copy() {
        let far = FarChoice { copy: true, ..FarChoice::default() };
        let why = FarUnusable::NotCopied { first: "jdwpmux was not found on the host".into(), why: "it runs Linux on aarch64, this jdwpmux is built for linux on x86_64".into() };
        let line = fallback_line("box", &why, &far);
        assert!(
            line.starts_with("jdwpmux on box cannot be used (jdwpmux was not found on the host; this jdwpmux was not copied there: it runs Linux on aarch64, this jdwpmux is built for linux on x86_64); its VMs are reached through ssh forwards."),
            "{line}"
        );
        assert!(line.ends_with("--far-path") && !line.contains("--far-copy"), "{line}");
    }

    #[test]
    fn another_version_is_said_with_both_sides_versions_and_protocols() {
        let ours = env!("CARGO_PKG_VERSION");
        let other = FarUnusable::Version { version: "9.9.9".into(), protocols: 8..=9, running: None };
        let line = fallback_line("box", &other, &FarChoice::default());
        assert_eq!(
            line,
            format!("jdwpmux on box (9.9.9) speaks far-side protocol 8..9, this one ({ours}) speaks 2..6: its VMs are reached through ssh forwards; install jdwpmux {ours} on box where `ssh box jdwpmux` finds it (or name it with --far-path), or use --far never")
        );
        // One already running there is found by any jdwpmux installed after it: it must go.
        let running = FarUnusable::Version { version: "0.0.1".into(), protocols: 1..=1, running: Some(77) };
        let line = fallback_line("box", &running, &FarChoice::default());
        assert!(line.contains("speaks far-side protocol 1, ") && line.contains("stop it there (kill 77;") && line.ends_with("or use --far never"), "{line}");
        let refused = fallback_line("box", &FarUnusable::Refused("speaks 9 only".into()), &FarChoice::default());
        assert!(refused.starts_with("jdwpmux on box refused this one (speaks 9 only): its VMs are reached through ssh forwards;"), "{refused}");
    }

    #[test]
    fn the_serve_taken_over_says_what_it_lost_and_that_it_waits() {
        let text = crate::remote::protocol::hello::taken_over_text("0.1.0 (laptop pid 42)");
        assert_eq!(
            taken_over_line("box", &text),
            "jdwpmux on box: another serve took this far side over (jdwpmux 0.1.0 (laptop pid 42)); the VM connections this serve held there were closed, and their debuggers; this serve waits and serves box again once that one stops (it does not take it back)"
        );
    }

    #[test]
    fn a_far_side_that_runs_and_does_not_answer_is_said_as_that() {
        assert_eq!(
            silent_line("box", Some(41), "nothing heard from the far side for 20s"),
            "jdwpmux on box (pid 41) runs but does not answer (nothing heard from the far side for 20s): it may be stopped or stuck there; its VMs stay held for the hold while this serve tries again"
        );
    }

    #[test]
    fn a_hold_other_than_asked_is_said() {
        assert_eq!(hold_line("box", 300, 300), None);
        let line = hold_line("box", 200_000, 86_400).unwrap();
        assert_eq!(line, "jdwpmux on box holds the VM connections through a cut for 86400 s, not the 200000 s asked (--far-hold): its limit");
    }
}
