//! The gather plan: at a stop event, which commands the far side sends the VM and how later
//! ones are made from earlier replies. Sans-I/O: the far side's channel task sends what
//! [`Plan::at_stop`] and [`Plan::on_reply`] return (under ids of its own), feeds each reply
//! back by its position, and when [`Plan::done`] sends [`Plan::gathered`] to the near side
//! before the event. A command whose reply cannot have changed since an earlier stop
//! ([`Known`]) is answered from there, without asking the VM.
//!
//! The commands are the ones a JDI debugger sends after a stop, byte for byte as JDI makes
//! them (JDK 17 and 25, `com.sun.tools.jdi`), so the near side can find an IDE's command by
//! its bytes:
//! 1. ThreadReference.Name, Status, FrameCount, Frames(0, -1) (`frames()`) and
//!    Frames(0, 1) (`frame(0)`) of the stopped thread;
//! 2. for each of the top frames (from the Frames(0, -1) reply): StackFrame.ThisObject and
//!    Method.VariableTableWithGeneric of the frame's method;
//! 3. from the variable table, the locals visible at the frame's location as
//!    `StackFrame.visibleVariables()` orders them (sorted by slot; of two with one name the
//!    one whose scope starts later; `this` and `this$n` left out): StackFrame.GetValues of
//!    all of them (`getValues(visibleVariables())`) and, when more than one, of each alone
//!    (`getValue(v)`);
//! 4. from ThisObject: ObjectReference.ReferenceType of `this` (when not null);
//! 5. the fields of `this` of the top frame: for its type and each superclass,
//!    ReferenceType.FieldsWithGeneric and ClassType.Superclass, and once that chain is
//!    known, ObjectReference.GetValues of `this` with all its instance fields;
//! 6. the statics of the top frame's declaring class: the same chain from that class, then
//!    ReferenceType.GetValues of that class with the static fields of it and its
//!    superclasses (each class is asked once, for both);
//! 7. for every value the GetValues above read: StringReference.Value of a string, and of an
//!    array ArrayReference.Length, then ArrayReference.GetValues(0, min(length, 100)).
//! 8. the threads view, at a stop that suspended every thread (under EVENT_THREAD the others
//!    run on, and nothing read of them would hold): VirtualMachine.AllThreads, then of each
//!    of the first `Limits::threads` threads it lists ThreadReference.Name, Status,
//!    FrameCount and SuspendCount (what Eclipse's Debug view, IntelliJ's thread list and VS
//!    Code's Call Stack show for every thread at a stop).
//!
//! A class looked up by signature (VirtualMachine.ClassesBySignature, how JDI's
//! `classesByName` finds a class before setting a breakpoint in it) leads to what JDI asks
//! next about it and each of its superclasses, one round trip each otherwise:
//! ReferenceType.SignatureWithGeneric, Interfaces, MethodsWithGeneric and FieldsWithGeneric,
//! and ClassType.Superclass ([`Plan::at_classes`]; read before the lookup's reply is relayed,
//! for the near side's cache of class data). Of each class the lookup found (not its
//! superclasses) also ReferenceType.SourceFile, SourceDebugExtension (which JDI asks at each
//! breakpoint by line; most classes have none, see below) and the Method.LineTable of each of its first
//! [`LOOKUP_METHODS`] methods with code (not native, not abstract): what setting a breakpoint
//! by line asks (`locationsOfLine` reads every method's table, `Method.location()` one), one
//! round trip per method otherwise.
//!
//! A ClassPrepare request for one class by its exact name (a ClassMatch pattern with no `*`:
//! how jdb and IDEs wait for a breakpoint's class, jdb before it looks for the class in
//! `allClasses()`) leads to the same reading without a lookup of the debugger's: the plan
//! looks the class up itself ([`Plan::at_prepare`]).
//!
//! The near side answers a debugger's own GetValues by composing them from these values
//! (it asks for other fields, orders and ranges), so only their ids need be what JDI sends.
//!
//! Bounded: at most `Limits::commands` commands and `Limits::bytes` bytes of kept replies
//! per stop, and no command twice. Only replies with error code 0 are kept (an error goes
//! to the VM again when asked), and, for a near side that reads them (`Limits::absent`),
//! the ABSENT_INFORMATION answers its near cache keeps (what the class file lacks:
//! `session::nearcache::commands::ABSENT_KEPT`). A reply that does not parse ends that
//! branch of the plan, nothing else.

