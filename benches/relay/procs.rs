//! Child processes the benchmark starts (kill-on-drop, also during a panic), and what it
//! reads about them from /proc: CPU time, peak and current RSS, listening TCP ports.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Pids of the children alive now, killed by the signal watcher on Ctrl-C / SIGTERM.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A command for `program` that dies with the benchmark even if the benchmark is killed
/// outright: `setpriv --pdeathsig KILL` (util-linux) when available; the setting survives
/// the exec into `program`, and the pid is `program`'s.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    static SETPRIV: OnceLock<bool> = OnceLock::new();
    let have = *SETPRIV.get_or_init(|| {
        Command::new("setpriv").args(["--pdeathsig", "KILL", "--", "true"]).status().is_ok_and(|s| s.success())
    });
    if have {
        let mut c = Command::new("setpriv");
        c.args(["--pdeathsig", "KILL", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Kills every live child on Ctrl-C or SIGTERM, then exits (Drop does not run on a signal).
pub fn kill_children_on_signal() {
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut term) = signal(SignalKind::terminate()) else { return };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        });
        let pids = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
        for pid in pids {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        }
        for name in NETNS.lock().map(|l| l.clone()).unwrap_or_default() {
            remove_netns(&name);
        }
        eprintln!("relay bench: interrupted; stopped {} child processes", LIVE.lock().map(|l| l.len()).unwrap_or(0));
        std::process::exit(130);
    });
}

/// Network namespaces (test hosts) alive now, removed by the signal watcher with every
/// process in them; on a normal end or a panic their owners' Drop does that.
static NETNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records a network namespace the benchmark made (see [`netns_removed`]).
pub fn netns_made(name: &str) {
    if let Ok(mut l) = NETNS.lock() {
        l.push(name.to_string());
    }
}

/// The namespace is gone (its owner removed it).
pub fn netns_removed(name: &str) {
    if let Ok(mut l) = NETNS.lock() {
        l.retain(|n| n != name);
    }
}

/// Kills every process of network namespace `name` and removes it (its veth pair goes with
/// it).
fn remove_netns(name: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").arg("-KILL").arg(pid).status();
        }
    }
    let _ = Command::new("ip").args(["netns", "del", name]).status();
}

/// A child that is killed and reaped when dropped.
pub struct Proc {
    child: Child,
}

impl Proc {
    pub fn spawn(name: &str, cmd: &mut Command) -> Result<Proc> {
        let child = cmd.spawn().with_context(|| format!("start {name} ({cmd:?})"))?;
        if let Ok(mut l) = LIVE.lock() {
            l.push(child.id());
        }
        Ok(Proc { child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// None while it runs.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Asks it to stop (SIGTERM), waits up to `grace`, then kills it.
    pub fn terminate(&mut self, grace: Duration) {
        if self.exited().is_some() {
            return;
        }
        let _ = Command::new("kill").arg("-TERM").arg(self.pid().to_string()).status();
        let _ = self.wait_exit(grace);
        self.kill();
    }

    /// Waits for it to exit by itself; false on timeout.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    pub fn kill(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Ok(mut l) = LIVE.lock() {
            l.retain(|p| *p != self.child.id());
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port that was free a moment ago (bound to 127.0.0.1:0, read, closed).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
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
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_cpu_ticks(&s).map(|t| t * 10_000_000)
}

fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
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

/// `socat TCP-LISTEN:P,bind=127.0.0.1,reuseaddr TCP:127.0.0.1:TARGET` (one connection, then
/// it exits), optionally with `-b BUF`.
pub struct Socat {
    pub proc: Proc,
    pub port: u16,
}

impl Socat {
    pub fn start(target: u16, buf: Option<usize>) -> Result<Socat> {
        Self::start_under(target, buf, &[])
    }

    /// As [`Socat::start`], run by `wrapper` (a program and its arguments, e.g. valgrind)
    /// when it is not empty.
    pub fn start_under(target: u16, buf: Option<usize>, wrapper: &[String]) -> Result<Socat> {
        let port = free_port()?;
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = command(program);
                c.args(args).arg("socat");
                c
            }
            None => command("socat"),
        };
        if let Some(b) = buf {
            cmd.arg("-b").arg(b.to_string());
        }
        // JDWPMUX_SOCAT_OPTS (e.g. "nodelay") is appended to both addresses, for
        // comparing against a tuned socat; the default is the plain command of the issue.
        let extra = std::env::var("JDWPMUX_SOCAT_OPTS").map(|o| format!(",{o}")).unwrap_or_default();
        cmd.arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr{extra}"))
            .arg(format!("TCP:127.0.0.1:{target}{extra}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        let proc = Proc::spawn("socat", &mut cmd).context("is socat installed? (apt-get install -y socat)")?;
        let s = Socat { proc, port };
        wait_listening(port, Duration::from_secs(10))?;
        Ok(s)
    }
}

/// Number of open files this process may have; raises the soft limit to the hard one with
/// `prlimit` (util-linux) when `want` is more than the soft limit.
pub fn ensure_nofile(want: u64) -> Result<u64> {
    let (soft, hard) = nofile_limits(std::process::id()).context("read /proc/self/limits")?;
    if soft >= want {
        return Ok(soft);
    }
    let _ = Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--nofile={hard}:{hard}"))
        .status();
    let (soft, _) = nofile_limits(std::process::id()).context("read /proc/self/limits")?;
    if soft < want {
        bail!("need {want} open files, the limit is {soft} (hard {hard}): raise it with ulimit -n");
    }
    Ok(soft)
}

fn nofile_limits(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let l = s.lines().find(|l| l.starts_with("Max open files"))?;
    let f: Vec<&str> = l["Max open files".len()..].split_whitespace().collect();
    let num = |v: &str| if v == "unlimited" { Some(u64::MAX) } else { v.parse().ok() };
    Some((num(f.first()?)?, num(f.get(1)?)?))
}

/// Runs `cargo build --release` for the crate at `root` and returns target/release/jdwpmux.
pub fn build_proxy(root: &Path) -> Result<std::path::PathBuf> {
    eprintln!("building the proxy: cargo build --release (in {})", root.display());
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--bin", "jdwpmux", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .status()
        .context("run cargo")?;
    if !status.success() {
        bail!("cargo build --release failed: {status}");
    }
    let dir = std::env::var_os("CARGO_TARGET_DIR").map(std::path::PathBuf::from).unwrap_or_else(|| root.join("target"));
    Ok(dir.join("release").join("jdwpmux"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_name() {
        let stat = "1234 (a ) b) S 1 2 3 4 5 6 7 8 9 10 250 37 0 0 20 0 1 0 100";
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
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(20) {}
        assert!(CpuSnap::take(me).unwrap().since(&a).unwrap() >= 10_000_000);
        assert!(status_kib(me, "VmHWM").unwrap_or(0) > 0);
        assert!(nofile_limits(me).is_some_and(|(s, h)| s <= h));
    }
}
