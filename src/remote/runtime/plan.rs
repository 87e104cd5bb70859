//! Which containers are reached through their runtime now: a container gets an exec host when
//! a JVM in it is first seen that this user cannot reach otherwise, keeps it while such a JVM
//! is seen and for [`GONE_AFTER`] once none is (a container stopped and started, or removed
//! and made again under its name, finds its host, its sessions and its ports still there),
//! and loses it after that. At most [`MAX_HOSTS`] at once: each is a far side and a link.
//! Pure: the caller says what it saw when, and does what it is told.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long an exec host outlives the last sight of a JVM in its container.
pub const GONE_AFTER: Duration = Duration::from_secs(180);
/// The most containers reached through their runtime at once.
pub const MAX_HOSTS: usize = 64;

/// What the caller does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Start an exec host for the container of this name.
    Start(String),
    /// End the exec host of this container.
    Stop(String),
    /// A container that would pass [`MAX_HOSTS`]: not reached (said once by the caller).
    TooMany(String),
}

/// The containers with an exec host, and when a JVM was last seen in each.
#[derive(Debug, Default)]
pub struct Plan {
    hosts: BTreeMap<String, Instant>,
    /// Refused for [`MAX_HOSTS`], so that it is said once.
    refused: BTreeMap<String, ()>,
}

impl Plan {
    /// One round: `seen` are the names of the containers holding a JVM this user reaches only
    /// through the runtime, `now` the round's time.
    pub fn seen<'a>(&mut self, now: Instant, seen: impl IntoIterator<Item = &'a str>) -> Vec<Change> {
        let mut changes = Vec::new();
        for name in seen {
            if let Some(last) = self.hosts.get_mut(name) {
                *last = now;
            } else if self.hosts.len() < MAX_HOSTS {
                self.hosts.insert(name.to_string(), now);
                self.refused.remove(name);
                changes.push(Change::Start(name.to_string()));
            } else if self.refused.insert(name.to_string(), ()).is_none() {
                changes.push(Change::TooMany(name.to_string()));
            }
        }
        let gone: Vec<String> = self.hosts.iter().filter(|(_, last)| now.saturating_duration_since(**last) >= GONE_AFTER).map(|(n, _)| n.clone()).collect();
        for name in gone {
            self.hosts.remove(&name);
            changes.push(Change::Stop(name));
        }
        changes
    }

    /// The containers with an exec host now.
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.hosts.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn started_once_kept_through_a_restart_ended_when_gone() {
        let t0 = Instant::now();
        let mut p = Plan::default();
        assert_eq!(p.seen(t0, ["orders", "billing"]), [Change::Start("orders".into()), Change::Start("billing".into())]);
        assert_eq!(p.seen(t0 + Duration::from_secs(2), ["orders", "billing"]), []);
        // orders stopped for a minute, then started again: its host stays.
        assert_eq!(p.seen(t0 + Duration::from_secs(60), ["billing"]), []);
        assert_eq!(p.seen(t0 + Duration::from_secs(62), ["orders", "billing"]), []);
        // billing gone for good.
        assert_eq!(p.seen(t0 + Duration::from_secs(62) + GONE_AFTER, ["orders"]), [Change::Stop("billing".into())]);
        assert_eq!(p.hosts().collect::<Vec<_>>(), ["orders"]);
        // It comes back later: a new host.
        assert_eq!(p.seen(t0 + Duration::from_secs(63) + GONE_AFTER, ["orders", "billing"]), [Change::Start("billing".into())]);
    }

    #[test]
    fn at_most_max_hosts_and_the_rest_said_once() {
        let t0 = Instant::now();
        let mut p = Plan::default();
        let names: Vec<String> = (0..=MAX_HOSTS).map(|i| format!("c{i}")).collect();
        let first = p.seen(t0, names.iter().map(String::as_str));
        assert_eq!(first.iter().filter(|c| matches!(c, Change::Start(_))).count(), MAX_HOSTS);
        assert_eq!(first.last(), Some(&Change::TooMany(format!("c{MAX_HOSTS}"))));
        assert_eq!(p.seen(t0, names.iter().map(String::as_str)), []);
        // All of them gone: the one refused gets its host at the next round it is seen.
        let later = t0 + GONE_AFTER;
        assert_eq!(p.seen(later, [names[MAX_HOSTS].as_str()]), stops(&names[..MAX_HOSTS]));
        assert_eq!(p.seen(later, [names[MAX_HOSTS].as_str()]), [Change::Start(names[MAX_HOSTS].clone())]);
    }

    fn stops(names: &[String]) -> Vec<Change> {
        let mut v: Vec<String> = names.to_vec();
        v.sort();
        v.into_iter().map(Change::Stop).collect()
    }

    proptest! {
        /// Against a model: a host is started once, stopped only after being started, never
        /// more than MAX_HOSTS at once, and every container seen in the last GONE_AFTER has
        /// one unless refused for the limit.
        #[test]
        fn follows_the_model(rounds in proptest::collection::vec((0u64..200, proptest::collection::vec(0u8..8, 0..5)), 1..40)) {
            let t0 = Instant::now();
            let mut p = Plan::default();
            let mut up: BTreeMap<String, ()> = BTreeMap::new();
            let mut t = t0;
            for (step, seen) in rounds {
                t += Duration::from_secs(step);
                let names: Vec<String> = seen.iter().map(|i| format!("c{i}")).collect();
                for c in p.seen(t, names.iter().map(String::as_str)) {
                    match c {
                        Change::Start(n) => prop_assert!(up.insert(n, ()).is_none()),
                        Change::Stop(n) => prop_assert!(up.remove(&n).is_some()),
                        Change::TooMany(_) => prop_assert!(up.len() == MAX_HOSTS),
                    }
                }
                prop_assert!(up.len() <= MAX_HOSTS);
                for n in &names {
                    prop_assert!(up.contains_key(n));
                }
                prop_assert_eq!(p.hosts().map(str::to_string).collect::<Vec<_>>(), up.keys().cloned().collect::<Vec<_>>());
            }
        }
    }
}
