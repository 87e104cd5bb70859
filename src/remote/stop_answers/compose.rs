//! Values read at a stop, by what names them, and replies composed from them: an IDE asks
//! for other field lists, orders and ranges than the far side read, and each reply it gets
//! must be the bytes the VM would send. Pure.
//!
//! Four commands are composed, from the replies of the same commands the far side sent:
//! - StackFrame.GetValues (16, 1): a tagged value per (thread, frame, slot, signature byte);
//!   the signature byte picks the JVMTI read (GetLocalInt, GetLocalObject...) and, for a
//!   primitive, the reply's tag, so it is part of the key;
//! - ObjectReference.GetValues (9, 2): a tagged value per (object, field);
//! - ReferenceType.GetValues (2, 6): a tagged value per (type, field), the type being the
//!   one the command names (the VM reads the field through that class);
//! - ArrayReference.GetValues (13, 2): the region's tag and its elements by index (tagged
//!   for arrays of objects, bare for primitives), any sub-range of what was read.
//!
//! Object ids: the VM counts every object id it writes (libjdwp commonRef) and a JDI client
//! disposes each mirror with the count it received (DisposeObjects refCnt). [`Budget`]
//! holds, per id, how many times the VM wrote it in the gathered replies and no debugger
//! has been given it since; an answer that would overspend goes to the VM. Reference type
//! ids (a Frames location's class, a ReferenceType or Superclass reply) need no budget:
//! JDI keeps one ReferenceType per id for the connection's life and never disposes it
//! (VirtualMachineImpl keeps types in its typesByID map; only ObjectReferenceImpl mirrors are
//! batched for disposal), so the VM's count of a type id only grows.

use std::collections::HashMap;

use crate::jdwp::events::{value_width, IdSizes};
use crate::jdwp::reader::{ReadError, Reader};

/// Tags whose value is an object id (JDWP Tag constants).
pub const OBJECT_TAGS: &[u8] = b"Lstglc[";

/// One value as the VM wrote it: the tag byte (when the wire has one) and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Value {
    bytes: Vec<u8>,
    /// The object id it names (0: none, or null).
    object: u64,
}

fn tagged(r: &mut Reader<'_>, sizes: &IdSizes) -> Result<Option<Value>, ReadError> {
    let tag = r.u8("tag")?;
    untagged(r, tag, sizes, true)
}

/// A value of `tag`; `with_tag`: its bytes start with the tag (a tagged value).
fn untagged(r: &mut Reader<'_>, tag: u8, sizes: &IdSizes, with_tag: bool) -> Result<Option<Value>, ReadError> {
    let Some(w) = value_width(tag, sizes) else { return Ok(None) };
    let body = r.bytes(w, "value")?;
    let object = if OBJECT_TAGS.contains(&tag) { Reader::new(body).id(w, "object")? } else { 0 };
    let mut bytes = Vec::with_capacity(w + 1);
    if with_tag {
        bytes.push(tag);
    }
    bytes.extend_from_slice(body);
    Ok(Some(Value { bytes, object }))
}

/// A count from the wire, as a bounded length (no reply holds more values than bytes).
fn count(r: &mut Reader<'_>) -> Result<usize, ReadError> {
    Ok(r.u32("count")? as usize)
}

/// An array's region read at a stop.
#[derive(Debug, Clone)]
struct Region {
    tag: u8,
    first: usize,
    elements: Vec<Value>,
}

/// The values read at one stop.
#[derive(Debug, Default, Clone)]
pub struct Values {
    locals: HashMap<(u64, u64, u32, u8), Value>,
    fields: HashMap<(u64, u64), Value>,
    statics: HashMap<(u64, u64), Value>,
    arrays: HashMap<u64, Region>,
}

/// The object ids a reply names, each as often as it names it.
pub type Objects = Vec<u64>;

impl Values {
    /// Takes in a gathered reply of one of the four commands (`data` the command's data,
    /// `reply` the VM's reply data); returns the object ids it names, for the budget. A
    /// reply that does not parse (or names a tag JDWP does not have) is left out whole.
    pub fn learn(&mut self, set: u8, cmd: u8, data: &[u8], reply: &[u8], sizes: &IdSizes) -> Objects {
        self.try_learn(set, cmd, data, reply, sizes).ok().flatten().unwrap_or_default()
    }

