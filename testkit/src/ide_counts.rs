//! Counting what an IDE asks, from a [`crate::tap::Tap`]'s log of both directions: the
//! debugger's commands, and of those the ones sent while no other was outstanding (each of
//! those waits a whole round trip: the sequential ones), between the VM's event packets.
//! Between two step events lies exactly one IDE step (Clear, the views' reads, Set, Resume),
//! so the counts between events are the commands of a step.

use std::collections::HashSet;

use super::tap::Seen;
use super::wire::Kind;

/// Composite event packets: command set 64, command 100.
const EVENT: (u8, u8) = (64, 100);

/// What one IDE session asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdeCounts {
    /// Commands from the handshake to the breakpoint's event.
    pub attach: u64,
    /// Commands from the breakpoint's event to the first step's (the first stop's views and
    /// the first step's request).
    pub first_stop: Option<u64>,
    /// Per step: (commands, sequential commands).
    pub steps: Vec<(u64, u64)>,
}

impl IdeCounts {
    /// Counts a tap's log (both directions, in the order seen).
    pub fn of(seen: &[Seen]) -> IdeCounts {
        let (mut commands, mut sequential) = (0u64, 0u64);
        let mut outstanding = HashSet::new();
        // (commands, sequential) when each event packet arrived.
        let mut marks: Vec<(u64, u64)> = Vec::new();
        for s in seen {
            let p = &s.packet;
            match (s.to_vm, p.kind) {
                (true, Kind::Command { .. }) => {
                    commands += 1;
                    if outstanding.is_empty() {
                        sequential += 1;
                    }
                    outstanding.insert(p.id);
                }
                (false, Kind::Reply { .. }) => {
                    outstanding.remove(&p.id);
                }
                (false, Kind::Command { set, cmd }) if (set, cmd) == EVENT => marks.push((commands, sequential)),
                _ => {}
            }
        }
        let (attach, _) = marks.first().copied().unwrap_or((commands, sequential));
        // Event 1 is the breakpoint; from event 2 on, one step lies between two events.
        let steps = marks.windows(2).skip(1).map(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1)).collect();
        let first_stop = match (marks.first(), marks.get(1)) {
            (Some(a), Some(b)) => Some(b.0 - a.0),
            _ => None,
        };
        IdeCounts { attach, first_stop, steps }
    }

    /// Mean (commands, sequential commands) per step.
    pub fn per_step(&self) -> Option<(f64, f64)> {
        let n = self.steps.len() as f64;
        (n > 0.0).then(|| {
            let (c, s) = self.steps.iter().fold((0, 0), |(c, s), (a, b)| (c + a, s + b));
            (c as f64 / n, s as f64 / n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    fn up(id: u32) -> Seen {
        Seen { to_vm: true, packet: Packet::command(id, 1, 1, vec![]) }
    }

    fn answer(id: u32) -> Seen {
        Seen { to_vm: false, packet: Packet::reply(id, 0, vec![]) }
    }

    fn event(id: u32) -> Seen {
        Seen { to_vm: false, packet: Packet::command(id, 64, 100, vec![]) }
    }

    #[test]
    fn commands_between_events_make_a_step_and_overlapping_ones_are_not_sequential() {
        let mut log = Vec::new();
        // Attach: two commands one after another, then two at once.
        for id in 1..=2 {
            log.extend([up(id), answer(id)]);
        }
        log.extend([up(3), up(4), answer(3), answer(4)]);
        log.push(event(9)); // the breakpoint
        for step in 0..3u32 {
            for k in 0..5 {
                let id = 100 + step * 10 + k;
                log.extend([up(id), answer(id)]);
            }
            log.push(event(50 + step)); // a step event
        }
        let s = IdeCounts::of(&log);
        assert_eq!(s.attach, 4);
        assert_eq!(s.first_stop, Some(5));
        assert_eq!(s.steps, vec![(5, 5), (5, 5)]);
        assert_eq!(s.per_step(), Some((5.0, 5.0)));
        let seq = IdeCounts::of(&[up(3), up(4)]);
        assert_eq!(seq.attach, 2);
        assert_eq!(seq.first_stop, None);
        assert!(seq.steps.is_empty());
    }

    #[test]
    fn sequential_counts_only_commands_sent_with_none_outstanding() {
        let log = [event(1), event(2), up(3), up(4), answer(3), answer(4), event(5)];
        assert_eq!(IdeCounts::of(&log).steps, vec![(2, 1)], "the second was sent while the first was out");
    }
}
