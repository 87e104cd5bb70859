//! The near answers of one VM, behind one interface: the near cache (`nearcache`), a stop's
//! answers gathered on the VM's host (`remote::stop_answers::store`), and early answers
//! (`remote::stop_answers::early`), with whether this connection answers near at all. The debugger side
//! asks `ask` ("answer near, or forward?"); the VM side tells it what was written and read.
//! Every method does nothing on a connection that does not answer near, so the callers
//! need not check.

use bytes::Bytes;
use tracing::{debug, warn};

use super::ids::Entry;
use crate::jdwp::packet::error::ABSENT_INFORMATION;
use super::nearcache::{commands, immutable, Key, Lookup, NearCache};
use crate::remote::stop_answers::early::{Early, Held, Pending};
use crate::remote::stop_answers::inband;
use crate::remote::stop_answers::invoked::{Differed, Invoked};
use crate::remote::stop_answers::store::Store;
use crate::jdwp::events::{kind, parse_composite, suspend, IdSizes};
use crate::jdwp::packet::error;
use crate::jdwp::reader::Reader;
use crate::jdwp::{Header, Packet};
use crate::stats::near::Source;

/// Id sizes to read a command's thread id with before the VM said its own (HotSpot's).
pub(super) const SIZES_UNTIL_KNOWN: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };

/// What to do with a debugger's whole command.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Asked {
    /// Answer it with these reply bytes (after the header).
    Answer(Bytes, Source),
    /// Answer it with this error code and no data.
    Refuse(u16, Source),
    /// Forward it; with a key, its reply may be kept (`NearCache::sent`); `missed` when the
    /// cache could have answered it had it known.
    Forward { key: Option<Key>, missed: bool },
}

impl Asked {
    const PASS: Asked = Asked::Forward { key: None, missed: false };
}

/// The near answers of the session; the cache outlives connections, the rest is per
/// connection (`new_connection`).
#[derive(Default)]
pub(super) struct NearAnswers {
    /// Whether this connection answers near (`--near-cache`, and where the VM is).
    on: bool,
    /// Answers that never change, kept for every debugger of this connection.
    pub cache: NearCache,
    /// The proxy's own ClassUnload request on this connection, once the VM granted it.
    pub unload_request: Option<u32>,
    /// The latest stop's answers gathered on the VM's host.
    gathered: Store,
    /// The String the latest invoke returned, read on the VM's host with its reply.
    invoked: Invoked,
    /// What early answers must know of this connection.
    pub early: Early,
    /// Early answers given, until the VM's reply is compared with each.
    pub early_given: Pending,
}

impl NearAnswers {
    /// A new VM connection, answering near or not.
    pub fn new_connection(&mut self, on: bool) {
        self.cache.new_connection();
        self.on = on;
        self.unload_request = None;
        self.gathered = Default::default();
        self.invoked = Default::default();
        self.early = Default::default();
        self.early_given.clear();
    }

    pub fn on(&self) -> bool {
        self.on
    }

    /// A debugger's whole command: answered from the stop's gathered answers or the cache,
    /// or forwarded. Commands that may change kept answers drop them here, before they go.
    pub fn ask(&mut self, p: &Packet, sizes: Option<IdSizes>) -> Asked {
        if !self.on {
            return Asked::PASS;
        }
        let h = p.header();
        if let Some(answer) = self.gathered.lookup(h.cmd_set(), h.cmd(), p.data()) {
            return Asked::Answer(answer.into(), Source::Gathered);
        }
        if let Some(answer) = self.invoked.lookup(h.cmd_set(), h.cmd(), p.data()) {
            return Asked::Answer(answer.into(), Source::Gathered);
        }
        let what = (h.cmd_set(), h.cmd());
        if what == commands::REDEFINE_CLASSES {
            self.cache.redefine(Some(p.data()));
        } else if what == commands::DISPOSE_OBJECTS {
            self.cache.disposed(p.data());
        }
        if immutable(what.0, what.1).is_none() && !commands::watched(what.0, what.1) {
            return Asked::PASS;
        }
        if let Some(s) = sizes {
            self.cache.set_sizes(s);
        }
        match self.cache.lookup(what.0, what.1, p.data()) {
            Lookup::Hit(answer) => Asked::Answer(answer, Source::Cache),
            Lookup::Refused(error) => Asked::Refuse(error, Source::Cache),
            Lookup::Miss(key) => Asked::Forward { key: Some(key), missed: true },
            Lookup::Watch(key) => Asked::Forward { key: Some(key), missed: false },
            Lookup::Pass => Asked::PASS,
        }
    }

