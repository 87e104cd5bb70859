//! Error replies that are answers, not failures: a debugger asks every class and method for
//! what it may lack, and "there is none" comes back as an error code. They are counted as
//! errors (what the VM said), and apart as routine, so that nobody reads them as trouble.

/// JDWP's ABSENT_INFORMATION and NATIVE_METHOD.
const ABSENT_INFORMATION: u16 = 101;
const NATIVE_METHOD: u16 = 511;

/// (command set, command, error code, why it is routine).
pub const ROUTINE: &[(u8, u8, u16, &str)] = &[
    (2, 7, ABSENT_INFORMATION, "ReferenceType.SourceFile: a class compiled without its source file name"),
    (2, 12, ABSENT_INFORMATION, "ReferenceType.SourceDebugExtension: a class without an SMAP (all but JSP and inlined Kotlin); jdb asks of every class it stops in"),
    (6, 1, ABSENT_INFORMATION, "Method.LineTable: a class compiled without line numbers"),
    (6, 1, NATIVE_METHOD, "Method.LineTable of a native method"),
    (6, 2, ABSENT_INFORMATION, "Method.VariableTable: a class compiled without -g (most of the JDK)"),
    (6, 2, NATIVE_METHOD, "Method.VariableTable of a native method"),
    (6, 5, ABSENT_INFORMATION, "Method.VariableTableWithGeneric: a class compiled without -g"),
    (6, 5, NATIVE_METHOD, "Method.VariableTableWithGeneric of a native method"),
];

/// Whether `error` in reply to `set`/`cmd` is a routine answer.
pub fn is_routine(set: u8, cmd: u8, error: u16) -> bool {
    ROUTINE.iter().any(|&(s, c, e, _)| (s, c, e) == (set, cmd, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_debugger_asks_routinely_and_nothing_else() {
        assert!(is_routine(2, 12, 101), "SourceDebugExtension, ABSENT_INFORMATION");
        assert!(is_routine(6, 2, 511) && is_routine(6, 1, 101));
        // The same code from other commands, and other codes from these, are errors.
        assert!(!is_routine(1, 1, 101) && !is_routine(2, 12, 20) && !is_routine(11, 6, 101));
        assert!(!is_routine(2, 12, 0));
        // Every entry names a command the names table knows, with a reason.
        for &(set, cmd, _, why) in ROUTINE {
            assert!(why.starts_with(&crate::jdwp::names::display_command(set, cmd)), "{why}");
        }
    }
}
