//! Keys that stay with their JVM: what keeps a VM's debugger port across reconnects and
//! restarts. A JVM is keyed by what it runs (`PREFIX` + main class or jar), a container's by
//! that and the container's address (so a container never takes over a key of the host's);
//! when several run the same, the first one keeps the plain key and the others are told
//! apart by the port their agent was given, else by pid. A JVM keeps its key for as long as its process runs,
//! whoever comes after it; a key whose process ended goes to the next JVM that runs the
//! same thing (the same program restarted). Another user's JVM (than the scan's, `scanner`)
//! has its owner's uid in its key: on a host shared by several users, one user's program
//! never takes the key, and so the debugger port, of another's that ended. Pure.

use std::collections::HashMap;

use super::FoundJvm;

/// The keys given out, by the process holding each.
#[derive(Debug, Default)]
pub struct KeyBook {
    owners: HashMap<String, u32>,
}

impl KeyBook {
    /// A key for every JVM of `found` (same order); `scanner` is the uid the scan ran as.
    pub fn keys(&mut self, prefix: &str, scanner: Option<u32>, found: &[FoundJvm]) -> Vec<String> {
        self.owners.retain(|_, pid| found.iter().any(|f| f.pid == *pid));
        let by_pid: HashMap<u32, String> = self.owners.iter().map(|(k, p)| (*p, k.clone())).collect();
        let mut out: Vec<Option<String>> = found.iter().map(|f| by_pid.get(&f.pid).cloned()).collect();
        for (slot, f) in out.iter_mut().zip(found) {
            if slot.is_some() {
                continue;
            }
            let name = match f.uid {
                _ if f.runs_as(scanner) => f.name(),
                Some(uid) => format!("{}~uid{uid}", f.name()),
                None => format!("{}~unknown#{}", f.name(), f.pid),
            };
            let base = match (&f.reach, f.other_net) {
                (super::Reach::At(addr), true) => format!("{prefix}{name}@{}", addr.ip()),
                // Its namespace's own loopback is every container's: what runs it tells it
                // apart, so that a restarted container (a new namespace) or a replaced pod of
                // the same workload keeps its key; a bare namespace has only its inode.
                (super::Reach::Inside { net, .. }, true) => match f.place.workload() {
                    Some(w) => format!("{prefix}{name}@{w}"),
                    None => format!("{prefix}{name}@net{net}"),
                },
                (super::Reach::Unreachable(_), true) => format!("{prefix}{name}@container#{}", f.pid),
                (_, false) => format!("{prefix}{name}"),
            };
            let candidates = [Some(base.clone()), (!f.agent.ephemeral()).then(|| format!("{base}@{}", f.agent.port)), Some(format!("{base}#{}", f.pid))];
            let mut key = candidates.into_iter().flatten().find(|k| !self.owners.contains_key(k)).unwrap_or_else(|| format!("{base}#{}", f.pid));
            // A list naming one pid several times (a far side's may say anything) has taken
            // even the pid's key: a number after it keeps every key of a list apart. Ends:
            // each turn tries a key not tried before, and the book holds finitely many.
            let mut n = 2u64;
            while self.owners.contains_key(&key) {
                key = format!("{base}#{}~{n}", f.pid);
                n += 1;
            }
            self.owners.insert(key.clone(), f.pid);
            *slot = Some(key);
        }
        out.into_iter().map(Option::unwrap_or_default).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::Reach;

    fn jvm(pid: u32, main: &str, agent_port: u16) -> FoundJvm {
        FoundJvm::sample(pid, main, agent_port, 40000, Reach::At(([127, 0, 0, 1], 40000).into()))
    }

    /// Found by the `nearlink` fuzz target: a far side listing one pid four times got two
    /// VMs of one key (and so one socket).
    #[test]
    fn one_pid_listed_many_times_still_gives_keys_apart() {
        let mut book = KeyBook::default();
        let same = vec![jvm(10, "Billing", 8000); 5];
        let keys = book.keys("h/", Some(1000), &same);
        assert_eq!(keys, ["h/Billing", "h/Billing@8000", "h/Billing#10", "h/Billing#10~2", "h/Billing#10~3"]);
    }

    #[test]
    fn a_key_stays_with_its_jvm_when_others_come() {
        let mut book = KeyBook::default();
        assert_eq!(book.keys("h/", Some(1000), &[jvm(10, "Billing", 8000)]), ["h/Billing"]);
        // Another Billing appears (a container's, say): the first keeps its key.
        assert_eq!(book.keys("h/", Some(1000), &[jvm(11, "Billing", 8000), jvm(10, "Billing", 8000)]), ["h/Billing@8000", "h/Billing"]);
        assert_eq!(book.keys("h/", Some(1000), &[jvm(12, "Billing", 0), jvm(10, "Billing", 8000), jvm(11, "Billing", 8000)]), ["h/Billing#12", "h/Billing", "h/Billing@8000"]);
        // The first one ends and its program starts again: the new process takes its key.
        assert_eq!(book.keys("h/", Some(1000), &[jvm(11, "Billing", 8000), jvm(13, "Billing", 8000)]), ["h/Billing@8000", "h/Billing"]);
        // A container's JVM running the same never takes the host's key.
        let mut boxed = jvm(20, "Billing", 8000);
        (boxed.other_net, boxed.reach) = (true, Reach::At(([172, 17, 0, 2], 8000).into()));
        assert_eq!(book.keys("h/", Some(1000), &[boxed.clone(), jvm(11, "Billing", 8000)]), ["h/Billing@172.17.0.2", "h/Billing@8000"]);
        assert_eq!(book.keys("h/", Some(1000), &[boxed, jvm(11, "Billing", 8000), jvm(14, "Billing", 8000)]), ["h/Billing@172.17.0.2", "h/Billing@8000", "h/Billing"]);
        let mut closed = jvm(21, "Billing", 8000);
        (closed.other_net, closed.reach) = (true, Reach::Unreachable("its container's loopback".into()));
        assert_eq!(book.keys("h/", Some(1000), &[closed]), ["h/Billing@container#21"]);
        // Nothing is kept for processes that are gone.
        assert_eq!(book.keys("h/", Some(1000), &[]), Vec::<String>::new());
        assert!(book.owners.is_empty());
    }

    #[test]
    fn a_restarted_container_keeps_its_key_and_a_bare_namespace_has_its_own() {
        use crate::discovery::jvms::place::{Place, Runtime};
        let boxed = |pid: u32, net: u64, name: &str| FoundJvm {
            other_net: true,
            reach: Reach::Inside { pid, net, addr: ([127, 0, 0, 1], 8000).into() },
            place: Place::Container { runtime: Runtime::Podman, name: name.into(), id: None, compose: None },
            ..jvm(pid, "Billing", 8000)
        };
        let mut book = KeyBook::default();
        let keys = book.keys("h/", Some(1000), &[boxed(10, 1, "billing-api"), boxed(11, 2, "billing-eu"), jvm(12, "Billing", 8000)]);
        assert_eq!(keys, ["h/Billing@billing-api", "h/Billing@billing-eu", "h/Billing"]);
        // Restarted: a new process in a new namespace, the same container name and key.
        assert_eq!(book.keys("h/", Some(1000), &[boxed(20, 3, "billing-api")]), ["h/Billing@billing-api"]);
        let bare = FoundJvm { place: Place::Netns { name: None }, ..boxed(21, 4, "") };
        assert_eq!(book.keys("h/", Some(1000), &[boxed(20, 3, "billing-api"), bare]), ["h/Billing@billing-api", "h/Billing@net4"]);
    }

    #[test]
    fn another_users_jvm_never_takes_a_key() {
        let mut book = KeyBook::default();
        let theirs = |pid: u32, uid: Option<u32>| FoundJvm { uid, ..jvm(pid, "Billing", 8000) };
        assert_eq!(book.keys("h/", Some(1000), &[jvm(10, "Billing", 8000), theirs(20, Some(1001))]), ["h/Billing", "h/Billing~uid1001"]);
        // Ours ends: theirs keeps its own key, and ours restarted takes its old one back.
        assert_eq!(book.keys("h/", Some(1000), &[theirs(20, Some(1001))]), ["h/Billing~uid1001"]);
        assert_eq!(book.keys("h/", Some(1000), &[theirs(20, Some(1001)), jvm(11, "Billing", 8000)]), ["h/Billing~uid1001", "h/Billing"]);
        // A third user's, and one whose owner cannot be read: keys of their own.
        let keys = book.keys("h/", Some(1000), &[theirs(20, Some(1001)), jvm(11, "Billing", 8000), theirs(30, Some(1002)), theirs(31, None)]);
        assert_eq!(keys, ["h/Billing~uid1001", "h/Billing", "h/Billing~uid1002", "h/Billing~unknown#31"]);
    }
}
