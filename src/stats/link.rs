//! What `stats` shows of each far link (a host served through jdwpmux on it, `--far`): the
//! Data frames the near side sent to the far side and received from it, and of them those
//! compressed on the link (`remote::protocol::squeeze`), so a user on a slow link sees what
//! compression saved; and the near side's replay buffer (what it sent and the far side has not
//! acknowledged yet, kept to send again after a cut: `remote::protocol::figures`), now and the
//! most it held, so a user on a bad link sees it stay bounded.

use serde::{Deserialize, Serialize};

use crate::remote::protocol::figures::{LinkFigures, ReplayHeld};
use crate::remote::protocol::squeeze::SqueezeCount;

/// One host's far link, since the daemon started (over every connection of the link).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkReport {
    /// The host, as `list` names it.
    pub host: String,
    /// Data frames the near side sent to the far side.
    pub sent: SqueezeReport,
    /// Data frames the near side received from the far side.
    pub received: SqueezeReport,
    /// The near side's replay buffer (absent in a report of a daemon from before it).
    #[serde(default)]
    pub replay: ReplayReport,
}

/// The frames the near side sent and the far side has not acknowledged yet, kept to be sent
/// again after a cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Their bytes on the link, now.
    pub held_bytes: u64,
    /// Those frames, now.
    pub held_frames: u64,
    /// The most bytes held at once since the link started (a high-water mark).
    pub most_bytes: u64,
    /// The most frames held at once since the link started.
    pub most_frames: u64,
    /// The bytes held past which the VM connections' writes wait for acknowledgements (a few
    /// Open and Close frames may go past it).
    pub limit_bytes: u64,
}

impl From<ReplayHeld> for ReplayReport {
    fn from(r: ReplayHeld) -> Self {
        ReplayReport { held_bytes: r.bytes, held_frames: r.frames, most_bytes: r.most_bytes, most_frames: r.most_frames, limit_bytes: r.limit }
    }
}

impl ReplayReport {
    /// "0 bytes in 0 frames held unacknowledged, at most 1,050,112 bytes and 40 frames (limit
    /// 8,388,608 bytes)".
    pub fn text(&self) -> String {
        format!(
            "{} bytes in {} frames held unacknowledged, at most {} bytes and {} frames (limit {} bytes)",
            grouped(self.held_bytes),
            grouped(self.held_frames),
            grouped(self.most_bytes),
            grouped(self.most_frames),
            grouped(self.limit_bytes)
        )
    }
}

/// Data frames one way on a far link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqueezeReport {
    /// Data frames, compressed or not.
    pub frames: u64,
    /// Of them, those that went compressed.
    pub compressed: u64,
    /// The compressed frames' bytes as the VM connection carries them (before compressing,
    /// after inflating).
    pub raw_bytes: u64,
    /// The same frames' bytes on the link (their compressed payloads).
    pub wire_bytes: u64,
}

impl From<SqueezeCount> for SqueezeReport {
    fn from(c: SqueezeCount) -> Self {
        SqueezeReport { frames: c.frames, compressed: c.squeezed, raw_bytes: c.raw, wire_bytes: c.wire }
    }
}

impl LinkReport {
    pub fn new(host: &str, f: LinkFigures) -> LinkReport {
        LinkReport { host: host.to_string(), sent: f.squeezed.sent.into(), received: f.squeezed.received.into(), replay: f.replay.into() }
    }

    /// A line each way: "far link to HOST: 12 of 340 data frames compressed, 1,050,112
    /// bytes sent as 161,204 (6.5x)", and "far link from HOST: ... bytes came as ..."; then
    /// the replay buffer's: "far link replay to HOST: 0 bytes in 0 frames held ...".
    pub fn text(&self) -> String {
        format!(
            "far link to {}: {}\nfar link from {}: {}\nfar link replay to {}: {}\n",
            self.host,
            self.sent.text("sent"),
            self.host,
            self.received.text("came"),
            self.host,
            self.replay.text()
        )
    }
}

impl SqueezeReport {
    /// "12 of 340 data frames compressed, 1,050,112 bytes sent as 161,204 (6.5x)"; `verb`
    /// says how the bytes went ("sent", "came").
    pub fn text(&self, verb: &str) -> String {
        if self.frames == 0 {
            return "no data frames yet".to_string();
        }
        let mut s = format!("{} of {} data frames compressed", grouped(self.compressed), grouped(self.frames));
        if self.compressed > 0 {
            s.push_str(&format!(", {} bytes {verb} as {}", grouped(self.raw_bytes), grouped(self.wire_bytes)));
            if let Some(r) = self.ratio() {
                s.push_str(&format!(" ({r:.1}x)"));
            }
        }
        s
    }

