//! The near side's gathered answers for one VM connection: the latest stop's, what may
//! still be served of them ([`super::validity::Live`]), and which have been served. Pure:
//! the session tells it every command it writes to the VM and every event it reads, and
//! asks it for a debugger's command before forwarding.
//!
//! Only the latest stop's answers are kept: any later event drops an earlier stop's (see
//! the validity table), so a new set replaces the old. An answer that may name object ids
//! ([`Answer::once`]) is served once and then forgotten, so the VM's count of each id stays
//! the number of times debuggers were given it.

use std::collections::HashMap;

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
    answers: HashMap<Key, Vec<u8>>,
}

#[derive(Debug, Default)]
pub struct Store {
    current: Option<Current>,
}

impl Store {
    /// A stop's answers came (before its event). `in_flight`: the commands written to the VM
    /// whose replies have not come yet, by command set and command.
    pub fn arrived(&mut self, a: Answers, sizes: IdSizes, in_flight: impl IntoIterator<Item = (u8, u8)>) {
        let happened: Vec<Happening> = in_flight.into_iter().map(|(set, cmd)| classify(set, cmd, &[], &sizes, a.thread)).collect();
        let live = Live::new(a.suspend_policy, happened);
        let answers = a.answers.into_iter().filter(|g| Answer::of(g.key.set, g.key.cmd).is_some()).map(|g| (g.key, g.reply)).collect();
        self.current = Some(Current { event_id: a.event_id, thread: a.thread, sizes, live, answers });
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
        let answer = Answer::of(set, cmd)?;
        let c = self.current.as_mut()?;
        if !c.live.serves(answer) {
            return None;
        }
        let key = Key::new(set, cmd, data.to_vec());
        let reply = if answer.once() { c.answers.remove(&key) } else { c.answers.get(&key).cloned() };
        self.tidy();
        reply
    }

    /// How many answers are held (for stats and tests).
    pub fn len(&self) -> usize {
        self.current.as_ref().map_or(0, |c| c.answers.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets a set nothing is left of.
    fn tidy(&mut self) {
        if self.current.as_ref().is_some_and(|c| c.live.spent() || c.answers.is_empty()) {
            self.current = None;
        }
    }
}
