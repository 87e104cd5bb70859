//! What a session learns about how to talk to its VM, kept apart from the relay state: which
//! THST request form the VM takes (for its lifetime), whether it is an Android VM although
//! it is reached over plain TCP, and which of the proxy's DDM requests are in flight on the
//! current connection (so a FAIL reply reaches whoever asked).

use std::collections::HashMap;

use tokio::time::Instant;

use super::thst_plan::{ThstForm, ThstPlan};
use crate::ddm::ChunkType;
use crate::discovery::forwards::JdwpForward;

/// Why a VM reached over TCP is treated as Android (HELO alone, no non-DDM packet from the
/// proxy until a debugger sends one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AndroidOverTcp {
    /// The address is an adb forward to `jdwp:PID` (from the adb server's forward list,
    /// looked up again before every connection).
    Forward(JdwpForward),
    /// Its VirtualMachine.Version reply said so (the proxy then reconnected). Kept until the
    /// connection is lost: whatever listens there next is identified afresh, since a DDM
    /// packet can crash HotSpot.
    Version(String),
}

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
    /// Per VM: known to be Android although reached over TCP.
    pub android: Option<AndroidOverTcp>,
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

    /// The connection was lost (not dropped by the proxy on purpose): the VM may be gone,
    /// and what listens at its address next may be another VM.
    pub fn vm_went_away(&mut self) {
        if matches!(self.android, Some(AndroidOverTcp::Version(_))) {
            self.android = None;
        }
    }
}
