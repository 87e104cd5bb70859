//! Early answers: commands whose reply carries nothing the near side does not know, answered
//! to the debugger as soon as they leave for the VM instead of a round trip later. A pure
//! table with the reason for each row, and what the session must know to use it: which
//! threads are known suspended (a step request needs a live thread), and the VM's request
//! counter (a Set's reply is the id the VM gives).
//!
//! The rows hold for HotSpot's agent (libjdwp, JDK 17 and 25); the session answers early
//! only on a VM whose Version names one with that agent ([`libjdwp_vm`]; ART's agent
//! counts and checks otherwise), and never where
//! the sharing layer does more than forward the command unchanged. Every early answer is
//! kept ([`Pending`]) and compared with the VM's own reply when it comes; that reply is
//! not relayed, and a difference is a defect the session counts and logs.

pub use super::early_pending::{Given, Pending, Verdict};
use super::stopped::Stopped;
use crate::jdwp::events::{kind, IdSizes};
use crate::jdwp::reader::Reader;

/// One command that may be answered early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub set: u8,
    pub cmd: u8,
    pub name: &'static str,
    pub why: &'static str,
}

/// The table.
pub const EARLY: &[Row] = &[
    Row {
        set: 1,
        cmd: 9,
        name: "VirtualMachine.Resume",
        why: "libjdwp replies with no data and error NONE (threadControl_resumeAll fails only when JVMTI \
              itself does); the debugger learns nothing from waiting. Only when the debugger's own Resume \
              goes to the VM unchanged (a shared VM's Resume is counted by the sharing layer instead)",
    },
    Row {
        set: 11,
        cmd: 3,
        name: "ThreadReference.Resume",
        why: "of a thread known stopped (a stop event suspended it and it cannot have run since, \
              as for a step request below): libjdwp refuses only an id that is no thread or is its \
              own (a stopped thread is neither) and replies NONE with no data (a thread not \
              suspended is left as it is). Only when the debugger's own Resume goes to the VM \
              unchanged, as for VirtualMachine.Resume",
    },
    Row {
        set: 15,
        cmd: 2,
        name: "EventRequest.Clear",
        why: "of a request this debugger set and the VM granted, of an event kind libjdwp knows: \
              eventHandler_freeByID replies NONE with no data, also for a request already gone",
    },
    Row {
        set: 15,
        cmd: 1,
        name: "EventRequest.Set (a step request)",
        why: "the reply is the request id, and libjdwp's ids come from one counter (eventHandler.c: \
              requestIdCounter, ++ for each request a debugger sets, internal handlers take 0, reset \
              only when a debugger leaves): the next id is the last granted one plus one, and one more \
              for each Set in flight this table predicted, when no Set it did not predict is in flight \
              and the last such Set's reply was known and not an error (a failed install may have \
              taken an id). A step request fails only for a thread libjdwp does not know \
              (stepControl_beginStep suspends the thread itself): its thread must be one a stop event \
              named that cannot have ended since, as it never left that event's callback (a lower \
              bound of its suspend count stayed above zero: each Resume takes one, a Suspend granted \
              adds one, so another debugger's Suspend and Resume around it change nothing; or at \
              zero only to run an invoke, whose reply is in: libjdwp suspends the invoking thread, \
              and with INVOKE_SINGLE_THREADED the only one that ran, again before it replies, in \
              invoker_completeInvokeRequest), and its modifiers only Count (> 0), ClassMatch, \
              ClassExclude and one Step of a valid size and depth",
    },
    Row {
        set: 15,
        cmd: 1,
        name: "EventRequest.Set (a breakpoint)",
        why: "the reply is the request id, from the same counter as a step request's (also predicted \
              while earlier predicted Sets are in flight). libjdwp refuses a breakpoint only in \
              reading its LocationOnly modifier (inStream_readClassRef: an id that is no live class) \
              or in JVMTI SetBreakpoint (a method id that is none, a method without code, a \
              location outside its code; a second breakpoint at one place is no error, libjdwp sets \
              the JVMTI one once; the breakpoint capability is taken at start): so only a request of \
              suspend policy NONE, EVENT_THREAD or ALL with one LocationOnly and Counts (> 0), whose \
              class and method are those of a Method.LineTable answer the near cache holds (kept \
              only while the class is loaded and not redefined) and whose code index lies within \
              that table's start and end (a native method's -1 is none). JDI's \
              createBreakpointRequest asks the line table first (Method.location, locationsOfLine), \
              and IDEs and jdb set their breakpoints this way at attach (gather::early_breakpoint)",
    },
    Row {
        set: 15,
        cmd: 1,
        name: "EventRequest.Set (ClassPrepare, ClassUnload, ThreadStart, ThreadDeath, Exception)",
        why: "the reply is the request id, from the same counter as a step request's, and also \
              predicted while earlier Sets are in flight when each of those was predicted too \
              (libjdwp handles commands one at a time, in order). For these kinds setCommand can \
              fail only in reading a modifier (eventFilter.c: readAndSetFilters) or in enabling the \
              JVMTI event, which names no id and needs no capability libjdwp does not take at \
              start (debugInit.c asks for the exception, \
              breakpoint and step event capabilities; thread and class events need none): so only suspend policies \
              NONE, EVENT_THREAD and ALL, and the modifiers that name no id: Count (> 0), \
              ClassMatch and ClassExclude (refused for ThreadStart and ThreadDeath: \
              AGENT_ERROR_ILLEGAL_ARGUMENT), SourceNameMatch (ClassPrepare only) and an \
              ExceptionOnly (Exception only) of any exception (class id 0) or of a lasting class: \
              libjdwp reads its class with inStream_readClassRef, which refuses only an id not in \
              its reference table (INVALID_OBJECT) or not a class (INVALID_CLASS), and \
              eventFilter_setExceptionOnlyFilter does not check for a Throwable; an id a VM reply \
              on this connection gave as a reference type stays valid while the class is loaded \
              and the id is not disposed. Lasting: a java.* class (defined only by the boot or \
              platform loader, the JVM refuses java.* to any other: \"Prohibited package name\"; \
              their classes are never unloaded) that is not hidden (a hidden class may be \
              unloaded on its own; its signature has a '.' before its address suffix, so one with \
              a '.' is left out), or an array of one or of a primitive type (defined by the boot \
              loader), learnt from ClassesBySignature, ClassPrepare and AllClasses (of one too large to \
              read whole, the classes in its first MiB), forgotten on a \
              DisposeObjects naming the id (all on one that does not parse). JDI sets ClassPrepare \
              and ClassUnload at attach; jdb adds ThreadStart, ThreadDeath and ClassPrepare for \
              its deferred breakpoints, and an uncaught-exception request naming \
              java.lang.Throwable",
    },
];

