//! Human-readable names for JDWP command sets, commands, error codes and event kinds.
//!
//! Covers the current JDWP specification (JDK 21+: command sets VirtualMachine (1) through
//! ModuleReference (18) plus Event (64)) and Android's DDM vendor extension (set 0xC7).
//! Each namespace has exactly one const table; every lookup function is derived from it,
//! so adding a command means editing one line. Lookups are linear scans: the tables are
//! small (< 200 entries) and the names are only used for logging and capture files.

/// A command set and the commands it contains, as `(command number, name)` pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSetInfo {
    pub id: u8,
    pub name: &'static str,
    pub commands: &'static [(u8, &'static str)],
}

/// Command set 64: events sent by the VM (as commands, never answered).
pub const EVENT_COMMAND_SET: u8 = 64;
/// Event.Composite, the only command of the Event set.
pub const EVENT_COMPOSITE_COMMAND: u8 = 100;
/// Android's DDM (Dalvik Debug Monitor) vendor command set.
pub const DDM_COMMAND_SET: u8 = 0xC7;
/// The single DDM command: a packet carrying DDM chunks.
pub const DDM_CHUNK_COMMAND: u8 = 1;

/// The single source of truth for command-set and command names.
#[rustfmt::skip]
pub const COMMAND_SETS: &[CommandSetInfo] = &[
    CommandSetInfo { id: 1, name: "VirtualMachine", commands: &[
        (1, "Version"), (2, "ClassesBySignature"), (3, "AllClasses"), (4, "AllThreads"),
        (5, "TopLevelThreadGroups"), (6, "Dispose"), (7, "IDSizes"), (8, "Suspend"),
        (9, "Resume"), (10, "Exit"), (11, "CreateString"), (12, "Capabilities"),
        (13, "ClassPaths"), (14, "DisposeObjects"), (15, "HoldEvents"), (16, "ReleaseEvents"),
        (17, "CapabilitiesNew"), (18, "RedefineClasses"), (19, "SetDefaultStratum"),
        (20, "AllClassesWithGeneric"), (21, "InstanceCounts"), (22, "AllModules"),
    ] },
    CommandSetInfo { id: 2, name: "ReferenceType", commands: &[
        (1, "Signature"), (2, "ClassLoader"), (3, "Modifiers"), (4, "Fields"), (5, "Methods"),
        (6, "GetValues"), (7, "SourceFile"), (8, "NestedTypes"), (9, "Status"),
        (10, "Interfaces"), (11, "ClassObject"), (12, "SourceDebugExtension"),
        (13, "SignatureWithGeneric"), (14, "FieldsWithGeneric"), (15, "MethodsWithGeneric"),
        (16, "Instances"), (17, "ClassFileVersion"), (18, "ConstantPool"), (19, "Module"),
    ] },
    CommandSetInfo { id: 3, name: "ClassType", commands: &[
        (1, "Superclass"), (2, "SetValues"), (3, "InvokeMethod"), (4, "NewInstance"),
    ] },
    CommandSetInfo { id: 4, name: "ArrayType", commands: &[(1, "NewInstance")] },
    CommandSetInfo { id: 5, name: "InterfaceType", commands: &[(1, "InvokeMethod")] },
    CommandSetInfo { id: 6, name: "Method", commands: &[
        (1, "LineTable"), (2, "VariableTable"), (3, "Bytecodes"), (4, "IsObsolete"),
        (5, "VariableTableWithGeneric"),
    ] },
    // Field has a command set number but no commands in the spec.
    CommandSetInfo { id: 8, name: "Field", commands: &[] },
    // Command 4 was never assigned in ObjectReference.
    CommandSetInfo { id: 9, name: "ObjectReference", commands: &[
        (1, "ReferenceType"), (2, "GetValues"), (3, "SetValues"), (5, "MonitorInfo"),
        (6, "InvokeMethod"), (7, "DisableCollection"), (8, "EnableCollection"),
        (9, "IsCollected"), (10, "ReferringObjects"),
    ] },
    CommandSetInfo { id: 10, name: "StringReference", commands: &[(1, "Value")] },
    CommandSetInfo { id: 11, name: "ThreadReference", commands: &[
        (1, "Name"), (2, "Suspend"), (3, "Resume"), (4, "Status"), (5, "ThreadGroup"),
        (6, "Frames"), (7, "FrameCount"), (8, "OwnedMonitors"), (9, "CurrentContendedMonitor"),
        (10, "Stop"), (11, "Interrupt"), (12, "SuspendCount"),
        (13, "OwnedMonitorsStackDepthInfo"), (14, "ForceEarlyReturn"), (15, "IsVirtual"),
    ] },
    CommandSetInfo { id: 12, name: "ThreadGroupReference", commands: &[
        (1, "Name"), (2, "Parent"), (3, "Children"),
    ] },
    CommandSetInfo { id: 13, name: "ArrayReference", commands: &[
        (1, "Length"), (2, "GetValues"), (3, "SetValues"),
    ] },
    CommandSetInfo { id: 14, name: "ClassLoaderReference", commands: &[(1, "VisibleClasses")] },
    CommandSetInfo { id: 15, name: "EventRequest", commands: &[
        (1, "Set"), (2, "Clear"), (3, "ClearAllBreakpoints"),
    ] },
    CommandSetInfo { id: 16, name: "StackFrame", commands: &[
        (1, "GetValues"), (2, "SetValues"), (3, "ThisObject"), (4, "PopFrames"),
    ] },
    CommandSetInfo { id: 17, name: "ClassObjectReference", commands: &[(1, "ReflectedType")] },
    CommandSetInfo { id: 18, name: "ModuleReference", commands: &[
        (1, "Name"), (2, "ClassLoader"),
    ] },
    CommandSetInfo { id: EVENT_COMMAND_SET, name: "Event", commands: &[
        (EVENT_COMPOSITE_COMMAND, "Composite"),
    ] },
    CommandSetInfo { id: DDM_COMMAND_SET, name: "DDM", commands: &[(DDM_CHUNK_COMMAND, "Chunk")] },
];

