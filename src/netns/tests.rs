//! The pure parts: the link text, the choice of way, the helper's arguments, and its
//! failures carried through an exit code and one line and read back as the same error.

use std::io;
use std::time::Duration;

use super::child::{self, Exit};
use super::helper::{first_line, from_exit, os_error};
use super::{parse_ns_link, way, NsError, NsTarget, Way};

fn target() -> NsTarget {
    NsTarget { pid: 4242, net: 4026532801, addr: "127.0.0.1:5005".parse().unwrap() }
}

#[test]
fn ns_links() {
    assert_eq!(parse_ns_link("net:[4026531840]", "net"), Some(4026531840));
    assert_eq!(parse_ns_link("user:[4026531837]", "user"), Some(4026531837));
    for bad in ["net:[]", "net:[12", "net[12]", "user:[12]", "net:[1x]", "net:[-1]", " net:[1]", "net:[99999999999999999999]", ""] {
        assert_eq!(parse_ns_link(bad, "net"), None, "{bad:?}");
    }
}

#[test]
fn the_way_in() {
    // Rows: root?, own namespace, target's, the way, and why.
    let rows = [
        (true, 1, 1, Way::Here, "same namespace: nothing to enter, even for root"),
        (false, 1, 1, Way::Here, "same namespace: any user connects"),
        (true, 1, 2, Way::Thread, "root holds CAP_SYS_ADMIN over every user namespace"),
        (false, 1, 2, Way::Child, "a user must join the owning user namespace: one thread only"),
    ];
    for (root, own, theirs, want, why) in rows {
        assert_eq!(way(root, own, theirs), want, "{why}");
    }
}

#[test]
fn helper_arguments_round_trip() {
    let t = NsTarget { addr: "[::1]:8000".parse().unwrap(), ..target() };
    let words = child::args(&t, Duration::from_millis(1500)).map(Into::into);
    assert_eq!(child::parse_args(&words).unwrap(), (t, Duration::from_millis(1500)));
    let bad: Vec<std::ffi::OsString> = ["1", "2", "nowhere", "5"].map(Into::into).to_vec();
    assert!(child::parse_args(&bad).unwrap_err().contains("ADDR"));
    assert!(child::parse_args(&bad[..3]).unwrap_err().contains("3 arguments"));
}

/// Each failure the helper reports comes back as the same kind of error.
#[test]
fn helper_failures_round_trip() {
    let t = target();
    let timeout = Duration::from_secs(3);
    let back = |e: NsError| {
        let (exit, line) = child::failure(&e);
        from_exit(&t, timeout, Some(exit as i32), "exit status: n", &line)
    };
    let gone = back(NsError::Gone { pid: t.pid, net: t.net, now: Some(77) });
    assert!(matches!(gone, NsError::Gone { now: Some(77), .. }), "{gone:?}");
    assert!(matches!(back(NsError::Gone { pid: t.pid, net: t.net, now: None }), NsError::Gone { now: None, .. }));
    let refused = back(NsError::Connect { pid: t.pid, addr: t.addr, source: io::Error::from_raw_os_error(libc::ECONNREFUSED) });
    match refused {
        NsError::Connect { source, .. } => assert_eq!(source.kind(), io::ErrorKind::ConnectionRefused),
        other => panic!("{other:?}"),
    }
    let denied = back(NsError::Denied { pid: t.pid, reason: "open /proc/4242/ns/user: Permission denied (os error 13)".into(), remedy: "" });
    assert!(denied.to_string().contains("run jdwpmux as root (with --other-users)"), "{denied}");
    assert!(matches!(back(NsError::Timeout { pid: t.pid, addr: t.addr, after: timeout }), NsError::Timeout { .. }));
    let other = back(NsError::System { what: "make a socket", source: io::Error::from_raw_os_error(libc::EMFILE) });
    assert!(matches!(&other, NsError::Helper { detail, .. } if detail.contains("make a socket")), "{other:?}");
}

#[test]
fn helper_exits_that_say_nothing() {
    let t = target();
    let d = Duration::from_secs(1);
    assert!(from_exit(&t, d, None, "signal: 9 (SIGKILL)", "").to_string().contains("SIGKILL"));
    assert!(from_exit(&t, d, Some(0), "exit status: 0", "").to_string().contains("without sending"));
    assert_eq!(Exit::from_code(127), Exit::Other);
    // A connect failure whose line has no errno keeps the line.
    assert!(matches!(from_exit(&t, d, Some(5), "", "odd"), NsError::Connect { source, .. } if source.to_string() == "odd"));
}

#[test]
fn os_errors_in_text() {
    assert_eq!(os_error("Connection refused (os error 111)"), Some(111));
    assert_eq!(os_error("x (os error 1) then (os error 101)"), Some(101));
    assert_eq!(os_error("Connection refused"), None);
    assert_eq!(os_error("(os error 1"), None);
}

#[test]
fn stderr_is_bounded_to_one_line() {
    assert_eq!(first_line(b"\n  first \nsecond\n"), "first");
    assert_eq!(first_line(b""), "");
    let long = "\u{e9}".repeat(1000);
    let line = first_line(long.as_bytes());
    assert_eq!(line.chars().count(), 303);
    assert_eq!(first_line(b"\xff\xfe bad"), "\u{fffd}\u{fffd} bad");
}

#[test]
fn target_display_names_everything() {
    assert_eq!(target().to_string(), "127.0.0.1:5005 in net:[4026532801] of pid 4242");
}
