//! A class lookup's plan: the classes a VirtualMachine.ClassesBySignature reply names (or a
//! ClassPrepare request's class, or the class a debugger first asks about by id, looked up
//! by the plan itself) get the class data JDI asks next, and of each class found its source
//! file and its methods' line tables; the replies that plan reads, parsed.

use super::{Known, Limits, Plan, Step};
use crate::remote::stop_answers::Key;
use crate::jdwp::events::{kind, suspend, IdSizes};
use crate::jdwp::reader::Reader;

/// Classes of one lookup's reply whose data is read (one signature names one class per
/// loader: more is rare).
pub const LOOKUP_CLASSES: usize = 8;

/// The commands about a class whose first asking starts [`Plan::at_class`]: the class data
/// that plan reads (ReferenceType Signature, SourceFile, Interfaces, SourceDebugExtension,
/// SignatureWithGeneric, FieldsWithGeneric, MethodsWithGeneric; ClassType.Superclass).
pub const CLASS_DATA: [(u8, u8); 8] = [(2, 1), (2, 7), (2, 10), (2, 12), (2, 13), (2, 14), (2, 15), (3, 1)];

/// Methods of one class found by a lookup whose line tables are read (a class with more has
/// the rest asked by the debugger).
pub const LOOKUP_METHODS: usize = 64;

/// JVM access flags of a method without code: no line table is asked for (JDI does not).
const NATIVE: i32 = 0x0100;
const ABSTRACT: i32 = 0x0400;

/// A class lookup's limits: its answers all fit in one set on the wire (line tables of many
/// methods could pass [`crate::remote::stop_answers::MAX_ANSWERS`] otherwise).
fn class_limits(limits: Limits) -> Limits {
    Limits { commands: limits.commands.min(crate::remote::stop_answers::MAX_ANSWERS), ..limits }
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

    /// The plan for the class `class` (a reference type id) that a debugger asks about
    /// first, by a command of [`CLASS_DATA`]: its signature (ReferenceType.Signature), then
    /// the class looked up by it and read as [`Plan::at_classes`] reads a lookup's classes
    /// (the lookup gives its type tag, which the reading needs). Class data alone, as there.
    ///
    /// After `allClasses()` JDI finds a class in its own list and asks for its data command
    /// by command, each a link round trip through the far side: IntelliJ's attach asks 11 of
    /// them for the class of its breakpoint.
    pub fn at_class(class: u64, sizes: IdSizes, limits: Limits, known: &mut Known) -> (Plan, Vec<(usize, Key)>) {
        let mut plan = Plan::new(sizes, class_limits(limits), 0, suspend::NONE);
        plan.class_data = true;
        let mut first = Vec::new();
        let d = plan.id(class, sizes.reference_type);
        plan.issue(&mut first, Key::new(2, 1, d), Step::ClassSignature, known);
        (plan, first)
    }

    /// The classes a lookup found: their data, and of each its source file and methods.
    pub(super) fn found_classes(&mut self, out: &mut Vec<(usize, Key)>, found: Vec<(u8, u64)>, known: &mut Known) {
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
}
