//! The request-id table: every command the proxy writes to a VM carries an id allocated here,
//! unique among outstanding requests, so that replies can be routed back to whoever asked
//! (a debugger, with its own id restored, or the proxy itself).
//!
//! Only proxy->VM requests live here. VM-originated commands (events, DDM pushes) keep their
//! own ids and need no entry: ids are unique per sender only, so the two spaces never mix.

use rustc_hash::FxHashMap;
use std::time::Instant;

/// Outstanding requests per VM before new ones are refused (a debugger that pipelines more
/// than this without reading replies is broken or hostile).
pub const MAX_OUTSTANDING: usize = 65_536;

/// Who is waiting for a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requester {
    /// A debugger connection, by its connection number.
    Debugger(u64),
    /// The proxy itself; the tag says what the request was for.
    Proxy(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub requester: Requester,
    /// The id the requester used (for the proxy's own requests, the proxy id itself).
    pub orig_id: u32,
    pub cmd_set: u8,
    pub cmd: u8,
    /// What the reply must settle in the sharing tables, if anything.
    pub note: Note,
    pub sent: Instant,
}

/// What a debugger's command left pending in the sharing tables until its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Note {
    #[default]
    None,
    /// EventRequest.Set of this event kind: the reply names the new request.
    EventSet(u8),
    /// A suspension taken as held: a refusal takes it back.
    Hold(super::sharing::HoldId),
    /// A DisableCollection of this object sent to the VM: a refusal takes the pin back.
    Pin(u64),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0} requests are outstanding on this VM; refusing more")]
pub struct TableFull(pub usize);

#[derive(Debug)]
pub struct IdTable {
    /// Keyed by the proxy's own ids, so a fast hash is safe: no peer picks these keys.
    pending: FxHashMap<u32, Entry>,
    next: u32,
    limit: usize,
}

impl Default for IdTable {
    fn default() -> Self {
        IdTable::new(1, MAX_OUTSTANDING)
    }
}

impl IdTable {
    /// `first` is the first id handed out; ids then increase and wrap around below
    /// [`crate::remote::stop_answers::FAR_IDS`], skipping 0 and any id still outstanding.
    pub fn new(first: u32, limit: usize) -> IdTable {
        IdTable { pending: FxHashMap::default(), next: Self::wrap(first), limit }
    }

    fn wrap(id: u32) -> u32 {
        if id == 0 || crate::remote::stop_answers::FAR_IDS.contains(&id) {
            1
        } else {
            id
        }
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Allocates an unused id and records `entry` under it.
    pub fn insert(&mut self, entry: Entry) -> Result<u32, TableFull> {
        if self.pending.len() >= self.limit {
            return Err(TableFull(self.pending.len()));
        }
        // At most `limit` ids are taken, so this loop ends within limit + 1 steps.
        loop {
            let id = self.next;
            self.next = Self::wrap(self.next.wrapping_add(1));
            if let std::collections::hash_map::Entry::Vacant(v) = self.pending.entry(id) {
                v.insert(entry);
                return Ok(id);
            }
        }
    }

    /// The command set and command of every outstanding request.
    pub fn commands(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        self.pending.values().map(|e| (e.cmd_set, e.cmd))
    }

    /// The id, command set and command of every outstanding request.
    pub fn pending(&self) -> impl Iterator<Item = (u32, u8, u8)> + '_ {
        self.pending.iter().map(|(id, e)| (*id, e.cmd_set, e.cmd))
    }

    /// The entry for an id, left in place.
    pub fn get(&self, id: u32) -> Option<&Entry> {
        self.pending.get(&id)
    }

    /// Removes and returns the entry for a reply's id.
    pub fn take(&mut self, id: u32) -> Option<Entry> {
        self.pending.remove(&id)
    }

    /// Removes every entry (the VM connection is gone) and returns them.
    pub fn fail_all(&mut self) -> Vec<(u32, Entry)> {
        self.pending.drain().collect()
    }

