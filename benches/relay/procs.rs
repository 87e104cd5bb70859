//! Child processes the benchmark starts (kill-on-drop, also during a panic); what it reads
//! about them in /proc (CPU time, peak and current RSS, listening TCP ports) is the test
//! kit's (`testkit::process`).

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

// What the kit reads about a process in /proc, used here as the benchmark's own.
pub use testkit::process::{status_kib, wait_listening, CpuSnap};

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

/// A port that was free a moment ago (the kit's: bound to 127.0.0.1:0, read, closed).
pub fn free_port() -> Result<u16> {
    testkit::ports::try_free_port().context("bind 127.0.0.1:0")
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
    fn open_file_limits_of_this_process_are_readable() {
        let me = std::process::id();
        assert!(nofile_limits(me).is_some_and(|(s, h)| s <= h));
    }
}
