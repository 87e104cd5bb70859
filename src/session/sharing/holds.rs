//! Who holds which suspension of a VM that several debuggers share.
//!
//! JDWP counts suspensions per thread: VirtualMachine.Suspend and a SUSPEND_ALL event add one
//! to every thread (and to the count new threads start with), ThreadReference.Suspend and a
//! SUSPEND_EVENT_THREAD event add one to a thread, ThreadReference.Resume takes one from a
//! thread, and VirtualMachine.Resume takes one from *every thread whose count is above zero*,
//! whoever suspended it. Passed through as they are, one debugger's "resume" would release
//! another's breakpoint stop.
//!
//! So every unit of suspension the VM holds is a [`Hold`] here, with the debuggers that hold
//! it. A debugger's own view (what its counts would be if it were alone with the VM) is the
//! number of its holds that cover a thread; the VM's count is the number of holds that cover
//! it for anybody. A debugger's Resume releases only its own holds; the VM hears of it only
//! when a hold loses its last holder, through commands planned (`plan`) to change exactly the
//! counts that must change.
//!
//! A debugger's ThreadReference.Resume on a thread it holds only through a VM-wide hold
//! resumes that thread out of its share of the hold: the hold keeps covering the thread for
//! its other holders, and when the last one leaves it, the thread is not resumed twice.

use std::collections::{BTreeMap, BTreeSet};

/// A debugger connection, by its connection number.
pub type Debugger = u64;
/// A JDWP threadID.
pub type ThreadId = u64;

/// A command the proxy sends the VM to bring its counts in line with the holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmCmd {
    /// VirtualMachine.Suspend.
    SuspendAll,
    /// VirtualMachine.Resume.
    ResumeAll,
    SuspendThread(ThreadId),
    ResumeThread(ThreadId),
}

/// Names a hold, so a suspension the VM refused can be taken back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HoldId(u64);

/// What an event's suspend policy suspended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suspended {
    All,
    Thread(ThreadId),
}

/// One unit of suspension in the VM.
#[derive(Debug, Clone)]
struct Hold {
    id: HoldId,
    scope: Suspended,
    /// Each holder, with the threads it resumed out of its share of a VM-wide hold.
    holders: BTreeMap<Debugger, BTreeSet<ThreadId>>,
}

impl Hold {
    /// Whether `d`'s share of this hold keeps `t` suspended.
    fn covers_for(&self, d: Debugger, t: ThreadId) -> bool {
        match (self.scope, self.holders.get(&d)) {
            (_, None) => false,
            (Suspended::Thread(u), Some(_)) => u == t,
            (Suspended::All, Some(except)) => !except.contains(&t),
        }
    }

    /// Whether the VM holds `t` suspended for this hold (for anybody).
    fn covers(&self, t: ThreadId) -> bool {
        match self.scope {
            Suspended::Thread(u) => u == t && !self.holders.is_empty(),
            Suspended::All => self.holders.values().any(|except| !except.contains(&t)),
        }
    }

    /// Whether it covers threads nobody has named (every thread, and threads started later).
    fn covers_unnamed(&self) -> bool {
        self.scope == Suspended::All && !self.holders.is_empty()
    }
}

/// The suspensions of one VM connection and who holds them.
#[derive(Debug, Default, Clone)]
pub struct Holds {
    /// Oldest first: a Resume releases the most recent hold it can.
    holds: Vec<Hold>,
    next: u64,
}

impl Holds {
    /// `d` sent VirtualMachine.Suspend, which goes to the VM as it is.
    pub fn suspend_all(&mut self, d: Debugger) -> HoldId {
        self.add(Suspended::All, &[d])
    }

    /// `d` sent ThreadReference.Suspend(t), which goes to the VM as it is.
    pub fn suspend_thread(&mut self, d: Debugger, t: ThreadId) -> HoldId {
        self.add(Suspended::Thread(t), &[d])
    }

