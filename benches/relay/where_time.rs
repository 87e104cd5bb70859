//! Where a round trip's time goes, counted rather than timed (counts hold on a noisy
//! machine): the relay's system calls by kind (`strace -f -c` attached for N round trips)
//! and its context switches (voluntary: it went to sleep and had to be woken; involuntary:
//! it was preempted), from /proc, in a separate pass without strace (ptrace stops would
//! inflate them), with its migrations from one CPU to another. For socat, jdwpmux alone,
//! and jdwpmux with a second, idle debugger.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::jdwp_ops as ops;
use crate::jvm::Jvm;
use crate::jvm_suite::latency;
use crate::paths::{PathKind, Relay};
use crate::procs::Proc;
use crate::proxy::ProxyBin;
use testkit::blocking_client::BlockingClient;

/// The paths of this table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Socat,
    Jdwpmux,
    /// jdwpmux with a second debugger attached that sends nothing.
    JdwpmuxIdleSecond,
}

impl Subject {
    pub const ALL: [Subject; 3] = [Subject::Socat, Subject::Jdwpmux, Subject::JdwpmuxIdleSecond];

    pub fn label(self) -> &'static str {
        match self {
            Subject::Socat => "socat",
            Subject::Jdwpmux => "jdwpmux",
            Subject::JdwpmuxIdleSecond => "jdwpmux + idle 2nd",
        }
    }

    pub fn path(self) -> PathKind {
        match self {
            Subject::Socat => PathKind::Socat,
            _ => PathKind::Jdwpmux,
        }
    }
}

/// Per round trip: system calls by name, and context switches.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub syscalls: BTreeMap<String, f64>,
    pub voluntary: f64,
    pub involuntary: f64,
    /// Moves of the relay's threads from one CPU to another.
    pub migrations: f64,
}

impl Counts {
    /// System calls in one of the groups the table shows.
    pub fn group(&self, g: Group) -> f64 {
        // A fold from +0.0: a float sum of nothing is -0.0, which would print as "-0.000".
        self.syscalls.iter().filter(|(name, _)| Group::of(name) == g).fold(0.0, |acc, (_, n)| acc + n)
    }
}

/// How the table groups system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Read,
    Write,
    Wait,
    Other,
}

impl Group {
    pub const ALL: [Group; 4] = [Group::Read, Group::Write, Group::Wait, Group::Other];

    pub fn of(name: &str) -> Group {
        match name {
            "read" | "recvfrom" | "recvmsg" | "readv" => Group::Read,
            "write" | "sendto" | "sendmsg" | "writev" => Group::Write,
            "epoll_wait" | "epoll_pwait" | "epoll_pwait2" | "poll" | "ppoll" | "select" | "pselect6" | "futex" => Group::Wait,
            _ => Group::Other,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Group::Read => "reads (read, recvfrom)",
            Group::Write => "writes (write, sendto, writev)",
            Group::Wait => "waits (epoll_wait, pselect6, futex)",
            Group::Other => "other system calls (sched_yield, ...)",
        }
    }
}

/// Parses `strace -c` output: name -> calls.
pub fn parse_strace_summary(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "% time seconds usecs/call calls [errors] syscall"
        if f.len() < 5 || f[0].parse::<f64>().is_err() || f.last() == Some(&"total") {
            continue;
        }
        let Some(name) = f.last() else { continue };
        if let Ok(calls) = f[3].parse::<u64>() {
            *out.entry((*name).to_string()).or_default() += calls;
        }
    }
    out
}

/// Voluntary and involuntary context switches and migrations of every thread of `pid`.
fn context_switches(pid: u32) -> Option<(u64, u64, u64)> {
    let mut v = 0;
    let mut i = 0;
    let mut m = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let s = std::fs::read_to_string(t.path().join("status")).ok()?;
        for l in s.lines() {
            let num = |p: &str| l.strip_prefix(p).and_then(|r| r.trim().parse::<u64>().ok());
            v += num("voluntary_ctxt_switches:").unwrap_or(0);
            i += num("nonvoluntary_ctxt_switches:").unwrap_or(0);
        }
        // Only on kernels with scheduler debugging; 0 elsewhere.
        m += std::fs::read_to_string(t.path().join("sched")).ok().and_then(|s| sched_field(&s, "se.nr_migrations")).unwrap_or(0);
    }
    Some((v, i, m))
}

/// A counter from `/proc/PID/task/TID/sched` ("name    :    value").
pub fn sched_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// One subject: a pass of `n` round trips for context switches, one under strace.
pub fn measure(s: Subject, jvm: &mut Jvm, bin: &ProxyBin, n: usize) -> Result<Counts> {
    let mut out = Counts::default();
    let switches = pass(s, jvm, bin, n)?;
    out.voluntary = switches.0 as f64 / n as f64;
    out.involuntary = switches.1 as f64 / n as f64;
    out.migrations = switches.2 as f64 / n as f64;
    let calls = pass_traced(s, jvm, bin, n)?;
    out.syscalls = calls.into_iter().map(|(k, v)| (k, v as f64 / n as f64)).collect();
    Ok(out)
}

