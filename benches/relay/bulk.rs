//! One very large reply (200 MiB; 4 MiB in smoke mode) from the fake VM through one path:
//! throughput, the relay's CPU per MB, and its peak RSS (a fresh relay process per run).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::jdwp_ops::get_values_request;
use crate::jvm_suite::read_region;
use crate::paths::{PathKind, Relay};
use crate::proxy::ProxyBin;
use testkit::blocking_client::BlockingClient;

#[derive(Debug, Clone, Default)]
pub struct BulkRun {
    pub mbps: f64,
    pub cpu_ms_per_mb: Option<f64>,
    pub peak_rss_kib: Option<u64>,
}

/// A 1 MiB reply first, so connection set-up and first-touch costs stay out of the figure.
const WARMUP_BYTES: u32 = 1 << 20;

pub fn run(kind: PathKind, vm: std::net::SocketAddr, bin: &ProxyBin, size: u32) -> Result<BulkRun> {
    let mut relay = Relay::start(kind, vm, bin)?;
    let mut client = None;
    let result = measure(&relay, size, &mut client);
    let log = if result.is_err() { relay.proxy_log() } else { None };
    let peak = relay.peak_rss_kib();
    drop(client);
    relay.stop();
    let mut r = result.map_err(|e| match log {
        Some(l) => e.context(format!("jdwpmux log tail:\n{l}")),
        None => e,
    })?;
    r.peak_rss_kib = peak;
    Ok(r)
}

fn measure(relay: &Relay, size: u32, slot: &mut Option<BlockingClient>) -> Result<BulkRun> {
    let c = slot.insert(BlockingClient::connect(relay.addr(), Duration::from_secs(10)).context("connect")?);
    let warm = get_values_request(1, 8, 0, WARMUP_BYTES);
    read_region(c, &warm, 0, WARMUP_BYTES).context("warm-up reply")?;
    let q = get_values_request(1, 8, 0, size);
    let cpu = relay.cpu();
    let t0 = Instant::now();
    let bytes = read_region(c, &q, 0, size).context("large reply")?;
    let secs = t0.elapsed().as_secs_f64();
    let mb = bytes as f64 / 1e6;
    Ok(BulkRun { mbps: mb / secs, cpu_ms_per_mb: cpu.ns().map(|ns| ns as f64 / 1e6 / mb), peak_rss_kib: None })
}
