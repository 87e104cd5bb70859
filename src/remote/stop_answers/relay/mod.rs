//! The far side's relay of one VM connection with gathering: sans-I/O. The channel task
//! gives it what the near side sends ([`Relay::from_near`]) and what the VM sends
//! ([`Relay::from_vm`], in `from_vm.rs`) and does what the returned [`Out`]s say, in order.
//!
//! What it keeps true:
//! - The near side's bytes go to the VM unchanged and at once; jdwpmux's own commands are
//!   written only between the near side's packets (never inside one), under ids from
//!   [`super::FAR_IDS`], which the near side's sessions never use.
//! - Replies to those ids never reach the near side; everything else the VM sends does,
//!   unchanged and in order. A packet that is not needed whole streams through as it comes
//!   (a 200 MiB reply is not buffered).
//! - At a stop (an Event.Composite the plan takes), the event and everything the VM sends
//!   after it are held until the plan is done, then the answers go first
//!   ([`Out::Gathered`]) and the held bytes after them. So a reply the near side sees before
//!   the answers was sent by the VM before the stop. The hold is bounded in time and bytes:
//!   past either, the held bytes go on without answers.
//! - A reply to the near side's VirtualMachine.ClassesBySignature is held the same way while
//!   the class data JDI asks next is read ([`Plan::at_classes`]): its answers (suspend
//!   policy NONE, no thread: nothing of a stop) go first, for the near side's cache. Once
//!   per class, as below: JDI looks a class up by name again and again (`ClassType.setValue`
//!   checks the value's type so, each time), and a lookup of classes read already passes at
//!   once.
//! - A ClassPrepare request of the near side's naming one class exactly
//!   ([`super::plan::prepare_signature`]) starts a hold of its own as it goes to the VM:
//!   the class is looked up and read ([`Plan::at_prepare`]) and its data goes before
//!   anything the VM sends after the request (its reply, which the near side answered
//!   early, and the replies to what the debugger asked next: jdb's `allClasses()`, the
//!   class's methods and line tables).
//! - The near side's first command about a class by its id ([`CLASS_DATA`]: after
//!   `allClasses()` JDI finds classes in its own list and looks nothing up) starts a hold
//!   the same way: the class's data is read ([`Plan::at_class`]), once per class (by either
//!   way, until a RedefineClasses passes), and goes before the command's reply.
//! - A reply to the near side's invoke ([`INVOKES`]) that returns a String is held the same
//!   way while that String's value is read ([`Plan::at_invoke`]): an IDE asks it next to
//!   show the result, a link round trip otherwise. Its answer (suspend policy NONE, no
//!   thread, the invoke's id) goes first; the near side serves it while every thread stays
//!   suspended (`super::invoked`).
//! - Before gathering it asks the VM's id sizes itself (VirtualMachine.IDSizes), once the
//!   VM has answered the handshake; a stop before their answer passes without answers.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::known::Known;
use super::vm_wide::VmWide;
use super::plan::{Gathered, Limits, Plan, CLASS_DATA};
use super::{Key, FAR_IDS};
use crate::jdwp::events::IdSizes;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::packet::{Header, Packet, EVENT_CMD_SET, EVENT_COMPOSITE, HEADER_LEN};

mod from_vm;

/// The longest a stop's event is held while its answers are read.
pub const HOLD_TIME: Duration = Duration::from_secs(2);
/// The most bytes held behind a stop's event.
pub const HOLD_BYTES: usize = 1024 * 1024;
/// The largest event packet read whole to plan from (larger ones stream through).
pub const MAX_EVENT: usize = 64 * 1024;
/// The largest reply to jdwpmux's own command that is read; a larger one is skipped.
pub const MAX_OWN_REPLY: usize = 1024 * 1024;
/// The near side's class lookups awaiting their reply, at most (past it, the oldest are
/// forgotten: their replies pass through without class data).
pub const MAX_LOOKUPS: usize = 64;
/// VirtualMachine.ClassesBySignature.
const CLASSES_BY_SIGNATURE: (u8, u8) = (1, 2);
/// The invokes whose returned String is read with their reply: ClassType.InvokeMethod,
/// InterfaceType.InvokeMethod, ObjectReference.InvokeMethod. (ClassType.NewInstance is left
/// out: it makes an object, and an IDE shows a new object's fields, not a string.)
pub const INVOKES: [(u8, u8); 3] = [(3, 3), (5, 1), (9, 6)];
/// EventRequest.Set.
const EVENT_SET: (u8, u8) = (15, 1);
/// VirtualMachine.RedefineClasses.
const REDEFINE_CLASSES: (u8, u8) = (1, 18);
/// The most VirtualMachine.Resume commands sent when the near side lets go of a connection.
pub const MAX_LET_GO_RESUMES: u32 = 64;
/// The largest EventRequest.Set of the near side's read to plan from (a ClassPrepare
/// request with a pattern or two is tens of bytes).
pub const MAX_SET: usize = 1024;

