//! What the fault tests share: the slack allowed on the daemon's usage after a fault, the
//! `Big` debuggee, and reading `list --json` rows.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::java::JavaApp;
use super::jvm_wire::{BIG_JAVA, BIG_LEN};
use super::process::Slack;

/// How far the daemon's usage may stay above what it was before a fault, once the fault is
/// over and its peers are gone.
///
/// RSS: 8 MiB. Memory the daemon freed goes back to the allocator's free lists, not
/// always to the kernel: the read buffers of a large reply (64 KiB steps), a debugger's
/// queue at its high water (1 MiB) and the first use of code paths (a warning's formatting,
/// a reconnect) leave pages resident. A leak per packet or per byte would show far beyond
/// it: the faults move 16 to 200 MiB through the daemon.
///
/// fds: 0. Every socket a fault opened must be closed again by the time the usage is read
/// (the tests poll until then).
pub const FAULT_SLACK: Slack = Slack { rss_kib: 8 * 1024, fds: 0 };

/// How long the daemon has to come back to its level after a fault (closing sockets and
/// dropping buffers happen on its own time).
pub const SETTLE: Duration = Duration::from_secs(20);

/// Starts `Big` (ticks, and a 16 MiB `int[]` to read) under `java`, listening for one
/// debugger, and waits until it runs.
pub async fn start_big(java: &Path) -> Result<JavaApp> {
    start_big_of(java, BIG_LEN).await
}

/// `Big` with an array of `len` ints (the heap sized for it and its copy in a reply).
pub async fn start_big_of(java: &Path, len: u32) -> Result<JavaApp> {
    let prop = format!("-Dbig.len={len}");
    let heap = format!("-Xmx{}m", 64 + 2 * ((u64::from(len) * 4) >> 20));
    let app = JavaApp::launch_with(java, &[&heap, &prop], &[("Big.java", BIG_JAVA)], "Big", &[], false).await?;
    app.wait_for_output("Main started", Duration::from_secs(60)).await?;
    Ok(app)
}

/// The row of `list --json` for the VM at `addr`.
pub fn row_of<'a>(rows: &'a [serde_json::Value], addr: &str) -> Option<&'a serde_json::Value> {
    rows.iter().find(|r| r["addr"] == addr)
}

/// The debugger port of the ready VM at `addr`, if listed so.
pub fn ready_port(rows: &[serde_json::Value], addr: &str) -> Option<u16> {
    let r = row_of(rows, addr)?;
    if r["state"] != "ready" {
        return None;
    }
    r["debugger_port"].as_u64().and_then(|p| u16::try_from(p).ok())
}
