//! What a process uses, read from /proc (resident memory, open descriptors, CPU time,
//! listening TCP ports), and the signals and limits fault tests apply to processes they
//! started. The tests and the benchmark read /proc through these.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A process's resident memory and open file descriptors at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub rss_kib: u64,
    pub fds: usize,
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RSS {} KiB, {} fds", self.rss_kib, self.fds)
    }
}

/// `VmRSS` of /proc/PID/status and the number of entries in /proc/PID/fd.
pub fn usage(pid: u32) -> Result<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).with_context(|| format!("process {pid} is gone"))?;
    let rss_kib = parse_status_kib(&status, "VmRSS").context("no VmRSS line")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).context("read /proc/PID/fd")?.count();
    Ok(Usage { rss_kib, fds })
}

/// How far a process may stay above its earlier usage once a fault is over.
#[derive(Clone, Copy, Debug)]
pub struct Slack {
    pub rss_kib: u64,
    pub fds: usize,
}

/// Waits (polling, up to `within`) until `pid` uses no more than `base` plus `slack`; the
/// last sample either way, and an error naming both when it stayed above.
pub async fn wait_back_to(pid: u32, base: Usage, slack: Slack, within: Duration) -> Result<Usage> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let now = usage(pid)?;
        if now.rss_kib <= base.rss_kib + slack.rss_kib && now.fds <= base.fds + slack.fds {
            return Ok(now);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("usage did not return to its level: before {base}, now {now}, slack {slack:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Highest resident memory seen while sampling in the background; `stop` ends the sampling.
pub struct PeakSampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<u64>,
}

impl PeakSampler {
    /// Samples `pid`'s RSS every 20 ms.
    pub fn start(pid: u32) -> PeakSampler {
        let (stop, mut rx) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut peak = 0;
            loop {
                if let Ok(u) = usage(pid) {
                    peak = peak.max(u.rss_kib);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                    _ = rx.changed() => return peak,
                }
            }
        });
        PeakSampler { stop, task }
    }

    /// The highest RSS seen, in KiB.
    pub async fn stop(self) -> u64 {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or(0)
    }
}

/// Sends `sig` to `pid` (a process the test started).
pub fn signal(pid: u32, sig: libc::c_int) -> Result<()> {
    let pid = libc::pid_t::try_from(pid).context("pid out of range")?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, sig) } != 0 {
        bail!("kill({pid}, {sig}): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// The state letter of /proc/PID/stat ('T' stopped, 'Z' zombie, 'R'/'S' running), None
/// once the process is gone.
pub fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_fields(&stat)?.first()?.chars().next()
}

/// Makes `cmd`'s process unable to write files larger than `bytes` (RLIMIT_FSIZE): past it a
/// write fails with EFBIG, and SIGXFSZ is raised (which kills a process that leaves it at
/// its default).
pub fn limit_file_size(cmd: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // setrlimit(2), which is async-signal-safe, on a value copied in.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Pids whose command line holds every one of `words` (for processes that fork away from
/// the one the test started, like the adb server).
pub fn pids_with_cmdline(words: &[&str]) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(raw) = std::fs::read(Path::new("/proc").join(pid.to_string()).join("cmdline")) else { return false };
            let args: Vec<String> = raw.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            words.iter().all(|w| args.iter().any(|a| a.contains(w)))
        })
        .collect()
}

/// CPU time of a process at one moment: each thread's run time from
/// /proc/PID/task/*/schedstat (ns precision) and the process total from /proc/PID/stat
/// (10 ms ticks, but it keeps the time of threads that have exited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSnap {
    threads: std::collections::HashMap<u32, u64>,
    stat_ns: Option<u64>,
}

impl CpuSnap {
    pub fn take(pid: u32) -> Option<CpuSnap> {
        let mut threads = std::collections::HashMap::new();
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
                let s = std::fs::read_to_string(t.path().join("schedstat")).ok();
                if let Some(v) = s.as_deref().and_then(|s| s.split_whitespace().next()).and_then(|v| v.parse::<u64>().ok()) {
                    threads.insert(tid, v);
                }
            }
        }
        let stat_ns = stat_cpu_ns(pid);
        (!threads.is_empty() || stat_ns.is_some()).then_some(CpuSnap { threads, stat_ns })
    }

    /// CPU ns used since `earlier`: summed per thread while every earlier thread still
    /// exists (precise); from /proc/PID/stat when one has exited (its time would be lost).
    pub fn since(&self, earlier: &CpuSnap) -> Option<u64> {
        let all_alive = !earlier.threads.is_empty() && earlier.threads.keys().all(|t| self.threads.contains_key(t));
        if all_alive {
            return Some(self.threads.iter().map(|(t, v)| v.saturating_sub(earlier.threads.get(t).copied().unwrap_or(0))).sum());
        }
        Some(self.stat_ns?.saturating_sub(earlier.stat_ns?))
    }
}

/// utime + stime from /proc/PID/stat, in ns (assumes the usual 100 ticks per second).
pub fn stat_cpu_ns(pid: u32) -> Option<u64> {
    stat_cpu_ticks(pid).map(|t| t * 10_000_000)
}

