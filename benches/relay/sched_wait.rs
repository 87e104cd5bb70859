//! Where a step's time goes on a shared machine: for a group of processes, the time their
//! threads ran and the time they were runnable but waited for a CPU (fields 1 and 2 of
//! /proc/PID/task/TID/schedstat, ns). A path with more processes wakes more of them per
//! round trip, and on a busy machine each wake-up can wait in the run queue: the waiting
//! time per step, beside the step time, tells a slow relay from a crowded machine.

use std::collections::HashMap;

/// Run and wait ns per thread (keyed by tid) of some processes at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedSnap(HashMap<u32, (u64, u64)>);

/// `run wait slices` of one schedstat file.
pub fn parse_schedstat(s: &str) -> Option<(u64, u64)> {
    let mut f = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

impl SchedSnap {
    pub fn take(pids: &[u32]) -> SchedSnap {
        let mut m = HashMap::new();
        for pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
                if let Some(v) = std::fs::read_to_string(t.path().join("schedstat")).ok().as_deref().and_then(parse_schedstat) {
                    m.insert(tid, v);
                }
            }
        }
        SchedSnap(m)
    }

    /// (run, wait) ns since `earlier`, over the threads that exist in both (a thread started
    /// since counts whole).
    pub fn since(&self, earlier: &SchedSnap) -> (u64, u64) {
        self.0.iter().fold((0, 0), |(r, w), (tid, (r1, w1))| {
            let (r0, w0) = earlier.0.get(tid).copied().unwrap_or((0, 0));
            (r + r1.saturating_sub(r0), w + w1.saturating_sub(w0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_lines_and_differences() {
        assert_eq!(parse_schedstat("123 456 7\n"), Some((123, 456)));
        assert_eq!(parse_schedstat("123"), None);
        let a = SchedSnap(HashMap::from([(1, (100, 10)), (2, (50, 5))]));
        let b = SchedSnap(HashMap::from([(1, (150, 30)), (3, (7, 1))]));
        assert_eq!(b.since(&a), (57, 21), "thread 2 ended, thread 3 is new");
        let me = SchedSnap::take(&[std::process::id()]);
        assert!(!me.0.is_empty(), "this process's threads are read");
    }
}
