//! The line `jdwpmux far --detach` prints (`ready_line`, or `running_line` about a far side
//! found running), read by the near side to learn where the far side listens and what it
//! is. Pure.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use super::hello;

/// What the far side's ready line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub socket: PathBuf,
    pub pid: Option<u32>,
    /// The protocol versions it speaks (`protocol P`, or `protocol MIN..MAX` from a far side
    /// that speaks several); `UNKNOWN` when a far side found running did not record them
    /// (`protocol ?`, one from before `dir::Holder`).
    pub protocols: std::ops::RangeInclusive<u16>,
    pub version: String,
    /// It was running already (another near side, or an earlier run, started it).
    pub already: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a far side's ready line: {0:?}")]
pub struct NotReady(pub String);

/// The line a far side prints when it is ready, and a second start prints about the first:
/// the near side reads the socket's path from it.
pub fn ready_line(socket: &Path, pid: Option<u32>, already: bool) -> String {
    let pid = pid.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    let state = if already { "already running" } else { "listening" };
    let protocols = hello::protocols(hello::PROTOCOL_MIN, hello::PROTOCOL);
    format!("jdwpmux far: {state} on {} ({pid}, protocol {protocols}, jdwpmux {})", socket.display(), env!("CARGO_PKG_VERSION"))
}

/// The line a start prints about the far side found running: its own protocols and version
/// from its pid file (`remote::far::dir::Holder`), not this binary's (a jdwpmux installed
/// over an older one finds the older one running); `?` for what a far side from before the
/// record did not write.
pub fn running_line(socket: &Path, pid: Option<u32>, protocols: Option<&RangeInclusive<u16>>, version: Option<&str>) -> String {
    let pid = pid.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    let protocols = protocols.map_or_else(|| "?".to_string(), |r| hello::protocols(*r.start(), *r.end()));
    let version = version.unwrap_or("?");
    format!("jdwpmux far: already running on {} ({pid}, protocol {protocols}, jdwpmux {version})", socket.display())
}

/// Reads `jdwpmux far: listening on SOCKET (pid N, protocol P, jdwpmux V)` (or `already
/// running on`). The socket's path is absolute and may hold spaces: it runs to the last
/// " (pid"; the fields after it are fixed.
pub fn parse(line: &str) -> Result<Ready, NotReady> {
    let bad = || NotReady(line.chars().take(200).collect());
    let line = line.trim_end();
    let rest = line.strip_prefix("jdwpmux far: ").ok_or_else(bad)?;
    let (already, rest) = match (rest.strip_prefix("listening on "), rest.strip_prefix("already running on ")) {
        (Some(r), _) => (false, r),
        (None, Some(r)) => (true, r),
        (None, None) => return Err(bad()),
    };
    let at = rest.rfind(" (pid").ok_or_else(bad)?;
    let (socket, fields) = rest.split_at(at);
    if !socket.starts_with('/') {
        return Err(bad());
    }
    let fields = fields.strip_prefix(" (").and_then(|f| f.strip_suffix(')')).ok_or_else(bad)?;
    let mut parts = fields.split(", ");
    let pid = match parts.next().ok_or_else(bad)? {
        "pid unknown" => None,
        p => Some(p.strip_prefix("pid ").and_then(|n| n.parse().ok()).ok_or_else(bad)?),
    };
    let protocols = parts.next().and_then(|p| p.strip_prefix("protocol ")).and_then(range).ok_or_else(bad)?;
    let version = parts.next().and_then(|v| v.strip_prefix("jdwpmux ")).filter(|v| !v.is_empty()).ok_or_else(bad)?.to_string();
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(Ready { socket: PathBuf::from(socket), pid, protocols, version, already })
}

/// The protocols of a far side that does not say them (`protocol ?`): 0, which no jdwpmux
/// speaks, so no near side takes it for its own.
pub const UNKNOWN: std::ops::RangeInclusive<u16> = 0..=0;

/// A range of protocols as lines say it; `UNKNOWN` as "unknown".
pub fn said(r: &std::ops::RangeInclusive<u16>) -> String {
    if *r == UNKNOWN {
        "unknown (it did not record it)".to_string()
    } else {
        crate::remote::protocol::hello::protocols(*r.start(), *r.end())
    }
}

/// `P` or `MIN..MAX` (MIN <= MAX), or `?`.
fn range(text: &str) -> Option<std::ops::RangeInclusive<u16>> {
    if text == "?" {
        return Some(UNKNOWN);
    }
    let (min, max) = match text.split_once("..") {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let p = text.parse().ok()?;
            (p, p)
        }
    };
    (min <= max).then_some(min..=max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn reads_what_the_far_side_prints() {
        for already in [false, true] {
            for pid in [Some(4242), None] {
                let line = ready_line(Path::new("/run/user/1000/jdwpmux far/far.sock"), pid, already);
                let got = parse(&format!("{line}\n")).unwrap();
                assert_eq!(got.socket, Path::new("/run/user/1000/jdwpmux far/far.sock"));
                let ours = crate::remote::protocol::hello::PROTOCOL_MIN..=crate::remote::protocol::hello::PROTOCOL;
                assert_eq!((got.pid, got.already, got.protocols), (pid, already, ours));
                assert_eq!(got.version, env!("CARGO_PKG_VERSION"));
            }
        }
    }

    #[test]
    fn a_far_side_of_several_protocols_says_their_range() {
        let got = parse("jdwpmux far: listening on /x/far.sock (pid 1, protocol 2..4, jdwpmux 0.3.0)").unwrap();
        assert_eq!(got.protocols, 2..=4);
    }

    #[test]
    fn a_far_side_found_running_says_its_own_protocols() {
        let socket = Path::new("/x/far.sock");
        let got = parse(&running_line(socket, Some(7), Some(&(1..=1)), Some("0.0.9"))).unwrap();
        assert_eq!((got.pid, got.protocols, got.version.as_str(), got.already), (Some(7), 1..=1, "0.0.9", true));
        // One from before the record: its pid alone.
        let line = running_line(socket, Some(7), None, None);
        assert_eq!(line, "jdwpmux far: already running on /x/far.sock (pid 7, protocol ?, jdwpmux ?)");
        let got = parse(&line).unwrap();
        assert_eq!((said(&got.protocols), got.protocols), ("unknown (it did not record it)".to_string(), UNKNOWN));
        assert!(crate::remote::protocol::hello::agree(*UNKNOWN.start(), *UNKNOWN.end()).is_none(), "never taken for one this side speaks");
    }

    #[test]
    fn refuses_anything_else() {
        for line in [
            "",
            "bash: jdwpmux: command not found",
            "jdwpmux far: listening on relative/far.sock (pid 1, protocol 1, jdwpmux 0.1.0)",
            "jdwpmux far: listening on /x/far.sock (pid one, protocol 1, jdwpmux 0.1.0)",
            "jdwpmux far: listening on /x/far.sock (pid 1, protocol x, jdwpmux 0.1.0)",
            "jdwpmux far: listening on /x/far.sock (pid 1, protocol 3..2, jdwpmux 0.1.0)",
            "jdwpmux far: listening on /x/far.sock (pid 1, protocol 2.., jdwpmux 0.1.0)",
            "jdwpmux far: listening on /x/far.sock (pid 1, protocol 1, jdwpmux )",
            "jdwpmux far: listening on /x/far.sock (pid 1, protocol 1, jdwpmux 0.1.0, more)",
            "jdwpmux far: resting on /x/far.sock (pid 1, protocol 1, jdwpmux 0.1.0)",
        ] {
            assert!(parse(line).is_err(), "{line:?}");
        }
    }
}