use std::collections::{HashMap, HashSet};

use super::known::Known;
use super::values::{self, Field, CLASS};
use super::Key;
use crate::jdwp::events::{self, kind, suspend, IdSizes};
use crate::jdwp::reader::{put_id, Reader};
use crate::session::nearcache::commands::{error_kept, ABSENT_INFORMATION};

/// How much one stop may gather.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Commands sent to the VM for one stop.
    pub commands: usize,
    /// Bytes of reply data kept for one stop.
    pub bytes: usize,
    /// Frames, from the top, whose `this` and locals are gathered.
    pub top_frames: usize,
    /// Threads of the threads view read (4 commands each); 0 reads no threads view.
    pub threads: usize,
    /// Whether ABSENT_INFORMATION answers the near cache keeps are sent too (a near side of
    /// far-link protocol 6 reads them).
    pub absent: bool,
}

/// Threads the threads view reads at a stop, by default: an application server's pools
/// are tens of threads; past this an IDE's further rows go to the VM.
pub const THREADS_VIEW: usize = 64;

impl Default for Limits {
    fn default() -> Self {
        // The frames and values take up to 48 commands; the threads view 1 + 4 per thread.
        Limits { commands: 48 + 1 + 4 * THREADS_VIEW, bytes: 256 * 1024, top_frames: 1, threads: THREADS_VIEW, absent: false }
    }
}

/// Event kinds after which a thread stands at a location an IDE shows (its frames, locals).
pub const STOP_KINDS: &[u8] = &[
    kind::SINGLE_STEP,
    kind::BREAKPOINT,
    kind::EXCEPTION,
    kind::METHOD_ENTRY,
    kind::METHOD_EXIT,
    kind::METHOD_EXIT_WITH_RETURN_VALUE,
    kind::FIELD_ACCESS,
    kind::FIELD_MODIFICATION,
];

/// The most elements of an array read at a stop (an IDE shows an array's head first).
pub const ARRAY_HEAD: u32 = 100;

/// What a sent command is for: what its reply leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Plain,
    AllFrames,
    /// `this` of the top frame numbered so.
    ThisObject(usize),
    /// The variable table of the top frame numbered so (index into `frames`).
    VariableTable(usize),
    /// The type of the top frame's `this` (this object).
    ThisType(u64),
    /// The fields of a class.
    Fields(u64),
    /// The superclass of a class.
    Superclass(u64),
    /// A reply of tagged values: its strings and arrays are read.
    Values,
    /// The length of an array.
    ArrayLength(u64),
    /// VirtualMachine.AllThreads: the threads view's rows follow.
    AllThreads,
    /// The plan's own VirtualMachine.ClassesBySignature: the classes found get class data.
    Lookup,
    /// The methods of a class a lookup found: their line tables follow.
    Methods(u64),
}

/// A class whose fields and superclass were asked for, and what came.
#[derive(Debug, Default)]
struct Class {
    fields: Option<Vec<Field>>,
    /// 0 at the top (and for a type that is no class, which has no superclass to ask).
    superclass: Option<u64>,
}

/// One frame of a Frames reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub id: u64,
    pub type_tag: u8,
    pub class: u64,
    pub method: u64,
    pub index: u64,
}

/// One gathered answer: the command's bytes and the VM's reply data (error code 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gathered {
    pub key: Key,
    pub reply: Vec<u8>,
}

