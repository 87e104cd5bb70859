//! The `containers` section: JVMs reached inside a network namespace of their own, as a
//! container's are (`unshare --net`, the agent on that namespace's loopback, nothing
//! published: the same way in as a Podman container's, without an engine's start-up in the
//! figures), beside one on this machine's loopback, all found by one daemon's /proc scan:
//!
//! - connecting: the daemon's own connect step (`transport::open::connect_agent`), into a
//!   namespace (as root: a thread that joins it) and plainly over loopback, each followed by
//!   the JDWP handshake, in process;
//! - a round trip (VirtualMachine.Version) through each one's debugger port;
//! - how long N namespace JVMs take to be listed ready from the daemon's start;
//! - what the daemon costs while they idle (its /proc scans), CPU % of one core.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use jdwpmux::netns::NsTarget;
use jdwpmux::transport::open::{connect_agent, handshake};
use jdwpmux::transport::Endpoint;

use crate::jvm::{Debuggee, Jvm, Launch};
use crate::proxy::{Proxy, ProxyBin};
use crate::stats::{fmt, median};
use crate::table::{Row, Table};
use testkit::blocking_client::BlockingClient;

/// What one run measured.
pub struct ContainersRun {
    pub jvms: usize,
    /// Connect and handshake, µs (medians): into a namespace, over loopback.
    pub connect_inside_us: f64,
    pub connect_here_us: f64,
    /// Version round trips through jdwpmux, µs (medians): to a namespace's JVM, to this one's.
    pub rtt_inside_us: f64,
    pub rtt_here_us: f64,
    /// From the daemon's start to every JVM listed ready.
    pub listed_s: f64,
    /// The daemon's CPU while every JVM idles, % of one core.
    pub idle_cpu_pct: f64,
}

fn netns_inode(pid: u32) -> Result<u64> {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/net"))?;
    jdwpmux::netns::parse_ns_link(&link.to_string_lossy(), "net").context("net:[N]")
}