/// JDWP error codes (the `errorCode` of a reply) and their spec names.
#[rustfmt::skip]
pub const ERROR_CODES: &[(u16, &str)] = &[
    (0, "NONE"),
    (10, "INVALID_THREAD"), (11, "INVALID_THREAD_GROUP"), (12, "INVALID_PRIORITY"),
    (13, "THREAD_NOT_SUSPENDED"), (14, "THREAD_SUSPENDED"), (15, "THREAD_NOT_ALIVE"),
    (20, "INVALID_OBJECT"), (21, "INVALID_CLASS"), (22, "CLASS_NOT_PREPARED"),
    (23, "INVALID_METHODID"), (24, "INVALID_LOCATION"), (25, "INVALID_FIELDID"),
    (30, "INVALID_FRAMEID"), (31, "NO_MORE_FRAMES"), (32, "OPAQUE_FRAME"),
    (33, "NOT_CURRENT_FRAME"), (34, "TYPE_MISMATCH"), (35, "INVALID_SLOT"),
    (40, "DUPLICATE"), (41, "NOT_FOUND"), (42, "INVALID_MODULE"),
    (50, "INVALID_MONITOR"), (51, "NOT_MONITOR_OWNER"), (52, "INTERRUPT"),
    (60, "INVALID_CLASS_FORMAT"), (61, "CIRCULAR_CLASS_DEFINITION"),
    (62, "FAILS_VERIFICATION"), (63, "ADD_METHOD_NOT_IMPLEMENTED"),
    (64, "SCHEMA_CHANGE_NOT_IMPLEMENTED"), (65, "INVALID_TYPESTATE"),
    (66, "HIERARCHY_CHANGE_NOT_IMPLEMENTED"), (67, "DELETE_METHOD_NOT_IMPLEMENTED"),
    (68, "UNSUPPORTED_VERSION"), (69, "NAMES_DONT_MATCH"),
    (70, "CLASS_MODIFIERS_CHANGE_NOT_IMPLEMENTED"), (71, "METHOD_MODIFIERS_CHANGE_NOT_IMPLEMENTED"),
    (72, "CLASS_ATTRIBUTE_CHANGE_NOT_IMPLEMENTED"),
    (99, "NOT_IMPLEMENTED"), (100, "NULL_POINTER"), (101, "ABSENT_INFORMATION"),
    (102, "INVALID_EVENT_TYPE"), (103, "ILLEGAL_ARGUMENT"),
    (110, "OUT_OF_MEMORY"), (111, "ACCESS_DENIED"), (112, "VM_DEAD"), (113, "INTERNAL"),
    (115, "UNATTACHED_THREAD"),
    (500, "INVALID_TAG"), (502, "ALREADY_INVOKING"), (503, "INVALID_INDEX"),
    (504, "INVALID_LENGTH"), (506, "INVALID_STRING"), (507, "INVALID_CLASS_LOADER"),
    (508, "INVALID_ARRAY"), (509, "TRANSPORT_LOAD"), (510, "TRANSPORT_INIT"),
    (511, "NATIVE_METHOD"), (512, "INVALID_COUNT"),
];