/// Event kinds whose Set the table predicts without a thread (the last row).
const GLOBAL_KINDS: &[u8] = &[kind::CLASS_PREPARE, kind::CLASS_UNLOAD, kind::THREAD_START, kind::THREAD_DEATH, kind::EXCEPTION];

/// EventRequest.Set commands in flight whose prediction is remembered (a bound; past it,
/// the counter is unknown until they are all answered).
const MAX_SETS_IN_FLIGHT: usize = 1024;

/// Event kinds libjdwp maps to a handler chain (eventIndex.c, jdwp2EventIndex): a Clear of
/// any other kind is refused with INVALID_EVENT_TYPE.
pub const CLEARABLE_KINDS: &[u8] = &[
    kind::SINGLE_STEP,
    kind::BREAKPOINT,
    kind::EXCEPTION,
    kind::THREAD_START,
    kind::THREAD_DEATH,
    kind::CLASS_PREPARE,
    kind::CLASS_UNLOAD,
    kind::FIELD_ACCESS,
    kind::FIELD_MODIFICATION,
    kind::METHOD_ENTRY,
    kind::METHOD_EXIT,
    kind::METHOD_EXIT_WITH_RETURN_VALUE,
    kind::MONITOR_CONTENDED_ENTER,
    kind::MONITOR_CONTENDED_ENTERED,
    kind::MONITOR_WAIT,
    kind::MONITOR_WAITED,
];

/// Whether a VM's ident ("vmName vmVersion", from VirtualMachine.Version) names a VM whose
/// JDWP agent is libjdwp, the agent the rows were read against: HotSpot (OpenJDK and
/// Oracle builds, GraalVM's JIT mode) and OpenJ9, which ships OpenJDK's agent. Any other
/// (ART, a native image's own agent, a VM not identified yet) gets no early answers.
pub fn libjdwp_vm(ident: &str) -> bool {
    !crate::jdwp::version::is_android_vm(ident) && ["HotSpot", "OpenJDK", "OpenJ9"].iter().any(|n| ident.contains(n))
}

/// The Method.LineTable reply data the near side holds for a (class, method), if any.
pub type LineTables<'a> = dyn Fn(u64, u64) -> Option<Vec<u8>> + 'a;

/// No line table held: no breakpoint request is certain.
fn no_line_tables(_: u64, _: u64) -> Option<Vec<u8>> {
    None
}