/// The gathering for one stop.
#[derive(Debug)]
pub struct Plan {
    sizes: IdSizes,
    limits: Limits,
    thread: u64,
    suspend_policy: u8,
    issued: Vec<(Key, Step)>,
    answered: Vec<bool>,
    outstanding: usize,
    frames: Vec<Frame>,
    gathered: Vec<Gathered>,
    /// Commands answered ABSENT_INFORMATION that the near cache keeps (when `limits.absent`).
    absent: Vec<Key>,
    bytes: usize,
    /// Every command issued: none twice (a class both `this`'s and the frame's, a string
    /// two values hold).
    keys: HashSet<Key>,
    classes: HashMap<u64, Class>,
    /// `this` of the top frame and its type, until its fields are asked for.
    this: Option<(u64, u64)>,
    /// The top frame's declaring class, until its statics are asked for.
    statics: Option<u64>,
    /// Each class asked about gets the class data JDI asks for (a class lookup's plan).
    class_data: bool,
    /// The classes a lookup found, whose methods' line tables are read too.
    found: HashSet<u64>,
}

/// Classes of one lookup's reply whose data is read (one signature names one class per
/// loader: more is rare).
pub const LOOKUP_CLASSES: usize = 8;

/// Methods of one class found by a lookup whose line tables are read (a class with more has
/// the rest asked by the debugger).
pub const LOOKUP_METHODS: usize = 64;

/// JVM access flags of a method without code: no line table is asked for (JDI does not).
const NATIVE: i32 = 0x0100;
const ABSTRACT: i32 = 0x0400;

/// A class lookup's limits: its answers all fit in one set on the wire (line tables of many
/// methods could pass [`super::wire::MAX_ANSWERS`] otherwise).
fn class_limits(limits: Limits) -> Limits {
    Limits { commands: limits.commands.min(super::wire::MAX_ANSWERS), ..limits }
}

/// The classes of a VirtualMachine.ClassesBySignature reply (a count, then each class's tag,
/// id and status): (tag, id) each, None when it does not parse.
pub fn parse_lookup(data: &[u8], sizes: &IdSizes) -> Option<Vec<(u8, u64)>> {
    let mut r = Reader::new(data);
    let n = r.u32("classes").ok()?;
    let mut found = Vec::new();
    for _ in 0..n {
        let tag = r.u8("refTypeTag").ok()?;
        let id = r.id(sizes.reference_type, "typeID").ok()?;
        r.i32("status").ok()?;
        found.push((tag, id));
    }
    (r.remaining() == 0).then_some(found)
}

/// The methods with code of a ReferenceType.MethodsWithGeneric reply (a count, then each
/// method's id, name, signature, generic signature and modifiers), None when it does not parse.
pub fn parse_methods_with_code(data: &[u8], sizes: &IdSizes) -> Option<Vec<u64>> {
    let mut r = Reader::new(data);
    let n = r.u32("methods").ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let id = r.id(sizes.method, "methodID").ok()?;
        for what in ["name", "signature", "genericSignature"] {
            r.string(what).ok()?;
        }
        let modifiers = r.i32("modBits").ok()?;
        if modifiers & (NATIVE | ABSTRACT) == 0 {
            out.push(id);
        }
    }
    (r.remaining() == 0).then_some(out)
}

/// The ClassMatch pattern of a ClassPrepare EventRequest.Set (`data`: its data) naming one
/// class exactly, as a JNI signature ("a.b.C" gives "La/b/C;"); None for any other request,
/// a pattern with `*`, or data that does not parse.
pub fn prepare_signature(data: &[u8]) -> Option<String> {
    let mut r = Reader::new(data);
    if r.u8("eventKind").ok()? != kind::CLASS_PREPARE {
        return None;
    }
    r.u8("suspendPolicy").ok()?;
    let mut name = None;
    for _ in 0..r.u32("modifiers").ok()? {
        match r.u8("modKind").ok()? {
            1 | 2 => {
                r.u32("count or exprID").ok()?;
            }
            5 => {
                let p = r.string("classPattern").ok()?;
                if name.is_some() || p.is_empty() || p.contains('*') || p.contains(['/', ';', '[']) {
                    return None;
                }
                name = Some(p);
            }
            6 | 12 => {
                r.string("pattern").ok()?;
            }
            _ => return None,
        }
    }
    (r.remaining() == 0).then_some(())?;
    name.map(|n| format!("L{};", n.replace('.', "/")))
}

