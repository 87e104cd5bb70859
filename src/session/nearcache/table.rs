//! The near cache of one VM connection: successful answers to the commands of
//! [`super::commands::IMMUTABLE`] (and the ABSENT_INFORMATION answers of
//! [`super::commands::ABSENT_KEPT`]), keyed by command and argument bytes, kept within a byte
//! budget (least recently used out first), and dropped when the VM may answer otherwise:
//! RedefineClasses, ClassUnload, DisposeObjects of a type id, a new VM connection.
//!
//! Pure: the session asks it before forwarding a command, tells it which proxy id a missed
//! command went out under, and hands it the VM's reply.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

use super::commands::{self, immutable, Args};
use super::lasting::Lasting;
use crate::jdwp::events::IdSizes;
use crate::jdwp::reader::Reader;

/// Bytes of answers kept per VM connection by default (keys and answers, plus a fixed cost
/// per entry).
pub const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;
/// Bookkeeping counted per entry on top of its bytes (maps, order, index).
pub const ENTRY_OVERHEAD: usize = 128;
/// An answer larger than this share of the budget is never kept (a huge constant pool would
/// push out everything else).
pub const LARGEST_SHARE: usize = 8;
/// Commands forwarded and awaiting a reply to be kept; past this, more are not remembered.
pub const MAX_PENDING: usize = 4096;
/// Signatures seen for types with no kept answer yet (ClassesBySignature, ClassPrepare);
/// past this the list starts again (a type of unknown signature is only dropped more often).
pub const MAX_SEEN_SIGNATURES: usize = 4096;
/// Longer signatures are not remembered (no real class has one; a hostile VM might).
pub const MAX_SIGNATURE_LEN: usize = 1024;

/// A command as the cache knows it: command set, command, and its data (the ids it names).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub set: u8,
    pub cmd: u8,
    pub data: Bytes,
}

/// What to do with a debugger's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Answer it with these reply bytes (after the header), the VM's own from before.
    Hit(Bytes),
    /// Answer it with this error code and no data, the VM's own from before
    /// (ABSENT_INFORMATION of what the class file lacks: `commands::ABSENT_KEPT`).
    Refused(u16),
    /// Forward it; its answer may be kept (tell [`NearCache::sent`] its proxy id).
    Miss(Key),
    /// Forward it; its answer names types and their signature (ClassesBySignature,
    /// AllClasses, AllClassesWithGeneric): tell [`NearCache::sent`] its proxy id too.
    Watch(Key),
    /// Forward it; nothing of it is kept.
    Pass,
}

/// What the session did with a debugger's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NearDecision {
    /// Answered near: nothing goes to the VM.
    Answered,
    /// To the VM; with a key, its reply may be kept.
    Forward(Option<Key>),
}

/// Counters since the session started (they survive new connections).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Commands answered near.
    pub hits: u64,
    /// Commands that could have been answered near but were not known yet.
    pub misses: u64,
    /// Answers kept.
    pub stored: u64,
    /// Answers dropped because the VM may now answer otherwise.
    pub dropped: u64,
    /// Answers pushed out by the budget.
    pub evicted: u64,
}

#[derive(Debug)]
struct Slot {
    answer: Bytes,
    /// The answer's error code: NONE, or ABSENT_INFORMATION (no data then).
    error: u16,
    used: u64,
    cost: usize,
    /// The type the key names (None for facts about the VM).
    ty: Option<u64>,
}

#[derive(Debug, Default)]
struct TypeInfo {
    keys: HashSet<Key>,
    /// Its JNI signature, once a Signature answer said it.
    signature: Option<Bytes>,
}

#[derive(Debug)]
struct Pending {
    conn: u64,
    key: Key,
    epoch: u64,
}

#[derive(Debug)]
pub struct NearCache {
    entries: HashMap<Key, Slot>,
    /// Use order: tick of last use -> key.
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
    budget: usize,
    types: HashMap<u64, TypeInfo>,
    by_signature: HashMap<Bytes, HashSet<u64>>,
    pending: HashMap<u32, Pending>,
    /// Signatures of types with no kept answer yet, for when they get one.
    seen: HashMap<u64, Bytes>,
    /// ClassesBySignature commands forwarded: proxy id -> (debugger, the signature asked,
    /// DisposeObjects seen when it went).
    signature_queries: HashMap<u32, (u64, Bytes, u64)>,
    /// Ids the VM gave for classes never unloaded, and the class lists asked.
    lasting: Lasting,
    /// Bumped by every drop: an answer read before it is not kept.
    epoch: u64,
    sizes: Option<IdSizes>,
    /// ClassUnload events reach the proxy on this connection: answers about types may be
    /// kept. Without them an unloaded class's answers would outlive it.
    unloads_seen: bool,
    counts: Counts,
}

