//! VM sessions: one actor task per VM that owns the VM connection and its debuggers'
//! sockets, with the tables that let several debuggers share the VM.
//!
//! # Map
//!
//! Read from the top: a file imports only files of its own group and of the groups above
//! it, no files import each other in a circle, and no file imports an extension of the actor
//! (`layout_tests` checks this map against the files).
//!
//! What the rest of the daemon uses: plain types and handles, importing nothing of the
//! session but each other.
//! - `handle`: `VmHandle`, the cheap-clone handle on a session; `SessionMsg`, what it sends;
//!   `DebuggerLink`, a debugger handed over; `VmStatus` and `TableSizes`, what it reports.
//! - `config`: `SessionConfig` and `AdbTarget`, what a session is told about its VM.
//! - `modes`: `DdmMode`, `NearCacheMode` and `Timeouts`, which `settings` builds.
//! - `ddm_types`: DDM requests and answers (`DdmRequest`, `DdmAnswer`, `Completion`, `Refusal`),
//!   and the records of who waits for them.
//! - `recent`: the ring of recent packet summaries a watching page reads.
//! - `connect`: opening a VM connection: TCP connect and the JDWP handshake, under timeouts.
//!
//! The actor's parts: pure tables and the code for one socket; no `Session` in them.
//! - `ids`: the request-id table: proxy ids to (requester, its own id).
//! - `sharing`: the tables that let debuggers share a VM: owners, holds, pins, policy,
//!   waits.
//! - `nearcache`: answers that never change (class, method and VM data), kept to answer
//!   the next asking without a round trip to the VM.
//! - `purpose`: what each of the proxy's own requests is for, and how long it may wait.
//! - `thst_plan`: which THST request form a VM takes.
//! - `dialect`: how to talk to this VM: THST form, Android over TCP, DDM requests in flight.
//! - `out_queue`: bytes queued for a socket, written with few copies and system calls.
//! - `wake_gate`: polls a `select!` source only after its own wake-up.
//! - `held_events`: events kept back in a queue bounded by count and bytes: the VM's while
//!   no debugger is attached, and a debugger's under HoldEvents.
//! - `leaving`: after the last debugger leaves: serving, cleaning up until answered or a
//!   deadline (then serving the next debugger or reset), or to be reset.
//! - `connection`: what belongs to one VM connection (bytes, ids, purposes, sharing tables,
//!   what is kept back, leaving), made fresh on each connect.
//! - `near_layer`: the near answers behind one interface (the cache, a stop's gathered
//!   answers, early answers): answer near, or forward; what was written and read.
//! - `local_stops`: a stop's answers read for a VM the session reaches itself, by the far
//!   side's relay (`remote::stop_answers::relay`) run between the session and its VM socket.
//! - `debugger_io`: one attached debugger's socket, served by the session task.
//! - `debuggers`: the attached debuggers, in arrival order, and what the session knows of each.
//! - `vm_reads`: how much to read from the VM at a time, and when to let others run.
//! - `packet_log`: jdwpspy-style log lines, one per packet.
//! - `local_process`: the pid and main class of a local JVM, from /proc.
//! - `arrival`: a VM's first moments: quiet while its agent starts, one line when first ready.
//! - `loss`: how a lost VM connection is said: a local JVM that exited is one INFO line.
//!
//! The actor.
//! - `actor`: `Session`, the actor's state (the layers above and what outlives a VM
//!   connection); `spawn`; its life across connections (connect, back off, reconnect) and
//!   its control messages.
//!
//! Extensions of the actor: each adds an `impl Session` block, imports `actor` and the files
//! above, and is imported by none (the actor calls its methods; only the re-exports below
//! name it).
//! - `relay_loop` (impl Session): one connected period, the `select!` over every socket.
//! - `attach` (impl Session): letting debuggers in, up to `--max-debuggers`.
//! - `debugger_side` (impl Session): debuggers' commands relayed with new ids; periodic checks.
//! - `shared_cmds` (impl Session): commands made per debugger: suspensions, event requests,
//!   pins, HoldEvents, Dispose.
//! - `leave` (impl Session): a debugger leaving alone; the clean-up after the last one.
//! - `vm_side` (impl Session): routing each packet from the VM.
//! - `vm_events` (impl Session): events from the VM, split between the debuggers.
//! - `near_answers` (impl Session): whether a connection answers near; the proxy's
//!   ClassUnload request and the facts asked for the near cache.
//! - `gathered` (impl Session): a stop's answers gathered on the VM's host, taken out of the
//!   VM's stream; near replies sent, counted and marked; commands written told to `near_layer`.
//! - `early_answers` (impl Session): commands answered before the VM's reply, whose reply is
//!   then compared.
//! - `proxy_requests` (impl Session): the proxy's own requests: identification, the DDM
//!   probe, the clean-up.
//! - `android_tcp` (impl Session): Android VMs over plain TCP, spoken to with DDM only.
//! - `ddm_glue` (impl Session): every DDM chunk decoded and logged; the VM's client state.
//! - `ddm_commands` (impl Session): the DDM requests of `threads`, `heap`, `exit`, `features`.
//! - `observe` (impl Session): capture, packet log and recent summaries of the VM leg; who a
//!   local VM is.
//! - `stats_glue` (impl Session): where the traffic figures are counted.
//!
//! Tests only.
//! - `layout_tests`: the map above names every file, and the imports follow it.

mod handle;
mod config;
pub mod modes;
mod ddm_types;
pub mod recent;

pub mod ids;
pub mod sharing;
pub mod nearcache;
mod purpose;
mod thst_plan;
mod dialect;
mod out_queue;
mod wake_gate;
mod held_events;
mod leaving;
mod connection;
mod near_layer;
mod local_stops;
mod debugger_io;
mod debuggers;
mod vm_reads;
mod packet_log;
pub mod local_process;
mod arrival;
mod loss;

mod actor;

mod relay_loop;
mod attach;
mod debugger_side;
mod shared_cmds;
mod leave;
mod vm_side;
mod vm_events;
mod near_answers;
mod gathered;
mod early_answers;
mod proxy_requests;
mod android_tcp;
mod ddm_glue;
mod ddm_commands;
mod observe;
mod stats_glue;

#[cfg(test)]
mod layout_tests;

pub use actor::spawn;
pub use config::{AdbTarget, Located, SessionConfig};
pub use ddm_types::{Completion, DdmAnswer, DdmCommandError, Outcome, Refusal, ThreadUpdate};
pub use debugger_io::{DEBUGGER_HIGH_WATER, MAX_DEBUGGER_PACKET};
pub use held_events::{MAX_HELD_EVENTS, MAX_HELD_EVENT_BYTES, MAX_HELD_EVENTS_PER_DEBUGGER, MAX_HELD_EVENT_BYTES_PER_DEBUGGER};
pub use handle::{AttachError, DebuggerInfo, DebuggerLink, SessionMsg, TableSizes, VmHandle, VmState, VmStatus, HeldInfo, WaitHolder, WaitInfo};
pub use vm_events::MAX_DEFERRED_EVENTS;
pub use vm_side::COLLECT_PREFIX;
pub use crate::jdwp::version::is_android_vm;
