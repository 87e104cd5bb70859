//! The near side's gathered answers for one VM connection: the latest stop's, what may
//! still be served of them ([`super::validity::Live`]), and how many times each object id
//! may still be given out ([`super::compose::Budget`]). Pure: the session tells it every
//! command it writes to the VM and every event it reads, and asks it for a debugger's
//! command before forwarding.
//!
//! Only the latest stop's answers are kept: any later event drops an earlier stop's (see
//! the validity table), so a new set replaces the old. Most answers are served by the exact
//! bytes of the command they were read for; the four value reads (StackFrame, ObjectReference,
//! ReferenceType and ArrayReference GetValues) are composed from every value read
//! ([`super::compose`]). An answer naming object ids is served only while each id's budget
//! lasts: the VM counted each id as often as it wrote it in the gathered replies, and a
//! debugger disposes as many as it was given. The budget outlives a stop (the VM's counts
//! do) and is kept for the connection.

use std::collections::HashMap;

use super::compose::{self, Budget, Values};
use super::relay::Answers;
use super::validity::{classify, Answer, Happening, Live};
use super::Key;
use crate::jdwp::events::IdSizes;

#[derive(Debug)]
struct Current {
    event_id: u32,
    thread: u64,
    sizes: IdSizes,
    live: Live,
    /// Answers served by their exact command bytes.
    exact: HashMap<Key, Vec<u8>>,
    /// Values the four GetValues commands are composed from.
    values: Values,
}

#[derive(Debug, Default)]
pub struct Store {
    current: Option<Current>,
    budget: Budget,
}

/// Whether an answer of this kind is composed from values rather than served by its bytes.
fn composed(a: Answer) -> bool {
    matches!(a, Answer::Locals | Answer::ObjectFields | Answer::Statics | Answer::ArrayValues)
}

/// The object ids an answer served by its bytes gives a debugger (the VM counted each):
/// `this`, the threads of AllThreads; None when they cannot be read.
fn object_ids(a: Answer, reply: &[u8], sizes: &IdSizes) -> Option<Vec<u64>> {
    match a {
        Answer::ThisObject => compose::this_object(reply, sizes),
        Answer::Threads => compose::all_threads(reply, sizes),
        _ => Some(Vec::new()),
    }
}

impl Store {
    /// A stop's answers came (before its event). `in_flight`: the commands written to the VM
    /// whose replies have not come yet, by command set and command.
    pub fn arrived(&mut self, a: Answers, sizes: IdSizes, in_flight: impl IntoIterator<Item = (u8, u8)>) {
        let happened: Vec<Happening> = in_flight.into_iter().map(|(set, cmd)| classify(set, cmd, &[], &sizes, a.thread)).collect();
        let live = Live::new(a.suspend_policy, happened);
        let (mut exact, mut values) = (HashMap::new(), Values::default());
        for g in a.answers {
            let Some(kind) = Answer::of_command(g.key.set, g.key.cmd, &g.key.data, &sizes, a.thread) else { continue };
            if composed(kind) {
                let ids = values.learn(g.key.set, g.key.cmd, &g.key.data, &g.reply, &sizes);
                self.budget.add(&ids);
            } else {
                match object_ids(kind, &g.reply, &sizes) {
                    Some(ids) => self.budget.add(&ids),
                    // Ids it names that cannot be read: never served.
                    None => continue,
                }
                exact.insert(g.key, g.reply);
            }
        }
        self.current = Some(Current { event_id: a.event_id, thread: a.thread, sizes, live, exact, values });
        self.tidy();
    }

    /// An event packet read from the VM, by its id.
    pub fn event(&mut self, id: u32) {
        if let Some(c) = &mut self.current {
            c.live.observe(if id == c.event_id { Happening::Anchor } else { Happening::Event });
        }
        self.tidy();
    }

    /// A command written to the VM (by any debugger, or by jdwpmux itself); `data` empty
    /// when only its head is known (a command streamed in pieces).
    pub fn command(&mut self, set: u8, cmd: u8, data: &[u8]) {
        if let Some(c) = &mut self.current {
            c.live.observe(classify(set, cmd, data, &c.sizes, c.thread));
        }
        self.tidy();
    }

    /// The answer to a debugger's command, when a gathered one may be served: the VM's reply
    /// data (error code 0), for a reply under the debugger's id.
    pub fn lookup(&mut self, set: u8, cmd: u8, data: &[u8]) -> Option<Vec<u8>> {
        let c = self.current.as_ref()?;
        let answer = Answer::of_command(set, cmd, data, &c.sizes, c.thread)?;
        if !c.live.serves(answer) {
            return None;
        }
        let (reply, ids) = if composed(answer) {
            c.values.compose(set, cmd, data, &c.sizes)?
        } else {
            let reply = c.exact.get(&Key::new(set, cmd, data.to_vec()))?.clone();
            let ids = object_ids(answer, &reply, &c.sizes)?;
            (reply, ids)
        };
        self.budget.spend(&ids).then_some(reply)
    }

    /// How many exact answers are held, and whether values are (for stats and tests).
    pub fn len(&self) -> usize {
        self.current.as_ref().map_or(0, |c| c.exact.len() + usize::from(!c.values.is_empty()))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many more times `id` may be given to a debugger.
    pub fn budget_of(&self, id: u64) -> u32 {
        self.budget.left(id)
    }

    /// Forgets a set nothing is left of.
    fn tidy(&mut self) {
        if self.current.as_ref().is_some_and(|c| c.live.spent() || (c.exact.is_empty() && c.values.is_empty())) {
            self.current = None;
        }
    }
}