/// Event kinds (EventRequest.Set and Event.Composite). The spec's obsolete aliases
/// THREAD_END (7) and VM_INIT (90) share numbers with the names listed here.
#[rustfmt::skip]
pub const EVENT_KINDS: &[(u8, &str)] = &[
    (1, "SINGLE_STEP"), (2, "BREAKPOINT"), (3, "FRAME_POP"), (4, "EXCEPTION"),
    (5, "USER_DEFINED"), (6, "THREAD_START"), (7, "THREAD_DEATH"), (8, "CLASS_PREPARE"),
    (9, "CLASS_UNLOAD"), (10, "CLASS_LOAD"), (20, "FIELD_ACCESS"), (21, "FIELD_MODIFICATION"),
    (30, "EXCEPTION_CATCH"), (40, "METHOD_ENTRY"), (41, "METHOD_EXIT"),
    (42, "METHOD_EXIT_WITH_RETURN_VALUE"), (43, "MONITOR_CONTENDED_ENTER"),
    (44, "MONITOR_CONTENDED_ENTERED"), (45, "MONITOR_WAIT"), (46, "MONITOR_WAITED"),
    (90, "VM_START"), (99, "VM_DEATH"), (100, "VM_DISCONNECTED"),
];

/// The table entry of a command set, if known.
pub fn command_set(set: u8) -> Option<&'static CommandSetInfo> {
    COMMAND_SETS.iter().find(|s| s.id == set)
}

/// Name of a command set ("VirtualMachine"), if known.
pub fn command_set_name(set: u8) -> Option<&'static str> {
    command_set(set).map(|s| s.name)
}

/// Name of a command within its set ("Version" for 1/1), if known.
pub fn command_name(set: u8, cmd: u8) -> Option<&'static str> {
    command_set(set)?
        .commands
        .iter()
        .find(|(id, _)| *id == cmd)
        .map(|(_, name)| *name)
}

/// Spec name of a reply error code ("VM_DEAD" for 112), if known.
pub fn error_name(code: u16) -> Option<&'static str> {
    ERROR_CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// Spec name of an event kind ("BREAKPOINT" for 2), if known.
pub fn event_kind_name(kind: u8) -> Option<&'static str> {
    EVENT_KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, name)| *name)
}

/// "VirtualMachine.Version"; for an unknown command of a known set "VirtualMachine.Cmd(99)"
/// (keeps the useful half), and "Set(200).Cmd(3)" when the set itself is unknown.
pub fn display_command(set: u8, cmd: u8) -> String {
    match (command_set_name(set), command_name(set, cmd)) {
        (Some(s), Some(c)) => format!("{s}.{c}"),
        (Some(s), None) => format!("{s}.Cmd({cmd})"),
        (None, _) => format!("Set({set}).Cmd({cmd})"),
    }
}