/// A command of the near side's read whole to plan from: an EventRequest.Set, or one about
/// a class ([`CLASS_DATA`]).
#[derive(Debug)]
struct NearBody {
    id: u32,
    command: (u8, u8),
    data: Vec<u8>,
}

/// Classes remembered as read by [`Plan::at_class`] or [`Plan::at_classes`] on one
/// connection.
pub const MAX_READ_CLASSES: usize = 16 * 1024;

/// One stop's answers, for the near side: they hold from the event with id `event_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answers {
    pub event_id: u32,
    pub suspend_policy: u8,
    pub thread: u64,
    pub answers: Vec<Gathered>,
    /// Commands the VM answered ABSENT_INFORMATION that the near cache keeps
    /// (`jdwp::unchanging::ABSENT_KEPT`): only when [`Limits::absent`].
    pub absent: Vec<super::Key>,
}

/// What to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    ToNear(Vec<u8>),
    ToVm(Vec<u8>),
    Gathered(Answers),
}

/// Where the reading of the VM's current packet is.
#[derive(Debug)]
enum Reading {
    /// Between packets: collecting a header.
    Header(Vec<u8>),
    /// Relaying the rest of a packet as it comes.
    Stream(usize),
    /// Reading a whole packet (an event, or a reply to jdwpmux's own command).
    Whole(Vec<u8>, usize),
    /// Skipping the rest of a reply to jdwpmux's own command that is too large.
    Skip(usize),
}

#[derive(Debug)]
struct Hold {
    plan: Plan,
    event_id: u32,
    /// jdwpmux's request id -> the command's position in the plan.
    ids: HashMap<u32, usize>,
    held: Vec<u8>,
    deadline: Instant,
}

#[derive(Debug)]
pub struct Relay {
    gather: bool,
    limits: Limits,
    vm_handshake_left: usize,
    near_handshake_left: usize,
    reading: Reading,
    /// Bytes of the near side's current packet still to come (header bytes collected first).
    near_header: Vec<u8>,
    near_left: usize,
    /// jdwpmux's commands waiting for the near side's current packet to end.
    waiting: Vec<u8>,
    next_id: u32,
    sizes_id: Option<u32>,
    sizes: Option<IdSizes>,
    hold: Option<Hold>,
    /// Replies that cannot change while this connection lives, for later stops.
    known: Known,
    /// The near side's ClassesBySignature commands not answered yet, by id, oldest first.
    lookups: std::collections::VecDeque<u32>,
    /// The near side's invokes ([`INVOKES`]) not answered yet, by id, oldest first (at most
    /// [`MAX_LOOKUPS`]: past it, the oldest's reply passes through without its String).
    invokes: std::collections::VecDeque<u32>,
    /// The invoke whose reply is being read whole.
    invoke_reply: Option<u32>,
    /// The near side's EventRequest.Set being read (its id and the data so far).
    near_set: Option<NearBody>,
    /// Classes whose data a debugger's first command about them or a lookup of them had read
    /// ([`Plan::at_class`], [`Plan::at_classes`]), so it is read once (at most
    /// [`MAX_READ_CLASSES`], then again; all again after a RedefineClasses).
    read_classes: std::collections::HashSet<u64>,
    /// The VM-wide suspensions the agent counts, resumed when the connection is let go.
    vm_wide: VmWide,
    /// The next byte from the VM is an event composite's suspend policy.
    policy_next: bool,
}