    fn try_learn(&mut self, set: u8, cmd: u8, data: &[u8], reply: &[u8], sizes: &IdSizes) -> Result<Option<Objects>, ReadError> {
        let (mut c, mut r) = (Reader::new(data), Reader::new(reply));
        let mut values = Vec::new();
        match (set, cmd) {
            (16, 1) => {
                let (thread, frame) = (c.id(sizes.object, "thread")?, c.id(sizes.frame, "frame")?);
                let mut keys = Vec::new();
                for _ in 0..count(&mut c)? {
                    keys.push((thread, frame, c.u32("slot")?, c.u8("sigbyte")?));
                }
                if c.remaining() > 0 || !self.read_tagged(&mut r, keys.len(), sizes, &mut values)? {
                    return Ok(None);
                }
                let objects = values.iter().map(|v| v.object).collect();
                self.locals.extend(keys.into_iter().zip(values));
                Ok(Some(objects))
            }
            (9, 2) | (2, 6) => {
                let owner = if set == 9 { c.id(sizes.object, "object")? } else { c.id(sizes.reference_type, "refType")? };
                let mut keys = Vec::new();
                for _ in 0..count(&mut c)? {
                    keys.push((owner, c.id(sizes.field, "field")?));
                }
                if c.remaining() > 0 || !self.read_tagged(&mut r, keys.len(), sizes, &mut values)? {
                    return Ok(None);
                }
                let objects = values.iter().map(|v| v.object).collect();
                let map = if set == 9 { &mut self.fields } else { &mut self.statics };
                map.extend(keys.into_iter().zip(values));
                Ok(Some(objects))
            }
            (13, 2) => {
                let array = c.id(sizes.object, "array")?;
                let (first, length) = (c.i32("first")?, c.i32("length")?);
                let tag = r.u8("tag")?;
                let n = count(&mut r)?;
                if c.remaining() > 0 || first < 0 || usize::try_from(length).ok() != Some(n) {
                    return Ok(None);
                }
                let objects_inside = OBJECT_TAGS.contains(&tag);
                for _ in 0..n {
                    let v = if objects_inside { tagged(&mut r, sizes)? } else { untagged(&mut r, tag, sizes, false)? };
                    let Some(v) = v else { return Ok(None) };
                    values.push(v);
                }
                if r.remaining() > 0 {
                    return Ok(None);
                }
                let objects = values.iter().map(|v| v.object).collect();
                self.arrays.insert(array, Region { tag, first: first as usize, elements: values });
                Ok(Some(objects))
            }
            _ => Ok(None),
        }
    }

    /// Reads `n` tagged values to the reply's end; false when a tag is unknown or bytes are left.
    fn read_tagged(&self, r: &mut Reader<'_>, n: usize, sizes: &IdSizes, out: &mut Vec<Value>) -> Result<bool, ReadError> {
        if count(r)? != n {
            return Ok(false);
        }
        for _ in 0..n {
            match tagged(r, sizes)? {
                Some(v) => out.push(v),
                None => return Ok(false),
            }
        }
        Ok(r.remaining() == 0)
    }

    /// The reply to a command composed from what was read, and the object ids it names;
    /// None when anything it asks was not read (or the command is not one of the four).
    pub fn compose(&self, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) -> Option<(Vec<u8>, Objects)> {
        let mut c = Reader::new(data);
        let mut picked: Vec<&Value> = Vec::new();
        let mut out = Vec::new();
        match (set, cmd) {
            (16, 1) => {
                let (thread, frame) = (c.id(sizes.object, "thread").ok()?, c.id(sizes.frame, "frame").ok()?);
                for _ in 0..nonzero(&mut c)? {
                    let key = (thread, frame, c.u32("slot").ok()?, c.u8("sigbyte").ok()?);
                    picked.push(self.locals.get(&key)?);
                }
            }
            (9, 2) | (2, 6) => {
                let owner = if set == 9 { c.id(sizes.object, "object").ok()? } else { c.id(sizes.reference_type, "refType").ok()? };
                let map = if set == 9 { &self.fields } else { &self.statics };
                for _ in 0..nonzero(&mut c)? {
                    picked.push(map.get(&(owner, c.id(sizes.field, "field").ok()?))?);
                }
            }
            (13, 2) => {
                let region = self.arrays.get(&c.id(sizes.object, "array").ok()?)?;
                let (first, length) = (usize::try_from(c.i32("first").ok()?).ok()?, usize::try_from(c.i32("length").ok()?).ok()?);
                // The VM refuses a first index past the end (INVALID_INDEX) and a region
                // past it (INVALID_LENGTH): only a non-empty region inside what was read.
                let from = first.checked_sub(region.first)?;
                if length == 0 || from + length > region.elements.len() || c.remaining() > 0 {
                    return None;
                }
                out.push(region.tag);
                out.extend_from_slice(&(length as u32).to_be_bytes());
                picked.extend(&region.elements[from..from + length]);
                return Some(finish(out, &picked));
            }
            _ => return None,
        }
        if c.remaining() > 0 {
            return None;
        }
        out.extend_from_slice(&(picked.len() as u32).to_be_bytes());
        Some(finish(out, &picked))
    }

