//! The near cache's answers: a debugger's command looked up (answered near, or forwarded
//! with what to keep of its reply), the reply of a missed command kept when it still holds,
//! the proxy's own and the far side's gathered answers kept too, and replies forgotten when
//! they will not be read whole or their debugger left.

use bytes::Bytes;

use super::{jdwp_string, Key, Lookup, NearCache, Pending, Slot, ENTRY_OVERHEAD, LARGEST_SHARE, MAX_PENDING};
use crate::jdwp::events::IdSizes;
use crate::jdwp::reader::Reader;
use crate::jdwp::unchanging::{self as commands, immutable, Args};

impl NearCache {
    /// The type a command names, when its data has the shape its row wants; None for a
    /// fact about the VM. Err: its answer is not kept.
    fn shape(&self, set: u8, cmd: u8, data: &[u8]) -> Result<Option<u64>, ()> {
        let row = immutable(set, cmd).ok_or(())?;
        match row.args {
            Args::None => data.is_empty().then_some(None).ok_or(()),
            Args::Type | Args::Method => {
                let s = self.sizes.filter(|_| self.unloads_seen).ok_or(())?;
                let want = s.reference_type + if row.args == Args::Method { s.method } else { 0 };
                if data.len() != want {
                    return Err(());
                }
                Reader::new(data).id(s.reference_type, "refType").map(Some).map_err(|_| ())
            }
        }
    }

    /// The answer kept for a command, if any, without counting a hit or a miss (what the
    /// early answers read: a breakpoint's method's line table).
    pub fn peek(&self, set: u8, cmd: u8, data: &[u8]) -> Option<Bytes> {
        let key = Key { set, cmd, data: Bytes::copy_from_slice(data) };
        self.entries.get(&key).filter(|slot| slot.error == 0).map(|slot| slot.answer.clone())
    }

    /// The Method.LineTable answer kept for a (class, method), if any: what makes a
    /// breakpoint request certain (`remote::stop_answers::early_breakpoint`).
    pub fn line_table(&self, sizes: &IdSizes, class: u64, method: u64) -> Option<Vec<u8>> {
        let mut key = Vec::with_capacity(sizes.reference_type + sizes.method);
        crate::jdwp::reader::put_id(&mut key, class, sizes.reference_type);
        crate::jdwp::reader::put_id(&mut key, method, sizes.method);
        self.peek(6, 1, &key).map(|b| b.to_vec())
    }

    /// What to do with a debugger's command.
    pub fn lookup(&mut self, set: u8, cmd: u8, data: &[u8]) -> Lookup {
        if commands::watched(set, cmd) && self.unloads_seen {
            return Lookup::Watch(Key { set, cmd, data: Bytes::copy_from_slice(data) });
        }
        if self.shape(set, cmd, data).is_err() {
            return Lookup::Pass;
        }
        let key = Key { set, cmd, data: Bytes::copy_from_slice(data) };
        self.tick += 1;
        let tick = self.tick;
        match self.entries.get_mut(&key) {
            Some(slot) => {
                self.order.remove(&slot.used);
                slot.used = tick;
                self.order.insert(tick, key);
                self.counts.hits += 1;
                match slot.error {
                    0 => Lookup::Hit(slot.answer.clone()),
                    e => Lookup::Refused(e),
                }
            }
            None => {
                self.counts.misses += 1;
                Lookup::Miss(key)
            }
        }
    }

    /// A missed command went to the VM under `proxy_id` for debugger `conn`.
    pub fn sent(&mut self, proxy_id: u32, conn: u64, key: Key) {
        if (key.set, key.cmd) == commands::CLASSES_BY_SIGNATURE {
            return self.signature_query(proxy_id, conn, &key.data);
        }
        if commands::watched(key.set, key.cmd) {
            return self.lasting.asked(proxy_id, conn, (key.set, key.cmd) == commands::ALL_CLASSES_WITH_GENERIC);
        }
        if self.pending.len() < MAX_PENDING {
            self.pending.insert(proxy_id, Pending { conn, key, epoch: self.epoch });
        }
    }

