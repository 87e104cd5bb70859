//! Metadata carried in pcapng packet comments, which Wireshark shows and the reader
//! parses back: the connection (id, leg, VM) on each SYN, and a rewritten id or reply
//! latency on a packet's first segment. Plain `key=value` text so a person can read it.

use std::time::Duration;

use super::record::{ConnInfo, DataKind, Leg};

/// Prefix of every comment jdwpmux writes.
pub const COMMENT_TAG: &str = "jdwpmux";
/// Marks a reply the proxy made from the near cache.
pub const NEAR_MARK: &str = "near=1";

/// Whether a packet comment marks a reply made from the near cache.
pub fn comment_says_near(c: &str) -> bool {
    c.strip_prefix(COMMENT_TAG).is_some_and(|rest| rest.split_whitespace().any(|t| t == NEAR_MARK))
}

/// Comment for the SYN: `jdwpmux conn=3 leg=debugger vm=<rest of line>`.
pub fn open_comment(c: &ConnInfo) -> String {
    format!(
        "{COMMENT_TAG} conn={} leg={} vm={}",
        c.id,
        c.leg.as_str(),
        c.vm
    )
}

/// Comment for a packet's first segment, if it has anything to say.
pub fn packet_comment(kind: &DataKind) -> Option<String> {
    if *kind == DataKind::NearReply {
        return Some(format!("{COMMENT_TAG} {NEAR_MARK}"));
    }
    let DataKind::Packet { orig_id, latency } = kind else {
        return None;
    };
    if orig_id.is_none() && latency.is_none() {
        return None;
    }
    let mut s = COMMENT_TAG.to_string();
    if let Some(id) = orig_id {
        s.push_str(&format!(" orig_id={id}"));
    }
    if let Some(l) = latency {
        s.push_str(&format!(" latency_ns={}", l.as_nanos()));
    }
    Some(s)
}

/// Inverse of [`open_comment`]: (conn id, leg, vm).
pub fn parse_open_comment(c: &str) -> Option<(u64, Leg, String)> {
    let rest = c.strip_prefix(COMMENT_TAG)?.strip_prefix(' ')?;
    let (fields, vm) = rest.split_once("vm=")?;
    let (mut id, mut leg) = (None, None);
    for tok in fields.split_whitespace() {
        if let Some(v) = tok.strip_prefix("conn=") {
            id = v.parse().ok();
        } else if let Some(v) = tok.strip_prefix("leg=") {
            leg = match v {
                "debugger" => Some(Leg::Debugger),
                "vm" => Some(Leg::Vm),
                _ => None,
            };
        }
    }
    Some((id?, leg?, vm.to_string()))
}

/// Inverse of [`packet_comment`]: (orig_id, latency); unknown tokens are ignored.
pub fn parse_packet_comment(c: &str) -> (Option<u32>, Option<Duration>) {
    let Some(rest) = c.strip_prefix(COMMENT_TAG) else {
        return (None, None);
    };
    let (mut orig_id, mut latency) = (None, None);
    for tok in rest.split_whitespace() {
        if let Some(v) = tok.strip_prefix("orig_id=") {
            orig_id = v.parse().ok();
        } else if let Some(v) = tok.strip_prefix("latency_ns=") {
            latency = v.parse().ok().map(Duration::from_nanos);
        }
    }
    (orig_id, latency)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn conn() -> ConnInfo {
        ConnInfo {
            id: 1,
            vm: "vm one".into(),
            leg: Leg::Vm,
            client: SocketAddr::from(([127, 0, 0, 1], 40000)),
            server: SocketAddr::from(([127, 0, 0, 1], 8700)),
        }
    }

    #[test]
    fn comments_round_trip() {
        let c = conn();
        assert_eq!(
            parse_open_comment(&open_comment(&c)),
            Some((1, Leg::Vm, "vm one".to_string()))
        );
        assert_eq!(parse_open_comment("other tool"), None);
        let kind = DataKind::Packet {
            orig_id: Some(9),
            latency: Some(Duration::from_nanos(1500)),
        };
        let text = packet_comment(&kind).unwrap_or_default();
        assert_eq!(
            parse_packet_comment(&text),
            (Some(9), Some(Duration::from_nanos(1500)))
        );
        assert_eq!(
            packet_comment(&DataKind::Packet {
                orig_id: None,
                latency: None
            }),
            None
        );
        assert_eq!(parse_packet_comment("jdwpmux orig_id=x"), (None, None));
    }

    #[test]
    fn a_near_reply_says_so_and_older_readers_skip_the_mark() {
        let text = packet_comment(&DataKind::NearReply).unwrap_or_default();
        assert!(comment_says_near(&text));
        assert_eq!(parse_packet_comment(&text), (None, None));
        assert!(!comment_says_near("jdwpmux orig_id=4"));
        assert!(!comment_says_near("near=1"));
    }
}
