//! Whether a gathered answer is still the VM's truth: a pure table from what happened since
//! it was read to keep or drop, with the reason for every row, read against the JDWP
//! specification (Java SE 17 and 25) and JVMTI. Called by the near side for every command
//! written to the VM (any debugger's, or jdwpmux's own) and every event read from it.
//!
//! The rules, in short: frames, locals and `this` of the stopped thread hold while that
//! thread stays suspended and nothing writes its locals or pops its frames; a thread's name,
//! object and static fields hold only while every thread is suspended (the stop's suspend
//! policy was ALL) and nothing has written them; any event after the stop, any Resume that
//! may run a thread that matters, any InvokeMethod (it runs threads), RedefineClasses, and
//! any command not known to change nothing drop them. When in doubt a row drops.

use crate::jdwp::events::{suspend, IdSizes};
use crate::jdwp::reader::Reader;

/// What a gathered answer tells, by its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// ThreadReference.Name (11, 1).
    ThreadName,
    /// ThreadReference.Status (11, 4).
    ThreadStatus,
    /// ThreadReference.FrameCount (11, 7).
    FrameCount,
    /// ThreadReference.Frames (11, 6).
    Frames,
    /// StackFrame.ThisObject (16, 3).
    ThisObject,
    /// ObjectReference.ReferenceType (9, 1) of an object a frame holds.
    ObjectType,
    /// StackFrame.GetValues (16, 1).
    Locals,
    /// Method.VariableTableWithGeneric (6, 5).
    VariableTable,
    /// ObjectReference.GetValues (9, 2).
    ObjectFields,
    /// ReferenceType.GetValues (2, 6): static fields.
    Statics,
    /// ArrayReference.GetValues (13, 2).
    ArrayValues,
    /// StringReference.Value (10, 1) of a string the stop's values name.
    StringValue,
    /// ArrayReference.Length (13, 1) of an array the stop's values name.
    ArrayLength,
    /// VirtualMachine.AllThreads (1, 4): the threads view's list.
    Threads,
    /// ThreadReference.Status (11, 4) of a thread other than the stopped one.
    OtherStatus,
    /// ThreadReference.FrameCount (11, 7) of a thread other than the stopped one.
    OtherFrameCount,
    /// ThreadReference.SuspendCount (11, 12) of any thread.
    SuspendCount,
}

impl Answer {
    pub const ALL: [Answer; 17] = [
        Answer::ThreadName,
        Answer::ThreadStatus,
        Answer::FrameCount,
        Answer::Frames,
        Answer::ThisObject,
        Answer::ObjectType,
        Answer::Locals,
        Answer::VariableTable,
        Answer::ObjectFields,
        Answer::Statics,
        Answer::ArrayValues,
        Answer::StringValue,
        Answer::ArrayLength,
        Answer::Threads,
        Answer::OtherStatus,
        Answer::OtherFrameCount,
        Answer::SuspendCount,
    ];

    /// The answer a command is, for the answers of a stop of thread `stopped`: a thread's
    /// status and frame count are the stopped thread's or another's (another may be resumed
    /// alone), by the thread the command names.
    pub fn of_command(set: u8, cmd: u8, data: &[u8], sizes: &IdSizes, stopped: u64) -> Option<Answer> {
        let other = || Reader::new(data).id(sizes.object, "thread").is_ok_and(|t| t != stopped);
        Some(match Answer::of(set, cmd)? {
            Answer::ThreadStatus if other() => Answer::OtherStatus,
            Answer::FrameCount if other() => Answer::OtherFrameCount,
            a => a,
        })
    }

    /// The answer a command's reply is, if it may be gathered at all.
    pub fn of(set: u8, cmd: u8) -> Option<Answer> {
        Some(match (set, cmd) {
            (11, 1) => Answer::ThreadName,
            (11, 4) => Answer::ThreadStatus,
            (11, 7) => Answer::FrameCount,
            (11, 6) => Answer::Frames,
            (16, 3) => Answer::ThisObject,
            (9, 1) => Answer::ObjectType,
            (16, 1) => Answer::Locals,
            (6, 5) => Answer::VariableTable,
            (9, 2) => Answer::ObjectFields,
            (2, 6) => Answer::Statics,
            (13, 2) => Answer::ArrayValues,
            (10, 1) => Answer::StringValue,
            (13, 1) => Answer::ArrayLength,
            (1, 4) => Answer::Threads,
            (11, 12) => Answer::SuspendCount,
            _ => return None,
        })
    }

