//! Answers the proxy gave near the debuggers instead of waiting for the VM: from its near
//! cache, from a stop's gathered answers, or early (before the VM's reply, which is then
//! compared with it); how many, of how many it could have given (the hit rate), and for
//! which commands.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Live counts of one VM's near answers.
#[derive(Debug, Clone, Default)]
pub struct NearStats {
    /// (set, cmd) -> (answers, bytes).
    served: BTreeMap<(u8, u8), (u64, u64)>,
    /// Commands that could have been answered near but went to the VM (not known yet).
    misses: u64,
    /// Of the answers, those from a stop's gathered answers.
    gathered: u64,
    /// Of the answers, those given before the VM's reply.
    early: u64,
    /// Early answers the VM's reply then contradicted.
    early_differed: u64,
}

/// Where a near answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The near cache of class data.
    Cache,
    /// A stop's gathered answers.
    Gathered,
    /// Made before the VM's reply (the early table).
    Early,
}

impl NearStats {
    pub fn answer(&mut self, set: u8, cmd: u8, len: u32) {
        self.answer_from(Source::Cache, set, cmd, len)
    }

    pub fn answer_from(&mut self, source: Source, set: u8, cmd: u8, len: u32) {
        match source {
            Source::Cache => {}
            Source::Gathered => self.gathered += 1,
            Source::Early => self.early += 1,
        }
        let e = self.served.entry((set, cmd)).or_default();
        e.0 += 1;
        e.1 += u64::from(len);
    }

    pub fn miss(&mut self) {
        self.misses += 1;
    }

    /// An early answer whose VM reply differed.
    pub fn early_differed(&mut self) {
        self.early_differed += 1;
    }

    /// None when nothing could have been answered near (the cache is off for this VM).
    pub fn report(&self) -> Option<NearReport> {
        let served: u64 = self.served.values().map(|(n, _)| n).sum();
        if served == 0 && self.misses == 0 && self.early_differed == 0 {
            return None;
        }
        let mut commands: Vec<NearRow> = self
            .served
            .iter()
            .map(|(&(set, cmd), &(count, bytes))| NearRow { command: crate::jdwp::names::display_command(set, cmd), count, bytes })
            .collect();
        commands.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.command.cmp(&b.command)));
        Some(NearReport {
            served,
            misses: self.misses,
            hit_rate: served as f64 / (served + self.misses).max(1) as f64,
            gathered: self.gathered,
            early: self.early,
            early_differed: self.early_differed,
            bytes: self.served.values().map(|(_, b)| b).sum(),
            commands,
        })
    }
}

/// What `stats` shows of the near answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NearReport {
    /// Commands answered near (from the cache, gathered, or early).
    pub served: u64,
    /// Commands the near cache could have answered but did not know yet.
    pub misses: u64,
    /// served / (served + misses).
    pub hit_rate: f64,
    /// Of `served`, answers from a stop's gathered answers.
    #[serde(default)]
    pub gathered: u64,
    /// Of `served`, answers given before the VM's reply.
    #[serde(default)]
    pub early: u64,
    /// Early answers whose VM reply then differed (each one a defect).
    #[serde(default)]
    pub early_differed: u64,
    /// Bytes of the near answers.
    pub bytes: u64,
    /// By count, most first.
    pub commands: Vec<NearRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearRow {
    pub command: String,
    pub count: u64,
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_rate_counts_answers_against_every_command_that_could_be_one() {
        let mut n = NearStats::default();
        assert!(n.report().is_none());
        n.miss();
        n.answer(2, 1, 30);
        n.answer(2, 1, 30);
        n.answer(1, 7, 31);
        let r = n.report().expect("counted");
        assert_eq!((r.served, r.misses, r.bytes), (3, 1, 91));
        assert!((r.hit_rate - 0.75).abs() < 1e-9);
        assert_eq!(r.commands[0], NearRow { command: "ReferenceType.Signature".into(), count: 2, bytes: 60 });
        assert_eq!((r.gathered, r.early, r.early_differed), (0, 0, 0));
    }

    #[test]
    fn gathered_and_early_answers_count_as_served_and_apart() {
        let mut n = NearStats::default();
        n.early_differed();
        let r = n.report().expect("a difference alone is shown");
        assert_eq!((r.served, r.early_differed, r.hit_rate), (0, 1, 0.0));
        n.answer_from(Source::Gathered, 11, 6, 40);
        n.answer_from(Source::Early, 1, 9, 11);
        n.answer_from(Source::Early, 15, 2, 11);
        n.answer(2, 1, 30);
        let r = n.report().expect("counted");
        assert_eq!((r.served, r.gathered, r.early, r.early_differed), (4, 1, 2, 1));
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["gathered"], 1);
        assert_eq!(json["early"], 2);
        assert_eq!(json["early_differed"], 1);
    }
}
