//! The far side's idle cost on a host, beside today's scan, in the same run: a host with N
//! JVMs (1, then 4), `serve --ssh HOST` with `--far never` (today: the master's session runs a
//! POSIX sh that scans /proc every interval) and with `--far always` (`jdwpmux far` on the host
//! finds JVMs from /proc itself and holds their connections), every JVM ready, then a window.
//! CPU as in the `remote` section's idle part (`remote::idle_cost`): utime+stime+cutime+cstime
//! over wall time, this machine's daemon and its children, and the host's processes (its
//! network namespace's, not the JVMs): sshd, the session, its shell and what the scans run,
//! or the far side. The far side's RSS is its VmRSS at the window's end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::far_paths::{far_gone, far_pids, FarKind, FarWrapper};
use crate::jvm::Debuggee;
use crate::procs::status_kib;
use crate::proxy::{Proxy, ProxyBin};
use crate::remote::{count_ssh_rows, idle_cost, next_session, Fail, IdleCost, VM_PORT};
use crate::stats::fmt;
use crate::table::{Row, Table};
use crate::test_hosts::BenchHost;

#[derive(Debug, Clone)]
pub struct IdleParams {
    pub window: Duration,
    /// After every JVM is ready, before the window.
    pub settle: Duration,
    /// JVMs on the host, one measurement each.
    pub jvms: Vec<usize>,
}

/// One idle window of one mode.
#[derive(Debug, Clone, Default)]
pub struct FarIdle {
    pub cost: IdleCost,
    /// `jdwpmux far` on the host: CPU share (1.0 = one core) and VmRSS, KiB.
    pub far_cpu: Option<f64>,
    pub far_rss_kib: Option<u64>,
}

fn measure(bin: &ProxyBin, keys: &testkit::testhost::Keys, host: &mut BenchHost, wrapper: &FarWrapper, kind: FarKind, p: &IdleParams) -> Result<FarIdle> {
    next_session(std::slice::from_mut(host))?;
    let dir = tempfile::tempdir()?;
    let mut args = bin.serve_ssh_args(&[host.alias()], &keys.ssh_config(), dir.path());
    match kind {
        FarKind::Far => args.extend(["--far".to_string(), "always".into(), "--far-path".into(), wrapper.path.display().to_string()]),
        _ => args.extend(["--far", "never"].map(String::from)),
    }
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &[], 64, host.jvms.len())?;
    let n = host.jvms.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = proxy.list_json(bin)?;
        let ours = rows.iter().filter(|r| r["host"] == host.alias()).cloned().collect::<Vec<_>>();
        let (_, ready) = count_ssh_rows(&ours);
        if ready >= n {
            break;
        }
        if Instant::now() > deadline {
            let log = proxy.log_tail(3000);
            proxy.stop();
            bail!("jdwpmux has {ready} of {n} VMs ready after 60 s; log:\n{log}\nfar side's log:\n{}", wrapper.log());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(p.settle);
    let daemon = proxy.pid();
    let cost = idle_cost(&|| crate::proc_tree::with_children(daemon), Some(daemon), host.ns(), &host.jvm_pids(), p.window);
    let far = far_pids(host.ns());
    let far_rss_kib = (!far.is_empty()).then(|| far.iter().filter_map(|p| status_kib(*p, "VmRSS")).sum());
    proxy.stop();
    if kind == FarKind::Far {
        far_gone(host.ns(), Duration::from_secs(20))?;
    }
    let far_cpu = cost.host_by_name.iter().find(|(n, _)| n == "jdwpmux").map(|(_, v)| *v).or(far_rss_kib.map(|_| 0.0));
    Ok(FarIdle { cost, far_cpu, far_rss_kib })
}

/// Measures each size of `p.jvms`: on `host` when it has that many JVMs, else on a host of
/// its own made for it.
#[allow(clippy::too_many_arguments)]
pub fn run(bin: &ProxyBin, keys: &testkit::testhost::Keys, prog: &Arc<Debuggee>, host: &mut BenchHost, wrapper: &FarWrapper, p: &IdleParams, t: &mut Table, fail: Fail) {
    for &n in &p.jvms {
        let mut own = None;
        let h: &mut BenchHost = if host.jvms.len() == n {
            &mut *host
        } else {
            let made = BenchHost::start(keys, &format!("idle{n}")).and_then(|mut h| {
                for j in 0..n {
                    h.launch(prog, VM_PORT + j as u16, true)?;
                }
                h.wait_ready(Duration::from_secs(180))?;
                Ok(h)
            });
            match made {
                Ok(h) => own.insert(h),
                Err(e) => {
                    fail(&format!("far: idle host with {n} JVMs"), format!("{e:#}"));
                    continue;
                }
            }
        };
        eprintln!("far: an idle host with {n} JVMs, {:?} windows ...", p.window);
        let mut got: [Option<FarIdle>; 2] = Default::default();
        for (i, kind) in [FarKind::Forward, FarKind::Far].into_iter().enumerate() {
            match measure(bin, keys, h, wrapper, kind, p) {
                Ok(r) => {
                    eprintln!("far idle, {n} JVMs, {}: local {} %, host {} %", kind.label(), fmt(r.cost.local * 100.0), fmt(r.cost.host * 100.0));
                    got[i] = Some(r);
                }
                Err(e) => fail(&format!("far: idle host with {n} JVMs, {}", kind.label()), format!("{e:#}")),
            }
        }
        rows(t, n, p, &got);
    }
}

fn rows(t: &mut Table, n: usize, p: &IdleParams, got: &[Option<FarIdle>; 2]) {
    if got.iter().all(Option::is_none) {
        return;
    }
    t.section(&format!(
        "an idle ssh host with {n} JVM(s), all ready, then a {} s window; CPU = utime+stime+cutime+cstime of /proc/PID/stat over wall time; --far never: the session's shell scans /proc every 2 s; --far always: jdwpmux far on the host",
        p.window.as_secs_f64()
    ));
    t.columns(["", "jdwpmux --far never", "jdwpmux --far always", ""]);
    let pct = |v: f64| fmt(v * 100.0);
    let cells = |f: &dyn Fn(&FarIdle) -> String| [String::new(), got[0].as_ref().map_or("-".into(), f), got[1].as_ref().map_or("-".into(), f), String::new()];
    t.push(Row::new(&format!("idle, {n} JVMs: local CPU % of one core (daemon + its ssh)"), cells(&|r| pct(r.cost.local))));
    let by_name = |r: &FarIdle| {
        let parts: Vec<String> = r.cost.host_by_name.iter().map(|(n, v)| format!("{n} {}", pct(*v))).collect();
        if parts.is_empty() { pct(r.cost.host) } else { format!("{} ({})", pct(r.cost.host), parts.join(", ")) }
    };
    t.push(Row::new(&format!("idle, {n} JVMs: host-side CPU % (not the JVMs)"), cells(&by_name)));
    t.push(Row::new(&format!("idle, {n} JVMs: local + host-side CPU % of one core"), cells(&|r| pct(r.cost.local + r.cost.host))));
    t.push(Row::new(
        &format!("idle, {n} JVMs: jdwpmux far on the host: CPU %, RSS MiB"),
        cells(&|r| match (r.far_cpu, r.far_rss_kib) {
            (Some(c), Some(k)) => format!("{}, {}", pct(c), fmt(k as f64 / 1024.0)),
            _ => "-".into(),
        }),
    ));
    t.push(Row::new(&format!("idle, {n} JVMs: host-side processes (most at once)"), cells(&|r| r.cost.host_procs.to_string())));
}
