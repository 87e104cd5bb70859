use super::*;
use crate::remote::protocol::frame::SessionKey;
use crate::remote::protocol::resume::{Outbound, ResumeError};

fn hello(role: Role, min: u16, max: u16) -> Hello {
    Hello { role, proto_min: min, proto_max: max, binary: "9.9.9".into(), session: SessionKey { id: [7; 16], token: [8; 16] }, hold_secs: 300, resumed: false, gather: false }
}

fn link(body: Body) -> Frame {
    Frame { channel: 0, seq: 0, ack: 0, body }
}

#[test]
fn the_first_frame() {
    let h = hello(Role::Far, PROTOCOL, PROTOCOL);
    assert_eq!(first(link(Body::Hello(h.clone())), false), First::Hello(h));
    // A far side of protocol 2 (before gathered answers) is spoken to as before.
    let old = hello(Role::Far, 2, 2);
    assert_eq!(first(link(Body::Hello(old.clone())), false), First::Hello(old));
    let bye = |reason, text: &str| link(Body::Bye { reason, text: text.into() });
    assert_eq!(first(bye(ByeReason::Version, "speaks 7"), false), First::Refused("speaks 7".into()));
    // Found by the nearlink fuzz target: an empty goodbye gave an empty refusal line.
    for empty in ["", " \t"] {
        assert_eq!(first(bye(ByeReason::Version, empty), true), First::Refused("the far side speaks another protocol version (its goodbye said no more)".into()));
    }
    assert_eq!(first(bye(ByeReason::UnknownSession, "gone"), false), First::SessionGone("gone (UnknownSession)".into()));
    assert_eq!(first(bye(ByeReason::BadToken, "no"), false), First::SessionGone("no (BadToken)".into()));
    assert_eq!(first(bye(ByeReason::Other(99), "later"), false), First::Retry("the far side said goodbye (Other(99)): later".into()));
    assert_eq!(first(link(Body::Ack), false), First::Retry("the far side began with a Ack frame".into()));
    assert_eq!(first(bye(ByeReason::Replaced, "another serve took this far side over"), false), First::TakenOver("another serve took this far side over".into()));
    // Found by the nearlink fuzz target: an empty Busy or Replaced goodbye gave an empty
    // reason (a host row saying `busy: ` and nothing).
    for empty in ["", "  "] {
        assert_eq!(first(bye(ByeReason::Busy, empty), true), First::Busy("the far side serves another near side (its goodbye said no more)".into()));
        assert_eq!(first(bye(ByeReason::Replaced, empty), false), First::TakenOver("another near side took the far side over (its goodbye said no more)".into()));
    }
    assert_eq!(first(bye(ByeReason::Busy, "serves dev@box"), true), First::Busy("serves dev@box".into()));
}

/// A far side that says "no such session" to a request for a new one is not believed: the
/// near side would otherwise ask again at once, forever.
#[test]
fn a_new_session_refused_as_unknown_waits_the_backoff() {
    let bye = |reason| link(Body::Bye { reason, text: "no".into() });
    assert_eq!(first(bye(ByeReason::BadToken), true), First::Retry("the far side refused a new session (BadToken): no".into()));
    assert_eq!(first(bye(ByeReason::UnknownSession), true), First::Retry("the far side refused a new session (UnknownSession): no".into()));
    assert_eq!(first(bye(ByeReason::BadToken), false), First::SessionGone("no (BadToken)".into()));
}

#[test]
fn a_hello_with_odd_fields_is_refused_with_what_it_said() {
    let v = env!("CARGO_PKG_VERSION");
    let want = |what: &str| format!("the far side (jdwpmux 9.9.9) {what}: it cannot be used by this one (jdwpmux {v})");
    let ours = crate::remote::protocol::hello::protocols(crate::remote::protocol::hello::PROTOCOL_MIN, PROTOCOL);
    let range = |r: &str| want(&format!("answered with a range of far-side protocols ({r}), where a far side names the one it chose of this one's {ours}"));
    let other = |p: &str| want(&format!("chose far-side protocol {p}, which this one does not speak (it speaks {ours})"));
    let cases = [
        (hello(Role::Near, PROTOCOL, PROTOCOL), want("answered as a Near side, not as a far side")),
        (hello(Role::Far, PROTOCOL, PROTOCOL + 1), range(&format!("{PROTOCOL}..{}", PROTOCOL + 1))),
        // A range is no answer: the far side says the one it chose. Said as that, never as
        // "answered with 2..3; this jdwpmux speaks 2..3", which read as a version mismatch.
        (hello(Role::Far, 2, 3), range("2..3")),
        (hello(Role::Far, 1, 1), other("1")),
        (hello(Role::Far, PROTOCOL + 1, PROTOCOL + 1), other(&(PROTOCOL + 1).to_string())),
        (hello(Role::Far, 0, 0), other("0")),
        (hello(Role::Far, u16::MAX, 0), range(&format!("{}..0", u16::MAX))),
    ];
    for (h, line) in cases {
        assert_eq!(first(link(Body::Hello(h.clone())), false), First::Refused(line), "{h:?}");
    }
}

