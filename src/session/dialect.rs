//! What a session learns about how to talk to its VM, kept apart from the relay state: which
//! THST request form the VM takes (for its lifetime), and which of the proxy's DDM requests
//! are in flight on the current connection (so a FAIL reply reaches whoever asked).

use std::collections::HashMap;

use tokio::time::Instant;

use super::thst_plan::{ThstForm, ThstPlan};
use crate::ddm::ChunkType;

/// Who waits for the reply to one of the proxy's DDM requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskFor {
    /// A control command's waiter (`heap`, `features`, `exit`), by its number.
    Waiter(u64),
    /// A THST request of this form, for the thread viewers.
    Thst(ThstForm),
    /// THEN on, for the thread viewers.
    ThreadsOn,
    /// A request nobody waits on (THEN off, THST 0, HPSG off): a refusal is only logged.
    Nobody,
}

/// One DDM request in flight: who asked, the chunk type it carried, when it left.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub what: AskFor,
    pub chunk: ChunkType,
    pub sent: Instant,
}

#[derive(Debug, Default)]
pub struct VmDialect {
    /// Per VM: the THST request form.
    pub thst: ThstPlan,
    /// Per connection: the proxy's DDM requests by proxy id.
    pub asks: HashMap<u32, Ask>,
    /// Numbers for control-command waiters.
    pub next_waiter: u64,
}

impl VmDialect {
    /// A new connection to the VM: nothing is in flight, and the VM forgot what it was told.
    pub fn new_connection(&mut self) {
        self.asks.clear();
        self.thst.reconnected();
    }
}
