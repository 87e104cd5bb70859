//! VM sessions: one actor task per VM that owns the VM connection (see `actor`), with its
//! request-id table (`ids`), the tables that let several debuggers share it (`sharing`),
//! its debuggers (`attach`, `debugger_side`, `shared_cmds`, `leave`), its VM side
//! (`vm_side`, `vm_events`) and its own requests; `wake_gate` keeps its loop from polling quiet
//! sources; `recent` keeps packet summaries for a
//! page that watches the VM.

mod actor;
mod android_tcp;
mod attach;
mod config;
pub mod connect;
mod ddm_commands;
mod ddm_glue;
mod ddm_types;
mod leave;
mod debugger_io;
mod debugger_side;
mod debuggers;
mod dialect;
mod handle;
pub mod ids;
pub mod local_process;
mod packet_log;
mod observe;
mod out_queue;
mod proxy_requests;
mod relay_loop;
mod purpose;
pub mod recent;
mod shared_cmds;
pub mod sharing;
mod stats_glue;
mod thst_plan;
mod vm_reads;
mod vm_events;
mod vm_side;
mod wake_gate;

pub use actor::{spawn, MAX_HELD_EVENTS, MAX_HELD_EVENT_BYTES};
pub use config::{AdbTarget, SessionConfig};
pub use ddm_types::{Completion, DdmAnswer, DdmCommandError, Outcome, Refusal, ThreadUpdate};
pub use debugger_io::{DEBUGGER_HIGH_WATER, MAX_DEBUGGER_PACKET};
pub use debuggers::{MAX_HELD_EVENTS_PER_DEBUGGER, MAX_HELD_EVENT_BYTES_PER_DEBUGGER};
pub use handle::{AttachError, DebuggerInfo, DebuggerLink, SessionMsg, TableSizes, VmHandle, VmState, VmStatus};
pub use vm_events::MAX_DEFERRED_EVENTS;
pub use vm_side::COLLECT_PREFIX;
pub use crate::jdwp::version::is_android_vm;