    /// The head of a large command streamed to the VM: only its kind is known.
    pub fn streamed_command(&mut self, set: u8, cmd: u8) {
        if !self.on {
            return;
        }
        if (set, cmd) == commands::REDEFINE_CLASSES {
            self.cache.redefine(None);
        } else if (set, cmd) == commands::DISPOSE_OBJECTS {
            self.cache.disposed(&[]);
        }
    }

    /// The proxy's own reply to `set`/`cmd` (Version, IDSizes, a seeded fact) is the answer
    /// a debugger will ask for.
    pub fn seed(&mut self, set: u8, cmd: u8, p: &Packet) {
        if self.on && p.header().error_code() == error::NONE {
            self.cache.seed(set, cmd, p.data());
        }
    }

    /// The reply to the proxy's ClassUnload request.
    pub fn unload_watch_replied(&mut self, p: &Packet) {
        let granted = p.data().get(..4).filter(|_| p.header().error_code() == error::NONE);
        match granted {
            Some(b) => {
                self.unload_request = Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                self.cache.watching_unloads();
            }
            None => debug!(error = p.header().error_code(), "the VM refused a ClassUnload request: answers about types are not kept"),
        }
    }

    /// A whole VM reply to a debugger's command, before it is relayed: a difference from the
    /// String read with an invoke's reply is returned (a defect).
    pub fn replied(&mut self, conn: u64, e: &Entry, proxy_id: u32, p: &Packet) -> Option<Differed> {
        if !self.on {
            return None;
        }
        let differed = self.invoked.replied(proxy_id, p.header().error_code(), p.data());
        if self.on && (immutable(e.cmd_set, e.cmd).is_some() || commands::watched(e.cmd_set, e.cmd)) {
            self.cache.replied(proxy_id, conn, e.cmd_set, e.cmd, p.header().error_code(), p.data());
        }
        differed
    }

    /// A command written to the VM (`data` empty for a streamed command's head): what the
    /// gathered answers and the early answers must know of it.
    pub fn told_vm(&mut self, h: &Header, data: &[u8], sizes: Option<IdSizes>) {
        if !self.on {
            return;
        }
        self.gathered.command(h.cmd_set(), h.cmd(), data);
        let sizes = sizes.unwrap_or(SIZES_UNTIL_KNOWN);
        self.invoked.command(h.id, h.cmd_set(), h.cmd(), data, &sizes);
        let cache = &self.cache;
        let line_table = |class, method| cache.line_table(&sizes, class, method);
        let lasting_class = |class| cache.lasting_class(class);
        let held = Held { line_table: &line_table, lasting_class: &lasting_class };
        self.early.written_with(h.id, h.cmd_set(), h.cmd(), data, &sizes, &held);
    }

    /// The early reply to a debugger's command, if the table gives one here and now (the
    /// caller says whether the VM and the moment allow early answers at all).
    pub fn early_answer(&self, p: &Packet, sizes: IdSizes) -> Option<Vec<u8>> {
        if !self.on {
            return None;
        }
        let h = p.header();
        let cache = &self.cache;
        let line_table = |class, method| cache.line_table(&sizes, class, method);
        let lasting_class = |class| cache.lasting_class(class);
        let held = Held { line_table: &line_table, lasting_class: &lasting_class };
        self.early.answer_with(h.cmd_set(), h.cmd(), p.data(), &sizes, &held)
    }

    /// An Event.Composite read from the VM, before it is routed, with the commands in flight
    /// to the VM: what the gathered and early answers must know of it.
    pub fn event(&mut self, p: &Packet, sizes: Option<IdSizes>, in_flight: impl IntoIterator<Item = (u8, u8)>) {
        if !self.on {
            return;
        }
        self.gathered.event(p.id());
        let sizes = sizes.unwrap_or(SIZES_UNTIL_KNOWN);
        match parse_composite(p.data(), &sizes) {
            Ok(c) => {
                self.invoked.event(c.suspend_policy, in_flight, &sizes);
                self.early.event(c.suspend_policy, c.events.iter().map(|e| (e.kind, e.thread)))
            }
            // Unreadable: nothing is known suspended by it, and what was may have ended.
            Err(_) => {
                self.invoked.event(suspend::NONE, in_flight, &sizes);
                self.early.event(suspend::NONE, [(kind::VM_DEATH, None)])
            }
        }
    }