    /// raw / wire of the compressed frames; None when none went compressed.
    pub fn ratio(&self) -> Option<f64> {
        (self.wire_bytes > 0).then(|| self.raw_bytes as f64 / self.wire_bytes as f64)
    }
}

/// "1,050,112": digits in groups of three.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::protocol::squeeze::LinkSqueeze;

    /// docs/captures.md names every JSON key `stats --json` gives of a far link.
    #[test]
    fn the_docs_name_the_keys() {
        let doc = include_str!("../../docs/captures.md");
        let r = LinkReport::new("h", LinkFigures::default());
        let json = serde_json::to_value(&r).expect("json");
        let mut keys: Vec<String> = json.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        for inner in ["sent", "replay"] {
            keys.extend(json[inner].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default());
        }
        assert_eq!(keys.len(), 13, "{json}");
        for k in keys.iter().map(String::as_str).chain(["links"]) {
            assert!(doc.contains(&format!("`{k}`")) || doc.contains(&format!("{{{k},")) || doc.contains(&format!(" {k},")) || doc.contains(&format!(" {k}}}")), "docs/captures.md does not name `{k}`");
        }
        // Its example is as `stats` prints it.
        let sent = SqueezeCount { frames: 7, ..SqueezeCount::default() };
        let received = SqueezeCount { frames: 40, squeezed: 34, raw: 2_082_870, wire: 261_346 };
        let mut replay = ReplayHeld::new(8 << 20);
        replay.note(262_224, 9);
        replay.note(0, 0);
        let example = LinkReport::new("build-box", LinkFigures { squeezed: LinkSqueeze { sent, received }, replay }).text();
        assert!(doc.contains(&example), "docs/captures.md must show, as it is:\n{example}");
    }

    #[test]
    fn digits_in_threes() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_050_112), "1,050,112");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn a_line_each_way_with_the_ratio() {
        let sent = SqueezeCount { frames: 340, squeezed: 12, raw: 1_050_112, wire: 161_204 };
        let received = SqueezeCount { frames: 3, squeezed: 0, raw: 0, wire: 0 };
        let mut replay = ReplayHeld::new(8 << 20);
        replay.note(1_050_200, 40);
        replay.note(4_114, 2);
        let r = LinkReport::new("staging-2", LinkFigures { squeezed: LinkSqueeze { sent, received }, replay });
        assert_eq!(
            r.text(),
            "far link to staging-2: 12 of 340 data frames compressed, 1,050,112 bytes sent as 161,204 (6.5x)\n\
             far link from staging-2: 0 of 3 data frames compressed\n\
             far link replay to staging-2: 4,114 bytes in 2 frames held unacknowledged, at most 1,050,200 bytes and 40 frames (limit 8,388,608 bytes)\n"
        );
        assert_eq!(r.received.ratio(), None);
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["sent"], serde_json::json!({"frames": 340, "compressed": 12, "raw_bytes": 1_050_112, "wire_bytes": 161_204}));
        assert_eq!(json["replay"], serde_json::json!({"held_bytes": 4_114, "held_frames": 2, "most_bytes": 1_050_200, "most_frames": 40, "limit_bytes": 8 << 20}));
    }

    /// A report of a daemon from before the replay figures reads, with none.
    #[test]
    fn a_report_without_the_replay_reads() {
        let old = r#"{"host": "h", "sent": {"frames": 1, "compressed": 0, "raw_bytes": 0, "wire_bytes": 0}, "received": {"frames": 0, "compressed": 0, "raw_bytes": 0, "wire_bytes": 0}}"#;
        let r: LinkReport = serde_json::from_str(old).expect("reads");
        assert_eq!((r.sent.frames, r.replay), (1, ReplayReport::default()));
    }

    #[test]
    fn nothing_yet_divides_by_nothing() {
        let none = SqueezeReport::default();
        assert_eq!(none.text("sent"), "no data frames yet");
        assert_eq!(none.ratio(), None);
        // Counts no link gives (compressed frames of no bytes) still make a line.
        let odd = SqueezeReport { frames: 1, compressed: 1, raw_bytes: 0, wire_bytes: 0 };
        assert_eq!(odd.text("came"), "1 of 1 data frames compressed, 0 bytes came as 0");
    }
}
