//! The near cache of one VM connection: successful answers to the commands of
//! [`super::commands::IMMUTABLE`] (and the ABSENT_INFORMATION answers of
//! [`super::commands::ABSENT_KEPT`]), keyed by command and argument bytes, kept within a byte
//! budget (least recently used out first), and dropped when the VM may answer otherwise:
//! RedefineClasses, ClassUnload, DisposeObjects of a type id, a new VM connection.
//!
//! Pure: the session asks it before forwarding a command, tells it which proxy id a missed
//! command went out under, and hands it the VM's reply.
//!
//! What is named by path is here (the cache, its keys and decisions, its limits); its methods
//! are in files of their own, which import from here and nothing imports back:
//! - `answers`: a debugger's command looked up, a missed one's reply kept, and answers
//!   seeded or gathered, within the budget.
//! - `signatures`: which types have which signature, so a ClassUnload drops only its own.
//! - `drops`: answers dropped when the VM may answer otherwise, and pushed out by the budget.

mod answers;
mod drops;
mod signatures;

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

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
}

/// A JDWP string's bytes as sent (u4 length, then modified UTF-8), unconverted: signatures
/// from answers and from ClassUnload events are compared byte for byte.
pub fn jdwp_string<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let len = r.u32("string").ok()? as usize;
    r.bytes(len, "string").ok()
}