impl Relay {
    /// `gather`: whether stops are gathered (the near side understands the answers).
    pub fn new(gather: bool, limits: Limits) -> Relay {
        Relay {
            gather,
            limits,
            vm_handshake_left: HANDSHAKE.len(),
            near_handshake_left: HANDSHAKE.len(),
            reading: Reading::Header(Vec::new()),
            near_header: Vec::new(),
            near_left: 0,
            waiting: Vec::new(),
            next_id: *FAR_IDS.start(),
            sizes_id: None,
            sizes: None,
            hold: None,
            known: Known::default(),
            lookups: std::collections::VecDeque::new(),
            invokes: std::collections::VecDeque::new(),
            invoke_reply: None,
            near_set: None,
            read_classes: std::collections::HashSet::new(),
            vm_wide: VmWide::default(),
            policy_next: false,
        }
    }

    /// A relay over a connection whose handshake both ends made already (the session's own
    /// VM connection, `session::local_stops`): what it sends the VM at once (its
    /// IDSizes, when gathering) is returned.
    pub fn handshaken(gather: bool, limits: Limits) -> (Relay, Vec<Out>) {
        let mut relay = Relay::new(gather, limits);
        relay.near_handshake_left = 0;
        relay.vm_handshake_left = 0;
        let mut out = Vec::new();
        if gather {
            relay.sizes_id = Some(relay.send_own(&mut out, &Key::new(1, 7, Vec::new())));
        }
        (relay, out)
    }

    /// The near side let go of the connection, which closes after what this returns: a
    /// VirtualMachine.Resume for each VM-wide suspension the agent still counts
    /// ([`VmWide`]), unless the near side's last packet was cut short (the VM would read
    /// them as its rest).
    pub fn let_go(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.near_between_packets() {
            return out;
        }
        for _ in 0..self.vm_wide.owed().min(MAX_LET_GO_RESUMES) {
            let id = self.own_id();
            out.extend_from_slice(Packet::command(id, 1, 9, &[]).as_bytes());
        }
        out
    }

    /// When [`Relay::tick`] must be called next (a stop's hold ends then).
    pub fn deadline(&self) -> Option<Instant> {
        self.hold.as_ref().map(|h| h.deadline)
    }

    /// Time passed: a hold past its deadline lets its bytes go without answers.
    pub fn tick(&mut self, now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        if self.hold.as_ref().is_some_and(|h| now >= h.deadline) {
            self.release(&mut out, false);
        }
        out
    }

    /// Bytes from the near side, read at `now`: all go to the VM; jdwpmux's waiting commands
    /// follow when they end a packet.
    pub fn from_near(&mut self, mut bytes: &[u8], now: Instant) -> Vec<Out> {
        let mut out = vec![Out::ToVm(bytes.to_vec())];
        // Whole Sets of these bytes, planned from once all of them are read: jdwpmux's own
        // commands may follow only once the near side's packet in progress has ended.
        let mut sets = Vec::new();
        let hs = self.near_handshake_left.min(bytes.len());
        self.near_handshake_left -= hs;
        bytes = &bytes[hs..];
        while !bytes.is_empty() {
            if self.near_left > 0 {
                let n = self.near_left.min(bytes.len());
                self.near_left -= n;
                if let Some(NearBody { data: d, .. }) = &mut self.near_set {
                    d.extend_from_slice(&bytes[..n]);
                }
                bytes = &bytes[n..];
                if self.near_left == 0 {
                    if let Some(set) = self.near_set.take() {
                        sets.push(set);
                    }
                }
                continue;
            }
            let n = (HEADER_LEN - self.near_header.len()).min(bytes.len());
            self.near_header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if let Some(h) = Header::parse(&self.near_header) {
                if !h.is_reply() {
                    self.known.command(h.cmd_set(), h.cmd());
                    self.vm_wide.command(h.cmd_set(), h.cmd());
                    if (h.cmd_set(), h.cmd()) == REDEFINE_CLASSES {
                        self.read_classes.clear();
                    }
                    if self.gather && (h.cmd_set(), h.cmd()) == CLASSES_BY_SIGNATURE {
                        if self.lookups.len() >= MAX_LOOKUPS {
                            self.lookups.pop_front();
                        }
                        self.lookups.push_back(h.id);
                    }
                    if self.gather && INVOKES.contains(&(h.cmd_set(), h.cmd())) {
                        if self.invokes.len() >= MAX_LOOKUPS {
                            self.invokes.pop_front();
                        }
                        self.invokes.push_back(h.id);
                    }
                }
                // A length below the header's is the VM's to refuse; count it as the header.
                self.near_left = (h.length as usize).saturating_sub(HEADER_LEN);
                self.near_header.clear();
                let command = (h.cmd_set(), h.cmd());
                let read = !h.is_reply() && (command == EVENT_SET || CLASS_DATA.contains(&command));
                if read && self.gather && self.near_left > 0 && self.near_left <= MAX_SET {
                    self.near_set = Some(NearBody { id: h.id, command, data: Vec::with_capacity(self.near_left) });
                }
            }
        }
        for body in sets {
            if body.command == EVENT_SET {
                self.near_set_whole(&mut out, body.id, &body.data, now);
            } else {
                self.near_class_whole(&mut out, body.id, &body.data, now);
            }
        }
        self.flush_waiting(&mut out);
        out
    }