/// No lasting class held: only an ExceptionOnly of any exception is certain.
fn no_lasting_class(_: u64) -> bool {
    false
}

/// What the near side holds that makes more requests certain. [`Early::answer_with`] and
/// [`Early::written_with`] must be given the same, or a prediction in flight would differ
/// from the one answered.
pub struct Held<'a> {
    /// The Method.LineTable reply data of a (class, method), if held: a breakpoint in code
    /// it covers is certain (see [`super::early_breakpoint`]).
    pub line_table: &'a LineTables<'a>,
    /// Whether a reference type id is one the VM gave on this connection for a class that is
    /// never unloaded, not disposed since: an ExceptionOnly naming it is certain (the near
    /// cache's lasting classes).
    pub lasting_class: &'a dyn Fn(u64) -> bool,
}

impl Held<'static> {
    /// Nothing held.
    pub fn none() -> Held<'static> {
        Held { line_table: &no_line_tables, lasting_class: &no_lasting_class }
    }
}

/// What one VM connection has told about early answers so far.
#[derive(Debug, Default)]
pub struct Early {
    /// Threads a stop event suspended that cannot have ended: still held, counted.
    stopped: Stopped,
    /// The VM's request counter once every Set written so far is handled, while it is known:
    /// the last granted id, plus one for each predicted Set in flight.
    counter: Option<u32>,
    /// EventRequest.Set commands written to the VM and not answered yet, in order (libjdwp
    /// answers in order): the id each was predicted to get, `None` for one not predicted.
    sets_in_flight: std::collections::VecDeque<Option<u32>>,
    /// Sets in flight past [`MAX_SETS_IN_FLIGHT`]: after the ones above.
    sets_untracked: usize,
}

/// JDWP InvokeOptions.INVOKE_SINGLE_THREADED.
const INVOKE_SINGLE_THREADED: u32 = 0x01;

/// The invoke commands, each with the size of what precedes its thread: ClassType
/// .InvokeMethod and NewInstance and InterfaceType.InvokeMethod name a class
/// (referenceTypeID), ObjectReference.InvokeMethod an object (objectID).
fn invoke_prefix(set: u8, cmd: u8, sizes: &IdSizes) -> Option<usize> {
    match (set, cmd) {
        (3, 3) | (3, 4) | (5, 1) => Some(sizes.reference_type),
        (9, 6) => Some(sizes.object),
        _ => None,
    }
}

impl Early {
    /// The reply data a command would get from the VM, when it is certain: `None` sends it
    /// the usual way. `data`: the command's data.
    pub fn answer(&self, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) -> Option<Vec<u8>> {
        self.answer_with(set, cmd, data, sizes, &Held::none())
    }

    /// As [`Early::answer`], with what the near side holds: a breakpoint request in code a
    /// held line table covers is certain too, and an ExceptionOnly naming a lasting class.
    pub fn answer_with(&self, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes, held: &Held<'_>) -> Option<Vec<u8>> {
        match (set, cmd) {
            (1, 9) => data.is_empty().then(Vec::new),
            (11, 3) => {
                let t = Reader::new(data).id(sizes.object, "thread").ok()?;
                (data.len() == sizes.object && self.stopped.is_stopped(t)).then(Vec::new)
            }
            (15, 2) => {
                let mut r = Reader::new(data);
                let k = r.u8("eventKind").ok()?;
                r.u32("requestID").ok()?;
                (r.remaining() == 0 && CLEARABLE_KINDS.contains(&k)).then(Vec::new)
            }
            (15, 1) => self.predict_set(data, sizes, held).map(|id| id.to_be_bytes().to_vec()),
            _ => None,
        }
    }

    /// The id an EventRequest.Set with this data gets, when certain: the counter is known
    /// and the request is one libjdwp cannot refuse.
    fn predict_set(&self, data: &[u8], sizes: &IdSizes, held: &Held<'_>) -> Option<u32> {
        let next = self.counter?.checked_add(1)?;
        let certain = self.is_step_on_stopped(data, sizes)
            || is_global_request(data, sizes, held.lasting_class)
            || super::early_breakpoint::certain(data, sizes, held.line_table);
        certain.then_some(next)
    }

