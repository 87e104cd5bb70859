//! The same sequential round trips with the VM, the relay and the client all on one CPU.
//!
//! On a machine with few (virtual) CPUs, a round trip through any relay is a chain of four
//! threads (client, relay, the JDWP agent's reader, its command loop). Where the scheduler
//! puts each of them decides much of the time: a wake-up on another, idle CPU has to bring
//! that CPU out of its idle state (on a virtual machine, an exit to the hypervisor), and the
//! placement changes from run to run. Pinning every thread of the chain to one CPU removes
//! that lottery and leaves the relay's own work: these figures are stable from run to run
//! where the free-running ones move by 20 %.

use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::jdwp_ops as ops;
use crate::jvm::Jvm;
use crate::jvm_suite::latency;
use crate::paths::{PathKind, Relay};
use crate::proxy::ProxyBin;
use crate::report::Rep;
use testkit::blocking_client::BlockingClient;

/// One path's figures with everything on one CPU.
#[derive(Debug, Clone, Default)]
pub struct OneCpuRun {
    pub latency_us: f64,
    /// CPU of the relay process per round trip, µs (none for a direct connection).
    pub cpu_rt_us: Option<f64>,
}

/// A CPU set for `sched_setaffinity`.
#[derive(Clone, Copy)]
pub struct CpuSet(libc::cpu_set_t);

impl CpuSet {
    /// The CPUs this thread may run on now.
    pub fn current() -> Result<CpuSet> {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
            bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
        }
        Ok(CpuSet(set))
    }

    /// The set holding only `cpu`.
    pub fn only(cpu: usize) -> CpuSet {
        // SAFETY: as above; CPU_SET writes inside the set for cpu < CPU_SETSIZE.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        CpuSet(set)
    }

    /// How many CPUs the set holds.
    pub fn count(&self) -> usize {
        // SAFETY: CPU_COUNT only reads the set.
        unsafe { libc::CPU_COUNT(&self.0) as usize }
    }

    /// The lowest CPU in the set.
    pub fn first(&self) -> Option<usize> {
        // SAFETY: CPU_ISSET only reads the set.
        (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, &self.0) })
    }

    /// Puts thread `tid` (0: the calling thread) on these CPUs.
    pub fn apply(&self, tid: libc::pid_t) -> std::io::Result<()> {
        // SAFETY: `self.0` is a valid cpu_set_t of the size passed.
        match unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &self.0) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    /// Puts every thread of process `pid` on these CPUs (threads it starts later inherit it).
    pub fn apply_process(&self, pid: u32) -> Result<()> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).with_context(|| format!("list the threads of {pid}"))?;
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else { continue };
            // A thread may end between the listing and the call.
            if let Err(e) = self.apply(tid) {
                if e.raw_os_error() != Some(libc::ESRCH) {
                    return Err(e).with_context(|| format!("sched_setaffinity {tid}"));
                }
            }
        }
        Ok(())
    }
}

/// Runs `reps` (after `warmup` discarded ones) alternating repetitions of `n` round trips on
/// every path, with the JVM, the relay and this thread on the first CPU this process may use.
/// Everything is put back on the CPUs it had when it returns.
pub fn run(jvm: &mut Jvm, bin: &ProxyBin, n: usize, warmup: usize, reps: usize) -> Result<(usize, Vec<Rep<OneCpuRun>>)> {
    let all = CpuSet::current()?;
    let cpu = all.first().context("no CPU in this thread's affinity set")?;
    let one = CpuSet::only(cpu);
    one.apply(0).context("pin the client thread")?;
    let r = (|| -> Result<Vec<Rep<OneCpuRun>>> {
        one.apply_process(jvm.pid()).context("pin the JVM")?;
        let mut out = Vec::new();
        for rep in 0..warmup + reps {
            let mut row: Rep<OneCpuRun> = Default::default();
            for kind in PathKind::order(rep) {
                row[kind.index()] = Some(one_path(kind, jvm, bin, &one, n).with_context(|| format!("one CPU, {}", kind.label()))?);
            }
            if rep >= warmup {
                out.push(row);
            }
        }
        Ok(out)
    })();
    let restored = all.apply(0).context("unpin the client thread").and_then(|_| all.apply_process(jvm.pid()).context("unpin the JVM"));
    let out = r?;
    restored?;
    Ok((cpu, out))
}

fn one_path(kind: PathKind, jvm: &mut Jvm, bin: &ProxyBin, one: &CpuSet, n: usize) -> Result<OneCpuRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let mut relay = Relay::start(kind, jvm.addr(), bin)?;
    let r = (|| -> Result<OneCpuRun> {
        if let Some(pid) = relay.pid() {
            one.apply_process(pid).context("pin the relay")?;
        }
        let mut c = BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect")?;
        let version = c.request(ops::VERSION.0, ops::VERSION.1, &[]).context("Version")?;
        latency(&mut c, n / 5 + 1, &version).context("warm-up")?;
        let cpu = relay.cpu();
        let (elapsed, _) = latency(&mut c, n, &version).context("round trips")?;
        let cpu_rt_us = cpu.ns().map(|ns| ns as f64 / 1e3 / n as f64);
        if matches!(relay, Relay::Proxy { .. }) {
            // The proxy goes first so that the VM sees one disconnect (see `Relay::stop`).
            relay.stop();
        }
        drop(c);
        Ok(OneCpuRun { latency_us: elapsed.as_secs_f64() * 1e6 / n as f64, cpu_rt_us })
    })();
    relay.stop();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets() {
        let s = CpuSet::only(1);
        assert_eq!((s.first(), s.count()), (Some(1), 1));
        let cur = CpuSet::current().expect("sched_getaffinity");
        assert!(cur.first().is_some(), "this thread runs somewhere");
    }

    #[test]
    fn pinning_this_thread_and_back() {
        let cur = CpuSet::current().expect("sched_getaffinity");
        let first = cur.first().expect("a CPU");
        std::thread::scope(|s| {
            s.spawn(|| {
                CpuSet::only(first).apply(0).expect("pin");
                let pinned = CpuSet::current().expect("read back");
                assert_eq!((pinned.first(), pinned.count()), (Some(first), 1));
                cur.apply(0).expect("unpin");
                assert_eq!(CpuSet::current().expect("read back").count(), cur.count());
            });
        });
    }
}
