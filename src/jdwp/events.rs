//! Event.Composite: reading where each event starts and ends, whose request it answers and
//! which thread it names, and writing a composite that holds some of them.
//!
//! Event bodies have no length field: finding the end of one means reading its fields, whose
//! sizes come from the VM's IDSizes. An event kind this module does not know ends the
//! reading (the rest of the composite cannot be cut).

use std::ops::Range;

use super::reader::{ReadError, Reader};

/// Event kinds (JDWP EventKind) as they appear in a composite.
pub mod kind {
    pub const SINGLE_STEP: u8 = 1;
    pub const BREAKPOINT: u8 = 2;
    pub const EXCEPTION: u8 = 4;
    pub const THREAD_START: u8 = 6;
    pub const THREAD_DEATH: u8 = 7;
    pub const CLASS_PREPARE: u8 = 8;
    pub const CLASS_UNLOAD: u8 = 9;
    pub const FIELD_ACCESS: u8 = 20;
    pub const FIELD_MODIFICATION: u8 = 21;
    pub const METHOD_ENTRY: u8 = 40;
    pub const METHOD_EXIT: u8 = 41;
    pub const METHOD_EXIT_WITH_RETURN_VALUE: u8 = 42;
    pub const MONITOR_CONTENDED_ENTER: u8 = 43;
    pub const MONITOR_CONTENDED_ENTERED: u8 = 44;
    pub const MONITOR_WAIT: u8 = 45;
    pub const MONITOR_WAITED: u8 = 46;
    pub const VM_START: u8 = 90;
    pub const VM_DEATH: u8 = 99;
}

/// Suspend policies (JDWP SuspendPolicy).
pub mod suspend {
    pub const NONE: u8 = 0;
    pub const EVENT_THREAD: u8 = 1;
    pub const ALL: u8 = 2;
}

/// Most events one composite may hold before it is treated as malformed (real VMs send a
/// handful: the events of one thread at one location).
pub const MAX_EVENTS: u32 = 10_000;

/// The sizes of the VM's ids (VirtualMachine.IDSizes), all 1 to 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdSizes {
    pub field: usize,
    pub method: usize,
    pub object: usize,
    pub reference_type: usize,
    pub frame: usize,
}

impl IdSizes {
    /// Reads an IDSizes reply body; None when malformed or a size is outside 1..=8.
    pub fn parse(data: &[u8]) -> Option<IdSizes> {
        let mut r = Reader::new(data);
        let mut next = || r.i32("IDSizes").ok().filter(|s| (1..=8).contains(s)).map(|s| s as usize);
        Some(IdSizes { field: next()?, method: next()?, object: next()?, reference_type: next()?, frame: next()? })
    }