    /// The VM refused a suspension: it never happened. False when the hold is already gone.
    pub fn cancel(&mut self, id: HoldId) -> bool {
        let before = self.holds.len();
        self.holds.retain(|h| h.id != id);
        self.holds.len() != before
    }

    /// The VM suspended for an event whose parts went to `to`. With nobody to hold it, the
    /// suspension is undone at once: the commands to send are returned.
    pub fn event(&mut self, scope: Suspended, to: &[Debugger]) -> Vec<VmCmd> {
        if !to.is_empty() {
            self.add(scope, to);
            return Vec::new();
        }
        // Every thread it covers has a count of at least one now, so one resume takes exactly
        // this suspension back.
        match scope {
            Suspended::All => vec![VmCmd::ResumeAll],
            Suspended::Thread(t) => vec![VmCmd::ResumeThread(t)],
        }
    }

    /// `d` sent VirtualMachine.Resume: every thread it holds loses one of its holds, as if it
    /// were alone with the VM. Returns what the VM must be sent (empty: answer locally).
    pub fn resume_all(&mut self, d: Debugger) -> Vec<VmCmd> {
        self.change(|s| {
            let latest_all = s.holds.iter().rposition(|h| h.scope == Suspended::All && h.holders.contains_key(&d));
            match latest_all {
                Some(i) => {
                    // Leaving the VM-wide hold releases every thread its share still covered;
                    // threads it had resumed out of it lose one of its other holds instead.
                    let except = s.holds[i].holders.remove(&d).unwrap_or_default();
                    for t in except {
                        if s.debugger_count(d, t) > 0 {
                            s.release_one(d, t);
                        }
                    }
                }
                None => {
                    let threads: BTreeSet<ThreadId> = s
                        .holds
                        .iter()
                        .filter_map(|h| match h.scope {
                            Suspended::Thread(t) if h.holders.contains_key(&d) => Some(t),
                            _ => None,
                        })
                        .collect();
                    for t in threads {
                        s.release_one(d, t);
                    }
                }
            }
        })
    }

    /// `d` sent ThreadReference.Resume(t): one of its holds on `t` is released.
    pub fn resume_thread(&mut self, d: Debugger, t: ThreadId) -> Vec<VmCmd> {
        self.change(|s| {
            if s.debugger_count(d, t) > 0 {
                s.release_one(d, t);
            }
        })
    }

    /// `d` left: every hold it had is released.
    pub fn leave(&mut self, d: Debugger) -> Vec<VmCmd> {
        self.change(|s| {
            for h in &mut s.holds {
                h.holders.remove(&d);
            }
        })
    }

    /// How many holds `d` has (what `list` shows as its suspensions).
    pub fn held_by(&self, d: Debugger) -> usize {
        self.holds.iter().filter(|h| h.holders.contains_key(&d)).count()
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.holds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.holds.is_empty()
    }

    /// The suspend count `d` would see for `t` if it were alone with the VM.
    pub fn debugger_count(&self, d: Debugger, t: ThreadId) -> u32 {
        self.holds.iter().filter(|h| h.covers_for(d, t)).count() as u32
    }

    /// The VM's suspend count for `t`, as these holds account for it.
    pub fn vm_count(&self, t: ThreadId) -> u32 {
        self.holds.iter().filter(|h| h.covers(t)).count() as u32
    }

    /// The debuggers whose holds keep `t` suspended, each once.
    pub fn holders_of(&self, t: ThreadId) -> BTreeSet<Debugger> {
        self.holds.iter().flat_map(|h| h.holders.keys().copied().filter(move |d| h.covers_for(*d, t))).collect()
    }

    /// The debuggers with a share in a VM-wide hold.
    pub fn vm_wide_holders(&self) -> BTreeSet<Debugger> {
        self.holds.iter().filter(|h| h.scope == Suspended::All).flat_map(|h| h.holders.keys().copied()).collect()
    }