    /// An Event.Composite from the VM: the proxy's ClassUnload events drop what they name
    /// (the events themselves go nowhere: no debugger owns the request); ClassPrepare
    /// events say a type's signature.
    pub fn class_events(&mut self, p: &Packet, sizes: Option<IdSizes>) {
        let (Some(req), Some(sizes)) = (self.unload_request, sizes) else { return };
        let Ok(c) = parse_composite(p.data(), &sizes) else {
            // Unreadable: it may hold an unload of ours.
            if crate::jdwp::events::first_event(p.data()).is_some_and(|(_, k, r)| k == kind::CLASS_UNLOAD || r == req) {
                self.cache.redefine(None);
            }
            return;
        };
        // A debugger's ClassPrepare events name a type and its signature.
        for e in c.events.iter().filter(|e| e.kind == kind::CLASS_PREPARE) {
            // kind, requestID, thread, refTypeTag, typeID, signature, status.
            let at = e.range.start + 5 + sizes.object + 1;
            let mut r = Reader::new(p.data().get(at..e.range.end).unwrap_or(&[]));
            let Ok(t) = r.id(sizes.reference_type, "typeID") else { continue };
            if let Some(sig) = super::nearcache::table::jdwp_string(&mut r) {
                self.cache.saw_signature(t, sig);
            }
        }
        for e in c.events.iter().filter(|e| e.kind == kind::CLASS_UNLOAD && e.request_id == req) {
            // kind, requestID, then the signature.
            let body = p.data().get(e.range.start + 5..e.range.end).unwrap_or(&[]);
            match super::nearcache::table::jdwp_string(&mut Reader::new(body)) {
                Some(sig) => self.cache.unloaded(sig),
                None => self.cache.redefine(None),
            }
        }
    }

