//! What the always-on traffic figures cost: the proxy's CPU per Version round trip with
//! counting on and with it off (JDWPMUX_STATS=off), against the in-process fake VM, the two
//! alternating; and the bookkeeping alone, timed in this process.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::jvm_suite::latency;
use crate::proxy::{Proxy, ProxyBin};
use testkit::blocking_client::BlockingClient;

/// Round trips before the measured ones (connection set-up, first-touch costs).
const WARMUP: usize = 2_000;

/// Proxy CPU µs per round trip over `n` Version round trips, counting on or off.
pub fn cpu_per_round_trip(bin: &ProxyBin, vm: SocketAddr, n: usize, stats_on: bool) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    let env: &[(&str, &str)] = if stats_on { &[] } else { &[("JDWPMUX_STATS", "off")] };
    let mut proxy = Proxy::start_with(bin, &[vm], dir.path(), &[], env)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.current_port));
    let result = (|| {
        let mut c = BlockingClient::connect(addr, Duration::from_secs(10)).context("connect")?;
        let expected = c.request(1, 1, &[]).context("first Version")?;
        latency(&mut c, WARMUP, &expected).context("warm-up")?;
        let cpu = crate::paths::CpuMeter::start(Some(proxy.pid()));
        latency(&mut c, n, &expected).context("round trips")?;
        let ns = cpu.ns().context("proxy CPU time")?;
        Ok(ns as f64 / 1e3 / n as f64)
    })();
    proxy.stop();
    result
}

/// Nanoseconds the bookkeeping of one round trip takes (one command, one reply), timed
/// over `n` of them in this process, with the mix of commands a debugger sends.
pub fn bookkeeping_ns(n: usize) -> f64 {
    use jdwpmux::stats::{TrafficStats, Who};
    let mut t = TrafficStats::new();
    let peer = Some(SocketAddr::from(([127, 0, 0, 1], 40_000)));
    let cmds: [(u8, u8); 6] = [(1, 1), (11, 6), (16, 1), (6, 1), (2, 1), (15, 1)];
    let t0 = Instant::now();
    for i in 0..n {
        let (set, cmd) = cmds[i % cmds.len()];
        t.command(Who::Debugger(3), peer, set, cmd, 19);
        t.reply(Who::Debugger(3), set, cmd, 0, 120, Duration::from_micros(40 + (i % 97) as u64));
    }
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    std::hint::black_box(&t);
    ns
}
