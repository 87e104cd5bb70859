//! How a VM's first moments are told. A JVM started just before `jdwpmux serve` (the quick
//! start runs `java ... &` and `jdwpmux serve &` at once) is found by its process before its
//! agent listens: refusals then are its agent starting, not a fault, so they are not warned
//! about until the VM has stayed out of reach for [`QUIET_START`]; and the first time the VM
//! is ready, one INFO line says so (after a warning, that is the line saying it came).
//! Pure: the actor asks and tells it.

use std::time::Duration;

use tokio::time::Instant;

/// How long a VM never reached yet may refuse before that is worth a warning: a JVM's
/// agent listens within a second or two of its start, more on a loaded machine.
pub const QUIET_START: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Arrival {
    since: Instant,
    connected: bool,
    ready: bool,
}

impl Arrival {
    pub fn new(now: Instant) -> Arrival {
        Arrival { since: now, connected: false, ready: false }
    }

    /// Whether a failure to connect at `now` is still the agent starting: the VM was never
    /// reached and was found less than [`QUIET_START`] ago.
    pub fn starting(&self, now: Instant) -> bool {
        !self.connected && now.saturating_duration_since(self.since) < QUIET_START
    }

    /// A connection to the VM was made.
    pub fn connected(&mut self) {
        self.connected = true;
    }

    /// The VM is ready; true the first time only (the one INFO line).
    pub fn first_ready(&mut self) -> bool {
        self.connected = true;
        !std::mem::replace(&mut self.ready, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_while_starting_then_one_ready() {
        let t0 = Instant::now();
        let mut a = Arrival::new(t0);
        assert!(a.starting(t0) && a.starting(t0 + QUIET_START - Duration::from_millis(1)));
        assert!(!a.starting(t0 + QUIET_START), "out of reach for long enough: warned");
        a.connected();
        assert!(!a.starting(t0), "once reached, a refusal is news");
        assert!(a.first_ready() && !a.first_ready(), "said once");
    }
}
