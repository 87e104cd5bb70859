//! Threads known stopped, for the early answers ([`super::early`]): a step request's Set is
//! certain only on a thread libjdwp still knows, that is one that cannot have ended.
//!
//! A thread a stop event suspended is inside libjdwp's event callback, and leaves it only
//! when its suspend count reaches zero with no invoke pending on it (eventHandler.c:
//! reportEvents runs pending invokes in a loop before it returns). So a thread stays known
//! while its count stays above zero, or at zero only to run an invoke. This table keeps, per
//! such thread, a lower bound of that count, whatever order libjdwp handles what was
//! written in:
//!
//! - a stop event adds one to its thread (SUSPEND_ALL: to every thread known, once);
//! - VirtualMachine.Suspend and ThreadReference.Suspend add one once granted (their reply);
//! - a Resume takes one; an invoke takes one from its thread (from every thread, unless
//!   INVOKE_SINGLE_THREADED), and its reply gives it back (libjdwp suspends again before it
//!   replies, in invoker_completeInvokeRequest; a refused invoke never resumed);
//! - a thread that stops while a Resume (or an invoke, or a command not known here) is out
//!   is not known, unless it was stopped when that went out: the VM may handle it after
//!   the stop and take the stop's suspension;
//! - a thread whose count would reach zero is forgotten, unless an invoke on it is out: then
//!   zero is the call running, inside the callback. A Resume of a thread at zero with an
//!   invoke out could be handled after the invoke's suspension as well as before: forgotten.
//!
//!
//! Taking a count at once and giving it back only at the reply (and only to threads known
//! since the command went out) keeps the bound low whatever order the VM handles things in.
//! Two debuggers on one thread are why counts are kept and not just "stopped": one holds the
//! thread by a stop, the other suspends and resumes the VM around the first one's invoke,
//! and the thread stays stopped through all of it.

use std::collections::HashMap;

/// Threads known at most this many (past it, new ones are not known).
const MAX_THREADS: usize = 4096;

/// Invokes and suspends out at most this many (past it, what a new one gives back is not
/// counted: the bound only gets lower).
const MAX_OUT: usize = 64;

/// A command out whose reply gives suspensions back: an invoke (whatever its reply, as a
/// refused invoke never resumed), or a Suspend (once granted).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    /// The threads it gives one back: those known when it went out and ever since (a thread
    /// stopped later may have stopped after the VM's suspension, which then never held it).
    back: Vec<u64>,
    /// The invoke's thread.
    invoke: Option<u64>,
}

/// The table: see the module's documentation.
#[derive(Debug, Default, Clone)]
pub struct Stopped {
    /// By thread: the lower bound of its suspend count, not counting what commands out give
    /// back. Zero only while an invoke on it is out.
    counts: HashMap<u64, u32>,
    /// Invokes and suspends written and not answered, by the id they went out under.
    out: HashMap<u32, Out>,
    /// What may resume threads, written and not answered (Resumes, invokes, commands not
    /// known here), by id. The VM may handle one after a stop it reports before that reply,
    /// and take that stop's suspension: a thread stopped meanwhile is not known. As many as
    /// the commands out (the session's id table bounds them); a list, as an id taken again
    /// may be out twice.
    resuming: HashMap<u32, Vec<Resuming>>,
}

/// A command out that may resume threads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resuming {
    /// Its thread; `None`: every thread.
    thread: Option<u64>,
    /// Threads it cannot take a later stop from: those stopped (count one or more) when it
    /// went out. The count is a lower bound after every command before it is handled, so
    /// such a thread is still in that stop's callback when the VM handles it.
    except: Vec<u64>,
}

impl Resuming {
    fn covers(&self, t: u64) -> bool {
        self.thread.is_none_or(|r| r == t) && !self.except.contains(&t)
    }
}

impl Stopped {
    /// Whether `t` is stopped at an event, cannot have ended, and runs no invoke.
    pub fn is_stopped(&self, t: u64) -> bool {
        self.counts.get(&t).is_some_and(|n| *n > 0) && !self.invoking(t)
    }

    /// A count of `t` as kept (tests).
    pub fn count(&self, t: u64) -> Option<u32> {
        self.counts.get(&t).copied()
    }

    fn invoking(&self, t: u64) -> bool {
        !self.out.is_empty() && self.out.values().any(|o| o.invoke == Some(t))
    }

    /// A stop event's composite suspended its threads (each its own), or with `all`, every
    /// thread once.
    pub fn event(&mut self, all: bool, threads: impl IntoIterator<Item = u64>) {
        if all {
            self.counts.values_mut().for_each(|n| *n += 1);
        }
        let mut seen = Vec::new();
        for t in threads {
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let known = self.counts.len();
            let resumed = self.resuming.values().flatten().any(|r| r.covers(t));
            match self.counts.get_mut(&t) {
                Some(n) if !all => *n += 1,
                Some(_) => {}
                None if known < MAX_THREADS && !resumed => {
                    self.counts.insert(t, 1);
                }
                None => {}
            }
        }
    }

