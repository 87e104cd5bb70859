//! Each (namespace, workload, container) slot's stable index, from which the daemon gives a
//! debugger port: replicas take slots in order (0, 1, 2...), and a rollout's new pod ends in
//! the slot of the pod it replaces. Pure: the caller says which pods it saw and which went.
//!
//! The rule, one place:
//! - a pod seen for the first time takes the lowest free slot of its key; a StatefulSet's
//!   pod takes its ordinal (`db-1`: slot 1), a new pod of that name taking it over;
//! - a pod that goes frees its slot, and the holder of the key's highest slot above it moves
//!   down into it, unless that holder is busy (a debugger attached: it keeps its slot) or
//!   placed by ordinal. So a rolling update (the new pod made first, in slot N, then the old
//!   one in slot 0 deleted) ends with the new pod in slot 0, and a key whose holders are all
//!   idle always holds slots 0..n.

use std::collections::BTreeMap;

use super::pod::Workload;

/// The most slots one key may have (replicas of one workload's container).
pub const MAX_SLOTS: usize = 1024;
/// The most keys held at once.
pub const MAX_KEYS: usize = 4096;

/// A slot's key: the pods of one workload's container in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotKey {
    pub namespace: String,
    pub workload: Workload,
    pub container: String,
}

/// What a `gone` did to another pod: it moved from one slot to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub uid: String,
    pub from: usize,
    pub to: usize,
}

#[derive(Debug, Clone)]
struct Holder {
    uid: String,
    busy: bool,
    /// Placed by ordinal: never moved.
    fixed: bool,
}

/// The slots of every key. Generic over the key so that the daemon may key by more (the
/// JVM's main class) without a second table.
#[derive(Debug, Clone)]
pub struct Workloads<K: Ord + Clone = SlotKey> {
    keys: BTreeMap<K, Vec<Option<Holder>>>,
}

impl<K: Ord + Clone> Default for Workloads<K> {
    fn default() -> Self {
        Workloads { keys: BTreeMap::new() }
    }
}

impl<K: Ord + Clone> Workloads<K> {
    /// Pod `uid` seen under `key` (again, or for the first time); `ordinal` is a StatefulSet
    /// pod's ([`super::pod::Pod::ordinal`]). Its slot; None when the key or the table is full.
    pub fn seen(&mut self, key: &K, uid: &str, ordinal: Option<usize>) -> Option<usize> {
        if let Some(s) = self.slot_of(key, uid) {
            return Some(s);
        }
        if !self.keys.contains_key(key) && self.keys.len() >= MAX_KEYS {
            return None;
        }
        let held = self.keys.get(key).map_or(&[][..], Vec::as_slice);
        let at = match ordinal {
            Some(n) if n < MAX_SLOTS => n,
            Some(_) => return None,
            None => match held.iter().position(Option::is_none) {
                Some(free) => free,
                None if held.len() < MAX_SLOTS => held.len(),
                None => return None,
            },
        };
        let slots = self.keys.entry(key.clone()).or_default();
        if slots.len() <= at {
            slots.resize(at + 1, None);
        }
        // A StatefulSet's pod made again under its name before the old one was said gone.
        slots[at] = Some(Holder { uid: uid.to_string(), busy: false, fixed: ordinal.is_some() });
        Some(at)
    }

    /// Pod `uid` is gone from `key`: its slot is freed, and the idle holder of the highest
    /// slot above it, if any, moves down into it.
    pub fn gone(&mut self, key: &K, uid: &str) -> Option<Moved> {
        let slots = self.keys.get_mut(key)?;
        let at = slots.iter().position(|h| h.as_ref().is_some_and(|h| h.uid == uid))?;
        slots[at] = None;
        let from = (at + 1..slots.len()).rev().find(|&i| slots[i].as_ref().is_some_and(|h| !h.busy && !h.fixed));
        let moved = from.map(|from| {
            slots.swap(at, from);
            Moved { uid: slots[at].as_ref().map(|h| h.uid.clone()).unwrap_or_default(), from, to: at }
        });
        while slots.last().is_some_and(Option::is_none) {
            slots.pop();
        }
        if slots.is_empty() {
            self.keys.remove(key);
        }
        moved
    }

    /// A debugger attached to (busy) or left (idle) the pod: a busy pod is never moved.
    pub fn set_busy(&mut self, key: &K, uid: &str, busy: bool) {
        if let Some(h) = self.keys.get_mut(key).and_then(|s| s.iter_mut().flatten().find(|h| h.uid == uid)) {
            h.busy = busy;
        }
    }

    /// The slot pod `uid` holds under `key`.
    pub fn slot_of(&self, key: &K, uid: &str) -> Option<usize> {
        self.keys.get(key)?.iter().position(|h| h.as_ref().is_some_and(|h| h.uid == uid))
    }

    /// The holders of `key`'s slots, in slot order (None: a free slot).
    pub fn slots(&self, key: &K) -> Vec<Option<&str>> {
        self.keys.get(key).map(|s| s.iter().map(|h| h.as_ref().map(|h| h.uid.as_str())).collect()).unwrap_or_default()
    }

    pub fn keys(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
