//! Which debugger disabled garbage collection of which object.
//!
//! ObjectReference.DisableCollection pins an object until EnableCollection. Whether a VM
//! counts pins differs between VMs, so the VM is told exactly once per pinned period: the
//! first debugger's DisableCollection goes to it, the last one's EnableCollection goes to it,
//! and everything in between is answered by the proxy. Each debugger keeps its own count, so
//! its EnableCollection never unpins an object another debugger still needs, and a debugger
//! that leaves gives back every pin it had.

use std::collections::HashMap;

use super::holds::Debugger;

/// A JDWP objectID.
pub type ObjectId = u64;

#[derive(Debug, Default)]
pub struct Pins {
    /// Object -> (debugger -> its DisableCollection count).
    by_object: HashMap<ObjectId, HashMap<Debugger, u32>>,
}

impl Pins {
    /// `d` disables collection of `o`: true when it must go to the VM (nobody pinned it yet).
    pub fn disable(&mut self, d: Debugger, o: ObjectId) -> bool {
        let holders = self.by_object.entry(o).or_default();
        let first = holders.is_empty();
        *holders.entry(d).or_default() += 1;
        first
    }

    /// The VM refused `d`'s DisableCollection of `o` (it was collected): take it back.
    pub fn refused(&mut self, d: Debugger, o: ObjectId) {
        self.release(d, o);
    }

    /// `d` enables collection of `o`: true when it must go to the VM (the last pin is gone).
    /// An object `d` never pinned changes nothing.
    pub fn enable(&mut self, d: Debugger, o: ObjectId) -> bool {
        if !self.by_object.get(&o).is_some_and(|h| h.contains_key(&d)) {
            return false;
        }
        self.release(d, o)
    }

    /// `d` left: the objects that nobody pins any more, to enable in the VM.
    pub fn leave(&mut self, d: Debugger) -> Vec<ObjectId> {
        let mut freed = Vec::new();
        self.by_object.retain(|o, holders| {
            if holders.remove(&d).is_some() && holders.is_empty() {
                freed.push(*o);
            }
            !holders.is_empty()
        });
        freed.sort_unstable();
        freed
    }

    /// How many objects `d` pins.
    pub fn count(&self, d: Debugger) -> usize {
        self.by_object.values().filter(|h| h.contains_key(&d)).count()
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.by_object.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_object.is_empty()
    }

    /// Takes one of `d`'s pins on `o`; true when `o` is no longer pinned by anybody.
    fn release(&mut self, d: Debugger, o: ObjectId) -> bool {
        let Some(holders) = self.by_object.get_mut(&o) else { return false };
        if let Some(n) = holders.get_mut(&d) {
            *n -= 1;
            if *n == 0 {
                holders.remove(&d);
            }
        }
        if holders.is_empty() {
            self.by_object.remove(&o);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_vm_hears_the_first_disable_and_the_last_enable() {
        let mut p = Pins::default();
        assert!(p.disable(1, 9));
        assert!(!p.disable(2, 9));
        assert!(!p.disable(1, 9));
        assert!(!p.enable(1, 9));
        assert!(!p.enable(1, 9), "2 still pins it");
        assert!(!p.enable(1, 9), "1 has no pin left");
        assert!(p.enable(2, 9));
        assert!(p.is_empty());
    }

    #[test]
    fn leaving_frees_only_what_nobody_else_pins() {
        let mut p = Pins::default();
        p.disable(1, 7);
        p.disable(1, 8);
        p.disable(2, 8);
        assert_eq!(p.leave(1), vec![7]);
        assert_eq!(p.count(2), 1);
        assert_eq!(p.leave(2), vec![8]);
        assert!(p.is_empty());
    }

    proptest! {
        /// The VM's view (pinned or not) is always "somebody pins it", whatever the order.
        #[test]
        fn the_vm_is_pinned_exactly_while_somebody_pins(ops in prop::collection::vec((0u8..4, 1u64..4, 1u64..4), 1..200)) {
            let mut p = Pins::default();
            let mut vm_pinned: HashMap<ObjectId, bool> = HashMap::new();
            let mut counts: HashMap<(Debugger, ObjectId), u32> = HashMap::new();
            for (op, d, o) in ops {
                match op {
                    0 | 1 => {
                        if p.disable(d, o) {
                            prop_assert!(!vm_pinned.get(&o).copied().unwrap_or(false));
                            vm_pinned.insert(o, true);
                        }
                        *counts.entry((d, o)).or_default() += 1;
                    }
                    2 => {
                        if p.enable(d, o) {
                            vm_pinned.insert(o, false);
                        }
                        if let Some(n) = counts.get_mut(&(d, o)) {
                            *n = n.saturating_sub(1);
                        }
                    }
                    _ => {
                        for freed in p.leave(d) {
                            vm_pinned.insert(freed, false);
                        }
                        counts.retain(|(who, _), _| *who != d);
                    }
                }
                for o in 1..4u64 {
                    let someone = counts.iter().any(|((_, obj), n)| *obj == o && *n > 0);
                    prop_assert_eq!(vm_pinned.get(&o).copied().unwrap_or(false), someone);
                }
            }
        }
    }
}