    /// Whether an answer read at a stop with this suspend policy may be served at all.
    pub fn admitted(self, policy: u8) -> Result<(), &'static str> {
        let every_thread = policy == suspend::ALL;
        match self {
            Answer::ThreadName if !every_thread => {
                Err("a thread's name is a field any running thread may set (Thread.setName): only while every thread is suspended")
            }
            Answer::ObjectFields | Answer::Statics | Answer::ArrayValues if !every_thread => {
                Err("fields and array elements change whenever any thread runs: only while every thread is suspended")
            }
            Answer::Threads | Answer::OtherStatus | Answer::OtherFrameCount | Answer::SuspendCount if !every_thread => {
                Err("the other threads run on, start and end: the threads view only while every thread is suspended")
            }
            Answer::StringValue | Answer::ArrayLength if !every_thread => Err(
                "a string's value and an array's length never change, but a running thread may drop the last reference \
                 and the object be collected (the VM would answer INVALID_OBJECT): only while every thread is suspended",
            ),
            _ if policy != suspend::EVENT_THREAD && !every_thread => Err("the stop suspended no thread"),
            _ => Ok(()),
        }
    }
}

/// What happened on the VM connection since the answers were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Happening {
    /// The stop event the answers were gathered for, relayed after them.
    Anchor,
    /// Any other event from the VM.
    Event,
    /// ThreadReference.Resume (11, 3); `stopped`: of the thread the answers are about.
    ResumeThread { stopped: bool },
    /// VirtualMachine.Resume (1, 9).
    ResumeAll,
    /// ThreadReference.Suspend (11, 2) or VirtualMachine.Suspend (1, 8).
    Suspend,
    /// ClassType.InvokeMethod (3, 3), ClassType.NewInstance (3, 4), InterfaceType.InvokeMethod
    /// (5, 1), ObjectReference.InvokeMethod (9, 6).
    Invoke,
    /// StackFrame.SetValues (16, 2); `stopped`: on a frame of the stopped thread.
    SetLocals { stopped: bool },
    /// ObjectReference.SetValues (9, 3), ClassType.SetValues (3, 2), ArrayReference.SetValues (13, 3).
    SetFields,
    /// StackFrame.PopFrames (16, 4).
    PopFrames,
    /// ThreadReference.ForceEarlyReturn (11, 14).
    ForceEarlyReturn,
    /// VirtualMachine.RedefineClasses (1, 18).
    Redefine,
    /// A command that changes nothing a gathered answer says (a read, an event request).
    Read,
    /// Any other command: its effect is not known here.
    Other,
}

/// What a command written to the VM is, for the answers about `stopped` (the thread of the
/// stop). `data` is the command's data; a thread id that cannot be read counts as the stopped
/// thread's.
pub fn classify(set: u8, cmd: u8, data: &[u8], sizes: &IdSizes, stopped: u64) -> Happening {
    let on_stopped = || Reader::new(data).id(sizes.object, "thread").map_or(true, |t| t == stopped);
    match (set, cmd) {
        (11, 3) => Happening::ResumeThread { stopped: on_stopped() },
        (1, 9) => Happening::ResumeAll,
        (11, 2) | (1, 8) => Happening::Suspend,
        (3, 3) | (3, 4) | (5, 1) | (9, 6) => Happening::Invoke,
        (16, 2) => Happening::SetLocals { stopped: on_stopped() },
        (9, 3) | (3, 2) | (13, 3) => Happening::SetFields,
        (16, 4) => Happening::PopFrames,
        (11, 14) => Happening::ForceEarlyReturn,
        (1, 18) => Happening::Redefine,
        _ if is_read(set, cmd) => Happening::Read,
        _ => Happening::Other,
    }
}

