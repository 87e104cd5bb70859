//! Pod containers with no JVM, put to rest: a container whose far side has listed no JVM
//! with a JDWP agent for [`IDLE_AFTER`] (a sidecar, a proxy, a JVM without an agent) has its
//! exec host ended, so that it costs no kubectl process and no far side, and is looked at
//! again every [`LOOK_AGAIN`] (a JVM started later in it is found then). Pure: the caller
//! says what each served host's row shows, and ends and starts hosts as told.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a served container may list no JVM before it is put to rest.
pub const IDLE_AFTER: Duration = Duration::from_secs(30);
/// How long a container rests before it is looked at again.
pub const LOOK_AGAIN: Duration = Duration::from_secs(300);

/// The served hosts seen idle, and the hosts resting.
#[derive(Debug, Default)]
pub struct Rest {
    /// By label: since when its row has said up with no JVM.
    idle_since: HashMap<String, Instant>,
    /// By label: when it is looked at again.
    resting: HashMap<String, Instant>,
}

impl Rest {
    /// One look at the served hosts: each label with whether its row says up with no JVM
    /// now. The labels to put to rest (their hosts ended by the caller).
    pub fn served<'a>(&mut self, now: Instant, hosts: impl IntoIterator<Item = (&'a str, bool)>) -> Vec<String> {
        let mut seen = HashMap::new();
        let mut rest = Vec::new();
        for (label, idle) in hosts {
            if !idle {
                continue;
            }
            let since = *self.idle_since.get(label).unwrap_or(&now);
            if now.saturating_duration_since(since) >= IDLE_AFTER {
                self.resting.insert(label.to_string(), now + LOOK_AGAIN);
                rest.push(label.to_string());
            } else {
                seen.insert(label.to_string(), since);
            }
        }
        self.idle_since = seen;
        rest
    }

    /// The resting labels whose rest is over (no longer resting: the caller serves them).
    pub fn due(&mut self, now: Instant) -> Vec<String> {
        let mut due: Vec<String> = self.resting.iter().filter(|(_, at)| now >= **at).map(|(l, _)| l.clone()).collect();
        due.sort();
        for l in &due {
            self.resting.remove(l);
        }
        due
    }

    /// The host is gone (its pod or container) or started anew: forgotten.
    pub fn forget(&mut self, label: &str) {
        self.idle_since.remove(label);
        self.resting.remove(label);
    }

    pub fn is_resting(&self, label: &str) -> bool {
        self.resting.contains_key(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_for_a_while_rests_then_is_looked_at_again() {
        let t0 = Instant::now();
        let mut r = Rest::default();
        assert!(r.served(t0, [("shop/a", true), ("shop/b", false)]).is_empty());
        // b idle from later on; a idle long enough.
        assert!(r.served(t0 + IDLE_AFTER / 2, [("shop/a", true), ("shop/b", true)]).is_empty());
        assert_eq!(r.served(t0 + IDLE_AFTER, [("shop/a", true), ("shop/b", true)]), ["shop/a"]);
        assert!(r.is_resting("shop/a"));
        // b had a JVM meanwhile: its idle time starts again.
        assert!(r.served(t0 + IDLE_AFTER * 2, [("shop/b", false)]).is_empty());
        assert!(r.served(t0 + IDLE_AFTER * 3, [("shop/b", true)]).is_empty());
        assert!(r.due(t0 + IDLE_AFTER + LOOK_AGAIN / 2).is_empty());
        assert_eq!(r.due(t0 + IDLE_AFTER + LOOK_AGAIN), ["shop/a"]);
        assert!(!r.is_resting("shop/a"));
        assert!(r.due(t0 + IDLE_AFTER + LOOK_AGAIN * 3).is_empty());
        // Resting, then its pod goes: forgotten.
        assert_eq!(r.served(t0 + IDLE_AFTER * 5, [("shop/b", true)]), ["shop/b"]);
        r.forget("shop/b");
        assert!(r.due(t0 + LOOK_AGAIN * 10).is_empty());
    }
}
