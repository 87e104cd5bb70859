//! The String an invoke returned, read on the VM's host with the invoke's reply
//! ([`super::relay`], [`super::plan::Plan::at_invoke`]) and answered near when a debugger
//! asks its StringReference.Value, as an IDE does next to show a `toString()`. Pure: the
//! session tells it every command it writes to the VM, every event and every reply it reads.
//!
//! A String's value never changes; what could make the VM answer otherwise is the string
//! being collected (INVALID_OBJECT), and nothing but the agent's weak reference holds a
//! String an invoke returned. So the answer is served only while no Java code can have run
//! and nothing can have allocated since it was read:
//!
//! - every thread was suspended when it was read: a stop of suspend policy ALL was read with
//!   nothing in flight that may resume a thread, and since then only reads, suspensions,
//!   writes of values and invokes were written (libjdwp suspends again, before it replies,
//!   what an invoke resumed, and a thread started meanwhile is suspended on start or by that
//!   suspension: threadControl's suspendAllCount);
//! - nothing but a read that allocates nothing or a suspension was in flight when it came
//!   (the invoke itself aside), or written since; no event was read since (an event says a
//!   thread ran);
//! - the invoke's reply came, error NONE, returning that very String (its id): an answer is
//!   served only for the id its reply named, and only by the exact bytes of the command.
//!
//! The latest answer read is kept for the connection to compare the VM's own reply with,
//! when a debugger's StringReference.Value of that string goes to the VM anyway: error NONE
//! with other bytes is a defect (the caller counts it with the early answers' differences);
//! INVALID_OBJECT is the string collected after the answer was dropped.

use super::relay::Answers;
use super::validity::{classify, Happening};
use super::Key;
use crate::jdwp::events::{suspend, IdSizes};

/// StringReference.Value.
pub const STRING_VALUE: (u8, u8) = (10, 1);
/// Reads that allocate in the VM's heap (a collection may follow): VirtualMachine.CreateString,
/// ArrayType.NewInstance.
const ALLOCATING: [(u8, u8); 2] = [(1, 11), (4, 1)];
/// Debuggers' StringReference.Value of the latest string awaiting their reply, at most.
const MAX_COMPARED: usize = 16;

/// Whether a command written to the VM keeps every thread suspended.
fn keeps_suspended(h: Happening) -> bool {
    matches!(h, Happening::Read | Happening::Suspend | Happening::Invoke | Happening::SetLocals { .. } | Happening::SetFields)
}

/// Whether a command written to the VM keeps an invoke's String as the VM would answer it.
fn keeps_answer(set: u8, cmd: u8, h: Happening) -> bool {
    matches!(h, Happening::Read | Happening::Suspend) && !ALLOCATING.contains(&(set, cmd))
}

/// A command's kind, by its head (a thread in it counts as any).
fn kind(set: u8, cmd: u8, sizes: &IdSizes) -> Happening {
    classify(set, cmd, &[], sizes, 0)
}

#[derive(Debug)]
struct Held {
    /// The invoke's id on the VM connection.
    invoke: u32,
    string: u64,
    key: Key,
    reply: Vec<u8>,
    sizes: IdSizes,
    /// The invoke's reply came and returned `string`.
    confirmed: bool,
}

/// A difference between the VM's reply and the answer read on the VM's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Differed {
    pub key: Key,
    pub answer: Vec<u8>,
    pub vm_error: u16,
    pub vm_reply: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Invoked {
    all_suspended: bool,
    held: Option<Held>,
    last: Option<(Key, Vec<u8>)>,
    /// Ids of debuggers' StringReference.Value of `last`'s string written to the VM.
    compared: std::collections::VecDeque<u32>,
}

impl Invoked {
    /// An Event.Composite read from the VM, with the commands in flight (by command set and
    /// command) when it came.
    pub fn event(&mut self, policy: u8, in_flight: impl IntoIterator<Item = (u8, u8)>, sizes: &IdSizes) {
        self.held = None;
        self.all_suspended = policy == suspend::ALL && in_flight.into_iter().all(|(set, cmd)| keeps_suspended(kind(set, cmd, sizes)));
    }

    /// A command written to the VM under `id` (any debugger's, or jdwpmux's own; `data`
    /// empty when only its head is known).
    pub fn command(&mut self, id: u32, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) {
        let h = kind(set, cmd, sizes);
        self.all_suspended &= keeps_suspended(h);
        if !keeps_answer(set, cmd, h) {
            self.held = None;
        }
        if (set, cmd) == STRING_VALUE && self.last.as_ref().is_some_and(|(k, _)| k.data == data) {
            if self.compared.len() >= MAX_COMPARED {
                self.compared.pop_front();
            }
            self.compared.push_back(id);
        }
    }

    /// A set of answers read for no stop (suspend policy NONE) came, before the reply to the
    /// command of id `a.event_id`; `in_flight`: the commands written to the VM and not
    /// answered yet, by id, command set and command.
    pub fn arrived(&mut self, a: &Answers, sizes: IdSizes, in_flight: impl IntoIterator<Item = (u32, u8, u8)>) {
        if a.suspend_policy != suspend::NONE {
            return;
        }
        let Some(g) = a.answers.iter().find(|g| (g.key.set, g.key.cmd) == STRING_VALUE) else { return };
        let Ok(string) = crate::jdwp::reader::Reader::new(&g.key.data).id(sizes.object, "string") else { return };
        if g.key.data.len() != sizes.object {
            return;
        }
        self.last = Some((g.key.clone(), g.reply.clone()));
        self.compared.clear();
        let quiet = in_flight.into_iter().filter(|(id, _, _)| *id != a.event_id).all(|(_, set, cmd)| keeps_answer(set, cmd, kind(set, cmd, &sizes)));
        self.held = (self.all_suspended && quiet).then(|| Held { invoke: a.event_id, string, key: g.key.clone(), reply: g.reply.clone(), sizes, confirmed: false });
    }

    /// A whole reply read from the VM, to the command of id `id`: the invoke's confirms its
    /// String (or drops it); a debugger's StringReference.Value of the latest string is
    /// compared with its answer.
    pub fn replied(&mut self, id: u32, error: u16, data: &[u8]) -> Option<Differed> {
        if let Some(h) = &mut self.held {
            if h.invoke == id && !h.confirmed {
                let returned = if error == 0 { super::plan::invoked_string(data, &h.sizes) } else { None };
                if returned == Some(h.string) {
                    h.confirmed = true;
                } else {
                    self.held = None;
                }
            }
        }
        let at = self.compared.iter().position(|c| *c == id)?;
        self.compared.remove(at);
        let (key, answer) = self.last.as_ref()?;
        (error == 0 && data != answer.as_slice()).then(|| Differed { key: key.clone(), answer: answer.clone(), vm_error: error, vm_reply: data.to_vec() })
    }

    /// The answer to a debugger's command, when the invoke's String may be served.
    pub fn lookup(&self, set: u8, cmd: u8, data: &[u8]) -> Option<Vec<u8>> {
        let h = self.held.as_ref().filter(|h| h.confirmed)?;
        ((set, cmd) == STRING_VALUE && h.key.data == data).then(|| h.reply.clone())
    }

    /// Whether an answer may be served now (for tests).
    pub fn serving(&self) -> bool {
        self.held.as_ref().is_some_and(|h| h.confirmed)
    }
}