    /// The body of an IDSizes reply with these sizes.
    pub fn encode(&self) -> Vec<u8> {
        [self.field, self.method, self.object, self.reference_type, self.frame]
            .iter()
            .flat_map(|s| (*s as u32).to_be_bytes())
            .collect()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EventError {
    #[error("malformed composite: {0}")]
    Read(#[from] ReadError),
    #[error("unknown event kind {0}: the rest of the composite cannot be read")]
    UnknownKind(u8),
    #[error("unknown value tag {0:#04x}")]
    UnknownTag(u8),
    #[error("a composite of {0} events (at most {MAX_EVENTS})")]
    TooMany(u32),
    #[error("{0} bytes after the last event")]
    Trailing(usize),
}

/// One event of a composite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: u8,
    pub request_id: u32,
    /// The thread the event happened in (every kind but CLASS_UNLOAD and VM_DEATH has one).
    pub thread: Option<u64>,
    /// Where it is in the composite's body, its kind byte included.
    pub range: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composite {
    pub suspend_policy: u8,
    pub events: Vec<Event>,
}

/// Reads the events of a composite's body (`data`, after the packet header).
pub fn parse_composite(data: &[u8], sizes: &IdSizes) -> Result<Composite, EventError> {
    let mut r = Reader::new(data);
    let suspend_policy = r.u8("suspendPolicy")?;
    let count = r.u32("events")?;
    if count > MAX_EVENTS {
        return Err(EventError::TooMany(count));
    }
    let mut events = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let start = data.len() - r.remaining();
        let kind = r.u8("eventKind")?;
        let request_id = r.u32("requestID")?;
        let thread = skip_body(&mut r, kind, sizes)?;
        events.push(Event { kind, request_id, thread, range: start..data.len() - r.remaining() });
    }
    if r.remaining() > 0 {
        return Err(EventError::Trailing(r.remaining()));
    }
    Ok(Composite { suspend_policy, events })
}

/// The suspend policy, kind and request id of a composite's first event, readable without
/// the id sizes.
pub fn first_event(data: &[u8]) -> Option<(u8, u8, u32)> {
    let mut r = Reader::new(data);
    let policy = r.u8("suspendPolicy").ok()?;
    let _count = r.u32("events").ok()?;
    Some((policy, r.u8("eventKind").ok()?, r.u32("requestID").ok()?))
}

/// The body of a composite with `suspend_policy` and the given events of `data`, in order.
pub fn encode_composite<'a>(suspend_policy: u8, data: &[u8], events: impl IntoIterator<Item = &'a Event>) -> Vec<u8> {
    let mut out = vec![suspend_policy, 0, 0, 0, 0];
    let mut n = 0u32;
    for e in events {
        out.extend_from_slice(&data[e.range.clone()]);
        n += 1;
    }
    out[1..5].copy_from_slice(&n.to_be_bytes());
    out
}

/// Reads past one event's fields after its request id; returns its thread.
fn skip_body(r: &mut Reader<'_>, kind: u8, s: &IdSizes) -> Result<Option<u64>, EventError> {
    use kind::*;
    if matches!(kind, CLASS_UNLOAD) {
        r.string("signature")?;
        return Ok(None);
    }
    if kind == VM_DEATH {
        return Ok(None);
    }
    if !matches!(
        kind,
        VM_START | THREAD_START | THREAD_DEATH | SINGLE_STEP | BREAKPOINT | METHOD_ENTRY | METHOD_EXIT
            | METHOD_EXIT_WITH_RETURN_VALUE | EXCEPTION | CLASS_PREPARE | FIELD_ACCESS | FIELD_MODIFICATION
            | MONITOR_CONTENDED_ENTER | MONITOR_CONTENDED_ENTERED | MONITOR_WAIT | MONITOR_WAITED
    ) {
        return Err(EventError::UnknownKind(kind));
    }
    let thread = r.id(s.object, "thread")?;
    let location = |r: &mut Reader<'_>| -> Result<(), ReadError> {
        r.bytes(1 + s.reference_type + s.method + 8, "location").map(|_| ())
    };
    match kind {
        SINGLE_STEP | BREAKPOINT | METHOD_ENTRY | METHOD_EXIT => location(r)?,
        METHOD_EXIT_WITH_RETURN_VALUE => {
            location(r)?;
            skip_value(r, s)?;
        }
        EXCEPTION => {
            location(r)?;
            r.bytes(1 + s.object, "exception")?;
            location(r)?;
        }
        CLASS_PREPARE => {
            r.bytes(1 + s.reference_type, "refType")?;
            r.string("signature")?;
            r.bytes(4, "status")?;
        }
        FIELD_ACCESS | FIELD_MODIFICATION => {
            location(r)?;
            r.bytes(1 + s.reference_type + s.field, "field")?;
            r.bytes(1 + s.object, "object")?;
            if kind == FIELD_MODIFICATION {
                skip_value(r, s)?;
            }
        }
        MONITOR_CONTENDED_ENTER | MONITOR_CONTENDED_ENTERED | MONITOR_WAIT | MONITOR_WAITED => {
            r.bytes(1 + s.object, "monitor")?;
            location(r)?;
            match kind {
                MONITOR_WAIT => r.bytes(8, "timeout").map(|_| ())?,
                MONITOR_WAITED => r.bytes(1, "timed_out").map(|_| ())?,
                _ => {}
            }
        }
        // VM_START, THREAD_START, THREAD_DEATH: the thread is all.
        _ => {}
    }
    Ok(Some(thread))
}

/// Bytes a value of `tag` takes after its tag byte; None for a tag JDWP does not have.
pub fn value_width(tag: u8, s: &IdSizes) -> Option<usize> {
    Some(match tag {
        b'V' => 0,
        b'B' | b'Z' => 1,
        b'C' | b'S' => 2,
        b'F' | b'I' => 4,
        b'D' | b'J' => 8,
        b'[' | b'L' | b's' | b't' | b'g' | b'l' | b'c' => s.object,
        _ => return None,
    })
}

/// Reads past a tagged value.
fn skip_value(r: &mut Reader<'_>, s: &IdSizes) -> Result<(), EventError> {
    let tag = r.u8("value tag")?;
    let len = value_width(tag, s).ok_or(EventError::UnknownTag(tag))?;
    r.bytes(len, "value")?;
    Ok(())
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
