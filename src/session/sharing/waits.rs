//! Invokes that wait for another debugger to resume their thread.
//!
//! An invoke (ClassType.InvokeMethod and NewInstance, InterfaceType.InvokeMethod,
//! ObjectReference.InvokeMethod) runs on a thread its debugger stopped: the VM takes one
//! suspension off the thread (off every thread, unless INVOKE_SINGLE_THREADED) for the call
//! and puts it back after. When another debugger holds the same thread too, the thread's
//! count stays above zero and the call cannot start until that debugger resumes: the VM
//! answers only then. That is what JDWP does with one debugger that suspended a thread twice,
//! so the proxy lets the invoke wait, but never silently: this table knows each such wait
//! from the moment the invoke is forwarded until its reply, its debugger leaves, or nobody
//! else holds the thread any more, and `list` and the page show it.
//!
//! ThreadReference.Resume and VirtualMachine.Resume never wait: the VM answers at once. But a
//! Resume can leave its debugger's threads suspended, because another debugger holds them
//! too: the user pressed resume and nothing runs. That is kept here as well ([`Waits::resumed`]),
//! until the debugger holds the thread again, nobody else does, or it leaves. HotSpot pops
//! frames (StackFrame.PopFrames) by resuming the thread itself, whatever the counts: a pop
//! never waits, and is not here.

use std::collections::{BTreeMap, BTreeSet};

use super::holds::{Debugger, Holds, ThreadId};
use crate::jdwp::events::IdSizes;
use crate::jdwp::reader::Reader;

/// The invoke commands: (command set, command).
pub const INVOKES: [(u8, u8); 4] = [(3, 3), (3, 4), (5, 1), (9, 6)];

/// Whether a command is an invoke.
pub fn is_invoke(set: u8, cmd: u8) -> bool {
    INVOKES.contains(&(set, cmd))
}

/// The thread an invoke runs on, read from its data with the VM's id sizes: the class
/// (referenceTypeID) or object (objectID) comes first, then the thread (objectID).
pub fn invoke_thread(set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) -> Option<ThreadId> {
    let first = match (set, cmd) {
        (3, 3) | (3, 4) | (5, 1) => sizes.reference_type,
        (9, 6) => sizes.object,
        _ => return None,
    };
    let mut r = Reader::new(data);
    r.bytes(first, "class or object").ok()?;
    r.id(sizes.object, "thread").ok()
}

/// The other debuggers an invoke by `d` on `t` waits for: those whose holds keep `t`
/// suspended, when the thread's count is above one (the call takes one off). Empty when the
/// call can run.
pub fn blockers(holds: &Holds, d: Debugger, t: ThreadId) -> BTreeSet<Debugger> {
    if holds.vm_count(t) < 2 {
        return BTreeSet::new();
    }
    let mut others = holds.holders_of(t);
    others.remove(&d);
    others
}

/// One invoke waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub thread: ThreadId,
    /// The invoke's (command set, command).
    pub command: (u8, u8),
    /// The debuggers it waits for.
    pub holders: BTreeSet<Debugger>,
    /// When it was sent, in milliseconds since the Unix epoch.
    pub since_ms: u64,
}

/// A Resume that left threads suspended: another debugger holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StillHeld {
    /// The thread of a ThreadReference.Resume; `None` for a VirtualMachine.Resume, whose
    /// threads the other debuggers' VM-wide suspensions keep.
    pub thread: Option<ThreadId>,
    /// The debuggers that hold them.
    pub holders: BTreeSet<Debugger>,
    /// When the Resume came, in milliseconds since the Unix epoch.
    pub since_ms: u64,
}

/// Who else keeps `d`'s resumed thread (or, for `None`, every thread) suspended: empty once
/// `d` holds it again itself (or holds anything, for `None`) or nobody else does.
fn still_held_by(holds: &Holds, d: Debugger, thread: Option<ThreadId>) -> BTreeSet<Debugger> {
    let (mine, mut others) = match thread {
        Some(t) => (holds.debugger_count(d, t) > 0, holds.holders_of(t)),
        None => (holds.held_by(d) > 0, holds.vm_wide_holders()),
    };
    if mine {
        return BTreeSet::new();
    }
    others.remove(&d);
    others
}