fn resume() -> Resume {
    let mut r = Resume::new(Outbound::new(1 << 20));
    r.send(1, Body::Open { vm: 3 }).unwrap();
    r
}

#[test]
fn frames_after_the_hello() {
    let mut r = resume();
    assert_eq!(judge(&mut r, link(Body::Ping(5))), Inbound::Pong(5));
    assert_eq!(judge(&mut r, Frame { ack: 1, ..link(Body::Ack) }), Inbound::Nothing);
    assert_eq!(r.out.acked(), 1, "the ack was taken");
    let opened = Frame { channel: 1, seq: 1, ack: 1, body: Body::Opened { status: OpenStatus::Ok, text: String::new() } };
    let got = judge(&mut r, opened);
    assert!(got.delivered());
    assert_eq!(got, Inbound::Opened { channel: 1, status: OpenStatus::Ok, text: String::new() });
    let data = Frame { channel: 1, seq: 2, ack: 1, body: Body::Data(Bytes::from_static(b"JDWP-Handshake")) };
    assert_eq!(judge(&mut r, data), Inbound::Data { channel: 1, bytes: Bytes::from_static(b"JDWP-Handshake") });
    assert_eq!(judge(&mut r, Frame { channel: 0, seq: 3, ack: 1, body: Body::VmList(vec![]) }), Inbound::VmList(vec![]));
    let close = Frame { channel: 1, seq: 4, ack: 1, body: Body::Close { reason: CloseReason::VmClosed, text: "exit".into() } };
    assert_eq!(judge(&mut r, close), Inbound::Closed { channel: 1, reason: CloseReason::VmClosed, text: "exit".into() });
    assert_eq!(r.inn.last(), 4);
    // Found by the nearlink fuzz target: a take-over's goodbye without words in the middle
    // of a connection gave an empty reason.
    assert_eq!(judge(&mut r, link(Body::Bye { reason: ByeReason::Replaced, text: " ".into() })), Inbound::TakenOver("another near side took the far side over (its goodbye said no more)".into()));
}

#[test]
fn what_a_far_side_must_not_send_drops_the_connection_with_a_typed_reason() {
    let mut r = resume();
    let beyond = Frame { ack: 2, ..link(Body::Ack) };
    assert!(matches!(judge(&mut r, beyond), Inbound::Lose(Broken::Resume(ResumeError::AckAhead { ack: 2, sent: 1 }))), "acks beyond what was sent");
    assert_eq!(r.out.acked(), 0, "and nothing was taken");
    let gap = Frame { channel: 0, seq: 2, ack: 0, body: Body::VmList(vec![]) };
    assert!(matches!(judge(&mut r, gap), Inbound::Lose(Broken::Resume(_))), "a frame after a gap");
    let bye = link(Body::Bye { reason: ByeReason::Other(200), text: "x".repeat(512) });
    let lost = judge(&mut r, bye);
    assert!(matches!(&lost, Inbound::Lose(Broken::Bye { reason: ByeReason::Other(200), .. })));
    assert!(!lost.delivered());
    let hello = Frame { ack: 1, ..link(Body::Hello(hello(Role::Far, PROTOCOL, PROTOCOL))) };
    assert_eq!(judge(&mut r, hello), Inbound::Lose(Broken::Unexpected(Kind::Hello)));
    let open = Frame { channel: 4, seq: 1, ack: 1, body: Body::Open { vm: 1 } };
    assert_eq!(judge(&mut r, open), Inbound::Lose(Broken::NotFromFar(Kind::Open)));
    // Found by the nearlink fuzz target: the Open's number was taken though it was refused.
    assert_eq!((r.inn.last(), r.out.acked()), (0, 0), "a refused frame took nothing");
    assert_eq!(Broken::Channel { what: "data on a channel never opened", channel: 9 }.to_string(), "bad stream: data on a channel never opened (9)");
}
