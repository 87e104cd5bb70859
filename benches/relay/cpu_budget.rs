//! Where the machine's CPU goes while requests are pipelined: the CPU time of the client's
//! own thread, of the JVM, and what share of the machine's CPU time was busy.
//!
//! With many requests in flight every process of a path runs at once (the client writing
//! and reading, the JVM's reader and command threads, the relay), and on a small machine
//! they share its few CPUs. When those are all busy, throughput follows the CPU all of them
//! spend per request, not the relay's alone: these figures tell whether that is the case.

/// CPU time of the calling thread so far (ns), from /proc/thread-self/schedstat.
pub fn this_thread_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The machine's CPU ticks at one moment: busy (user, nice, system, irq, softirq, steal)
/// and all, summed over its CPUs, from the first line of /proc/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineTicks {
    busy: u64,
    all: u64,
}

impl MachineTicks {
    pub fn take() -> Option<MachineTicks> {
        parse_cpu_line(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The share of the machine's CPU time (all its CPUs together) that was busy between
    /// `earlier` and now, 0 to 1 (10 ms ticks: over half a second on two CPUs, to about 1 %).
    pub fn busy_share_since(&self, earlier: &MachineTicks) -> Option<f64> {
        let busy = self.busy.checked_sub(earlier.busy)?;
        let all = self.all.checked_sub(earlier.all)?;
        (all > 0).then(|| busy as f64 / all as f64)
    }
}

/// `cpu  user nice system idle iowait irq softirq steal guest guest_nice`: guest time is
/// already part of user time.
fn parse_cpu_line(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().next()?;
    let mut f = line.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v.try_into().ok()?;
    let busy = user + nice + system + irq + softirq + steal;
    Some(MachineTicks { busy, all: busy + idle + iowait })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_cpu_line_splits_into_busy_and_idle() {
        let stat = "cpu  100 5 50 1000 20 3 2 7 40 0\ncpu0 50 2 25 500 10 1 1 3 20 0\n";
        let t = parse_cpu_line(stat).unwrap();
        assert_eq!(
            t,
            MachineTicks {
                busy: 167,
                all: 1187
            }
        );
        assert!(parse_cpu_line("intr 1 2 3\n").is_none());
        assert!(parse_cpu_line("cpu  1 2 x 4 5 6 7 8\n").is_none());
    }

    #[test]
    fn busy_share_over_a_window() {
        let a = MachineTicks {
            busy: 1000,
            all: 5000,
        };
        let b = MachineTicks {
            busy: 1150,
            all: 5200,
        };
        let share = b.busy_share_since(&a).unwrap();
        assert!((share - 0.75).abs() < 1e-9, "{share}");
        assert!(a.busy_share_since(&b).is_none(), "went backwards");
        assert!(a.busy_share_since(&a).is_none(), "no time passed");
    }

    #[test]
    fn this_thread_and_the_machine_are_readable() {
        let t0 = this_thread_ns().unwrap();
        let m0 = MachineTicks::take().unwrap();
        // Spin until the thread has had 20 ms of CPU: on a loaded machine 30 ms of wall time
        // can hold much less, so a fixed spin made this fail under load. The deadline only
        // bounds a counter that never moves.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while this_thread_ns().unwrap() < t0 + 20_000_000 {
            assert!(std::time::Instant::now() < deadline, "the thread's CPU time does not advance");
        }
        let m1 = MachineTicks::take().unwrap();
        assert!(m1.busy >= m0.busy && m1.all >= m0.all);
    }
}