    /// The count of a thread no hold names: the VM-wide holds.
    pub fn unnamed_count(&self) -> u32 {
        self.holds.iter().filter(|h| h.covers_unnamed()).count() as u32
    }

    fn add(&mut self, scope: Suspended, holders: &[Debugger]) -> HoldId {
        self.next += 1;
        let id = HoldId(self.next);
        let holders = holders.iter().map(|d| (*d, BTreeSet::new())).collect();
        self.holds.push(Hold { id, scope, holders });
        id
    }

    /// Releases one of `d`'s holds on `t`: its most recent hold on that thread alone, else its
    /// share of the most recent VM-wide hold that still covers `t` for it.
    fn release_one(&mut self, d: Debugger, t: ThreadId) {
        let thread_hold =
            self.holds.iter().rposition(|h| h.scope == Suspended::Thread(t) && h.holders.contains_key(&d));
        if let Some(i) = thread_hold {
            self.holds[i].holders.remove(&d);
            return;
        }
        let all_hold = self.holds.iter().rposition(|h| h.scope == Suspended::All && h.covers_for(d, t));
        if let Some(except) = all_hold.and_then(|i| self.holds[i].holders.get_mut(&d)) {
            except.insert(t);
        }
    }

    /// Every thread a hold names.
    fn named_threads(&self) -> BTreeSet<ThreadId> {
        let mut out = BTreeSet::new();
        for h in &self.holds {
            if let Suspended::Thread(t) = h.scope {
                out.insert(t);
            }
            for except in h.holders.values() {
                out.extend(except.iter().copied());
            }
        }
        out
    }

    /// Applies a change to the holds and returns the commands that move the VM's counts
    /// from what they were to what they are now.
    fn change(&mut self, f: impl FnOnce(&mut Holds)) -> Vec<VmCmd> {
        let named_before = self.named_threads();
        let unnamed_before = self.unnamed_count();
        let before: BTreeMap<ThreadId, u32> = named_before.iter().map(|t| (*t, self.vm_count(*t))).collect();
        f(self);
        self.holds.retain(|h| !h.holders.is_empty());
        let mut threads: Vec<(ThreadId, u32, u32)> = Vec::new();
        for t in named_before.union(&self.named_threads()) {
            // A thread named only now was an unnamed one before.
            let was = before.get(t).copied().unwrap_or(unnamed_before);
            threads.push((*t, was, self.vm_count(*t)));
        }
        plan(unnamed_before, self.unnamed_count(), &threads)
    }
}

/// The commands that move the VM from the `before` counts to the `after` counts: unnamed
/// threads (those no hold names) from `unnamed_before` to `unnamed_after`, and each named
/// thread `(t, before, after)` likewise.
///
/// Only VirtualMachine.Resume lowers the count of threads nobody named (and the count new
/// threads start with), but it lowers *every* suspended thread. A named thread whose count
/// must stay is suspended once more just before it, so it comes out as it was and never
/// runs in between (the VM handles one connection's commands in order).
pub fn plan(unnamed_before: u32, unnamed_after: u32, threads: &[(ThreadId, u32, u32)]) -> Vec<VmCmd> {
    let mut out = Vec::new();
    let mut now: Vec<(ThreadId, u32, u32)> = threads.to_vec();
    for _ in unnamed_before..unnamed_after {
        out.push(VmCmd::SuspendAll);
        for (_, count, _) in &mut now {
            *count += 1;
        }
    }
    for _ in unnamed_after..unnamed_before {
        for (t, count, target) in &mut now {
            if *count > *target {
                *count -= 1;
            } else if *count > 0 {
                out.push(VmCmd::SuspendThread(*t));
            }
        }
        out.push(VmCmd::ResumeAll);
    }
    for (t, count, target) in now {
        for _ in target..count {
            out.push(VmCmd::ResumeThread(t));
        }
        for _ in count..target {
            out.push(VmCmd::SuspendThread(t));
        }
    }
    out
}

#[cfg(test)]
#[path = "holds_tests.rs"]
mod tests;
