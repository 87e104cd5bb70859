//! Which commands have answers that never change once the VM has given them, what their
//! arguments are (the key), and why each is (or is not) in the table. Read against the
//! JDWP specification (Java SE 17 and 25, `jdwp-protocol.html`). JDWP facts, below both
//! users: the session's near cache (`session::nearcache`, which names this `commands`)
//! and the answering at a stop (`remote::stop_answers`), which keeps the same errors.
//!
//! An answer is kept per VM connection only: HotSpot's ids live in its reference table,
//! which a debugger's departure resets, so an id means nothing on the next connection.

use crate::jdwp::reader::Reader;

/// What a command's data must be for its answer to be kept: the key's shape. The data is
/// the key as it is; a command whose data has another length is not answered near.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    /// No data: a fact about the VM's run.
    None,
    /// One referenceTypeID (the class the answer is about).
    Type,
    /// A referenceTypeID and a methodID (the method's declaring class and the method).
    Method,
}

/// One command whose successful answer may be kept.
#[derive(Debug, Clone, Copy)]
pub struct Immutable {
    pub set: u8,
    pub cmd: u8,
    pub name: &'static str,
    pub args: Args,
    /// The answer names other classes by id (their refcounts matter on DisposeObjects).
    pub names_types: bool,
    pub why: &'static str,
}

const fn keep(set: u8, cmd: u8, name: &'static str, args: Args, names_types: bool, why: &'static str) -> Immutable {
    Immutable { set, cmd, name, args, names_types, why }
}

use Args::{Method, None as NoArgs, Type};

/// Commands answered near once the VM has answered them (error code 0) on this connection.
pub const IMMUTABLE: &[Immutable] = &[
    keep(1, 1, "VirtualMachine.Version", NoArgs, false,
        "the JDWP version and the VM's name and version are fixed for the VM's run"),
    keep(1, 7, "VirtualMachine.IDSizes", NoArgs, false,
        "id sizes are fixed for the VM's run (every id on the wire depends on them)"),
    keep(1, 12, "VirtualMachine.Capabilities", NoArgs, false,
        "the capabilities the agent took at start; no command changes them"),
    keep(1, 17, "VirtualMachine.CapabilitiesNew", NoArgs, false,
        "as Capabilities"),
    keep(1, 13, "VirtualMachine.ClassPaths", NoArgs, false,
        "the base directory and class path: libjdwp reads user.dir and java.class.path once, as its agent starts \
         (util_initialize), and answers from there (an empty boot class path since JDK 9); jdb asks at attach"),
    keep(2, 1, "ReferenceType.Signature", Type, false,
        "a loaded type's JNI signature never changes; RedefineClasses cannot rename it"),
    keep(2, 3, "ReferenceType.Modifiers", Type, false,
        "the class file's access flags; only RedefineClasses could change them (dropped then)"),
    keep(2, 4, "ReferenceType.Fields", Type, false,
        "the declared fields and their ids; only RedefineClasses could change them (dropped then)"),
    keep(2, 5, "ReferenceType.Methods", Type, false,
        "the declared methods and their ids; RedefineClasses changes them (dropped then)"),
    keep(2, 7, "ReferenceType.SourceFile", Type, false,
        "the class file's SourceFile attribute; RedefineClasses may change it (dropped then)"),
    keep(2, 10, "ReferenceType.Interfaces", Type, true,
        "the directly implemented interfaces; RedefineClasses cannot change them. The answer names types by id: \
         JDI never disposes type ids, and a DisposeObjects naming a cached type drops it"),
    keep(2, 12, "ReferenceType.SourceDebugExtension", Type, false,
        "the class file's SourceDebugExtension attribute; RedefineClasses may change it (dropped then)"),
    keep(2, 13, "ReferenceType.SignatureWithGeneric", Type, false,
        "the signature and the generic signature attribute; fixed for a loaded type"),
    keep(2, 14, "ReferenceType.FieldsWithGeneric", Type, false,
        "as Fields"),
    keep(2, 15, "ReferenceType.MethodsWithGeneric", Type, false,
        "as Methods"),
    keep(2, 17, "ReferenceType.ClassFileVersion", Type, false,
        "the class file's major and minor version; RedefineClasses may change them (dropped then)"),
    keep(2, 18, "ReferenceType.ConstantPool", Type, false,
        "the class file's constant pool; RedefineClasses changes it (dropped then)"),
    keep(3, 1, "ClassType.Superclass", Type, true,
        "a loaded class's superclass never changes; RedefineClasses cannot change it. The answer names a type \
         by id (see Interfaces)"),
    keep(6, 1, "Method.LineTable", Method, false,
        "the method's line number table; fixed for a method id until its class is redefined (dropped then)"),
    keep(6, 2, "Method.VariableTable", Method, false,
        "the method's local variable table; as LineTable"),
    keep(6, 3, "Method.Bytecodes", Method, false,
        "the method's bytecodes; as LineTable"),
    keep(6, 4, "Method.IsObsolete", Method, false,
        "a method id becomes obsolete only when its class is redefined; every Method answer is dropped then"),
    keep(6, 5, "Method.VariableTableWithGeneric", Method, false,
        "as VariableTable"),
];

