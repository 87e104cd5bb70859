//! Answers that never change, kept near the debuggers: what a VM said about a class, a
//! method or itself (signatures, fields, methods, line and variable tables, IDSizes,
//! Version, ...) is answered by the proxy on the next asking, by any debugger on the same VM
//! connection, without a round trip to the VM. Pure tables; the session calls them.
//!
//! - [`commands`] (`jdwp::unchanging`, as JDWP facts shared with `remote::stop_answers`):
//!   which commands, the shape of their arguments, and why each is in (or left out of) the
//!   table.
//! - [`table`]: the cache itself: keyed by command and argument bytes, successful answers
//!   only, a byte budget, dropped on RedefineClasses, ClassUnload, DisposeObjects of a type
//!   and a new VM connection.
//! - [`lasting`]: the ids the VM gave for classes that are never unloaded (`java.*`,
//!   arrays of them and of primitives): what makes an ExceptionOnly naming one certain.
//!
//! Class unloading: a ClassUnload event carries a signature and no id, and the VM sends it
//! only for a ClassUnload request. The session sets a request of its own (suspend policy
//! NONE) on connections it caches for, and drops its events before the debuggers see them;
//! until that request is in place, answers about types are not kept (facts about the VM
//! are). A type whose signature the cache never saw is dropped on every ClassUnload.

pub use crate::jdwp::unchanging as commands;
pub mod lasting;
pub mod table;

#[cfg(test)]
mod lasting_tests;
#[cfg(test)]
mod tests;

pub use commands::{immutable, Args, Immutable, IMMUTABLE, LEFT_OUT};
pub use table::{Counts, Key, Lookup, NearCache};