fn pass(s: Subject, jvm: &mut Jvm, bin: &ProxyBin, n: usize) -> Result<(u64, u64, u64)> {
    with_relay(s, jvm, bin, |relay, c, version| {
        let pid = relay.pid().context("no relay process")?;
        let before = context_switches(pid).context("read /proc task status")?;
        latency(c, n, version).context("round trips")?;
        let after = context_switches(pid).context("read /proc task status")?;
        Ok((after.0 - before.0, after.1 - before.1, after.2.saturating_sub(before.2)))
    })
}

fn pass_traced(s: Subject, jvm: &mut Jvm, bin: &ProxyBin, n: usize) -> Result<BTreeMap<String, u64>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("strace.txt");
    with_relay(s, jvm, bin, |relay, c, version| {
        let pid = relay.pid().context("no relay process")?;
        let mut cmd = crate::procs::command("strace");
        cmd.args(["-f", "-c", "-o"]).arg(&file).arg("-p").arg(pid.to_string()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut strace = Proc::spawn("strace", &mut cmd).context("is strace installed? (apt-get install -y strace)")?;
        // strace says "Process N attached with M threads" (or one line per thread with
        // older versions) once it traces them: round trips start after the first.
        let stderr = strace.take_stderr().context("strace stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("attached") => break,
                Some(Ok(_)) => {}
                _ => bail!("strace ended before attaching"),
            }
        }
        // Older stracers attach thread by thread: let the rest follow before counting.
        std::thread::spawn(move || lines.for_each(drop));
        std::thread::sleep(Duration::from_millis(200));
        latency(c, n, version).context("round trips under strace")?;
        // SIGINT makes strace detach and write its summary.
        let _ = std::process::Command::new("kill").arg("-INT").arg(strace.pid().to_string()).status();
        if !strace.wait_exit(Duration::from_secs(20)) {
            bail!("strace did not stop");
        }
        Ok(())
    })?;
    let text = std::fs::read_to_string(&file).context("read the strace summary")?;
    Ok(parse_strace_summary(&text))
}

/// Runs `f` with a fresh relay of `s`'s kind and a warmed-up client (and, for
/// `JdwpmuxIdleSecond`, another debugger attached through the proxy and idle).
fn with_relay<T>(s: Subject, jvm: &mut Jvm, bin: &ProxyBin, f: impl FnOnce(&Relay, &mut BlockingClient, &[u8]) -> Result<T>) -> Result<T> {
    with_relay_from(s, jvm, |kind, vm| Relay::start(kind, vm, bin), f)
}

/// As [`with_relay`], with the relay started by `start` (given the path kind and the VM).
pub fn with_relay_from<T>(
    s: Subject,
    jvm: &mut Jvm,
    start: impl FnOnce(PathKind, std::net::SocketAddr) -> Result<Relay>,
    f: impl FnOnce(&Relay, &mut BlockingClient, &[u8]) -> Result<T>,
) -> Result<T> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let mut relay = start(s.path(), jvm.addr())?;
    let mut c = BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect")?;
    let version = c.request(ops::VERSION.0, ops::VERSION.1, &[]).context("Version")?;
    latency(&mut c, 1000, &version).context("warm-up")?;
    let mut idle = None;
    if s == Subject::JdwpmuxIdleSecond {
        let mut second = BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect the second debugger")?;
        second.request(ops::VERSION.0, ops::VERSION.1, &[]).context("the second debugger's Version")?;
        idle = Some(second);
    }
    let r = f(&relay, &mut c, &version);
    if matches!(relay, Relay::Proxy { .. }) {
        relay.stop();
    }
    drop(idle);
    drop(c);
    relay.stop();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_summary() {
        let text = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.00    0.004000           2      2000           epoll_wait
 30.00    0.003000           1      2001           recvfrom
 20.00    0.002000           1      2000           sendto
 10.00    0.001000           0      4000       120 sched_yield
------ ----------- ----------- --------- --------- ----------------
100.00    0.010000           1     10001       120 total
";
        let m = parse_strace_summary(text);
        assert_eq!(m.get("recvfrom"), Some(&2001));
        assert_eq!(m.get("sched_yield"), Some(&4000));
        assert!(!m.contains_key("total"));
        let c = Counts { syscalls: m.into_iter().map(|(k, v)| (k, v as f64)).collect(), ..Default::default() };
        assert_eq!((c.group(Group::Read), c.group(Group::Write), c.group(Group::Wait), c.group(Group::Other)), (2001.0, 2000.0, 2000.0, 4000.0));
    }

    #[test]
    fn sched_counters() {
        let text = "jdwpmux (4242, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :       1234567.890123
se.nr_migrations                             :                  17
nr_switches                                  :                 345
";
        assert_eq!(sched_field(text, "se.nr_migrations"), Some(17));
        assert_eq!(sched_field(text, "nr_switches"), Some(345));
        assert_eq!(sched_field(text, "se.exec_start"), None, "not a count");
        assert_eq!(sched_field(text, "nr_migrations"), None, "whole names only");
    }

    #[test]
    fn an_empty_group_is_positive_zero() {
        let c = Counts { syscalls: [("read".to_string(), 3.0)].into_iter().collect(), ..Default::default() };
        assert!(c.group(Group::Other).is_sign_positive());
        assert_eq!(format!("{:.3}", c.group(Group::Other)), "0.000");
    }
}