    /// Hands the EventRequest.Sets of a debugger that left, still awaiting their replies, to
    /// the proxy: their ids and event kinds, in id order. The VM grants each one a request
    /// that nobody owns and that the debugger can no longer clear (it may have left without
    /// waiting for the reply: a Set answered early), so the proxy clears it when the reply
    /// names it. Its other entries stay its own (see [`IdTable::purge`]).
    pub fn adopt_sets(&mut self, who: Requester) -> Vec<(u32, u8)> {
        let mut out = Vec::new();
        for (id, e) in self.pending.iter_mut() {
            if let (true, Note::EventSet(kind)) = (e.requester == who, e.note) {
                e.requester = Requester::Proxy(0);
                e.note = Note::None;
                out.push((*id, kind));
            }
        }
        out.sort_unstable();
        out
    }

    /// The entries of `who`.
    pub fn count(&self, who: Requester) -> usize {
        self.pending.values().filter(|e| e.requester == who).count()
    }

    /// Removes the entries of a requester that left; their late replies will find nothing.
    pub fn purge(&mut self, who: Requester) -> usize {
        let before = self.pending.len();
        self.pending.retain(|_, e| e.requester != who);
        before - self.pending.len()
    }

    /// Removes the proxy's own entries older than `deadline` (requests a VM never answers,
    /// such as DBGD on most VMs) and returns them.
    pub fn expire(&mut self, deadline: Instant) -> Vec<(u32, Entry)> {
        let old: Vec<u32> = self
            .pending
            .iter()
            .filter(|(_, e)| matches!(e.requester, Requester::Proxy(_)) && e.sent < deadline)
            .map(|(id, _)| *id)
            .collect();
        old.into_iter().filter_map(|id| self.pending.remove(&id).map(|e| (id, e))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(who: Requester, orig: u32) -> Entry {
        Entry { requester: who, orig_id: orig, cmd_set: 1, cmd: 1, note: Note::None, sent: Instant::now() }
    }

    #[test]
    fn ids_are_unique_and_map_back() {
        let mut t = IdTable::default();
        let a = t.insert(entry(Requester::Debugger(1), 1)).unwrap();
        let b = t.insert(entry(Requester::Proxy(0), 1)).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.take(b).unwrap().requester, Requester::Proxy(0));
        assert_eq!(t.take(a).unwrap().orig_id, 1);
        assert_eq!(t.take(a), None, "a reply is routed once");
    }

    #[test]
    fn wraps_around_below_the_far_sides_ids_skipping_zero_and_outstanding() {
        let last = *crate::remote::stop_answers::FAR_IDS.start() - 1;
        let mut t = IdTable::new(last - 1, 10);
        let held = t.insert(entry(Requester::Debugger(1), 5)).unwrap();
        assert_eq!(held, last - 1);
        assert_eq!(t.insert(entry(Requester::Debugger(1), 6)).unwrap(), last);
        assert_eq!(t.insert(entry(Requester::Debugger(1), 7)).unwrap(), 1, "the far side's ids and 0 are skipped");
        assert_eq!(IdTable::new(u32::MAX, 10).insert(entry(Requester::Debugger(1), 8)).unwrap(), 1);
        // Run the counter all the way round: it must skip the id still outstanding.
        let mut t = IdTable::new(1, 10);
        let first = t.insert(entry(Requester::Debugger(1), 0)).unwrap();
        t.next = first;
        assert_eq!(t.insert(entry(Requester::Debugger(1), 0)).unwrap(), first + 1);
    }

    #[test]
    fn limit_is_enforced() {
        let mut t = IdTable::new(1, 3);
        for i in 0..3 {
            t.insert(entry(Requester::Debugger(1), i)).unwrap();
        }
        assert_eq!(t.insert(entry(Requester::Debugger(1), 9)), Err(TableFull(3)));
        t.take(2).unwrap();
        assert!(t.insert(entry(Requester::Debugger(1), 9)).is_ok());
    }

    #[test]
    fn a_departed_debuggers_sets_in_flight_go_to_the_proxy_and_the_rest_is_purged() {
        let mut t = IdTable::default();
        let set = t.insert(Entry { note: Note::EventSet(8), ..entry(Requester::Debugger(1), 7) }).unwrap();
        let other = t.insert(entry(Requester::Debugger(1), 8)).unwrap();
        let theirs = t.insert(Entry { note: Note::EventSet(2), ..entry(Requester::Debugger(2), 9) }).unwrap();
        assert_eq!(t.adopt_sets(Requester::Debugger(1)), vec![(set, 8)]);
        assert_eq!(t.purge(Requester::Debugger(1)), 1);
        assert!(t.get(other).is_none());
        let adopted = t.take(set).unwrap();
        assert_eq!((adopted.requester, adopted.note), (Requester::Proxy(0), Note::None));
        assert_eq!(t.get(theirs).map(|e| e.requester), Some(Requester::Debugger(2)), "another debugger's Set stays its own");
        assert!(t.adopt_sets(Requester::Debugger(1)).is_empty());
    }

    #[test]
    fn fail_all_empties_the_table() {
        let mut t = IdTable::default();
        for i in 0..5 {
            t.insert(entry(Requester::Debugger(i), i as u32)).unwrap();
        }
        assert_eq!(t.fail_all().len(), 5);
        assert!(t.is_empty());
    }

    #[test]
    fn purge_drops_only_that_requester() {
        let mut t = IdTable::default();
        let gone = t.insert(entry(Requester::Debugger(1), 1)).unwrap();
        let kept = t.insert(entry(Requester::Debugger(2), 1)).unwrap();
        let own = t.insert(entry(Requester::Proxy(3), 1)).unwrap();
        assert_eq!(t.purge(Requester::Debugger(1)), 1);
        assert_eq!(t.take(gone), None, "a late reply for a departed debugger finds nothing");
        assert!(t.take(kept).is_some());
        assert!(t.take(own).is_some());
    }

    #[test]
    fn expire_touches_only_old_proxy_entries() {
        let mut t = IdTable::default();
        let old = Instant::now();
        let dbg = t.insert(Entry { sent: old, ..entry(Requester::Debugger(1), 1) }).unwrap();
        let own = t.insert(Entry { sent: old, ..entry(Requester::Proxy(1), 1) }).unwrap();
        let expired = t.expire(old + Duration::from_millis(1));
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0, own);
        assert!(t.take(dbg).is_some());
    }