pub fn run(bin: &ProxyBin, jvms: usize, rounds: usize) -> Result<ContainersRun> {
    if !testkit::users::is_root() {
        bail!("needs root (unshare --net, and the daemon entering namespaces)");
    }
    let prog: Arc<Debuggee> = Debuggee::compile(0)?;
    let mut here = Jvm::launch(&prog, &Launch { small: true, ..Launch::default() })?;
    let mut boxed = Vec::new();
    for _ in 0..jvms {
        boxed.push(Jvm::launch(&prog, &Launch { prefix: testkit::containers::unshare_net(), port: 0, small: true })?);
    }
    here.wait_ready(Duration::from_secs(120))?;
    for j in &mut boxed {
        j.wait_ready(Duration::from_secs(120 + jvms as u64))?;
    }
    let first = boxed.first().context("no JVM in a namespace")?;
    let target = NsTarget { pid: first.pid(), net: netns_inode(first.pid())?, addr: SocketAddr::from(([127, 0, 0, 1], first.port)) };
    let (inside, plain) = connect_costs(&target, SocketAddr::from(([127, 0, 0, 1], here.port)), rounds)?;

    // The daemon, finding them all by their process (the class folder marks this run's).
    let dir = tempfile::tempdir()?;
    let marker = prog.out_dir().display().to_string();
    let mut args = vec!["--control".to_string(), dir.path().join("control.sock").display().to_string(), "serve".into()];
    args.extend(["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--base-port", "0", "--current-port", "0"].map(String::from));
    let t0 = Instant::now();
    let mut proxy = Proxy::start_args(bin, &args, dir.path(), &[], jvms + 1, 0)?;
    let want = jvms + 1;
    let ready = |rows: &[serde_json::Value]| rows.iter().filter(|r| r["state"] == "ready" && r["debugger_port"].is_u64()).count();
    let rows = loop {
        let rows = proxy.list_json(bin)?;
        if ready(&rows) >= want {
            break rows;
        }
        if t0.elapsed() > Duration::from_secs(60 + jvms as u64) {
            bail!("{} of {want} JVMs listed ready after {:?}; log:\n{}", ready(&rows), t0.elapsed(), proxy.log_tail(2000));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let listed_s = t0.elapsed().as_secs_f64();
    let port_of = |pid: u32| rows.iter().find(|r| r["pid"] == pid).and_then(|r| r["debugger_port"].as_u64()).map(|p| p as u16);
    let (pi, ph) = (port_of(first.pid()).context("the namespace JVM's port")?, port_of(here.pid()).context("this JVM's port")?);
    let (rtt_inside_us, rtt_here_us) = (version_rtt(pi, rounds)?, version_rtt(ph, rounds)?);
    // Idle: once every VM's session has settled (identified, its first scans done).
    std::thread::sleep(Duration::from_secs(if jvms > 10 { 10 } else { 2 }));
    let idle_cpu_pct = idle_cpu(proxy.pid(), Duration::from_secs(if jvms > 10 { 20 } else { 3 }));
    proxy.stop();
    Ok(ContainersRun { jvms, connect_inside_us: inside, connect_here_us: plain, rtt_inside_us, rtt_here_us, listed_s, idle_cpu_pct })
}

/// Connect and handshake to the same kind of agent, into its namespace and over loopback, in
/// turns; medians in µs. The agent takes its next debugger once the last one closed, which
/// is waited for outside the time measured.
fn connect_costs(target: &NsTarget, here: SocketAddr, rounds: usize) -> Result<(f64, f64)> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut inside, mut plain) = (Vec::new(), Vec::new());
    for i in 0..rounds * 2 {
        let ep = if i % 2 == 0 { Endpoint::Netns(target.clone()) } else { Endpoint::Tcp(here) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let took = loop {
            let t = Instant::now();
            let r = rt.block_on(async {
                let s = connect_agent(&ep, Duration::from_secs(5)).await?;
                handshake(s, Duration::from_secs(5)).await
            });
            match r {
                Ok(c) => {
                    let took = t.elapsed();
                    drop(c);
                    break took;
                }
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => bail!("connect to {ep}: {e}"),
            }
        };
        let us = took.as_secs_f64() * 1e6;
        if i % 2 == 0 { inside.push(us) } else { plain.push(us) }
    }
    Ok((median(&inside).unwrap_or(f64::NAN), median(&plain).unwrap_or(f64::NAN)))
}

/// Median µs of `rounds` VirtualMachine.Version round trips through a debugger port.
fn version_rtt(port: u16, rounds: usize) -> Result<f64> {
    let mut c = BlockingClient::connect(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(30))?;
    let mut body = Vec::new();
    let mut times = Vec::new();
    for i in 0..rounds + 20 {
        let t = Instant::now();
        c.send(1, 1, &[])?;
        let h = c.read_header()?;
        c.read_body(&h, &mut body)?;
        if i >= 20 {
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    median(&times).context("no round trips")
}

/// The process's CPU over `window`, % of one core (from /proc/PID/stat's utime + stime).
fn idle_cpu(pid: u32, window: Duration) -> f64 {
    let ticks = || testkit::process::stat_cpu_ticks(pid);
    let (a, t) = (ticks().unwrap_or(0), Instant::now());
    std::thread::sleep(window);
    let b = ticks().unwrap_or(a);
    let hz = crate::proc_tree::ticks_per_s() as f64;
    (b.saturating_sub(a)) as f64 / hz / t.elapsed().as_secs_f64() * 100.0
}

/// The section's rows.
pub fn rows(t: &mut Table, runs: &[ContainersRun]) {
    if runs.is_empty() {
        return;
    }
    let med = |f: &dyn Fn(&ContainersRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN);
    let n = runs[0].jvms;
    t.section(&format!("JVMs in network namespaces of their own (a container's way in), {n} of them beside one here; medians of {} runs", runs.len()));
    let (ci, ch) = (med(&|r| r.connect_inside_us), med(&|r| r.connect_here_us));
    let ratio = ci / ch;
    t.push(Row::proxy_only("connect + handshake µs: inside the namespace / here", format!("{} / {}", fmt(ci), fmt(ch))).judged(format!("{} x", fmt(ratio)), "no dearer than a JVM here's by 1 ms", Some(ci - ch <= 1000.0)));
    let (ri, rh) = (med(&|r| r.rtt_inside_us), med(&|r| r.rtt_here_us));
    t.push(Row::proxy_only("round trip through jdwpmux µs: namespace's JVM / this one's", format!("{} / {}", fmt(ri), fmt(rh))).judged(format!("{} x", fmt(ri / rh)), "<= 1.1 x", Some(ri / rh <= 1.1)));
    let listed = med(&|r| r.listed_s);
    t.push(Row::proxy_only(&format!("{} JVMs listed ready after the daemon's start, s", n + 1), fmt(listed)).judged(String::new(), "<= 2 s", Some(listed <= 2.0)));
    t.push(Row::proxy_only(&format!("the daemon with {} idle JVMs: CPU % of one core", n + 1), fmt(med(&|r| r.idle_cpu_pct))));
}
