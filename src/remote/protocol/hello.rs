//! What the far side answers to a near side's Hello: a new session, the running one resumed,
//! or a refusal with the line the near side shows. Pure, table-tested.

use std::time::Duration;

use crate::remote::protocol::frame::{ByeReason, Hello, Role, SessionKey};

/// The oldest protocol this jdwpmux speaks, on either side (2: each listed VM carries its
/// agent's bind address; see `farlink`'s protocol history).
pub const PROTOCOL_MIN: u16 = 2;
/// The newest protocol this jdwpmux speaks, on either side (3: a stop's answers in the
/// channel's stream, for a near side that asks for them; 4: the VM list says where each VM
/// runs, a container's name among them; 5: big Data frames compressed when that pays; 6:
/// gathered answers carry what the VM answered ABSENT_INFORMATION, for the near cache).
pub const PROTOCOL: u16 = 6;
/// The first protocol under which the far side gathers a stop's answers.
pub const GATHER_PROTOCOL: u16 = 3;
/// The first protocol whose VM list carries each VM's place (`Body::VmListPlaced`).
pub const PLACE_PROTOCOL: u16 = 4;
/// The first protocol under which either side may send a Data frame compressed
/// (`remote::protocol::squeeze`).
pub const SQUEEZE_PROTOCOL: u16 = 5;
/// The first protocol whose gathered answers may list commands the VM answered
/// ABSENT_INFORMATION (`remote::stop_answers::wire`'s second list).
pub const ABSENT_PROTOCOL: u16 = 6;

/// Whether a side that agreed on `protocol` compresses the big Data frames it sends: the
/// protocol has them, and `JDWPMUX_SQUEEZE` is not `off` here.
pub fn squeezes(protocol: u16) -> bool {
    protocol >= SQUEEZE_PROTOCOL && crate::remote::protocol::squeeze::enabled()
}
/// The longest hold a near side may ask for: a day.
pub const MAX_HOLD: Duration = Duration::from_secs(24 * 3600);

/// What a near side started with `--far-take-over` adds to the name in its Hello (see
/// `Hello::binary`, free text that names the near side in lines): it asks to take the far
/// side from another near side connected now. A mark in the name, not a field: the Hello's
/// fields are protocol 4's, and a far side that knows no take-over shows the mark in its
/// refusal and refuses as before.
pub const TAKE_OVER_MARK: &str = " [take-over]";

/// `name` with the take-over mark, within the Hello's limit on names.
pub fn take_over_name(name: &str) -> String {
    let room = crate::remote::protocol::frame::MAX_VERSION.saturating_sub(TAKE_OVER_MARK.len());
    let mut out: String = name.chars().take(room).collect();
    while out.len() > room {
        out.pop();
    }
    out.push_str(TAKE_OVER_MARK);
    out
}

