//! What drops the near cache's answers: RedefineClasses, ClassUnload and DisposeObjects
//! (each of the types they may touch, or every answer about types when unsure), other id
//! sizes; and the budget, least recently used out first.

use super::{Key, NearCache};
use crate::jdwp::unchanging::{self as commands, immutable};

impl NearCache {
    /// A RedefineClasses command on its way to the VM. `data` is its body when read whole;
    /// None (a streamed command) drops every answer about types.
    pub fn redefine(&mut self, data: Option<&[u8]>) {
        let classes = data.zip(self.sizes).and_then(|(d, s)| commands::redefined(d, s.reference_type));
        match classes {
            Some(classes) => {
                for t in classes {
                    self.drop_type(t);
                }
                // A Method command names (class, method) and a debugger may name a subclass:
                // any method may be the redefined one.
                let methods: Vec<Key> = self.entries.keys().filter(|k| k.set == commands::METHOD_SET).cloned().collect();
                methods.into_iter().for_each(|k| self.drop_key(&k));
            }
            None => self.drop_types(),
        }
        self.epoch += 1;
    }

    /// A ClassUnload event: the types of that signature are gone, and so may be any type
    /// whose signature was never seen.
    pub fn unloaded(&mut self, signature: &[u8]) {
        let mut gone: Vec<u64> = self.by_signature.get(signature).map(|s| s.iter().copied().collect()).unwrap_or_default();
        gone.extend(self.types.iter().filter(|(_, i)| i.signature.is_none()).map(|(t, _)| *t));
        for t in gone {
            self.drop_type(t);
        }
        self.seen.retain(|_, s| s.as_ref() != signature);
        self.lasting.unloaded(signature);
        self.epoch += 1;
    }

    /// A DisposeObjects command: an id it names may be a type the VM then forgets, and
    /// answers naming types (Superclass, Interfaces) may name it. `data` is its body.
    pub fn disposed(&mut self, data: &[u8]) {
        let ids = self.sizes.map(|s| commands::disposed_ids(data, s.object));
        self.lasting.disposed(ids.as_ref().and_then(|i| i.as_deref()));
        match ids {
            Some(Some(ids)) => {
                for t in ids {
                    self.drop_type(t);
                }
                let naming: Vec<Key> = self
                    .entries
                    .keys()
                    .filter(|k| immutable(k.set, k.cmd).is_some_and(|r| r.names_types))
                    .cloned()
                    .collect();
                naming.into_iter().for_each(|k| self.drop_key(&k));
            }
            _ => self.drop_types(),
        }
        self.epoch += 1;
    }

    pub(super) fn drop_all(&mut self) {
        self.lasting.disposed(None);
        let keys: Vec<Key> = self.entries.keys().cloned().collect();
        keys.iter().for_each(|k| self.drop_key(k));
        self.pending.clear();
        self.epoch += 1;
    }

    /// Drops every answer about a type or method (facts about the VM stay).
    fn drop_types(&mut self) {
        let keys: Vec<Key> = self.types.values().flat_map(|i| i.keys.iter().cloned()).collect();
        keys.iter().for_each(|k| self.drop_key(k));
    }

    fn drop_type(&mut self, t: u64) {
        let keys: Vec<Key> = self.types.get(&t).map(|i| i.keys.iter().cloned().collect()).unwrap_or_default();
        keys.iter().for_each(|k| self.drop_key(k));
    }

    fn drop_key(&mut self, k: &Key) {
        if self.remove(k) {
            self.counts.dropped += 1;
        }
    }

    fn remove(&mut self, k: &Key) -> bool {
        let Some(slot) = self.entries.remove(k) else { return false };
        self.order.remove(&slot.used);
        self.bytes -= slot.cost;
        if let Some(t) = slot.ty {
            let empty = self.types.get_mut(&t).is_some_and(|i| {
                i.keys.remove(k);
                i.keys.is_empty()
            });
            if empty {
                if let Some(sig) = self.types.remove(&t).and_then(|i| i.signature) {
                    let none_left = self.by_signature.get_mut(&sig).is_some_and(|s| {
                        s.remove(&t);
                        s.is_empty()
                    });
                    if none_left {
                        self.by_signature.remove(&sig);
                    }
                }
            }
        }
        true
    }

    pub(super) fn evict(&mut self) {
        while self.bytes > self.budget {
            let Some((_, k)) = self.order.pop_first() else { break };
            // `remove` looks the tick up again; it is gone already, which is fine.
            if self.remove(&k) {
                self.counts.evicted += 1;
            }
        }
    }
}