/// "VM_DEAD", or "ERROR(1234)" for a code the spec does not define.
pub fn display_error(code: u16) -> String {
    match error_name(code) {
        Some(name) => name.to_string(),
        None => format!("ERROR({code})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn known_commands_resolve() {
        let cases: &[(u8, u8, &str)] = &[
            (1, 1, "VirtualMachine.Version"),
            (1, 7, "VirtualMachine.IDSizes"),
            (1, 17, "VirtualMachine.CapabilitiesNew"),
            (1, 22, "VirtualMachine.AllModules"),
            (2, 1, "ReferenceType.Signature"),
            (2, 18, "ReferenceType.ConstantPool"),
            (2, 19, "ReferenceType.Module"),
            (3, 3, "ClassType.InvokeMethod"),
            (3, 4, "ClassType.NewInstance"),
            (4, 1, "ArrayType.NewInstance"),
            (5, 1, "InterfaceType.InvokeMethod"),
            (6, 5, "Method.VariableTableWithGeneric"),
            (9, 5, "ObjectReference.MonitorInfo"),
            (9, 10, "ObjectReference.ReferringObjects"),
            (10, 1, "StringReference.Value"),
            (11, 13, "ThreadReference.OwnedMonitorsStackDepthInfo"),
            (11, 14, "ThreadReference.ForceEarlyReturn"),
            (11, 15, "ThreadReference.IsVirtual"),
            (12, 3, "ThreadGroupReference.Children"),
            (13, 3, "ArrayReference.SetValues"),
            (14, 1, "ClassLoaderReference.VisibleClasses"),
            (15, 1, "EventRequest.Set"),
            (15, 3, "EventRequest.ClearAllBreakpoints"),
            (16, 4, "StackFrame.PopFrames"),
            (17, 1, "ClassObjectReference.ReflectedType"),
            (18, 1, "ModuleReference.Name"),
            (18, 2, "ModuleReference.ClassLoader"),
            (64, 100, "Event.Composite"),
            (0xC7, 1, "DDM.Chunk"),
        ];
        for &(set, cmd, want) in cases {
            assert_eq!(display_command(set, cmd), want, "set {set} cmd {cmd}");
            let (s, c) = want.split_once('.').unwrap_or(("", ""));
            assert_eq!(command_set_name(set), Some(s));
            assert_eq!(command_name(set, cmd), Some(c));
        }
    }

    #[test]
    fn unknowns_are_none_and_displayed_numerically() {
        assert_eq!(command_set_name(7), None); // 7 is unassigned in the spec
        assert_eq!(command_set_name(200), None);
        assert_eq!(command_name(200, 3), None);
        assert_eq!(command_name(1, 23), None);
        assert_eq!(command_name(9, 4), None); // the gap in ObjectReference
        assert_eq!(command_name(8, 1), None); // Field has no commands
        assert_eq!(command_set_name(8), Some("Field"));
        assert_eq!(display_command(200, 3), "Set(200).Cmd(3)");
        assert_eq!(display_command(1, 99), "VirtualMachine.Cmd(99)");
        assert_eq!(error_name(1), None);
        assert_eq!(error_name(501), None);
        assert_eq!(display_error(1234), "ERROR(1234)");
        assert_eq!(event_kind_name(0), None);
        assert_eq!(event_kind_name(255), None);
    }

    #[test]
    fn error_codes_resolve() {
        let cases: &[(u16, &str)] = &[
            (0, "NONE"),
            (10, "INVALID_THREAD"),
            (13, "THREAD_NOT_SUSPENDED"),
            (35, "INVALID_SLOT"),
            (42, "INVALID_MODULE"),
            (72, "CLASS_ATTRIBUTE_CHANGE_NOT_IMPLEMENTED"),
            (99, "NOT_IMPLEMENTED"),
            (112, "VM_DEAD"),
            (115, "UNATTACHED_THREAD"),
            (500, "INVALID_TAG"),
            (511, "NATIVE_METHOD"),
            (512, "INVALID_COUNT"),
        ];
        for &(code, want) in cases {
            assert_eq!(error_name(code), Some(want));
            assert_eq!(display_error(code), want);
        }
    }

    #[test]
    fn event_kinds_resolve() {
        let cases: &[(u8, &str)] = &[
            (1, "SINGLE_STEP"),
            (2, "BREAKPOINT"),
            (7, "THREAD_DEATH"),
            (8, "CLASS_PREPARE"),
            (42, "METHOD_EXIT_WITH_RETURN_VALUE"),
            (46, "MONITOR_WAITED"),
            (90, "VM_START"),
            (99, "VM_DEATH"),
            (100, "VM_DISCONNECTED"),
        ];
        for &(kind, want) in cases {
            assert_eq!(event_kind_name(kind), Some(want));
        }
    }

    #[test]
    fn tables_have_no_duplicates() {
        let mut sets = HashSet::new();
        let mut set_names = HashSet::new();
        let mut pairs = HashSet::new();
        for s in COMMAND_SETS {
            assert!(sets.insert(s.id), "duplicate set {}", s.id);
            assert!(set_names.insert(s.name), "duplicate set name {}", s.name);
            let mut names = HashSet::new();
            for &(cmd, name) in s.commands {
                assert!(pairs.insert((s.id, cmd)), "duplicate ({}, {cmd})", s.id);
                assert!(names.insert(name), "duplicate name {}.{name}", s.name);
            }
        }
        assert_eq!(sets.len(), 19); // 1-6, 8-18, 64, 0xC7
        let codes: HashSet<_> = ERROR_CODES.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes.len(), ERROR_CODES.len());
        let names: HashSet<_> = ERROR_CODES.iter().map(|(_, n)| *n).collect();
        assert_eq!(names.len(), ERROR_CODES.len());
        let kinds: HashSet<_> = EVENT_KINDS.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds.len(), EVENT_KINDS.len());
    }

    #[test]
    fn command_counts_match_spec() {
        let counts: &[(u8, usize)] = &[
            (1, 22),
            (2, 19),
            (3, 4),
            (6, 5),
            (9, 9),
            (11, 15),
            (16, 4),
            (18, 2),
        ];
        for &(set, n) in counts {
            assert_eq!(
                command_set(set).map(|s| s.commands.len()),
                Some(n),
                "set {set}"
            );
        }
    }
}