/// A Hello's name without the take-over mark, and whether it had it.
pub fn split_take_over(name: &str) -> (&str, bool) {
    match name.strip_suffix(TAKE_OVER_MARK) {
        Some(n) => (n, true),
        None => (name, false),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Start a new session: every channel of the one before is closed (its near side is
    /// gone: a near side that restarts asks for a new one).
    New,
    /// Start a new session for a near side that asked to take over (`TAKE_OVER_MARK`) from
    /// the one connected now, which is told (`ByeReason::Replaced`) and let go.
    TakeOver,
    /// The near side of the running session came back.
    Resume,
    Refuse(ByeReason, String),
}

/// A session that another near side took over (by `--far-take-over`, or after its own near
/// side went): its id, and who took it. Its near side, back, is told so instead of "that
/// session ended", and does not take it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenOver {
    pub id: [u8; 16],
    pub by: String,
}

/// The refusal a near side whose session was taken over gets, connected or coming back.
pub fn taken_over_text(by: &str) -> String {
    format!("another serve took this far side over (jdwpmux {by})")
}

/// Judges `hello` against the running session `ours`; `binary` is this jdwpmux's version;
/// `connected`: the near side connected now, as its Hello named itself (see `Hello::binary`,
/// without the take-over mark); `taken`: the session taken over last, if any.
pub fn judge(hello: &Hello, ours: &SessionKey, binary: &str, connected: Option<&str>, taken: Option<&TakenOver>) -> Verdict {
    if hello.role != Role::Near {
        return Verdict::Refuse(ByeReason::Protocol, "a far side's hello came to a far side".into());
    }
    if agree(hello.proto_min, hello.proto_max).is_none() {
        let theirs = protocols(hello.proto_min, hello.proto_max);
        let ours = protocols(PROTOCOL_MIN, PROTOCOL);
        return Verdict::Refuse(
            ByeReason::Version,
            format!(
                "jdwpmux {binary} on this host speaks far-side protocol {ours}, jdwpmux {} near the IDE speaks {theirs}: install the same version on both",
                hello.binary
            ),
        );
    }
    if hello.session.is_none() {
        // Another near side (another `serve` of this login: a second terminal, a colleague)
        // would take the session, and every VM with its debuggers' stops, from the one
        // connected now, which would take it back: refused, naming the one connected. The
        // same near side asking again (its session lost) is no other.
        let (name, take_over) = split_take_over(&hello.binary);
        if let Some(other) = connected.filter(|c| *c != name) {
            if take_over {
                return Verdict::TakeOver;
            }
            return Verdict::Refuse(
                ByeReason::Busy,
                format!(
                    "it serves another serve now (jdwpmux {other}); to take over, start this serve with --far-take-over, or stop that one (or this far side: kill {})",
                    std::process::id()
                ),
            );
        }
        return Verdict::New;
    }
    if let Some(t) = taken.filter(|t| t.id == hello.session.id) {
        return Verdict::Refuse(ByeReason::Replaced, taken_over_text(&t.by));
    }
    if hello.session.id != ours.id {
        return Verdict::Refuse(ByeReason::UnknownSession, "that session ended here (the far side restarted, or its hold ran out)".into());
    }
    if !ours.matches(&hello.session) {
        return Verdict::Refuse(ByeReason::BadToken, "wrong resume token for this session".into());
    }
    Verdict::Resume
}

/// The protocol both sides speak, given the other side's range: the highest both have; None
/// when they share none.
pub fn agree(min: u16, max: u16) -> Option<u16> {
    let high = max.min(PROTOCOL);
    (high >= min.max(PROTOCOL_MIN)).then_some(high)
}

/// Whether the far side gathers stops' answers for the near side that said `hello` (one
/// this side took): under a protocol that has them, and only when it asked.
pub fn gathers(hello: &Hello) -> bool {
    hello.gather && agree(hello.proto_min, hello.proto_max).is_some_and(|p| p >= GATHER_PROTOCOL)
}

/// How a channel gathers for the near side that said `hello`: `None` relays its bytes
/// unchanged; ABSENT_INFORMATION answers go only to a near side of [`ABSENT_PROTOCOL`].
pub fn gather_limits(hello: &Hello) -> Option<crate::remote::stop_answers::plan::Limits> {
    let absent = agree(hello.proto_min, hello.proto_max).is_some_and(|p| p >= ABSENT_PROTOCOL);
    gathers(hello).then(|| crate::remote::stop_answers::plan::Limits { absent, ..Default::default() })
}

/// A range of protocol versions as lines say it: `2`, or `1..3`.
pub fn protocols(min: u16, max: u16) -> String {
    if min == max {
        min.to_string()
    } else {
        format!("{min}..{max}")
    }
}

/// The hold the far side grants: what the near side asked for (within `MAX_HOLD`), or its
/// own when the near side asked for none.
pub fn grant_hold(asked_secs: u32, own: Duration) -> Duration {
    if asked_secs == 0 {
        return own.min(MAX_HOLD);
    }
    Duration::from_secs(u64::from(asked_secs)).min(MAX_HOLD)
}

/// A new session's id and token, from the system's random source.
pub fn new_session() -> Result<SessionKey, getrandom::Error> {
    let mut key = SessionKey::default();
    getrandom::fill(&mut key.id)?;
    getrandom::fill(&mut key.token)?;
    // An all-zero id means "no session" on the wire.
    if key.is_none() {
        key.id[0] = 1;
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(role: Role, min: u16, max: u16, session: SessionKey) -> Hello {
        Hello { role, proto_min: min, proto_max: max, binary: "9.9.9".into(), session, hold_secs: 0, resumed: false, gather: false }
    }

    #[test]
    fn verdicts() {
        let ours = SessionKey { id: [7; 16], token: [8; 16] };
        let none = SessionKey::default();
        // What each hello must get: a verdict, or a refusal's reason and a piece of its text.
        type Want = Result<Verdict, (ByeReason, &'static str)>;
        let cases: Vec<(&str, Hello, Want)> = vec![
            ("new session", hello(Role::Near, 2, 2, none), Ok(Verdict::New)),
            ("new session, a range of versions", hello(Role::Near, 1, 3, none), Ok(Verdict::New)),
            ("a near side of protocol 3 only", hello(Role::Near, 3, 3, none), Ok(Verdict::New)),
            ("a newer near side that still speaks 3", hello(Role::Near, 3, 7, none), Ok(Verdict::New)),
            ("a near side of protocol 6", hello(Role::Near, 2, 6, none), Ok(Verdict::New)),
            ("a near side of protocol 5", hello(Role::Near, 2, 5, none), Ok(Verdict::New)),
            ("a near side of protocol 4", hello(Role::Near, 2, 4, none), Ok(Verdict::New)),
            ("resume", hello(Role::Near, 2, 2, ours), Ok(Verdict::Resume)),
            (
                "a newer near side",
                hello(Role::Near, 7, 8, ours),
                Err((ByeReason::Version, "jdwpmux 0.1.0 on this host speaks far-side protocol 2..6, jdwpmux 9.9.9 near the IDE speaks 7..8")),
            ),
            ("a near side of protocol 1", hello(Role::Near, 1, 1, none), Err((ByeReason::Version, "near the IDE speaks 1: install the same version"))),
            ("a far side's hello", hello(Role::Far, 2, 2, none), Err((ByeReason::Protocol, "a far side's hello"))),
            ("another session", hello(Role::Near, 2, 2, SessionKey { id: [9; 16], ..ours }), Err((ByeReason::UnknownSession, "that session ended here"))),
            ("a wrong token", hello(Role::Near, 2, 2, SessionKey { token: [9; 16], ..ours }), Err((ByeReason::BadToken, "wrong resume token"))),
        ];
        for (name, h, want) in cases {
            let got = judge(&h, &ours, "0.1.0", None, None);
            match (got, want) {
                (Verdict::Refuse(reason, text), Err((want_reason, want_text))) => {
                    assert_eq!(reason, want_reason, "{name}");
                    assert!(text.contains(want_text), "{name}: {text}");
                }
                (got, Ok(want)) => assert_eq!(got, want, "{name}"),
                (got, Err(_)) => panic!("{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_second_near_side_is_refused_while_the_first_is_connected() {
        let ours = SessionKey { id: [7; 16], token: [8; 16] };
        let other = Hello { binary: "0.1.0 (laptop pid 42)".into(), ..hello(Role::Near, 2, 3, SessionKey::default()) };
        match judge(&other, &ours, "0.1.0", Some("0.1.0 (desk pid 7)"), None) {
            Verdict::Refuse(ByeReason::Busy, text) => assert!(
                text.starts_with("it serves another serve now (jdwpmux 0.1.0 (desk pid 7)); to take over, start this serve with --far-take-over, or stop that one"),
                "{text}"
            ),
            v => panic!("{v:?}"),
        }
        assert_eq!(judge(&other, &ours, "0.1.0", Some("0.1.0 (laptop pid 42)"), None), Verdict::New, "the same near side again");
        assert_eq!(judge(&other, &ours, "0.1.0", None, None), Verdict::New, "nobody connected: a near side that restarted takes over");
        let back = Hello { session: ours, ..other };
        assert_eq!(judge(&back, &ours, "0.1.0", Some("0.1.0 (desk pid 7)"), None), Verdict::Resume, "its own session resumed");
    }

    #[test]
    fn a_near_side_that_asks_takes_over_and_the_one_taken_from_is_told_when_back() {
        let ours = SessionKey { id: [7; 16], token: [8; 16] };
        let asks = Hello { binary: take_over_name("0.1.0 (laptop pid 42)"), ..hello(Role::Near, 2, 4, SessionKey::default()) };
        assert_eq!(judge(&asks, &ours, "0.1.0", Some("0.1.0 (desk pid 7)"), None), Verdict::TakeOver);
        assert_eq!(judge(&asks, &ours, "0.1.0", None, None), Verdict::New, "nobody to take from: a new session");
        assert_eq!(judge(&asks, &ours, "0.1.0", Some("0.1.0 (laptop pid 42)"), None), Verdict::New, "its own earlier connection: no take-over");
        // The one taken from comes back with its session: told who took it, never resumed.
        let taken = TakenOver { id: [5; 16], by: "0.1.0 (laptop pid 42)".into() };
        let back = Hello { binary: "0.1.0 (desk pid 7)".into(), ..hello(Role::Near, 2, 4, SessionKey { id: [5; 16], token: [6; 16] }) };
        assert_eq!(
            judge(&back, &ours, "0.1.0", Some("0.1.0 (laptop pid 42)"), Some(&taken)),
            Verdict::Refuse(ByeReason::Replaced, "another serve took this far side over (jdwpmux 0.1.0 (laptop pid 42))".into())
        );
        let mine = Hello { session: ours, ..back };
        assert_eq!(judge(&mine, &ours, "0.1.0", Some("0.1.0 (desk pid 7)"), Some(&taken)), Verdict::Resume, "another session id: not the one taken");
    }

    #[test]
    fn the_take_over_mark_fits_the_hello_and_comes_off() {
        let max = crate::remote::protocol::frame::MAX_VERSION;
        for name in ["0.1.0 (desk pid 7)", &"x".repeat(max), &"é".repeat(max)] {
            let marked = take_over_name(name);
            assert!(marked.len() <= max, "{marked}");
            let (plain, asks) = split_take_over(&marked);
            assert!(asks && name.starts_with(plain), "{plain}");
        }
        assert_eq!(split_take_over("0.1.0 (desk pid 7)"), ("0.1.0 (desk pid 7)", false));
    }

    #[test]
    fn the_highest_protocol_both_speak_is_agreed() {
        // (the near side's range, what is agreed)
        let cases = [
            ((2, 2), Some(2)),
            ((2, 3), Some(3)),
            ((3, 3), Some(3)),
            ((1, 2), Some(2)),
            ((1, 9), Some(6)),
            ((3, 9), Some(6)),
            ((2, 4), Some(4)),
            ((2, 5), Some(5)),
            ((3, 3), Some(3)),
            ((1, 1), None),
            ((7, 9), None),
            ((0, 0), None),
        ];
        for ((min, max), want) in cases {
            assert_eq!(agree(min, max), want, "{min}..{max}");
        }
    }

    #[test]
    fn gathering_needs_protocol_3_and_the_near_sides_wish() {
        let with = |min, max, gather| Hello { gather, ..hello(Role::Near, min, max, SessionKey::default()) };
        assert!(gathers(&with(2, 3, true)));
        assert!(gathers(&with(3, 3, true)));
        assert!(!gathers(&with(2, 3, false)), "a near side with its near cache off does not ask");
        assert!(!gathers(&with(2, 2, true)), "under protocol 2 nothing is gathered, whatever the byte says");
        assert!(gathers(&with(4, 6, true)), "protocols 4 to 6 gather as 3 does");
        assert!(!gathers(&with(7, 8, true)), "no protocol in common");
    }

    #[test]
    fn absent_answers_need_protocol_6() {
        let with = |min, max, gather| Hello { gather, ..hello(Role::Near, min, max, SessionKey::default()) };
        assert_eq!(gather_limits(&with(2, 6, true)).map(|l| l.absent), Some(true));
        assert_eq!(gather_limits(&with(2, 5, true)).map(|l| l.absent), Some(false), "a near side of 5 knows no absent list");
        assert_eq!(gather_limits(&with(2, 6, false)), None, "nothing gathered for a near side that did not ask");
        assert_eq!(gather_limits(&with(2, 2, true)), None);
    }

    #[test]
    fn compression_needs_protocol_5() {
        assert!(!squeezes(4), "a peer of 4 knows no DataZ frame");
        assert!(!squeezes(2));
        assert_eq!(squeezes(5), crate::remote::protocol::squeeze::enabled());
    }

    #[test]
    fn holds() {
        let own = Duration::from_secs(300);
        assert_eq!(grant_hold(0, own), own);
        assert_eq!(grant_hold(30, own), Duration::from_secs(30));
        assert_eq!(grant_hold(u32::MAX, own), MAX_HOLD);
        assert_eq!(grant_hold(0, Duration::from_secs(1 << 40)), MAX_HOLD);
    }

    #[test]
    fn new_sessions_differ_and_are_never_the_empty_key() {
        let a = new_session().unwrap();
        let b = new_session().unwrap();
        assert!(!a.is_none() && a != b);
    }
}