    /// A command went out under `id`: an invoke or a suspend out under the same id was
    /// answered unseen (its asker left), and what it would give back never comes.
    pub fn id_written(&mut self, id: u32) {
        if let Some(Out { invoke: Some(t), .. }) = self.out.remove(&id) {
            self.forget_if_running(t);
        }
    }

    /// VirtualMachine.Suspend (`None`) or ThreadReference.Suspend went out under `id`.
    pub fn suspend_written(&mut self, id: u32, thread: Option<u64>) {
        let back = match thread {
            Some(t) if self.counts.contains_key(&t) => vec![t],
            Some(_) => Vec::new(),
            None => self.counts.keys().copied().collect(),
        };
        if !back.is_empty() && self.out.len() < MAX_OUT {
            self.out.insert(id, Out { back, invoke: None });
        }
    }

    /// A Resume went out under `id`: of thread `t`, or of every thread (`None`).
    pub fn resume_written(&mut self, id: u32, thread: Option<u64>) {
        self.resuming_written(id, thread);
        self.take(thread);
    }

    /// A command not known here went out under `id`: anything may have run, and may run.
    pub fn unknown_written(&mut self, id: u32) {
        self.resuming_written(id, None);
        self.forget_all();
    }

    fn resuming_written(&mut self, id: u32, thread: Option<u64>) {
        let stopped = |t: &u64| self.counts.get(t).is_some_and(|n| *n > 0);
        let except: Vec<u64> = match thread {
            Some(t) => Some(t).filter(stopped).into_iter().collect(),
            None => self.counts.keys().copied().filter(stopped).collect(),
        };
        if thread.is_some() && !except.is_empty() {
            return;
        }
        self.resuming.entry(id).or_default().push(Resuming { thread, except });
    }

    /// One suspension less of `t` (of every known thread: `None`).
    fn take(&mut self, thread: Option<u64>) {
        match thread {
            Some(t) => self.take_one(t),
            None => self.counts.keys().copied().collect::<Vec<_>>().into_iter().for_each(|t| self.take_one(t)),
        }
    }

    /// An invoke on `thread` went out under `id`.
    pub fn invoke_written(&mut self, id: u32, thread: u64, single: bool) {
        if self.counts.contains_key(&thread) && !self.invoking(thread) && self.out.len() < MAX_OUT {
            let back = if single { vec![thread] } else { self.counts.keys().copied().collect() };
            self.out.insert(id, Out { back, invoke: Some(thread) });
        }
        self.resume_written(id, if single { Some(thread) } else { None });
    }

    /// The reply to the command that went out under `id`, with its error code.
    pub fn replied(&mut self, id: u32, error: u16) {
        if let Some(r) = self.resuming.get_mut(&id) {
            r.remove(0);
            if r.is_empty() {
                self.resuming.remove(&id);
            }
        }
        if self.out.is_empty() {
            return;
        }
        let Some(o) = self.out.remove(&id) else { return };
        if o.invoke.is_some() || error == 0 {
            for t in o.back {
                if let Some(n) = self.counts.get_mut(&t) {
                    *n += 1;
                }
            }
        }
        if let Some(t) = o.invoke {
            self.forget_if_running(t);
        }
    }

    /// Anything may have run: nothing is known stopped.
    pub fn forget_all(&mut self) {
        self.counts.clear();
        self.out.values_mut().for_each(|o| o.back.clear());
    }

    /// One suspension of `t` less: forgotten when none is left, unless an invoke on it is out
    /// and this was not its last count (zero then is the call running).
    fn take_one(&mut self, t: u64) {
        let Some(n) = self.counts.get(&t).copied() else { return };
        if n > 1 || (n == 1 && self.invoking(t)) {
            self.counts.insert(t, n - 1);
        } else {
            self.forget(t);
        }
    }

    /// A thread at zero with no invoke out any more may run out of its callback.
    fn forget_if_running(&mut self, t: u64) {
        if self.counts.get(&t) == Some(&0) && !self.invoking(t) {
            self.forget(t);
        }
    }

    /// `t` may run: not known, and given nothing back (if it stops again, it may have
    /// stopped after what was out suspended it).
    fn forget(&mut self, t: u64) {
        self.counts.remove(&t);
        self.out.values_mut().for_each(|o| o.back.retain(|b| *b != t));
    }
}

#[cfg(test)]
#[path = "stopped_tests.rs"]
mod tests;
