//! Answers gathered at a stop: what an IDE asks after a breakpoint or step, read by the far
//! side (on the VM's host) before the event is relayed, and served by the near side while it
//! is still the VM's truth. Both parts are pure tables the running parts call.
//!
//! - [`plan`]: which commands to send the VM at a stop, in which order, and how later ones
//!   take ids from earlier replies; bounded in commands and bytes. Each gathered answer is
//!   keyed by the exact command bytes (command set, command, data) a debugger would send.
//! - [`values`]: the replies the plan reads classes, fields and values from, parsed.
//! - [`known`]: what the far side read that cannot change while the connection lives
//!   (fields, superclasses, objects' types, arrays' lengths), answered from there at later stops.
//! - [`validity`]: whether a gathered answer may still be served, given what happened since
//!   it was read (commands sent to the VM by anyone, events delivered), with the reason for
//!   every row. When in doubt the answer is dropped and the command goes to the VM.
//! - [`relay`]: the far side's relay of one VM connection that runs the plan at each stop
//!   and puts the answers before the event. Sans-I/O.
//! - [`wire`]: a stop's answers as bytes between the two sides. Strict both ways.
//! - [`inband`]: those bytes as a packet in the VM connection's stream, before the event.
//! - [`store`]: the near side's answers of one VM connection, judged by [`validity`] as
//!   commands and events pass, served by the exact bytes of a debugger's command, or
//!   composed from the values gathered ([`compose`]) within each object id's budget.
//! - [`early`]: commands answered before the VM's reply, where that reply cannot differ;
//!   [`early_pending`]: the early answers kept until the VM's reply is compared with them;
//!   [`early_breakpoint`]: which breakpoint requests are certain, from the line tables held.
//! - [`invoked`]: the String an invoke returned, read with the invoke's reply by the
//!   [`relay`] and served near while no thread can have run since.
//! - [`stopped`]: the threads [`early`] knows stopped, by a lower bound of each one's
//!   suspend count, so a step on a thread another debugger also holds stays certain.
//!
//! How they are joined: under far-side protocol 3, for a near side that asked, the far
//! side's channel task (`remote::far::gathering`) runs a [`relay::Relay`] over its VM connection
//! and puts each [`relay::Answers`] in the channel's stream as its [`inband`] packet, before
//! the event (ordered with the VM's bytes, so the near side knows which replies and events
//! came before it); the near side's session keeps a [`store::Store`] per VM
//! connection that is told every command it writes to the VM and every event it reads, and
//! is asked before the near cache for every debugger's command.

pub mod compose;
pub mod early;
pub mod early_breakpoint;
pub mod early_pending;
pub mod inband;
pub mod invoked;
pub mod known;
pub mod plan;
pub mod relay;
pub mod stopped;
pub mod store;
pub mod validity;
pub mod values;
pub mod vm_wide;
pub mod wire;

#[cfg(test)]
mod compose_tests;
#[cfg(test)]
mod early_tests;
#[cfg(test)]
mod early_breakpoint_tests;
#[cfg(test)]
mod invoked_tests;
#[cfg(test)]
mod plan_objects_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod validity_tests;
#[cfg(test)]
mod wire_tests;

/// Request ids jdwpmux on a VM's host sends its own commands under, on a VM connection it
/// relays for the near side: the near side's sessions never hand these out (see
/// `session::ids`), so a reply in this range is the far side's and never relayed. (A
/// session's one-off probe at connect, 0x8000_0001, is below it.)
pub const FAR_IDS: std::ops::RangeInclusive<u32> = 0xF000_0000..=u32::MAX;

/// The most answers one stop carries on the wire (`wire`); a plan's class lookups stay
/// within it (`plan`).
pub const MAX_ANSWERS: usize = 256;

/// A command as a debugger sends it, without its id: the key a gathered answer is found by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub set: u8,
    pub cmd: u8,
    pub data: Vec<u8>,
}

impl Key {
    pub fn new(set: u8, cmd: u8, data: Vec<u8>) -> Key {
        Key { set, cmd, data }
    }
}