    /// One step of a random interleaving, as the session makes them.
    #[derive(Debug, Clone)]
    enum Op {
        /// A request written to the VM: by debugger `n` (or the proxy), sent `age` ms after
        /// the start.
        Allocate { proxy: bool, who: u64, age: u64 },
        /// A reply: for the `k`-th outstanding id (modulo their count), or for a random id.
        Reply { k: usize, stray: Option<u32> },
        /// A debugger (or proxy purpose) left.
        Purge { proxy: bool, who: u64 },
        /// The VM connection died.
        FailAll,
        /// The proxy's requests older than `ms` are given up on.
        Expire { ms: u64 },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (any::<bool>(), 0u64..4, 0u64..100).prop_map(|(proxy, who, age)| Op::Allocate { proxy, who, age }),
            4 => (any::<usize>(), proptest::option::weighted(0.2, any::<u32>())).prop_map(|(k, stray)| Op::Reply { k, stray }),
            1 => (any::<bool>(), 0u64..4).prop_map(|(proxy, who)| Op::Purge { proxy, who }),
            1 => Just(Op::FailAll),
            1 => (0u64..120).prop_map(|ms| Op::Expire { ms }),
        ]
    }

    fn requester(proxy: bool, who: u64) -> Requester {
        if proxy {
            Requester::Proxy(who)
        } else {
            Requester::Debugger(who)
        }
    }

    /// The table against a plain map of what must be outstanding, after every step.
    fn run_against_model(first: u32, limit: usize, ops: Vec<Op>) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::{prop_assert, prop_assert_eq};
        use std::collections::{BTreeMap, BTreeSet};
        let base = Instant::now();
        let mut t = IdTable::new(first, limit);
        let mut model: BTreeMap<u32, Entry> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Allocate { proxy, who, age } => {
                    let e = Entry { sent: base + Duration::from_millis(age), ..entry(requester(proxy, who), who as u32) };
                    match t.insert(e.clone()) {
                        Ok(id) => {
                            prop_assert!(id != 0, "id 0 handed out");
                            prop_assert!(model.len() < limit, "allocated past the limit");
                            prop_assert!(model.insert(id, e).is_none(), "id {} handed out twice", id);
                        }
                        Err(TableFull(n)) => prop_assert!(n == model.len() && n >= limit),
                    }
                }
                Op::Reply { k, stray } => {
                    let id = match stray {
                        Some(id) => id,
                        None if model.is_empty() => continue,
                        None => *model.keys().nth(k % model.len()).unwrap_or(&0),
                    };
                    prop_assert_eq!(t.take(id), model.remove(&id));
                    prop_assert_eq!(t.take(id), None, "a reply is routed once");
                }
                Op::Purge { proxy, who } => {
                    let gone = requester(proxy, who);
                    let before = model.len();
                    model.retain(|_, e| e.requester != gone);
                    prop_assert_eq!(t.purge(gone), before - model.len());
                }
                Op::FailAll => {
                    let failed: BTreeMap<u32, Entry> = t.fail_all().into_iter().collect();
                    prop_assert_eq!(&failed, &model);
                    model.clear();
                    prop_assert!(t.is_empty());
                }
                Op::Expire { ms } => {
                    let deadline = base + Duration::from_millis(ms);
                    let expired: BTreeSet<u32> = t.expire(deadline).into_iter().map(|(id, _)| id).collect();
                    let want: BTreeSet<u32> = model
                        .iter()
                        .filter(|(_, e)| matches!(e.requester, Requester::Proxy(_)) && e.sent < deadline)
                        .map(|(id, _)| *id)
                        .collect();
                    prop_assert_eq!(&expired, &want);
                    model.retain(|id, _| !want.contains(id));
                }
            }
            prop_assert_eq!(t.len(), model.len());
            prop_assert_eq!(t.is_empty(), model.is_empty());
            for (id, e) in &model {
                prop_assert_eq!(t.get(*id), Some(e));
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 512, ..Default::default() })]

        /// Random interleavings of allocate, reply (expected and stray), purge, fail-all and
        /// expire keep every invariant: ids unique among the outstanding and never 0, the
        /// length right, the limit kept, purge removing only its requester, fail-all and
        /// expire returning exactly what they should.
        #[test]
        fn random_interleavings_keep_every_invariant(
            ops in proptest::collection::vec(op(), 1..300),
            first in proptest::prop_oneof![proptest::num::u32::ANY, (u32::MAX - 20)..=u32::MAX, 0u32..3],
            limit in 1usize..40,
        ) {
            run_against_model(first, limit, ops)?;
        }

        #[test]
        fn never_hands_out_an_outstanding_id(ops in proptest::collection::vec(0u8..3, 1..400), start in proptest::prop_oneof![proptest::num::u32::ANY, (0xF000_0000u32 - 30)..=0xF000_0000u32]) {
            let mut t = IdTable::new(start, 50);
            let mut live = std::collections::HashSet::new();
            for op in ops {
                if op < 2 {
                    if let Ok(id) = t.insert(entry(Requester::Debugger(1), 0)) {
                        proptest::prop_assert!(id != 0);
                        proptest::prop_assert!(!crate::remote::stop_answers::FAR_IDS.contains(&id), "{id:#x} is the far side's");
                        proptest::prop_assert!(live.insert(id));
                    }
                } else if let Some(&id) = live.iter().next() {
                    live.remove(&id);
                    proptest::prop_assert!(t.take(id).is_some());
                }
            }
        }
    }
}