impl Plan {
    /// The plan for an Event.Composite body (`data`), with the first commands to send; None
    /// when the composite suspends nothing or holds no stop of a thread.
    pub fn at_stop(data: &[u8], sizes: IdSizes, limits: Limits, known: &mut Known) -> Option<(Plan, Vec<(usize, Key)>)> {
        let composite = events::parse_composite(data, &sizes).ok()?;
        if composite.suspend_policy != suspend::EVENT_THREAD && composite.suspend_policy != suspend::ALL {
            return None;
        }
        let thread = composite.events.iter().find(|e| STOP_KINDS.contains(&e.kind)).and_then(|e| e.thread)?;
        let mut plan = Plan::new(sizes, limits, thread, composite.suspend_policy);
        let t = plan.thread_data();
        let mut first = Vec::new();
        plan.issue(&mut first, Key::new(11, 1, t.clone()), Step::Plain, known);
        plan.issue(&mut first, Key::new(11, 4, t.clone()), Step::Plain, known);
        plan.issue(&mut first, Key::new(11, 7, t.clone()), Step::Plain, known);
        plan.issue(&mut first, Key::new(11, 6, frames_data(&t, 0, -1)), Step::AllFrames, known);
        plan.issue(&mut first, Key::new(11, 6, frames_data(&t, 0, 1)), Step::Plain, known);
        if plan.suspend_policy == suspend::ALL && limits.threads > 0 {
            plan.issue(&mut first, Key::new(1, 4, Vec::new()), Step::AllThreads, known);
        }
        Some((plan, first))
    }

    fn new(sizes: IdSizes, limits: Limits, thread: u64, suspend_policy: u8) -> Plan {
        Plan {
            sizes,
            limits,
            thread,
            suspend_policy,
            issued: Vec::new(),
            answered: Vec::new(),
            outstanding: 0,
            frames: Vec::new(),
            gathered: Vec::new(),
            absent: Vec::new(),
            bytes: 0,
            keys: HashSet::new(),
            classes: HashMap::new(),
            this: None,
            statics: None,
            class_data: false,
            found: HashSet::new(),
        }
    }

    /// The plan for a VirtualMachine.ClassesBySignature reply (`data`: a count, then each
    /// class's tag, id and status), with the first commands to send; None when it names no
    /// class or does not parse. Its answers are class data alone: no thread, suspend policy
    /// NONE (nothing of a stop).
    pub fn at_classes(data: &[u8], sizes: IdSizes, limits: Limits, known: &mut Known) -> Option<(Plan, Vec<(usize, Key)>)> {
        let found = parse_lookup(data, &sizes).filter(|f| !f.is_empty())?;
        let mut plan = Plan::new(sizes, class_limits(limits), 0, suspend::NONE);
        plan.class_data = true;
        let mut first = Vec::new();
        plan.found_classes(&mut first, found, known);
        Some((plan, first))
    }

