//! VM sessions: one actor task per VM that owns the VM connection (see `actor`), with its
//! request-id table (`ids`), its debugger side, its VM side and its own requests.

mod actor;
mod android_tcp;
pub mod connect;
mod ddm_commands;
mod ddm_glue;
mod debugger_io;
mod debugger_side;
mod dialect;
mod handle;
pub mod ids;
pub mod local_process;
mod packet_log;
mod observe;
mod out_queue;
mod proxy_requests;
mod thst_plan;
mod vm_reads;
mod vm_side;

pub use actor::{spawn, AdbTarget, SessionConfig, MAX_HELD_EVENTS, MAX_HELD_EVENT_BYTES};
pub use ddm_commands::{Completion, DdmAnswer, DdmCommandError, Outcome, Refusal, ThreadUpdate};
pub use debugger_io::{DEBUGGER_HIGH_WATER, MAX_DEBUGGER_PACKET};
pub use debugger_side::DEBUGGER_STALL_TIMEOUT;
pub use handle::{AttachError, DebuggerLink, SessionMsg, VmHandle, VmState, VmStatus};
pub use proxy_requests::is_android_vm;