    pub fn is_empty(&self) -> bool {
        self.locals.is_empty() && self.fields.is_empty() && self.statics.is_empty() && self.arrays.is_empty()
    }
}

/// A command's value count; libjdwp answers an empty list too, but no debugger asks one.
fn nonzero(c: &mut Reader<'_>) -> Option<usize> {
    let n = c.u32("count").ok()? as usize;
    // Each entry takes at least one byte of the command: a count past that is a lie.
    (n > 0 && n <= c.remaining()).then_some(n)
}

fn finish(mut out: Vec<u8>, picked: &[&Value]) -> (Vec<u8>, Objects) {
    for v in picked {
        out.extend_from_slice(&v.bytes);
    }
    (out, picked.iter().map(|v| v.object).filter(|o| *o != 0).collect())
}

/// The ids of one tagged object value (StackFrame.ThisObject's reply); none for null.
pub fn this_object(reply: &[u8], sizes: &IdSizes) -> Option<Objects> {
    let mut r = Reader::new(reply);
    let v = tagged(&mut r, sizes).ok()??;
    (r.remaining() == 0 && v.bytes.first().is_some_and(|t| OBJECT_TAGS.contains(t))).then(|| if v.object == 0 { Vec::new() } else { vec![v.object] })
}

/// The thread ids of a VirtualMachine.AllThreads reply (a count, then the ids), each an
/// object id the VM counted.
pub fn all_threads(reply: &[u8], sizes: &IdSizes) -> Option<Objects> {
    let mut r = Reader::new(reply);
    let n = r.u32("threads").ok()?;
    // Each id takes its bytes: a count beyond the reply is malformed.
    if (n as usize).checked_mul(sizes.object)? != r.remaining() {
        return None;
    }
    (0..n).map(|_| r.id(sizes.object, "thread").ok()).collect()
}

/// Ids the VM has counted for the debuggers' near answers and not given out yet.
#[derive(Debug, Default)]
pub struct Budget {
    left: HashMap<u64, u32>,
}

/// At most this many ids are kept; past it the budget starts over (spending less than the
/// VM counted is always safe).
const MAX_IDS: usize = 65_536;

impl Budget {
    /// The VM wrote these ids (null left out), once each time listed.
    pub fn add(&mut self, ids: &[u64]) {
        if self.left.len() + ids.len() > MAX_IDS {
            self.left.clear();
        }
        for id in ids.iter().filter(|id| **id != 0) {
            *self.left.entry(*id).or_default() += 1;
        }
    }

    /// Takes one of each id listed (as often as listed) if all are there; false (nothing
    /// taken) when any would overspend.
    pub fn spend(&mut self, ids: &[u64]) -> bool {
        let mut want: HashMap<u64, u32> = HashMap::new();
        for id in ids.iter().filter(|id| **id != 0) {
            *want.entry(*id).or_default() += 1;
        }
        if want.iter().any(|(id, n)| self.left.get(id).copied().unwrap_or(0) < *n) {
            return false;
        }
        for (id, n) in want {
            if let Some(left) = self.left.get_mut(&id) {
                *left -= n;
                if *left == 0 {
                    self.left.remove(&id);
                }
            }
        }
        true
    }

    pub fn left(&self, id: u64) -> u32 {
        self.left.get(&id).copied().unwrap_or(0)
    }
}