    /// The plan for a ClassPrepare request naming the class of JNI signature `signature`
    /// (see [`prepare_signature`]): the class looked up, then read as [`Plan::at_classes`]
    /// reads a lookup's classes. Its answers, too, are class data alone.
    pub fn at_prepare(signature: &str, sizes: IdSizes, limits: Limits, known: &mut Known) -> (Plan, Vec<(usize, Key)>) {
        let mut plan = Plan::new(sizes, class_limits(limits), 0, suspend::NONE);
        plan.class_data = true;
        let mut data = (signature.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(signature.as_bytes());
        let mut first = Vec::new();
        plan.issue(&mut first, Key::new(1, 2, data), Step::Lookup, known);
        (plan, first)
    }

    /// The classes a lookup found: their data, and of each its source file and methods.
    fn found_classes(&mut self, out: &mut Vec<(usize, Key)>, found: Vec<(u8, u64)>, known: &mut Known) {
        for (tag, id) in found.into_iter().take(LOOKUP_CLASSES) {
            if id == 0 || !self.found.insert(id) {
                continue;
            }
            let d = self.id(id, self.sizes.reference_type);
            self.issue(out, Key::new(2, 15, d.clone()), Step::Methods(id), known);
            self.issue(out, Key::new(2, 7, d.clone()), Step::Plain, known);
            // Absent from most classes: its ABSENT_INFORMATION is kept when the near side
            // reads it (`Limits::absent`), else the debugger's own asking goes to the VM.
            if self.limits.absent {
                self.issue(out, Key::new(2, 12, d), Step::Plain, known);
            }
            self.want_class(out, id, tag, known);
        }
    }

    /// The stopped thread.
    pub fn thread(&self) -> u64 {
        self.thread
    }

    /// The stop's suspend policy (EVENT_THREAD or ALL).
    pub fn suspend_policy(&self) -> u8 {
        self.suspend_policy
    }

    /// How many commands have been issued; `on_reply` takes their position in this order.
    pub fn issued(&self) -> usize {
        self.issued.len()
    }

    /// Every issued command has its reply.
    pub fn done(&self) -> bool {
        self.outstanding == 0
    }

    /// What was gathered, in the order the replies came.
    pub fn gathered(self) -> Vec<Gathered> {
        self.gathered
    }

    /// What was gathered, and the commands answered ABSENT_INFORMATION that are kept.
    pub fn gathered_all(self) -> (Vec<Gathered>, Vec<Key>) {
        (self.gathered, self.absent)
    }

    /// The reply to the command issued at position `n`; returns the commands it leads to.
    /// A position not issued or already answered changes nothing.
    pub fn on_reply(&mut self, n: usize, error: u16, data: &[u8], known: &mut Known) -> Vec<(usize, Key)> {
        let mut next = Vec::new();
        if n >= self.issued.len() || self.answered[n] {
            return next;
        }
        self.answered[n] = true;
        self.outstanding -= 1;
        if error != 0 {
            let key = &self.issued[n].0;
            if self.limits.absent && error == ABSENT_INFORMATION && error_kept(key.set, key.cmd, error) {
                self.absent.push(key.clone());
            }
            return next;
        }
        let (key, step) = self.issued[n].clone();
        known.learn(&key, data);
        if self.bytes + data.len() <= self.limits.bytes {
            self.bytes += data.len();
            self.gathered.push(Gathered { key: key.clone(), reply: data.to_vec() });
        }
        match step {
            Step::Plain => {}
            Step::AllFrames => {
                let Some(frames) = parse_frames(data, &self.sizes) else { return next };
                self.frames = frames.into_iter().take(self.limits.top_frames).collect();
                for i in 0..self.frames.len() {
                    let f = self.frames[i];
                    let mut this = self.thread_data();
                    put_id(&mut this, f.id, self.sizes.frame);
                    self.issue(&mut next, Key::new(16, 3, this), Step::ThisObject(i), known);
                    let mut method = Vec::new();
                    put_id(&mut method, f.class, self.sizes.reference_type);
                    put_id(&mut method, f.method, self.sizes.method);
                    self.issue(&mut next, Key::new(6, 5, method), Step::VariableTable(i), known);
                }
                if let Some(top) = self.frames.first().copied() {
                    self.statics = Some(top.class);
                    self.want_class(&mut next, top.class, top.type_tag, known);
                }
            }
            Step::ThisObject(i) => {
                let mut r = Reader::new(data);
                let (Ok(_tag), Ok(object)) = (r.u8("tag"), r.id(self.sizes.object, "object")) else { return next };
                if object != 0 && r.remaining() == 0 {
                    let step = if i == 0 { Step::ThisType(object) } else { Step::Plain };
                    self.issue(&mut next, Key::new(9, 1, self.id(object, self.sizes.object)), step, known);
                }
            }
            Step::ThisType(object) => {
                let Some((tag, ty)) = values::parse_reference_type(data, &self.sizes) else { return next };
                self.this = Some((object, ty));
                self.want_class(&mut next, ty, tag, known);
                self.read_fields(&mut next, known);
            }
            Step::Fields(class) => {
                let Some(fields) = values::parse_fields(data, &self.sizes) else { return next };
                self.classes.entry(class).or_default().fields = Some(fields);
                self.read_fields(&mut next, known);
            }
            Step::Superclass(class) => {
                let Some(superclass) = values::parse_superclass(data, &self.sizes) else { return next };
                self.classes.entry(class).or_default().superclass = Some(superclass);
                if superclass != 0 {
                    self.want_class(&mut next, superclass, CLASS, known);
                }
                self.read_fields(&mut next, known);
            }
            Step::Values => {
                let Some(values) = values::parse_values(data, &self.sizes) else { return next };
                for v in values {
                    match (v.tag, v.object) {
                        (b's', Some(s)) if s != 0 => self.issue(&mut next, Key::new(10, 1, self.id(s, self.sizes.object)), Step::Plain, known),
                        (b'[', Some(a)) if a != 0 => self.issue(&mut next, Key::new(13, 1, self.id(a, self.sizes.object)), Step::ArrayLength(a), known),
                        _ => {}
                    }
                }
            }
            Step::AllThreads => {
                let Some(threads) = super::compose::all_threads(data, &self.sizes) else { return next };
                for t in threads.into_iter().take(self.limits.threads) {
                    let d = self.id(t, self.sizes.object);
                    for cmd in [1, 4, 7, 12] {
                        self.issue(&mut next, Key::new(11, cmd, d.clone()), Step::Plain, known);
                    }
                }
            }
            Step::Lookup => {
                let Some(found) = parse_lookup(data, &self.sizes) else { return next };
                self.found_classes(&mut next, found, known);
            }
            Step::Methods(class) => {
                let Some(methods) = parse_methods_with_code(data, &self.sizes) else { return next };
                for m in methods.into_iter().take(LOOKUP_METHODS) {
                    let mut d = self.id(class, self.sizes.reference_type);
                    put_id(&mut d, m, self.sizes.method);
                    self.issue(&mut next, Key::new(6, 1, d), Step::Plain, known);
                }
            }
            Step::ArrayLength(array) => {
                let Some(len) = values::parse_length(data) else { return next };
                let mut d = self.id(array, self.sizes.object);
                d.extend_from_slice(&0i32.to_be_bytes());
                d.extend_from_slice(&(len.min(ARRAY_HEAD) as i32).to_be_bytes());
                self.issue(&mut next, Key::new(13, 2, d), Step::Plain, known);
            }
            Step::VariableTable(i) => {
                let Some(frame) = self.frames.get(i).copied() else { return next };
                let Some(vars) = parse_variable_table(data) else { return next };
                let visible = visible_locals(&vars, frame.index);
                if visible.is_empty() {
                    return next;
                }
                let mut prefix = self.thread_data();
                put_id(&mut prefix, frame.id, self.sizes.frame);
                self.issue(&mut next, Key::new(16, 1, get_values_data(&prefix, &visible)), Step::Values, known);
                // One local alone is the same command as all of them. Their values are the
                // ones read just before: their strings and arrays are asked for once.
                for v in visible.iter().filter(|_| visible.len() > 1) {
                    self.issue(&mut next, Key::new(16, 1, get_values_data(&prefix, std::slice::from_ref(v))), Step::Plain, known);
                }
            }
        }
        next
    }

    fn thread_data(&self) -> Vec<u8> {
        let mut d = Vec::new();
        put_id(&mut d, self.thread, self.sizes.object);
        d
    }

    fn id(&self, id: u64, size: usize) -> Vec<u8> {
        let mut d = Vec::new();
        put_id(&mut d, id, size);
        d
    }

    /// Asks for a class's fields and (of a class) its superclass, once per class.
    fn want_class(&mut self, out: &mut Vec<(usize, Key)>, class: u64, tag: u8, known: &mut Known) {
        if class == 0 || self.classes.contains_key(&class) {
            return;
        }
        // A type that is no class (an interface) has no superclass to ask for.
        let superclass = (tag != CLASS).then_some(0);
        self.classes.insert(class, Class { fields: None, superclass });
        let d = self.id(class, self.sizes.reference_type);
        self.issue(out, Key::new(2, 14, d.clone()), Step::Fields(class), known);
        if self.class_data {
            for cmd in [13, 10, 15] {
                self.issue(out, Key::new(2, cmd, d.clone()), Step::Plain, known);
            }
        }
        if tag == CLASS {
            self.issue(out, Key::new(3, 1, d), Step::Superclass(class), known);
        }
    }

    /// The fields of `class` and its superclasses, once all of them are known.
    fn chain_fields(&self, class: u64) -> Option<Vec<Field>> {
        let mut all = Vec::new();
        let mut at = class;
        // A chain longer than the classes known loops (a confused VM): none.
        for _ in 0..=self.classes.len() {
            let c = self.classes.get(&at)?;
            all.extend_from_slice(c.fields.as_ref()?);
            match c.superclass? {
                0 => return Some(all),
                s => at = s,
            }
        }
        None
    }

    /// Reads the fields of `this` and the statics of the frame's class once their chains are
    /// known.
    fn read_fields(&mut self, out: &mut Vec<(usize, Key)>, known: &mut Known) {
        if let Some((object, ty)) = self.this {
            if let Some(fields) = self.chain_fields(ty) {
                self.this = None;
                let ids: Vec<u64> = fields.iter().filter(|f| !f.is_static()).map(|f| f.id).collect();
                if !ids.is_empty() {
                    let d = self.fields_data(self.id(object, self.sizes.object), &ids);
                    self.issue(out, Key::new(9, 2, d), Step::Values, known);
                }
            }
        }
        if let Some(class) = self.statics {
            if let Some(fields) = self.chain_fields(class) {
                self.statics = None;
                let ids: Vec<u64> = fields.iter().filter(|f| f.is_static()).map(|f| f.id).collect();
                if !ids.is_empty() {
                    let d = self.fields_data(self.id(class, self.sizes.reference_type), &ids);
                    self.issue(out, Key::new(2, 6, d), Step::Values, known);
                }
            }
        }
    }

    /// `prefix` (an object or a type), then `int fields` and the field ids.
    fn fields_data(&self, mut prefix: Vec<u8>, ids: &[u64]) -> Vec<u8> {
        prefix.extend_from_slice(&(ids.len() as u32).to_be_bytes());
        for id in ids {
            put_id(&mut prefix, *id, self.sizes.field);
        }
        prefix
    }

    /// Issues `key` once: to the VM (into `out`, with its position), or, when `known` has
    /// its reply, answered from there at once.
    fn issue(&mut self, out: &mut Vec<(usize, Key)>, key: Key, step: Step, known: &mut Known) {
        if self.issued.len() >= self.limits.commands || self.keys.contains(&key) {
            return;
        }
        self.keys.insert(key.clone());
        let n = self.issued.len();
        self.issued.push((key.clone(), step));
        self.answered.push(false);
        self.outstanding += 1;
        match known.get(&key).map(<[u8]>::to_vec) {
            Some(reply) => {
                let more = self.on_reply(n, 0, &reply, known);
                out.extend(more);
            }
            None => out.push((n, key)),
        }
    }
}

fn frames_data(thread: &[u8], start: i32, length: i32) -> Vec<u8> {
    let mut d = thread.to_vec();
    d.extend_from_slice(&start.to_be_bytes());
    d.extend_from_slice(&length.to_be_bytes());
    d
}

/// StackFrame.GetValues data for the frame in `prefix` (thread, frame) and these locals.
fn get_values_data(prefix: &[u8], locals: &[Local]) -> Vec<u8> {
    let mut d = prefix.to_vec();
    d.extend_from_slice(&(locals.len() as u32).to_be_bytes());
    for l in locals {
        d.extend_from_slice(&l.slot.to_be_bytes());
        d.push(l.sig_byte);
    }
    d
}

/// A ThreadReference.Frames reply's frames; None when it does not parse to its last byte.
pub fn parse_frames(data: &[u8], s: &IdSizes) -> Option<Vec<Frame>> {
    let mut r = Reader::new(data);
    let n = r.u32("frames").ok()? as usize;
    let each = s.frame + 1 + s.reference_type + s.method + 8;
    if n.checked_mul(each)? != r.remaining() {
        return None;
    }
    let mut frames = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.id(s.frame, "frame").ok()?;
        let type_tag = r.u8("typeTag").ok()?;
        let class = r.id(s.reference_type, "class").ok()?;
        let method = r.id(s.method, "method").ok()?;
        let index = r.id(8, "index").ok()?;
        frames.push(Frame { id, type_tag, class, method, index });
    }
    Some(frames)
}