    /// A stop's gathered answers, read whole from the VM connection, with the commands in
    /// flight to the VM when they came (id, command set, command).
    pub fn gathered_arrived(&mut self, data: &[u8], sizes: Option<IdSizes>, in_flight_ids: Vec<(u32, u8, u8)>) {
        let in_flight: Vec<(u8, u8)> = in_flight_ids.iter().map(|&(_, set, cmd)| (set, cmd)).collect();
        if !self.on {
            debug!("gathered answers on a connection that does not answer near: dropped");
            return;
        }
        let Some(sizes) = sizes else {
            debug!("gathered answers before the VM's id sizes are known: not kept");
            return;
        };
        let answers = match inband::answers(data) {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "unreadable gathered answers from the VM's host: not kept");
                return;
            }
        };
        // Class data goes to the near cache, unless a RedefineClasses in flight may have
        // changed it after the reading.
        if !in_flight.contains(&commands::REDEFINE_CLASSES) {
            self.cache.set_sizes(sizes);
            for g in answers.answers.iter().filter(|g| immutable(g.key.set, g.key.cmd).is_some()) {
                self.cache.gathered(g.key.set, g.key.cmd, &g.key.data, error::NONE, &g.reply);
            }
            for key in answers.absent.iter().filter(|k| immutable(k.set, k.cmd).is_some()) {
                self.cache.gathered(key.set, key.cmd, &key.data, ABSENT_INFORMATION, &[]);
            }
        }
        // Class data read for a class lookup's reply, or the String an invoke returned,
        // suspends nothing: only the cache takes it (or the invoke's answer), and the current
        // stop's answers stay.
        if answers.suspend_policy == suspend::NONE {
            self.invoked.arrived(&answers, sizes, in_flight_ids);
            debug!(reply = answers.event_id, answers = answers.answers.len(), "class data read for a class lookup");
            return;
        }
        debug!(event = answers.event_id, answers = answers.answers.len(), "gathered answers for a stop");
        self.gathered.arrived(answers, sizes, in_flight);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION: (u8, u8) = (1, 1);
    const RESUME: (u8, u8) = (1, 9);

    fn ask(n: &mut NearAnswers, (set, cmd): (u8, u8)) -> Asked {
        n.ask(&Packet::command(7, set, cmd, &[]), None)
    }

    fn version_reply() -> Packet {
        Packet::reply(1, error::NONE, b"the VM's version")
    }

    #[test]
    fn a_connection_not_answering_near_forwards_everything_and_keeps_nothing() {
        let mut n = NearAnswers::default();
        n.new_connection(false);
        n.seed(VERSION.0, VERSION.1, &version_reply());
        assert_eq!(ask(&mut n, VERSION), Asked::PASS);
        assert_eq!(n.cache.len(), 0);
        assert_eq!(n.early_answer(&Packet::command(7, 15, 1, &[]), SIZES_UNTIL_KNOWN), None);
    }

    #[test]
    fn a_seeded_fact_is_answered_near_until_a_connection_that_does_not_answer_near() {
        let mut n = NearAnswers::default();
        n.new_connection(true);
        assert!(n.on());
        n.seed(VERSION.0, VERSION.1, &version_reply());
        assert_eq!(ask(&mut n, VERSION), Asked::Answer(Bytes::from_static(b"the VM's version"), Source::Cache));
        assert_eq!(ask(&mut n, RESUME), Asked::PASS, "a command the cache never answers");
        n.new_connection(false);
        assert!(!n.on());
        assert_eq!(ask(&mut n, VERSION), Asked::PASS);
    }

    #[test]
    fn a_refused_seed_is_not_kept() {
        let mut n = NearAnswers::default();
        n.new_connection(true);
        n.seed(VERSION.0, VERSION.1, &Packet::reply(1, error::VM_DEAD, &[]));
        assert_ne!(ask(&mut n, VERSION), Asked::Answer(Bytes::new(), Source::Cache));
        assert_eq!(n.cache.len(), 0);
    }

    /// The String an IDE's toString() returned, read on the VM's host with the invoke's reply,
    /// answers the IDE's StringReference.Value of that string near, counted as gathered.
    #[test]
    fn an_invokes_string_is_answered_near_after_its_reply() {
        use crate::remote::stop_answers::plan::Gathered;
        use crate::remote::stop_answers::relay::Answers;
        use crate::remote::stop_answers::Key;
        let sizes = SIZES_UNTIL_KNOWN;
        let string = 0x5Au64.to_be_bytes();
        let value = b"\0\0\0\x0eLedger(ann, 0)".to_vec();
        let entry = |set, cmd| Entry { requester: super::super::ids::Requester::Debugger(1), orig_id: 3, cmd_set: set, cmd, note: Default::default(), sent: std::time::Instant::now() };
        let mut n = NearAnswers::default();
        n.new_connection(true);
        // A breakpoint of suspend policy ALL, then the IDE's invoke (proxy id 70) written.
        let mut stop = vec![suspend::ALL, 0, 0, 0, 1, kind::BREAKPOINT, 0, 0, 0, 7];
        stop.extend_from_slice(&0x51u64.to_be_bytes());
        stop.extend_from_slice(&[1; 1]);
        stop.extend_from_slice(&[0; 24]);
        n.event(&Packet::command(9, 64, 100, &stop), Some(sizes), []);
        n.told_vm(&Packet::command(70, 9, 6, &[0; 40]).header(), &[0; 40], Some(sizes));
        let a = Answers { event_id: 70, suspend_policy: suspend::NONE, thread: 0, answers: vec![Gathered { key: Key::new(10, 1, string.to_vec()), reply: value.clone() }], absent: vec![] };
        let inband = inband::packet(0xF000_0009, &a).expect("encodes");
        n.gathered_arrived(inband.data(), Some(sizes), vec![(70, 9, 6)]);
        let ask_value = |n: &mut NearAnswers, id: u64| n.ask(&Packet::command(8, 10, 1, &id.to_be_bytes()), Some(sizes));
        assert_eq!(ask_value(&mut n, 0x5A), Asked::PASS, "not before the invoke's reply");
        let reply = Packet::reply(70, error::NONE, &[&[b's'][..], &string, b"L", &[0; 8]].concat());
        assert_eq!(n.replied(1, &entry(9, 6), 70, &reply), None);
        assert_eq!(ask_value(&mut n, 0x5A), Asked::Answer(Bytes::from(value), Source::Gathered));
        assert_eq!(ask_value(&mut n, 0x5B), Asked::PASS, "another string's id");
        // Resumed: the next asking goes to the VM, whose reply is compared.
        n.told_vm(&Packet::command(71, 1, 9, &[]).header(), &[], Some(sizes));
        assert_eq!(ask_value(&mut n, 0x5A), Asked::PASS);
        n.told_vm(&Packet::command(72, 10, 1, &string).header(), &string, Some(sizes));
        let differed = n.replied(1, &entry(10, 1), 72, &Packet::reply(72, error::NONE, b"\0\0\0\x01x"));
        assert!(differed.is_some(), "another value for the same string is a defect");
    }
}