/// Commands that change nothing a gathered answer says: each reads VM state, or sets or
/// clears an event request (which changes what will be reported, not what is).
pub fn is_read(set: u8, cmd: u8) -> bool {
    match set {
        // Version, ClassesBySignature, AllClasses, AllThreads, TopLevelThreadGroups, IDSizes,
        // CreateString (a new object; nothing existing changes), Capabilities, ClassPaths,
        // HoldEvents, ReleaseEvents, CapabilitiesNew, SetDefaultStratum (how line data is
        // shown, not what is), AllClassesWithGeneric, InstanceCounts, AllModules.
        1 => matches!(cmd, 1 | 2 | 3 | 4 | 5 | 7 | 11 | 12 | 13 | 15 | 16 | 17 | 19 | 20 | 21 | 22),
        // ReferenceType: every command reads.
        2 => (1..=19).contains(&cmd),
        // ClassType.Superclass.
        3 => cmd == 1,
        // ArrayType.NewInstance: a new array; nothing existing changes.
        4 => cmd == 1,
        // Method: every command reads.
        6 => (1..=5).contains(&cmd),
        // ObjectReference: ReferenceType, GetValues, MonitorInfo, DisableCollection,
        // EnableCollection (the frame still holds what it names), IsCollected, ReferringObjects.
        9 => matches!(cmd, 1 | 2 | 5 | 7 | 8 | 9 | 10),
        // StringReference.Value.
        10 => cmd == 1,
        // ThreadReference: Name, Status, ThreadGroup, Frames, FrameCount, OwnedMonitors,
        // CurrentContendedMonitor, SuspendCount, OwnedMonitorsStackDepthInfo, IsVirtual.
        11 => matches!(cmd, 1 | 4 | 5 | 6 | 7 | 8 | 9 | 12 | 13 | 15),
        // ThreadGroupReference: Name, Parent, Children.
        12 => (1..=3).contains(&cmd),
        // ArrayReference: Length, GetValues.
        13 => matches!(cmd, 1 | 2),
        // ClassLoaderReference.VisibleClasses.
        14 => cmd == 1,
        // EventRequest: Set, Clear, ClearAllBreakpoints.
        15 => (1..=3).contains(&cmd),
        // StackFrame: GetValues, ThisObject.
        16 => matches!(cmd, 1 | 3),
        // ClassObjectReference.ReflectedType.
        17 => cmd == 1,
        // ModuleReference: Name, ClassLoader.
        18 => matches!(cmd, 1 | 2),
        _ => false,
    }
}

/// Keep or drop a gathered answer, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub keep: bool,
    pub why: &'static str,
}

const fn keep(why: &'static str) -> Rule {
    Rule { keep: true, why }
}

const fn drop(why: &'static str) -> Rule {
    Rule { keep: false, why }
}