/// One entry of a Method.VariableTableWithGeneric reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub code_index: u64,
    pub name: String,
    pub signature: String,
    pub length: u32,
    pub slot: i32,
}

/// A Method.VariableTableWithGeneric reply's entries; None when it does not parse to its
/// last byte.
pub fn parse_variable_table(data: &[u8]) -> Option<Vec<Variable>> {
    let mut r = Reader::new(data);
    let _arg_count = r.u32("argCnt").ok()?;
    let n = r.u32("slots").ok()? as usize;
    // Each entry is at least 8 + 4 + 4 + 4 + 4 + 4 bytes: a bound before allocating.
    if n > r.remaining() / 28 {
        return None;
    }
    let mut vars = Vec::with_capacity(n);
    for _ in 0..n {
        let code_index = r.id(8, "codeIndex").ok()?;
        let name = r.string("name").ok()?;
        let signature = r.string("signature").ok()?;
        let _generic = r.string("genericSignature").ok()?;
        let length = r.u32("length").ok()?;
        let slot = r.i32("slot").ok()?;
        vars.push(Variable { code_index, name, signature, length, slot });
    }
    (r.remaining() == 0).then_some(vars)
}

/// A local as StackFrame.GetValues names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Local {
    pub slot: i32,
    pub sig_byte: u8,
}

/// The locals JDI's `StackFrame.visibleVariables()` gives at code index `at`, in its order:
/// entries named `this` or `this$...` are not variables; an entry is visible when
/// `code_index <= at <= code_index + length - 1`; of two visible with one name, the one whose
/// scope starts later hides the other; the rest sorted by slot.
pub fn visible_locals(vars: &[Variable], at: u64) -> Vec<Local> {
    let mut by_name: Vec<&Variable> = Vec::new();
    for v in vars {
        if v.name == "this" || v.name.starts_with("this$") || v.signature.is_empty() {
            continue;
        }
        let end = v.code_index.checked_add(u64::from(v.length)).and_then(|e| e.checked_sub(1));
        let visible = v.code_index <= at && end.is_some_and(|e| at <= e);
        if !visible {
            continue;
        }
        match by_name.iter_mut().find(|w| w.name == v.name) {
            Some(w) if v.code_index > w.code_index => *w = v,
            Some(_) => {}
            None => by_name.push(v),
        }
    }
    by_name.sort_by_key(|v| v.slot);
    by_name.iter().map(|v| Local { slot: v.slot, sig_byte: v.signature.as_bytes()[0] }).collect()
}
