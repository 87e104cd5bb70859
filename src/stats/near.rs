//! Answers the proxy gave from its near cache instead of asking the VM: how many, of how
//! many it could have given (the hit rate), and for which commands.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Live counts of one VM's near answers.
#[derive(Debug, Clone, Default)]
pub struct NearStats {
    /// (set, cmd) -> (answers, bytes).
    served: BTreeMap<(u8, u8), (u64, u64)>,
    /// Commands that could have been answered near but went to the VM (not known yet).
    misses: u64,
}

impl NearStats {
    pub fn answer(&mut self, set: u8, cmd: u8, len: u32) {
        let e = self.served.entry((set, cmd)).or_default();
        e.0 += 1;
        e.1 += u64::from(len);
    }

    pub fn miss(&mut self) {
        self.misses += 1;
    }

    /// None when nothing could have been answered near (the cache is off for this VM).
    pub fn report(&self) -> Option<NearReport> {
        let served: u64 = self.served.values().map(|(n, _)| n).sum();
        if served == 0 && self.misses == 0 {
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
            hit_rate: served as f64 / (served + self.misses) as f64,
            bytes: self.served.values().map(|(_, b)| b).sum(),
            commands,
        })
    }
}

/// What `stats` shows of the near answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NearReport {
    /// Commands answered near.
    pub served: u64,
    /// Commands the near cache could have answered but did not know yet.
    pub misses: u64,
    /// served / (served + misses).
    pub hit_rate: f64,
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
    }
}