    /// A step request whose only failure could be its thread, on a thread known stopped.
    fn is_step_on_stopped(&self, data: &[u8], sizes: &IdSizes) -> bool {
        let parse = || -> Result<bool, crate::jdwp::reader::ReadError> {
            let mut r = Reader::new(data);
            if r.u8("eventKind")? != kind::SINGLE_STEP || r.u8("suspendPolicy")? > 2 {
                return Ok(false);
            }
            let mut steps = 0;
            for _ in 0..r.u32("modifiers")? {
                match r.u8("modKind")? {
                    // Count.
                    1 => {
                        if r.i32("count")? <= 0 {
                            return Ok(false);
                        }
                    }
                    // ClassMatch, ClassExclude: patterns, never refused.
                    5 | 6 => {
                        r.string("classPattern")?;
                    }
                    // Step: thread, size (MIN, LINE), depth (INTO, OVER, OUT).
                    10 => {
                        let t = r.id(sizes.object, "thread")?;
                        let (size, depth) = (r.u32("size")?, r.u32("depth")?);
                        if !self.stopped.is_stopped(t) || size > 1 || depth > 2 {
                            return Ok(false);
                        }
                        steps += 1;
                    }
                    _ => return Ok(false),
                }
            }
            Ok(steps == 1 && r.remaining() == 0)
        };
        parse().unwrap_or(false)
    }

    /// A command written to the VM (by anyone) under `id`. `data` empty when only its head
    /// is known.
    pub fn written(&mut self, id: u32, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) {
        self.written_with(id, set, cmd, data, sizes, &Held::none())
    }

    /// As [`Early::written`], with what [`Early::answer_with`] was given.
    pub fn written_with(&mut self, id: u32, set: u8, cmd: u8, data: &[u8], sizes: &IdSizes, held: &Held<'_>) {
        self.stopped.id_written(id);
        let thread = || Reader::new(data).id(sizes.object, "thread").ok().filter(|_| data.len() == sizes.object);
        match (set, cmd) {
            (15, 1) => {
                let predicted = self.predict_set(data, sizes, held);
                self.counter = predicted;
                if self.sets_in_flight.len() < MAX_SETS_IN_FLIGHT && self.sets_untracked == 0 {
                    self.sets_in_flight.push_back(predicted);
                } else {
                    self.counter = None;
                    self.sets_untracked += 1;
                }
            }
            // Resumes: the threads they resume lose one count, and may run (and end) at zero.
            (1, 9) if data.is_empty() => self.stopped.resume_written(id, None),
            (11, 3) => match thread() {
                Some(t) => self.stopped.resume_written(id, Some(t)),
                None => self.stopped.unknown_written(id),
            },
            // Suspensions: one count more once granted.
            (1, 8) => self.stopped.suspend_written(id, None),
            (11, 2) => {
                if let Some(t) = thread() {
                    self.stopped.suspend_written(id, Some(t));
                }
            }
            // Nothing here lets a suspended thread run: reads, requests, values written,
            // frames popped or returned from (the thread stays suspended).
            _ if keeps_threads_suspended(set, cmd) => {}
            _ => match invoke_of(set, cmd, data, sizes) {
                // An invoke runs its thread (every thread, unless single-threaded) until its
                // reply, which libjdwp sends after suspending them again.
                Some((t, single)) => self.stopped.invoke_written(id, t, single),
                // Anything not known here.
                None => self.stopped.unknown_written(id),
            },
        }
    }

    /// The reply to the command written under `id` came (whole or not, any error code): a
    /// suspension granted counts, and an invoke gives back what it took (libjdwp suspends its
    /// threads again before it replies, in invoker_completeInvokeRequest; a refused invoke
    /// never resumed them).
    pub fn replied(&mut self, id: u32, error: u16) {
        self.stopped.replied(id, error);
    }

    /// The reply to an EventRequest.Set (anyone's): its error code and data.
    pub fn set_replied(&mut self, error: u16, data: &[u8]) {
        let granted = match data.get(..4) {
            Some(b) if error == 0 && data.len() == 4 => Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            // A failed Set may or may not have taken an id from the counter.
            _ => None,
        };
        self.set_answered(granted);
    }

    /// A Set whose reply will never be read (its reply was streamed, or the session lost
    /// track of it): the counter is no longer known.
    pub fn set_lost(&mut self) {
        self.set_answered(None);
        self.counter = None;
    }

    /// The oldest Set in flight was answered with this id (`None`: an error, or unread).
    fn set_answered(&mut self, granted: Option<u32>) {
        let predicted = match self.sets_in_flight.pop_front() {
            Some(p) => p,
            None => {
                self.sets_untracked = self.sets_untracked.saturating_sub(1);
                None
            }
        };
        match predicted {
            // As predicted: the counter already counts it.
            Some(p) if granted == Some(p) => {}
            // Another answer to a prediction (a defect, counted where the early answer is
            // compared): nothing after it can be trusted until the Sets in flight are in.
            Some(_) => self.counter = None,
            // Not predicted: the counter is its id once no other Set is in flight (a later
            // one was written while the counter was unknown, so was not predicted either).
            None if self.sets_in_flight.is_empty() && self.sets_untracked == 0 => self.counter = granted,
            None => {}
        }
    }

