//! Which breakpoint requests libjdwp cannot refuse (the early-answers row "EventRequest.Set
//! (a breakpoint)", see [`super::early`]): pure, from the request's bytes and the line table
//! the near side holds for its method.
//!
//! libjdwp reads a breakpoint's LocationOnly modifier (eventFilter.c: readAndSetFilters)
//! with inStream_readClassRef, which refuses only an id that is no live class, and sets the
//! breakpoint in setBreakpoint: JVMTI SetBreakpoint, which refuses a method id that is none
//! (JVMTI_ERROR_INVALID_METHODID), a method without code and a location outside
//! [0, code size) (JVMTI_ERROR_INVALID_LOCATION); a second breakpoint at one location is no
//! error (libjdwp sets the JVMTI breakpoint only for the first). So a request is certain
//! when its class and method are the ones of a Method.LineTable answer the near side holds
//! (the near cache keeps it only while the class is loaded and not redefined: it drops it on
//! the class's unload and on any RedefineClasses) and its location lies within that table's
//! range (start 0 and end the last code index for a method with code; -1 for a native one).

use crate::jdwp::events::{kind, IdSizes};
use crate::jdwp::reader::Reader;

/// JDWP modifier kinds a certain breakpoint request may carry.
const COUNT: u8 = 1;
const LOCATION_ONLY: u8 = 7;

/// Where a breakpoint request asks to stop: its class, method and code index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub class: u64,
    pub method: u64,
    pub index: u64,
}

/// The place of an EventRequest.Set (`data`: its data) that is a breakpoint request whose
/// only modifiers are one LocationOnly and Counts (> 0), with suspend policy NONE,
/// EVENT_THREAD or ALL; None for any other request or data that does not parse.
pub fn breakpoint_place(data: &[u8], sizes: &IdSizes) -> Option<Place> {
    let mut r = Reader::new(data);
    if r.u8("eventKind").ok()? != kind::BREAKPOINT || r.u8("suspendPolicy").ok()? > 2 {
        return None;
    }
    let mut place = None;
    for _ in 0..r.u32("modifiers").ok()? {
        match r.u8("modKind").ok()? {
            COUNT if r.i32("count").ok()? > 0 => {}
            LOCATION_ONLY if place.is_none() => {
                r.u8("typeTag").ok()?;
                let class = r.id(sizes.reference_type, "classID").ok()?;
                let method = r.id(sizes.method, "methodID").ok()?;
                let index = r.id(8, "index").ok()?;
                place = Some(Place { class, method, index });
            }
            _ => return None,
        }
    }
    (r.remaining() == 0).then_some(place)?
}

/// The code range (start, end) of a Method.LineTable reply (`data`: start, end, the lines),
/// None when it does not parse or the method has no code (a native method's -1).
pub fn code_range(data: &[u8]) -> Option<(u64, u64)> {
    let mut r = Reader::new(data);
    let (start, end) = (r.id(8, "start").ok()? as i64, r.id(8, "end").ok()? as i64);
    let lines = r.u32("lines").ok()?;
    for _ in 0..lines {
        r.bytes(8, "lineCodeIndex").ok()?;
        r.i32("lineNumber").ok()?;
    }
    (r.remaining() == 0 && start >= 0 && end >= start).then_some((start as u64, end as u64))
}

/// Whether the breakpoint request `data` is certain to be granted, given the line table the
/// near side holds for a (class, method): `line_table` gives that reply's data, if held.
pub fn certain(data: &[u8], sizes: &IdSizes, line_table: &dyn Fn(u64, u64) -> Option<Vec<u8>>) -> bool {
    let Some(p) = breakpoint_place(data, sizes) else { return false };
    if p.class == 0 || p.method == 0 {
        return false;
    }
    line_table(p.class, p.method).and_then(|t| code_range(&t)).is_some_and(|(start, end)| (start..=end).contains(&p.index))
}
