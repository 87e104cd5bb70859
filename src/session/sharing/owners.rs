//! Which debugger owns which event request.
//!
//! The VM hands out request ids from one counter for every kind, so an id names one request
//! on the VM connection. A request belongs to the debugger whose EventRequest.Set the VM
//! granted; an event for a request nobody owns (cleared, or its debugger left) goes to no one.
//!
//! Between a Set reaching the VM and its reply reaching the proxy, the VM may already send an
//! event for the new request (another thread hits the breakpoint first). So the table also
//! counts Sets in flight: while any is, an event for an unknown request is kept back until
//! the replies tell whose it is.

use std::collections::HashMap;

use super::holds::Debugger;

/// JDWP EventKind BREAKPOINT.
pub const BREAKPOINT: u8 = 2;

#[derive(Debug, Default)]
pub struct Owners {
    /// Request id -> (event kind, owner).
    by_id: HashMap<u32, (u8, Debugger)>,
    /// EventRequest.Set commands sent and not yet answered, per debugger.
    in_flight: HashMap<Debugger, u32>,
}

impl Owners {
    /// `d`'s EventRequest.Set went to the VM.
    pub fn set_sent(&mut self, d: Debugger) {
        *self.in_flight.entry(d).or_default() += 1;
    }

    /// The VM answered one of `d`'s Sets: `granted` is the new request (kind, id), if any.
    pub fn set_answered(&mut self, d: Debugger, granted: Option<(u8, u32)>) {
        if let Some(n) = self.in_flight.get_mut(&d) {
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(&d);
            }
        }
        if let Some((kind, id)) = granted {
            self.by_id.insert(id, (kind, d));
        }
    }

    /// Whether a Set is on its way, so an unknown request id may be about to get an owner.
    pub fn sets_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    pub fn owner(&self, id: u32) -> Option<Debugger> {
        self.by_id.get(&id).map(|(_, d)| *d)
    }

    /// `d` clears request `id`: true when it is `d`'s own (then it is forgotten here and the
    /// Clear goes to the VM); another debugger's request is left alone.
    pub fn clear(&mut self, d: Debugger, id: u32) -> bool {
        if self.owner(id) != Some(d) {
            return false;
        }
        self.by_id.remove(&id);
        true
    }

    /// `d`'s breakpoint requests, forgotten here (ClearAllBreakpoints made per debugger).
    pub fn clear_breakpoints(&mut self, d: Debugger) -> Vec<u32> {
        let ids: Vec<u32> = self.by_id.iter().filter(|(_, (k, o))| *k == BREAKPOINT && *o == d).map(|(id, _)| *id).collect();
        for id in &ids {
            self.by_id.remove(id);
        }
        ids
    }

    /// Whether any debugger other than `d` owns a breakpoint request.
    pub fn others_have_breakpoints(&self, d: Debugger) -> bool {
        self.by_id.values().any(|(k, o)| *k == BREAKPOINT && *o != d)
    }

    /// `d` left: its requests, as (kind, id), to clear in the VM.
    pub fn leave(&mut self, d: Debugger) -> Vec<(u8, u32)> {
        self.in_flight.remove(&d);
        let mut gone: Vec<(u8, u32)> = self.by_id.iter().filter(|(_, (_, o))| *o == d).map(|(id, (k, _))| (*k, *id)).collect();
        gone.sort_unstable_by_key(|(_, id)| *id);
        for (_, id) in &gone {
            self.by_id.remove(id);
        }
        gone
    }

    /// How many requests `d` owns.
    pub fn count(&self, d: Debugger) -> usize {
        self.by_id.values().filter(|(_, o)| *o == d).count()
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty() && self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn requests_belong_to_who_set_them() {
        let mut o = Owners::default();
        o.set_sent(1);
        assert!(o.sets_in_flight());
        o.set_answered(1, Some((BREAKPOINT, 7)));
        o.set_sent(2);
        o.set_answered(2, Some((6, 8)));
        assert!(!o.sets_in_flight());
        assert_eq!((o.owner(7), o.owner(8), o.owner(9)), (Some(1), Some(2), None));
        assert!(!o.clear(2, 7), "2 cannot clear 1's request");
        assert_eq!(o.owner(7), Some(1));
        assert!(o.clear(1, 7));
        assert_eq!(o.owner(7), None);
    }

    #[test]
    fn clear_all_breakpoints_takes_only_the_callers() {
        let mut o = Owners::default();
        for (d, kind, id) in [(1, BREAKPOINT, 1), (1, BREAKPOINT, 2), (1, 6, 3), (2, BREAKPOINT, 4)] {
            o.set_sent(d);
            o.set_answered(d, Some((kind, id)));
        }
        assert!(o.others_have_breakpoints(1));
        let mut ids = o.clear_breakpoints(1);
        ids.sort_unstable();
        assert_eq!(ids, vec![1, 2]);
        assert_eq!((o.owner(3), o.owner(4)), (Some(1), Some(2)));
        assert!(!o.others_have_breakpoints(2));
    }

    #[test]
    fn a_refused_set_grants_nothing_and_leave_forgets_sets_in_flight() {
        let mut o = Owners::default();
        o.set_sent(1);
        o.set_answered(1, None);
        assert!(o.is_empty());
        o.set_sent(1);
        o.set_sent(1);
        assert!(o.leave(1).is_empty());
        assert!(!o.sets_in_flight());
        // A late answer for a departed debugger changes nothing.
        o.set_answered(1, None);
        assert!(o.is_empty());
    }

    proptest! {
        /// Random grants, clears and departures: counts add up, nobody clears another's
        /// request, and once everybody left nothing is owned.
        #[test]
        fn ownership_stays_consistent(ops in prop::collection::vec((0u8..4, 1u64..4, 1u32..20), 1..200)) {
            let mut o = Owners::default();
            let mut model: HashMap<u32, Debugger> = HashMap::new();
            for (op, d, id) in ops {
                match op {
                    0 => {
                        o.set_sent(d);
                        // The VM never hands out an id twice.
                        let granted = (!model.contains_key(&id)).then_some((BREAKPOINT, id));
                        if granted.is_some() {
                            model.insert(id, d);
                        }
                        o.set_answered(d, granted);
                    }
                    1 => {
                        let own = model.get(&id) == Some(&d);
                        prop_assert_eq!(o.clear(d, id), own);
                        if own {
                            model.remove(&id);
                        }
                    }
                    2 => {
                        let gone = o.leave(d);
                        prop_assert!(gone.iter().all(|(_, id)| model.get(id) == Some(&d)));
                        model.retain(|_, o| *o != d);
                    }
                    _ => {
                        o.clear_breakpoints(d);
                        model.retain(|_, o| *o != d);
                    }
                }
                for d in 1..4 {
                    prop_assert_eq!(o.count(d), model.values().filter(|o| **o == d).count());
                }
            }
            for d in 1..4 {
                o.leave(d);
            }
            prop_assert!(o.is_empty());
        }
    }
}
