//! Several debuggers on one VM: the pure tables that make each debugger see a VM that behaves
//! as if it were alone. No I/O and no tasks: the session actor asks them what to forward,
//! what to answer itself and what to deliver to whom, and does it.
//!
//! - [`owners`]: which debugger owns which event request (filled from EventRequest.Set
//!   replies), so each event goes to the debugger that asked for it.
//! - [`holds`]: who holds which suspension, so one debugger's Resume never releases another's
//!   stop, and a departing debugger releases exactly what it held.
//! - [`pins`]: which debugger disabled garbage collection of which object.
//! - [`policy`]: what happens to each command whose effect reaches every debugger.
//! - [`waits`]: invokes waiting for another debugger to resume their thread, and Resumes
//!   whose threads another debugger still holds, so each is shown while it lasts.

pub mod holds;
pub mod owners;
pub mod pins;
pub mod policy;
pub mod waits;

pub use holds::{Debugger, HoldId, Holds, Suspended, ThreadId, VmCmd};
pub use owners::Owners;
pub use pins::Pins;
pub use policy::{policy, Policy};
pub use waits::Waits;

/// The sharing state of one VM connection.
#[derive(Debug, Default)]
pub struct Sharing {
    pub owners: Owners,
    pub holds: Holds,
    pub pins: Pins,
    pub waits: Waits,
}

impl Sharing {
    /// Whether nothing is left of any debugger (after all have left, it must be so).
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty() && self.holds.is_empty() && self.pins.is_empty() && self.waits.is_empty()
    }

    /// After the holds changed: the waits follow them. True when a wait changed or ended.
    pub fn settle_waits(&mut self) -> bool {
        !self.waits.is_empty() && self.waits.holds_changed(&self.holds)
    }
}