/// The table: what `happening` does to a gathered `answer`.
pub fn rule(answer: Answer, happening: Happening) -> Rule {
    use Answer::*;
    use Happening as H;
    let of_frames = matches!(answer, FrameCount | Frames | ThisObject | ObjectType | Locals);
    let of_heap = matches!(answer, ThreadName | ObjectFields | Statics | ArrayValues);
    let of_object = matches!(answer, StringValue | ArrayLength);
    let of_threads = matches!(answer, Threads | OtherStatus | OtherFrameCount | SuspendCount);
    match happening {
        H::Anchor => keep("the stop the answers were read for: the debugger learns of it now"),
        H::Read => keep("a read or an event request changes no thread, frame, local or field"),
        H::Suspend if answer == SuspendCount => drop("a suspension adds one to a thread's suspend count"),
        H::Suspend => keep("a suspension only adds to a count: the stopped thread's frames, status and every value stay"),
        H::ResumeThread { .. } if of_threads => {
            drop("the thread resumed may be the one asked about, and a running thread may start or end threads")
        }
        H::SetLocals { .. } | H::SetFields if of_threads => keep("a value written starts, ends, resumes or moves no thread"),
        H::ResumeThread { .. } | H::SetLocals { .. } | H::SetFields if of_object => drop(
            "a string's value and an array's length never change, but a thread run or a reference written may leave \
             the object unreachable, and a collected object's id gets INVALID_OBJECT from the VM",
        ),
        H::Event => drop("an event is newer than the answer: what it tells (a thread's death, an unload) may contradict it"),
        H::ResumeAll => drop("every thread may run: frame ids lapse and any value may change"),
        H::Invoke => drop("an invoke runs threads (all, unless single-threaded) and the invoked code may change anything"),
        H::PopFrames => drop("the thread's frames and locals change"),
        H::ForceEarlyReturn => drop("the thread's frames change when it returns"),
        H::Redefine => drop("methods become obsolete: method ids in frames, variable tables and field layouts may change"),
        H::Other => drop("a command whose effect is not known here"),
        H::ResumeThread { stopped: true } => drop("the stopped thread may run: its frame ids lapse, its status and locals change"),
        H::ResumeThread { stopped: false } if of_heap => drop("another thread may run and write any field"),
        H::ResumeThread { stopped: false } => match answer {
            VariableTable => keep("a method's variable table changes only by RedefineClasses"),
            _ => keep("another thread running cannot change a suspended thread's frames, locals or status"),
        },
        H::SetLocals { stopped: true } => match answer {
            Locals | ThisObject | ObjectType => drop("the stopped thread's locals were written (slot 0 holds this)"),
            _ => keep("a local written changes no frame, status, field or variable table"),
        },
        H::SetLocals { stopped: false } => keep("another thread's locals: nothing gathered here reads them"),
        H::SetFields if of_heap => drop("a field or an array element was written"),
        H::SetFields if of_frames => keep("a field written changes no frame or local (locals hold values, not fields)"),
        H::SetFields => keep("a field written changes no status or variable table"),
    }
}

/// The state of one stop's gathered answers on the near side: which may still be served.
#[derive(Debug, Clone)]
pub struct Live {
    policy: u8,
    anchored: bool,
    dropped: [bool; Answer::ALL.len()],
}

fn index(a: Answer) -> usize {
    Answer::ALL.iter().position(|x| *x == a).unwrap_or(0)
}

impl Live {
    /// Answers read at a stop with this suspend policy, as they reach the near side (before
    /// the stop event itself, which [`Happening::Anchor`] then marks). `in_flight`: what the
    /// commands written to the VM and not yet answered are. Each may have run on the VM after
    /// the far side's reading (a reply that came before the answers ran before the stop,
    /// since the far side relays nothing the VM sent after the stop until it has sent
    /// them), so each counts as happened since; classify them with what is known (their
    /// data unknown, a thread in them counts as the stopped one).
    pub fn new(policy: u8, in_flight: impl IntoIterator<Item = Happening>) -> Live {
        let mut dropped = [false; Answer::ALL.len()];
        for a in Answer::ALL {
            dropped[index(a)] = a.admitted(policy).is_err();
        }
        let mut live = Live { policy, anchored: false, dropped };
        for h in in_flight {
            live.observe(h);
        }
        live
    }

    pub fn policy(&self) -> u8 {
        self.policy
    }

    /// Applies what happened. The stop event keeps the answers the first time (they were
    /// read for it); any event after it, or a second anchor, is an event like any other.
    pub fn observe(&mut self, happening: Happening) {
        if happening == Happening::Anchor && !self.anchored {
            self.anchored = true;
            return;
        }
        let happening = if happening == Happening::Anchor { Happening::Event } else { happening };
        for a in Answer::ALL {
            if !rule(a, happening).keep {
                self.dropped[index(a)] = true;
            }
        }
    }

    /// Whether an answer of this kind may be served now.
    pub fn serves(&self, answer: Answer) -> bool {
        self.anchored && !self.dropped[index(answer)]
    }

    /// Nothing is left to serve.
    pub fn spent(&self) -> bool {
        self.dropped.iter().all(|d| *d)
    }
}
