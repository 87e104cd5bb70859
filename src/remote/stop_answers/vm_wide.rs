//! How many VM-wide suspensions a VM's JDWP agent counts on one connection, as the
//! connection's traffic shows: what the far side resumes before it closes a VM connection
//! nobody will use again.
//!
//! HotSpot's agent pins every object id while that count is above zero, and its reset on a
//! closed connection zeroes the count but not the pins (see the near side's
//! `Session::settle_then_reset`, which resumes what a departed debugger held before it lets
//! go). When the far side closes a connection on its own (the near side's hold ran out after
//! a cut, with a debugger stopped), or the near side could not finish that, the far side
//! resumes what is left first.
//!
//! The agent adds one for each VirtualMachine.Suspend and each event composite of suspend
//! policy ALL, and takes one away for each VirtualMachine.Resume while above zero. Here a
//! Resume counts when it is sent and an event when it arrives: the VM takes commands in
//! order, and an event's suspension happened before it arrives, so the count here is never
//! below the agent's (it may be above it when an event passes a Resume on the wire, and one
//! Resume too many is harmless on a connection about to close: no debugger holds anything).

/// VirtualMachine.Suspend.
const VM_SUSPEND: (u8, u8) = (1, 8);
/// VirtualMachine.Resume.
const VM_RESUME: (u8, u8) = (1, 9);
/// Event.Composite's suspend policy ALL.
const POLICY_ALL: u8 = 2;

/// The VM-wide suspension count of one VM connection.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct VmWide {
    count: u32,
}

impl VmWide {
    /// A command the near side sent the VM.
    pub fn command(&mut self, set: u8, cmd: u8) {
        match (set, cmd) {
            VM_SUSPEND => self.count = self.count.saturating_add(1),
            VM_RESUME => self.count = self.count.saturating_sub(1),
            _ => {}
        }
    }

    /// An Event.Composite from the VM, by its suspend policy (its first byte).
    pub fn event(&mut self, policy: u8) {
        if policy == POLICY_ALL {
            self.count = self.count.saturating_add(1);
        }
    }

    /// The VirtualMachine.Resume commands that bring the agent's count to zero.
    pub fn owed(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn suspend_all_events_and_suspends_are_counted_until_resumed() {
        let mut v = VmWide::default();
        v.event(POLICY_ALL);
        v.event(1);
        v.event(0);
        v.command(1, 8);
        v.command(11, 2);
        assert_eq!(v.owed(), 2, "one suspend-all event and one VirtualMachine.Suspend");
        v.command(1, 9);
        v.command(11, 3);
        assert_eq!(v.owed(), 1);
        v.command(1, 9);
        v.command(1, 9);
        assert_eq!(v.owed(), 0, "a Resume with nothing suspended counts nothing");
        v.event(POLICY_ALL);
        assert_eq!(v.owed(), 1);
    }

    /// What the agent does, in the order it does it.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Suspend,
        Resume,
        Event(bool),
    }

    fn agent(steps: &[Step]) -> u32 {
        steps.iter().fold(0u32, |n, s| match s {
            Step::Suspend | Step::Event(true) => n + 1,
            Step::Resume => n.saturating_sub(1),
            Step::Event(false) => n,
        })
    }

    proptest! {
        /// The agent handles commands in the order sent, and an event is written after its
        /// suspension, but it may arrive after commands sent later: whatever the wire's
        /// order, the count here is never below the agent's.
        #[test]
        fn never_below_the_agents(steps in prop::collection::vec(prop_oneof![Just(Step::Suspend), Just(Step::Resume), any::<bool>().prop_map(Step::Event)], 0..40), late in prop::collection::vec(0usize..4, 40)) {
            // The wire: each event seen `late[i]` commands after the agent did it.
            let mut seen: Vec<(usize, Step)> = Vec::new();
            let mut commands = 0usize;
            for (i, s) in steps.iter().enumerate() {
                match s {
                    Step::Event(_) => seen.push((commands + late[i], *s)),
                    _ => {
                        commands += 1;
                        seen.push((commands, *s));
                    }
                }
            }
            // Stable: at a tie the command was sent before the event arrived.
            seen.sort_by_key(|(at, s)| (*at, matches!(s, Step::Event(_))));
            let mut v = VmWide::default();
            for (_, s) in &seen {
                match s {
                    Step::Suspend => v.command(1, 8),
                    Step::Resume => v.command(1, 9),
                    Step::Event(all) => v.event(if *all { POLICY_ALL } else { 0 }),
                }
            }
            prop_assert!(v.owed() >= agent(&steps), "{steps:?} seen as {seen:?}");
        }
    }
}