/// Commands that look fixed but are left out, and why. Kept beside the table so a reader
/// (and a test: no command is in both) sees the whole decision.
pub const LEFT_OUT: &[(u8, u8, &str, &str)] = &[
    (2, 2, "ReferenceType.ClassLoader",
        "the answer is an object id: the VM counts each time it sends one, and a debugger disposes as many as it \
         got; a near answer the VM did not count would let one debugger's DisposeObjects free another's id"),
    (2, 11, "ReferenceType.ClassObject", "an object id (as ClassLoader)"),
    (2, 19, "ReferenceType.Module", "a module id is an object id (as ClassLoader)"),
    (2, 8, "ReferenceType.NestedTypes", "grows as nested classes are loaded"),
    (2, 9, "ReferenceType.Status", "changes as the class is verified, prepared and initialized"),
    (2, 6, "ReferenceType.GetValues", "static fields change whenever a thread runs"),
    (9, 1, "ObjectReference.ReferenceType",
        "fixed for a live object, but its id may have been collected: the VM would answer INVALID_OBJECT, a near \
         answer would hide that unless the proxy knew every pin; left for a later step"),
    (10, 1, "StringReference.Value", "as ObjectReference.ReferenceType"),
    (13, 1, "ArrayReference.Length", "as ObjectReference.ReferenceType"),
];

pub use crate::jdwp::packet::error::ABSENT_INFORMATION;

/// Commands of [`IMMUTABLE`] whose ABSENT_INFORMATION answer is kept too, and why: what the
/// class file lacks stays lacking until the class is redefined (every answer about it is
/// dropped then, as its successful answers are). Any other error goes to the VM each time.
pub const ABSENT_KEPT: &[(u8, u8, &str, &str)] = &[
    (2, 7, "ReferenceType.SourceFile",
        "the class file has no SourceFile attribute (compiled with -g:none); libjdwp answers from JVMTI \
         GetSourceFileName, which reads the class as loaded"),
    (2, 12, "ReferenceType.SourceDebugExtension",
        "the class file has no SourceDebugExtension attribute (most classes: only JSP, Kotlin inline functions \
         and the like carry an SMAP); JDI asks at each breakpoint by line and jdb at each `stop at`"),
    (6, 2, "Method.VariableTable",
        "the method has no LocalVariableTable attribute (compiled without -g)"),
    (6, 5, "Method.VariableTableWithGeneric",
        "as VariableTable"),
];

/// Whether an answer with this error code to this command is kept (error NONE: every row
/// of [`IMMUTABLE`]).
pub fn error_kept(set: u8, cmd: u8, error: u16) -> bool {
    match error {
        0 => immutable(set, cmd).is_some(),
        ABSENT_INFORMATION => ABSENT_KEPT.iter().any(|&(s, c, _, _)| (s, c) == (set, cmd)),
        _ => false,
    }
}

/// The tables as markdown, as docs/near-cache.md shows them (a test keeps the two in step).
pub fn markdown() -> String {
    let mut out = String::from("| command | answered near | why |\n| --- | --- | --- |\n");
    for r in IMMUTABLE {
        out.push_str(&format!("| {} ({}, {}) | yes | {} |\n", r.name, r.set, r.cmd, r.why));
    }
    for (set, cmd, name, why) in ABSENT_KEPT {
        out.push_str(&format!("| {name} ({set}, {cmd}) | its ABSENT_INFORMATION too | {why} |\n"));
    }
    for (set, cmd, name, why) in LEFT_OUT {
        out.push_str(&format!("| {name} ({set}, {cmd}) | no | {why} |\n"));
    }
    out
}

/// The row for a command, if its answer may be kept.
pub fn immutable(set: u8, cmd: u8) -> Option<&'static Immutable> {
    IMMUTABLE.iter().find(|r| r.set == set && r.cmd == cmd)
}

/// VirtualMachine.RedefineClasses: drops what it may change.
pub const REDEFINE_CLASSES: (u8, u8) = (1, 18);
/// VirtualMachine.DisposeObjects: a type id the VM may forget.
pub const DISPOSE_OBJECTS: (u8, u8) = (1, 14);
/// ReferenceType.Signature and SignatureWithGeneric: their answers name the type for
/// ClassUnload events, which carry a signature and no id.
pub const SIGNATURE: (u8, u8) = (2, 1);
pub const SIGNATURE_WITH_GENERIC: (u8, u8) = (2, 13);
/// VirtualMachine.ClassesBySignature: the command names the signature, the answer its types.
pub const CLASSES_BY_SIGNATURE: (u8, u8) = (1, 2);
/// VirtualMachine.AllClasses and AllClassesWithGeneric: their answers name every loaded
/// type and its signature (the lasting classes are learnt from them).
pub const ALL_CLASSES: (u8, u8) = (1, 3);
pub const ALL_CLASSES_WITH_GENERIC: (u8, u8) = (1, 20);

/// Commands never answered near whose answers teach the cache about types: forwarded, their
/// replies read (the near cache's `Lookup::Watch`).
pub fn watched(set: u8, cmd: u8) -> bool {
    [CLASSES_BY_SIGNATURE, ALL_CLASSES, ALL_CLASSES_WITH_GENERIC].contains(&(set, cmd))
}

/// The Method command set: every answer in it is dropped on any RedefineClasses, since a
/// command names a method by (class, method) and a debugger may name a subclass.
pub const METHOD_SET: u8 = 6;

/// The classes a RedefineClasses body names: classes, then (refType, class file) each.
pub fn redefined(data: &[u8], ref_size: usize) -> Option<Vec<u64>> {
    let mut r = Reader::new(data);
    let n = r.u32("classes").ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(r.id(ref_size, "refType").ok()?);
        let len = r.u32("classfile").ok()? as usize;
        r.bytes(len, "classfile").ok()?;
    }
    (r.remaining() == 0).then_some(out)
}

/// The ids a DisposeObjects body names: requests, then (object, refCnt) each.
pub fn disposed_ids(data: &[u8], object_size: usize) -> Option<Vec<u64>> {
    let mut r = Reader::new(data);
    let n = r.u32("requests").ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(r.id(object_size, "object").ok()?);
        r.u32("refCnt").ok()?;
    }
    (r.remaining() == 0).then_some(out)
}
