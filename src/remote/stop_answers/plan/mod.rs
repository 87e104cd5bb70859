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
//! An invoke of a debugger's that returns a String (an IDE's `toString()` of what it shows)
//! leads to that String's StringReference.Value, which the IDE asks next to show it
//! ([`Plan::at_invoke`]; read before the invoke's reply is relayed).
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
//! `jdwp::unchanging::ABSENT_KEPT`). A reply that does not parse ends that
//! branch of the plan, nothing else.
//!
//! - `reply`: a reply taken in: what it leads to, and each command issued once.
//! - `lookup`: a class lookup's plan (its own lookup for a ClassPrepare request, or for a
//!   class a debugger first asks about by id), and the replies it reads. Pure.
//! - `frames`: a stopped thread's frames and locals, read from replies and asked for as JDI
//!   asks. Pure.

mod frames;
mod lookup;
mod reply;

use std::collections::{HashMap, HashSet};

use super::known::Known;
use super::values::Field;
use super::Key;
use crate::jdwp::events::{self, kind, suspend, IdSizes};
pub use frames::{parse_frames, parse_variable_table, visible_locals, Frame, Local, Variable};
pub use lookup::{parse_lookup, parse_methods_with_code, prepare_signature, CLASS_DATA, LOOKUP_CLASSES, LOOKUP_METHODS};
use frames::frames_data;

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
    /// Whether the objects a stop shows are read: `this` and its fields, the statics, the
    /// strings and arrays the values name, and each visible local alone. Without them a stop
    /// reads the thread's frames and the top frame's locals together, what every IDE asks
    /// at every stop (for a VM on this machine, where a read ahead costs the debuggee's
    /// agent more than the round trip it saves).
    pub objects: bool,
}

/// Threads the threads view reads at a stop, by default: an application server's pools
/// are tens of threads; past this an IDE's further rows go to the VM.
pub const THREADS_VIEW: usize = 64;

impl Default for Limits {
    fn default() -> Self {
        // The frames and values take up to 48 commands; the threads view 1 + 4 per thread.
        Limits { commands: 48 + 1 + 4 * THREADS_VIEW, bytes: 256 * 1024, top_frames: 1, threads: THREADS_VIEW, absent: false, objects: true }
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
    /// A class's ReferenceType.Signature: the class is looked up by it ([`Step::Lookup`]).
    ClassSignature,
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

    /// The plan for the String `string` (an object id) an invoke returned: its
    /// StringReference.Value, kept within `limits.bytes` as any reply. Its answer is no
    /// stop's: no thread, suspend policy NONE.
    pub fn at_invoke(string: u64, sizes: IdSizes, limits: Limits, known: &mut Known) -> (Plan, Vec<(usize, Key)>) {
        let mut plan = Plan::new(sizes, limits, 0, suspend::NONE);
        let mut first = Vec::new();
        let d = plan.id(string, sizes.object);
        plan.issue(&mut first, Key::new(10, 1, d), Step::Plain, known);
        (plan, first)
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
}

/// The String an invoke's reply returned (`data`: the returned value, tagged, then the
/// exception as a tagged object id), by its object id: None when the value is not a String
/// (tag 's') or is null, when the invoke threw, or when the data does not parse.
pub fn invoked_string(data: &[u8], sizes: &IdSizes) -> Option<u64> {
    let mut r = crate::jdwp::reader::Reader::new(data);
    if r.u8("tag").ok()? != b's' {
        return None;
    }
    let string = r.id(sizes.object, "returnValue").ok()?;
    r.u8("exception tag").ok()?;
    let exception = r.id(sizes.object, "exception").ok()?;
    (string != 0 && exception == 0 && r.remaining() == 0).then_some(string)
}