    /// The reply to `proxy_id` (the command `set`/`cmd` of debugger `conn`) is in. Returns
    /// whether its answer was kept.
    pub fn replied(&mut self, proxy_id: u32, conn: u64, set: u8, cmd: u8, error: u16, answer: &[u8]) -> bool {
        if (set, cmd) == commands::CLASSES_BY_SIGNATURE {
            self.signature_answer(proxy_id, conn, error, answer);
            return false;
        }
        if commands::watched(set, cmd) {
            self.lasting.answered(proxy_id, conn, error, answer, self.sizes.map(|s| s.reference_type));
            return false;
        }
        let Some(p) = self.pending.remove(&proxy_id) else { return false };
        // The id table says who asked what; a mismatch means this entry outlived its request.
        if p.conn != conn || (p.key.set, p.key.cmd) != (set, cmd) || !commands::error_kept(set, cmd, error) || p.epoch != self.epoch {
            return false;
        }
        let Ok(ty) = self.shape(set, cmd, &p.key.data) else { return false };
        self.store(p.key, ty, error, answer)
    }

    /// The proxy's own question about the VM (Version, IDSizes at identification) was
    /// answered: the debuggers' first askings need no round trip. Returns whether it was kept.
    pub fn seed(&mut self, set: u8, cmd: u8, answer: &[u8]) -> bool {
        match self.shape(set, cmd, &[]) {
            Ok(None) => self.store(Key { set, cmd, data: Bytes::new() }, None, 0, answer),
            _ => false,
        }
    }

    /// An answer the VM's host read at a stop or for a class lookup (the command's data, the
    /// VM's error code and reply data): kept as if a debugger had asked, when the table
    /// keeps that answer. Returns whether it was kept.
    pub fn gathered(&mut self, set: u8, cmd: u8, data: &[u8], error: u16, answer: &[u8]) -> bool {
        if !commands::error_kept(set, cmd, error) {
            return false;
        }
        match self.shape(set, cmd, data) {
            Ok(ty) => self.store(Key { set, cmd, data: Bytes::copy_from_slice(data) }, ty, error, answer),
            Err(()) => false,
        }
    }

    fn store(&mut self, key: Key, ty: Option<u64>, error: u16, answer: &[u8]) -> bool {
        let (set, cmd) = (key.set, key.cmd);
        let cost = key.data.len() + answer.len() + ENTRY_OVERHEAD;
        if cost > self.budget / LARGEST_SHARE || self.entries.contains_key(&key) {
            return false;
        }
        if let Some(t) = ty {
            if let Some(sig) = self.seen.remove(&t) {
                self.learn_signature(t, sig);
            }
            if (set, cmd) == commands::SIGNATURE || (set, cmd) == commands::SIGNATURE_WITH_GENERIC {
                if let Some(sig) = jdwp_string(&mut Reader::new(answer)) {
                    self.learn_signature(t, Bytes::copy_from_slice(sig));
                }
            }
            self.types.entry(t).or_default().keys.insert(key.clone());
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, Slot { answer: Bytes::copy_from_slice(answer), error, used: self.tick, cost, ty });
        self.bytes += cost;
        self.counts.stored += 1;
        self.evict();
        true
    }

    /// A reply that will not be read whole (streamed), or whose requester left: forget it.
    pub fn forget(&mut self, proxy_id: u32) {
        self.pending.remove(&proxy_id);
        self.signature_queries.remove(&proxy_id);
        self.lasting.forget(proxy_id);
    }

    /// A reply too large to read whole (streamed) came under `proxy_id`: not kept. Returns
    /// the debugger that asked, when it is a class list whose lasting classes may still be
    /// read from its prefix ([`NearCache::streamed_class_list`]; else [`NearCache::forget`]).
    pub fn streamed(&mut self, proxy_id: u32) -> Option<u64> {
        self.pending.remove(&proxy_id);
        self.signature_queries.remove(&proxy_id);
        self.lasting.asker(proxy_id)
    }

    /// Whether `proxy_id` is a class list (AllClasses) still awaiting its reply.
    pub fn lists_classes(&self, proxy_id: u32) -> bool {
        self.lasting.asker(proxy_id).is_some()
    }

    /// The prefix read of a streamed class list's reply: the classes wholly in it are learnt.
    pub fn streamed_class_list(&mut self, proxy_id: u32, error: u16, prefix: &[u8]) {
        if let Some(conn) = self.lasting.asker(proxy_id) {
            self.lasting.answered(proxy_id, conn, error, prefix, self.sizes.map(|s| s.reference_type));
        }
    }

    /// Debugger `conn` left: its commands' replies will not come back through it.
    pub fn forget_conn(&mut self, conn: u64) {
        self.pending.retain(|_, p| p.conn != conn);
        self.signature_queries.retain(|_, (c, _, _)| *c != conn);
        self.lasting.forget_conn(conn);
    }
}
