//! What happens to each command whose effect reaches beyond the debugger that sends it.
//!
//! One table, read by the session for every command and printed in docs/sharing.md (a test keeps
//! the two in step). Commands not in it go to the VM as they are, with their ids rewritten;
//! their replies go back to the sender alone.

/// How a command is handled when several debuggers share a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// To the VM as it is.
    Forward,
    /// To the VM as it is, with a log line: every debugger sees its effect.
    ForwardLogged,
    /// Made per debugger by the proxy (answered, translated or accounted; see the note).
    PerDebugger,
    /// Answered NOT_IMPLEMENTED with a log line: passing it through would break another
    /// debugger and it has no per-debugger form.
    Refuse,
}

/// One row: command set, command, name, policy, and what it means for the other debuggers.
pub struct Row {
    pub set: u8,
    pub cmd: u8,
    pub name: &'static str,
    pub policy: Policy,
    pub note: &'static str,
}

const fn row(set: u8, cmd: u8, name: &'static str, policy: Policy, note: &'static str) -> Row {
    Row { set, cmd, name, policy, note }
}

use Policy::*;

/// Every command with an effect on the other debuggers, and what the proxy does with it.
pub const TABLE: &[Row] = &[
    row(1, 6, "VirtualMachine.Dispose", PerDebugger,
        "answered by the proxy; the debugger leaves alone (its requests, suspensions and pins are undone)"),
    row(1, 8, "VirtualMachine.Suspend", PerDebugger,
        "forwarded; the suspension is held by this debugger"),
    row(1, 9, "VirtualMachine.Resume", PerDebugger,
        "releases only this debugger's suspensions; answered by the proxy when it holds none"),
    row(1, 10, "VirtualMachine.Exit", ForwardLogged,
        "the VM exits for everybody: the user asked for it"),
    row(1, 14, "VirtualMachine.DisposeObjects", Forward,
        "each debugger disposes only the ids it was given, so the VM's counts stay right"),
    row(1, 15, "VirtualMachine.HoldEvents", PerDebugger,
        "the proxy keeps this debugger's events until ReleaseEvents; the VM is not told"),
    row(1, 16, "VirtualMachine.ReleaseEvents", PerDebugger,
        "the proxy delivers the events it kept for this debugger"),
    row(1, 18, "VirtualMachine.RedefineClasses", ForwardLogged,
        "every debugger sees the new classes"),
    row(1, 19, "VirtualMachine.SetDefaultStratum", ForwardLogged,
        "the VM has one default stratum for everybody"),
    row(3, 3, "ClassType.InvokeMethod", Forward,
        "other threads run for the call unless INVOKE_SINGLE_THREADED, other debuggers' stops too; \
         on a thread another debugger also holds, it waits for that debugger to resume (logged, shown by list)"),
    row(3, 4, "ClassType.NewInstance", Forward,
        "as InvokeMethod"),
    row(5, 1, "InterfaceType.InvokeMethod", Forward,
        "as InvokeMethod"),
    row(9, 6, "ObjectReference.InvokeMethod", Forward,
        "as ClassType.InvokeMethod"),
    row(9, 7, "ObjectReference.DisableCollection", PerDebugger,
        "the first pin of an object goes to the VM, the others are counted by the proxy"),
    row(9, 8, "ObjectReference.EnableCollection", PerDebugger,
        "goes to the VM when the last debugger's pin is gone"),
    row(11, 2, "ThreadReference.Suspend", PerDebugger,
        "forwarded; the suspension is held by this debugger"),
    row(11, 3, "ThreadReference.Resume", PerDebugger,
        "forwarded only against this debugger's own suspension of the thread; else answered by the proxy"),
    row(11, 10, "ThreadReference.Stop", ForwardLogged,
        "the thread throws for everybody"),
    row(11, 11, "ThreadReference.Interrupt", Forward,
        "the thread is interrupted for everybody"),
    row(15, 1, "EventRequest.Set", PerDebugger,
        "the request belongs to this debugger; only it gets the events"),
    row(15, 2, "EventRequest.Clear", PerDebugger,
        "clears only this debugger's own requests; another's is left alone (answered NONE)"),
    row(15, 3, "EventRequest.ClearAllBreakpoints", PerDebugger,
        "becomes Clears of this debugger's breakpoint requests"),
    row(16, 4, "StackFrame.PopFrames", Forward,
        "pops frames of a thread every debugger sees, even while another debugger holds it (HotSpot never waits)"),
];

/// The policy for a command (Forward for every command not in the table).
pub fn policy(set: u8, cmd: u8) -> Policy {
    // Most traffic is in sets with no row at all: check the set before scanning.
    if !matches!(set, 1 | 3 | 5 | 9 | 11 | 15 | 16) {
        return Forward;
    }
    TABLE.iter().find(|r| r.set == set && r.cmd == cmd).map_or(Forward, |r| r.policy)
}

/// The table as markdown rows, as docs/sharing.md shows them.
pub fn markdown() -> String {
    let mut out = String::from("| command | policy | what the other debuggers see |\n| --- | --- | --- |\n");
    for r in TABLE {
        let policy = match r.policy {
            Forward => "pass through",
            ForwardLogged => "pass through, logged",
            PerDebugger => "per debugger",
            Refuse => "refused (NOT_IMPLEMENTED)",
        };
        out.push_str(&format!("| {} ({}, {}) | {policy} | {} |\n", r.name, r.set, r.cmd, r.note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_the_jdwp_names_and_lookups_find_them() {
        for r in TABLE {
            assert_eq!(crate::jdwp::names::display_command(r.set, r.cmd), r.name, "row {}/{}", r.set, r.cmd);
            assert_eq!(policy(r.set, r.cmd), r.policy);
        }
        assert_eq!(policy(1, 1), Forward, "VirtualMachine.Version");
        assert_eq!(policy(64, 100), Forward);
    }

    #[test]
    fn the_docs_show_this_table() {
        let doc = include_str!("../../../docs/sharing.md");
        assert!(doc.contains(&markdown()), "docs/sharing.md must contain, as it is:\n{}", markdown());
    }
}