    /// An event composite from the VM: `policy`, and the kind and thread of each event.
    pub fn event(&mut self, policy: u8, events: impl IntoIterator<Item = (u8, Option<u64>)>) {
        let mut threads = Vec::new();
        for (k, t) in events {
            if k == kind::VM_DEATH {
                self.stopped.forget_all();
                return;
            }
            threads.extend(t);
        }
        match policy {
            crate::jdwp::events::suspend::EVENT_THREAD => self.stopped.event(false, threads),
            crate::jdwp::events::suspend::ALL => self.stopped.event(true, threads),
            _ => {}
        }
    }

    /// Whether a stop event suspended this thread and it cannot have ended since (nor runs
    /// an invoke).
    pub fn is_stopped(&self, thread: u64) -> bool {
        self.stopped.is_stopped(thread)
    }
}

/// An invoke's thread, and whether INVOKE_SINGLE_THREADED: the options are the command's
/// last field.
fn invoke_of(set: u8, cmd: u8, data: &[u8], sizes: &IdSizes) -> Option<(u64, bool)> {
    let prefix = invoke_prefix(set, cmd, sizes)?;
    // Class or object, thread, method, the arguments' count, the options: at least.
    if data.len() < prefix + sizes.object + sizes.method + 8 {
        return None;
    }
    let mut r = Reader::new(data);
    r.bytes(prefix, "class or object").ok()?;
    let t = r.id(sizes.object, "thread").ok()?;
    let options = data.len().checked_sub(4).and_then(|at| Reader::new(&data[at..]).u32("options").ok())?;
    Some((t, options & INVOKE_SINGLE_THREADED != 0))
}

/// A Set of one of [`GLOBAL_KINDS`] whose every part libjdwp takes (see the last row).
/// `lasting_class`: whether a class id is one the VM gave for a class never unloaded.
fn is_global_request(data: &[u8], sizes: &IdSizes, lasting_class: &dyn Fn(u64) -> bool) -> bool {
    let parse = || -> Result<bool, crate::jdwp::reader::ReadError> {
        let mut r = Reader::new(data);
        let k = r.u8("eventKind")?;
        if !GLOBAL_KINDS.contains(&k) || r.u8("suspendPolicy")? > 2 {
            return Ok(false);
        }
        let threads = k == kind::THREAD_START || k == kind::THREAD_DEATH;
        for _ in 0..r.u32("modifiers")? {
            let ok = match r.u8("modKind")? {
                // Count.
                1 => r.i32("count")? > 0,
                // ClassMatch, ClassExclude.
                5 | 6 => {
                    r.string("classPattern")?;
                    !threads
                }
                // ExceptionOnly: of any exception (a null class id) or of a lasting class
                // (libjdwp checks only that the id is a live class, not that it is a
                // Throwable), caught, uncaught.
                8 => {
                    let class = r.id(sizes.reference_type, "exceptionOrNull")?;
                    r.u8("caught")?;
                    r.u8("uncaught")?;
                    k == kind::EXCEPTION && (class == 0 || lasting_class(class))
                }
                // SourceNameMatch.
                12 => {
                    r.string("sourceNamePattern")?;
                    k == kind::CLASS_PREPARE
                }
                _ => false,
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(r.remaining() == 0)
    };
    parse().unwrap_or(false)
}

/// Commands after which a suspended thread is still suspended and alive.
fn keeps_threads_suspended(set: u8, cmd: u8) -> bool {
    super::validity::is_read(set, cmd)
        || matches!(
            (set, cmd),
            // Suspend, SuspendThread, SetValues (locals, fields, statics, array elements),
            // PopFrames, ForceEarlyReturn, RedefineClasses, DisposeObjects.
            (1, 8) | (11, 2) | (16, 2) | (9, 3) | (3, 2) | (13, 3) | (16, 4) | (11, 14) | (1, 18) | (1, 14)
        )
}

/// The table as markdown, as docs/near-cache.md shows it (a test keeps the two in step).
pub fn markdown() -> String {
    let mut out = String::from("| command | why its early answer cannot differ |\n| --- | --- |\n");
    for r in EARLY {
        out.push_str(&format!("| {} ({}, {}) | {} |\n", r.name, r.set, r.cmd, r.why.split_whitespace().collect::<Vec<_>>().join(" ")));
    }
    out
}