impl Default for NearCache {
    fn default() -> Self {
        NearCache::new(DEFAULT_BUDGET)
    }
}

impl NearCache {
    pub fn new(budget: usize) -> NearCache {
        NearCache {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            bytes: 0,
            budget,
            types: HashMap::new(),
            by_signature: HashMap::new(),
            pending: HashMap::new(),
            seen: HashMap::new(),
            signature_queries: HashMap::new(),
            lasting: Lasting::default(),
            epoch: 0,
            sizes: None,
            unloads_seen: false,
            counts: Counts::default(),
        }
    }

    /// A new VM connection: ids of the last one mean nothing now. Counters stay.
    pub fn new_connection(&mut self) {
        let counts = self.counts;
        *self = NearCache::new(self.budget);
        self.counts = counts;
    }

    /// The VM's id sizes: needed to read the ids a command names.
    pub fn set_sizes(&mut self, sizes: IdSizes) {
        if self.sizes.is_some_and(|s| s != sizes) {
            self.drop_all();
        }
        self.sizes = Some(sizes);
    }

    /// The proxy's ClassUnload request is in place: answers about types may be kept.
    pub fn watching_unloads(&mut self) {
        self.unloads_seen = true;
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes counted against the budget.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether `t` is an id the VM gave on this connection for a class that is never
    /// unloaded, not disposed since (see [`super::lasting`]).
    pub fn lasting_class(&self, t: u64) -> bool {
        self.lasting.contains(t)
    }

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
    /// breakpoint request certain (`gather::early_breakpoint`).
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

    /// Type `t` has signature `sig` (a ClassPrepare event, a ClassesBySignature answer):
    /// a ClassUnload of another signature need not drop it, and a lasting class's id is kept.
    pub fn saw_signature(&mut self, t: u64, sig: &[u8]) {
        self.lasting.saw(t, sig);
        self.note_signature(t, sig);
    }

    fn note_signature(&mut self, t: u64, sig: &[u8]) {
        if sig.len() > MAX_SIGNATURE_LEN {
            return;
        }
        let sig = Bytes::copy_from_slice(sig);
        if self.types.contains_key(&t) {
            self.learn_signature(t, sig);
            return;
        }
        if self.seen.len() >= MAX_SEEN_SIGNATURES {
            self.seen.clear();
        }
        self.seen.insert(t, sig);
    }

    /// A ClassesBySignature command (its data: the signature) went out under `proxy_id`.
    fn signature_query(&mut self, proxy_id: u32, conn: u64, data: &[u8]) {
        let Some(sig) = jdwp_string(&mut Reader::new(data)) else { return };
        if self.signature_queries.len() < MAX_PENDING && sig.len() <= MAX_SIGNATURE_LEN {
            self.signature_queries.insert(proxy_id, (conn, Bytes::copy_from_slice(sig), self.lasting.disposals()));
        }
    }

    /// The reply to a ClassesBySignature: classes, then (refTypeTag, typeID, status) each.
    fn signature_answer(&mut self, proxy_id: u32, conn: u64, error: u16, answer: &[u8]) {
        let Some((asker, sig, disposals)) = self.signature_queries.remove(&proxy_id) else { return };
        let Some(size) = self.sizes.map(|s| s.reference_type).filter(|_| asker == conn && error == 0) else { return };
        let mut r = Reader::new(answer);
        let Ok(n) = r.u32("classes") else { return };
        for _ in 0..n.min(MAX_SEEN_SIGNATURES as u32) {
            let (Ok(_tag), Ok(t), Ok(_status)) = (r.u8("refTypeTag"), r.id(size, "typeID"), r.u32("status")) else { return };
            if disposals == self.lasting.disposals() {
                self.lasting.saw(t, &sig);
            }
            self.note_signature(t, &sig);
        }
    }


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

    fn learn_signature(&mut self, t: u64, sig: Bytes) {
        let info = self.types.entry(t).or_default();
        if info.signature.as_ref() == Some(&sig) {
            return;
        }
        if let Some(old) = info.signature.replace(sig.clone()) {
            if let Some(s) = self.by_signature.get_mut(&old) {
                s.remove(&t);
            }
        }
        self.by_signature.entry(sig).or_default().insert(t);
    }

    fn drop_all(&mut self) {
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

    fn evict(&mut self) {
        while self.bytes > self.budget {
            let Some((_, k)) = self.order.pop_first() else { break };
            // `remove` looks the tick up again; it is gone already, which is fine.
            if self.remove(&k) {
                self.counts.evicted += 1;
            }
        }
    }
}

/// A JDWP string's bytes as sent (u4 length, then modified UTF-8), unconverted: signatures
/// from answers and from ClassUnload events are compared byte for byte.
pub fn jdwp_string<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let len = r.u32("string").ok()? as usize;
    r.bytes(len, "string").ok()
}