    /// A whole EventRequest.Set of the near side's (gone to the VM with the bytes it came
    /// in): a ClassPrepare request naming one class starts the reading of that class, when
    /// nothing else is held.
    fn near_set_whole(&mut self, out: &mut Vec<Out>, id: u32, data: &[u8], now: Instant) {
        let (Some(sizes), None) = (self.sizes, &self.hold) else { return };
        let Some(signature) = super::plan::prepare_signature(data) else { return };
        let (plan, first) = Plan::at_prepare(&signature, sizes, self.limits, &mut self.known);
        self.hold = Some(Hold { plan, event_id: id, ids: HashMap::new(), held: Vec::new(), deadline: now + HOLD_TIME });
        self.send_plan(out, first);
    }

    /// A whole command of the near side's about a class ([`CLASS_DATA`], gone to the VM with
    /// the bytes it came in): the first about that class starts the reading of its data,
    /// when nothing else is held; the command's reply comes after it.
    fn near_class_whole(&mut self, out: &mut Vec<Out>, id: u32, data: &[u8], now: Instant) {
        let (Some(sizes), None) = (self.sizes, &self.hold) else { return };
        let Ok(class) = crate::jdwp::reader::Reader::new(data).id(sizes.reference_type, "refType") else { return };
        if class == 0 || self.read_classes.contains(&class) {
            return;
        }
        self.class_read(class);
        let (plan, first) = Plan::at_class(class, sizes, self.limits, &mut self.known);
        self.hold = Some(Hold { plan, event_id: id, ids: HashMap::new(), held: Vec::new(), deadline: now + HOLD_TIME });
        self.send_plan(out, first);
    }

    /// Notes that `class`'s data is being read, not to be read again.
    fn class_read(&mut self, class: u64) {
        if self.read_classes.len() >= MAX_READ_CLASSES {
            self.read_classes.clear();
        }
        self.read_classes.insert(class);
    }

    /// The plan for a class lookup's reply, when it names a class whose data was not read
    /// on this connection yet.
    fn lookup_plan(&mut self, data: &[u8], sizes: IdSizes) -> Option<(Plan, Vec<(usize, Key)>)> {
        let found = super::plan::parse_lookup(data, &sizes)?;
        if found.iter().all(|(_, class)| self.read_classes.contains(class)) {
            return None;
        }
        let planned = Plan::at_classes(data, sizes, self.limits, &mut self.known)?;
        found.iter().for_each(|(_, class)| self.class_read(*class));
        Some(planned)
    }

    fn near_between_packets(&self) -> bool {
        self.near_handshake_left == 0 && self.near_header.is_empty() && self.near_left == 0
    }

    fn flush_waiting(&mut self, out: &mut Vec<Out>) {
        if !self.waiting.is_empty() && self.near_between_packets() {
            out.push(Out::ToVm(std::mem::take(&mut self.waiting)));
        }
    }

    /// An id of jdwpmux's own for a packet it puts in the near side's stream (a stop's
    /// answers, `super::inband`): taken from the same count as its commands' ids, so it is
    /// none of theirs (the near side tells the two apart by the packet, not the id).
    pub fn own_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = if id == *FAR_IDS.end() { *FAR_IDS.start() } else { id + 1 };
        id
    }

    fn send_own(&mut self, out: &mut Vec<Out>, key: &Key) -> u32 {
        let id = self.own_id();
        self.waiting.extend_from_slice(Packet::command(id, key.set, key.cmd, &key.data).as_bytes());
        self.flush_waiting(out);
        id
    }
}

#[cfg(test)]
pub(crate) mod harness;
#[cfg(test)]
mod invoke_tests;
#[cfg(test)]
mod tests;
