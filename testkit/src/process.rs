//! What a process uses, read from /proc (resident memory, open descriptors), and the signals
//! and limits fault tests apply to processes they started.

use std::path::Path;
use std::time::Duration;

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
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .context("no VmRSS line")?;
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
    // "PID (COMM) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
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