/// The invokes waiting on one VM connection, by debugger and the debugger's own request id;
/// and the Resumes that left threads suspended, by debugger and thread.
#[derive(Debug, Default, Clone)]
pub struct Waits {
    waits: BTreeMap<(Debugger, u32), Wait>,
    held: BTreeMap<(Debugger, Option<ThreadId>), StillHeld>,
}

impl Waits {
    /// `d` sent invoke `id` on `t`: recorded (and returned, to be told) when another
    /// debugger's hold keeps the thread from running it.
    pub fn sent(&mut self, d: Debugger, id: u32, command: (u8, u8), t: ThreadId, holds: &Holds, since_ms: u64) -> Option<&Wait> {
        let holders = blockers(holds, d, t);
        if holders.is_empty() {
            return None;
        }
        self.waits.insert((d, id), Wait { thread: t, command, holders, since_ms });
        self.waits.get(&(d, id))
    }

    /// The reply to `d`'s request `id` came: its wait, if it had one, is over.
    pub fn answered(&mut self, d: Debugger, id: u32) -> Option<Wait> {
        if self.waits.is_empty() {
            return None;
        }
        self.waits.remove(&(d, id))
    }

    /// `d`'s Resume (of thread `t`, or of the VM: `None`) was carried out: recorded (and
    /// returned, to be told) when other debuggers still keep what it resumed suspended.
    pub fn resumed(&mut self, d: Debugger, thread: Option<ThreadId>, holds: &Holds, since_ms: u64) -> Option<&StillHeld> {
        let holders = still_held_by(holds, d, thread);
        if holders.is_empty() {
            return None;
        }
        // A Resume of the VM covers each thread it resumed before.
        if thread.is_none() {
            self.held.retain(|(w, _), _| *w != d);
        }
        let h = self.held.entry((d, thread)).or_insert(StillHeld { thread, holders: BTreeSet::new(), since_ms });
        h.holders = holders;
        Some(h)
    }

    /// The holds changed (a Resume, a suspension, an event, a debugger leaving): each wait
    /// now waits for the debuggers that still hold its thread; those nobody blocks any more
    /// are over (the VM runs the call and its reply follows), and so are resumed threads held
    /// again by their debugger or by nobody else. True when anything changed.
    pub fn holds_changed(&mut self, holds: &Holds) -> bool {
        let mut changed = false;
        self.waits.retain(|(d, _), w| {
            let now = blockers(holds, *d, w.thread);
            changed |= now != w.holders;
            w.holders = now;
            !w.holders.is_empty()
        });
        self.held.retain(|(d, _), h| {
            let now = still_held_by(holds, *d, h.thread);
            changed |= now != h.holders;
            h.holders = now;
            !h.holders.is_empty()
        });
        changed
    }

    /// `d` left: its waits are gone. True when it had any.
    pub fn leave(&mut self, d: Debugger) -> bool {
        let before = self.waits.len() + self.held.len();
        self.waits.retain(|(w, _), _| *w != d);
        self.held.retain(|(w, _), _| *w != d);
        self.waits.len() + self.held.len() != before
    }

    /// What `d` resumed that others keep suspended, the VM first, then by thread.
    pub fn held_of(&self, d: Debugger) -> impl Iterator<Item = &StillHeld> {
        self.held.range((d, None)..=(d, Some(ThreadId::MAX))).map(|(_, h)| h)
    }

    /// `d`'s waits, oldest request id first.
    pub fn of(&self, d: Debugger) -> impl Iterator<Item = &Wait> {
        self.waits.range((d, 0)..=(d, u32::MAX)).map(|(_, w)| w)
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.waits.len() + self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waits.is_empty() && self.held.is_empty()
    }
}

#[cfg(test)]
#[path = "waits_tests.rs"]
mod tests;
