//! Events kept back for later, in a queue bounded by count and bytes: the VM's events while
//! no debugger is attached (`HeldEvents`, dropped past the bound and counted), and a
//! debugger's events under VirtualMachine.HoldEvents (`Attached`, delivered anyway past its
//! bound). Both are a `BoundedQueue` with their own limits.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::jdwp::Packet;

/// Events held while no debugger is attached (count and bytes); beyond, they are dropped.
pub const MAX_HELD_EVENTS: usize = 32;
pub const MAX_HELD_EVENT_BYTES: usize = 1024 * 1024;

/// Events a debugger may keep unread under VirtualMachine.HoldEvents (count and bytes).
/// Past that they are delivered anyway: the proxy never drops an event it owes a debugger.
pub const MAX_HELD_EVENTS_PER_DEBUGGER: usize = 4096;
pub const MAX_HELD_EVENT_BYTES_PER_DEBUGGER: usize = 16 * 1024 * 1024;

/// What a queue counts against its byte limit.
pub(super) trait Weighed {
    fn weight(&self) -> usize;
}

impl Weighed for Packet {
    fn weight(&self) -> usize {
        self.len()
    }
}

impl Weighed for Bytes {
    fn weight(&self) -> usize {
        self.len()
    }
}

/// A first-in first-out queue that takes an item only while it stays within `max_items`
/// items and `max_bytes` bytes.
#[derive(Debug)]
pub(super) struct BoundedQueue<T> {
    items: VecDeque<T>,
    bytes: usize,
    max_items: usize,
    max_bytes: usize,
}

impl<T: Weighed> BoundedQueue<T> {
    pub fn new(max_items: usize, max_bytes: usize) -> Self {
        BoundedQueue { items: VecDeque::new(), bytes: 0, max_items, max_bytes }
    }

    /// Queues `item`, or gives it back when it would pass either bound.
    pub fn push(&mut self, item: T) -> Result<(), T> {
        let w = item.weight();
        if self.items.len() >= self.max_items || self.bytes + w > self.max_bytes {
            return Err(item);
        }
        self.bytes += w;
        self.items.push_back(item);
        Ok(())
    }

    /// Everything queued, in order; the queue is empty after.
    pub fn take(&mut self) -> VecDeque<T> {
        self.bytes = 0;
        std::mem::take(&mut self.items)
    }

    pub fn clear(&mut self) {
        self.bytes = 0;
        self.items.clear();
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The VM's events held while no debugger is attached (VM_START with suspend=y), for the
/// next debugger; past the bound they are dropped, and the drops counted for the log.
#[derive(Debug)]
pub(super) struct HeldEvents {
    queue: BoundedQueue<Packet>,
    /// Dropped past the bound since the session started (never reset).
    dropped: u64,
    /// How many of those the log has already reported.
    logged: u64,
}

impl Default for HeldEvents {
    fn default() -> Self {
        HeldEvents { queue: BoundedQueue::new(MAX_HELD_EVENTS, MAX_HELD_EVENT_BYTES), dropped: 0, logged: 0 }
    }
}

impl HeldEvents {
    /// Holds `p`, or drops and counts it; true when held.
    pub fn hold(&mut self, p: Packet) -> bool {
        match self.queue.push(p) {
            Ok(()) => true,
            Err(_) => {
                self.dropped += 1;
                false
            }
        }
    }

    /// Everything held, in order, for the debugger that just attached.
    pub fn take(&mut self) -> VecDeque<Packet> {
        self.queue.take()
    }

    /// A new VM connection: what was held belonged to the old one (the drop count stays).
    pub fn clear(&mut self) {
        self.queue.clear();
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Drops since the session started.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Whether some drops are not yet in the log.
    pub fn unlogged(&self) -> bool {
        self.dropped > self.logged
    }

    /// The drops not yet in the log (marked as logged now), when there are any.
    pub fn log_drops(&mut self) -> Option<u64> {
        let new = self.dropped - self.logged;
        self.logged = self.dropped;
        (new > 0).then_some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(n: usize) -> Bytes {
        Bytes::from(vec![0u8; n])
    }

    #[test]
    fn takes_up_to_the_count() {
        let mut q = BoundedQueue::new(2, 100);
        assert!(q.push(b(1)).is_ok());
        assert!(q.push(b(1)).is_ok());
        assert_eq!(q.push(b(1)).map_err(|e| e.len()), Err(1), "the third is given back");
        assert_eq!((q.len(), q.bytes()), (2, 2));
    }

    #[test]
    fn takes_up_to_the_bytes_exactly() {
        let mut q = BoundedQueue::new(10, 10);
        assert!(q.push(b(6)).is_ok());
        assert!(q.push(b(5)).is_err(), "11 bytes pass the bound");
        assert!(q.push(b(4)).is_ok(), "10 bytes are within it");
        assert!(q.push(b(0)).is_ok(), "an empty item fits a full byte budget");
        assert_eq!(q.bytes(), 10);
    }

    #[test]
    fn take_empties_in_order() {
        let mut q = BoundedQueue::new(10, 100);
        for n in 1..=3 {
            q.push(b(n)).unwrap();
        }
        let lens: Vec<_> = q.take().iter().map(|x| x.len()).collect();
        assert_eq!(lens, [1, 2, 3]);
        assert!(q.is_empty() && q.bytes() == 0);
        assert!(q.push(b(100)).is_ok(), "the whole budget is back");
    }

    #[test]
    fn held_events_count_drops_once_for_the_log() {
        let mut h = HeldEvents::default();
        let p = || Packet::command(1, 64, 100, &[]);
        for _ in 0..MAX_HELD_EVENTS {
            assert!(h.hold(p()));
        }
        assert!(!h.unlogged() && h.log_drops().is_none());
        assert!(!h.hold(p()) && !h.hold(p()));
        assert!(h.unlogged());
        assert_eq!(h.log_drops(), Some(2));
        assert!(!h.unlogged() && h.log_drops().is_none());
        h.clear();
        assert_eq!((h.len(), h.dropped()), (0, 2), "a new connection keeps the count");
        assert!(h.hold(p()));
        assert_eq!(h.take().len(), 1);
        assert_eq!(h.len(), 0);
    }

    proptest! {
        /// Whatever is pushed and taken, the queue stays within both bounds, its byte count
        /// is the sum of what it holds, it refuses only what would pass a bound, and it
        /// gives back what it took in order.
        #[test]
        fn stays_within_bounds(max_items in 0usize..8, max_bytes in 0usize..64,
                               ops in proptest::collection::vec(proptest::option::of(0usize..24), 0..64)) {
            let mut q = BoundedQueue::new(max_items, max_bytes);
            let mut model: VecDeque<usize> = VecDeque::new();
            for op in ops {
                match op {
                    Some(n) => {
                        let fits = model.len() < max_items && model.iter().sum::<usize>() + n <= max_bytes;
                        prop_assert_eq!(q.push(b(n)).is_ok(), fits);
                        if fits {
                            model.push_back(n);
                        }
                    }
                    None => {
                        let got: Vec<usize> = q.take().iter().map(|x| x.len()).collect();
                        prop_assert_eq!(got, model.drain(..).collect::<Vec<_>>());
                    }
                }
                prop_assert!(q.len() <= max_items && q.bytes() <= max_bytes);
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.bytes(), model.iter().sum::<usize>());
            }
        }
    }
}