/// utime + stime from /proc/PID/stat, in clock ticks (`sysconf(_SC_CLK_TCK)` a second).
pub fn stat_cpu_ticks(pid: u32) -> Option<u64> {
    parse_stat_cpu_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The fields of a /proc/PID/stat line after the command name, which may hold spaces and
/// parentheses (so they start after its last ')'): [0] is field 3 of proc(5), the state;
/// [1] the parent pid, [3] the session id, [11] and [12] utime and stime in ticks.
pub fn parse_stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace().collect())
}

/// utime + stime of a /proc/PID/stat line, in ticks.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let f = parse_stat_fields(stat)?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A `VmXxx:` value of /proc/PID/status in KiB (VmHWM = peak RSS, VmRSS = current).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kib(&s, field)
}

fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// True when something listens on 127.0.0.1:`port` (from /proc/net/tcp, without connecting:
/// a probe connection would be taken as the debugger by socat or the JVM).
pub fn is_listening(port: u16) -> bool {
    std::fs::read_to_string("/proc/net/tcp").map(|t| tcp_table_listens(&t, port)).unwrap_or(false)
}

fn tcp_table_listens(table: &str, port: u16) -> bool {
    let want = format!(":{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
    })
}

pub fn wait_listening(port: u16, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    while !is_listening(port) {
        if Instant::now() > deadline {
            bail!("nothing listens on 127.0.0.1:{port} after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// The processes whose name (`comm`) starts with `name`, in any state (zombies too), in the
/// pid namespace of `pid` (a container's, from its first process): their pids and state
/// letters.
pub fn named_in_pid_ns_of(pid: u32, name: &str) -> Vec<(u32, String)> {
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let want = ns(&pid.to_string());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.file_name().to_str()?.to_string();
            p.parse::<u32>().ok()?;
            if want.is_none() || ns(&p) != want {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            comm.starts_with(name).then(|| (p.parse().unwrap_or(0), rest.chars().next().unwrap_or('?').to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_name() {
        let stat = "1234 (a ) b) S 1 2 3 4 5 6 7 8 9 10 250 37 0 0 20 0 1 0 100";
        let f = parse_stat_fields(stat).unwrap();
        assert_eq!((f[0], f[1], f[3]), ("S", "1", "3"), "state, parent, session");
        assert_eq!(parse_stat_cpu_ticks(stat), Some(287));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn status_fields() {
        let s = "Name:\tjdwpmux\nVmHWM:\t   10240 kB\nVmRSS:\t    9000 kB\n";
        let cases = [("VmHWM", Some(10240)), ("VmRSS", Some(9000)), ("VmSwap", None), ("Vm", None)];
        for (f, want) in cases {
            assert_eq!(parse_status_kib(s, f), want, "{f}");
        }
    }

    #[test]
    fn tcp_listen_table() {
        let t = "  sl  local_address rem_address   st tx_queue\n\
                 0: 0100007F:1F90 00000000:0000 0A 00000000:00000000\n\
                 1: 0100007F:1F91 0100007F:D431 01 00000000:00000000\n";
        assert!(tcp_table_listens(t, 8080));
        assert!(!tcp_table_listens(t, 8081), "established, not listening");
        assert!(!tcp_table_listens(t, 80));
    }

    fn snap(threads: &[(u32, u64)], stat_ns: u64) -> CpuSnap {
        CpuSnap { threads: threads.iter().copied().collect(), stat_ns: Some(stat_ns) }
    }

    #[test]
    fn cpu_deltas_survive_threads_coming_and_going() {
        let a = snap(&[(1, 100), (2, 50)], 10_000_000);
        let cases = [
            (snap(&[(1, 150), (2, 60)], 10_000_000), 60, "same threads: per-thread ns"),
            (snap(&[(1, 150), (2, 60), (3, 5)], 10_000_000), 65, "a new thread counts whole"),
            (snap(&[(1, 150)], 30_000_000), 20_000_000, "a thread exited: stat ticks"),
        ];
        for (b, want, why) in cases {
            assert_eq!(b.since(&a), Some(want), "{why}");
        }
    }

    #[test]
    fn cpu_and_rss_of_this_process_are_readable() {
        let me = std::process::id();
        let a = CpuSnap::take(me).unwrap();
        // Spins until 10 ms of CPU are counted: on a loaded machine 20 ms of wall time may
        // hold less; bounded, so a counter that never moves fails.
        let spin = std::time::Instant::now();
        let mut used = 0;
        while used < 10_000_000 && spin.elapsed() < Duration::from_secs(10) {
            let busy = std::time::Instant::now();
            while busy.elapsed() < Duration::from_millis(5) {}
            used = CpuSnap::take(me).unwrap().since(&a).unwrap();
        }
        assert!(used >= 10_000_000, "{used} ns of CPU counted in {:?} of spinning", spin.elapsed());
        assert!(status_kib(me, "VmHWM").unwrap_or(0) > 0);
        assert!(usage(me).is_ok_and(|u| u.rss_kib > 0 && u.fds > 0));
    }
}
