//! `jdwpmux decode` on a large capture: MB of capture read per second and the peak RSS of
//! the decoding process, for the text output, `--stats` and `--trace`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::procs::{command, status_kib, Proc};

/// How often the decoding process's peak RSS is read while it runs.
const RSS_POLL: Duration = Duration::from_millis(10);
/// Longest a decode may take (1 GiB at 10 MB/s).
const DECODE_LIMIT: Duration = Duration::from_secs(120);

/// What one decode run measured.
#[derive(Debug, Clone, Copy)]
pub struct DecodeRun {
    pub secs: f64,
    /// 10^6 bytes of capture per second.
    pub mbps: f64,
    /// 10^6 bytes of capture per CPU second of the decoding process (what the machine's
    /// other load does not change).
    pub mb_per_cpu_s: Option<f64>,
    /// Highest VmHWM seen while it ran.
    pub peak_rss_kib: Option<u64>,
    /// Bytes it wrote to its standard output.
    pub out_bytes: u64,
}

/// Runs `bin decode FILE ARGS...`, its output read and counted (as a pager or a pipe would).
pub fn run(bin: &Path, file: &Path, args: &[&str]) -> Result<DecodeRun> {
    let size = std::fs::metadata(file).with_context(|| format!("stat {}", file.display()))?.len();
    let mut cmd = command(bin);
    cmd.arg("decode").arg(file).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let cpu_before = children_cpu_ns();
    let start = Instant::now();
    let mut p = Proc::spawn("jdwpmux decode", &mut cmd)?;
    let pid = p.pid();
    let stdout = p.take_stdout().context("decode stdout")?;
    let counter = std::thread::spawn(move || {
        let mut r = stdout;
        std::io::copy(&mut r, &mut std::io::sink()).unwrap_or(0)
    });
    let mut peak = None;
    let status = loop {
        if let Some(hwm) = status_kib(pid, "VmHWM") {
            peak = Some(peak.unwrap_or(0).max(hwm));
        }
        if let Some(s) = p.exited() {
            break s;
        }
        if start.elapsed() > DECODE_LIMIT {
            bail!("decode {args:?} took longer than {DECODE_LIMIT:?}");
        }
        std::thread::sleep(RSS_POLL);
    };
    let secs = start.elapsed().as_secs_f64();
    let cpu_ns = children_cpu_ns().zip(cpu_before).map(|(a, b)| a.saturating_sub(b)).filter(|ns| *ns > 0);
    let out_bytes = counter.join().unwrap_or(0);
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = p.take_stderr() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        bail!("decode {args:?} failed ({status}): {}", err.trim());
    }
    let mb = size as f64 / 1e6;
    Ok(DecodeRun { secs, mbps: mb / secs, mb_per_cpu_s: cpu_ns.map(|ns| mb / (ns as f64 / 1e9)), peak_rss_kib: peak, out_bytes })
}

/// CPU time of this process's children that have been waited for (cutime + cstime of
/// /proc/self/stat), in ns (assumes the usual 100 ticks per second).
fn children_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f = testkit::process::parse_stat_fields(&s)?;
    // f[0] is field 3 (state); cutime and cstime are fields 16 and 17.
    let cutime: u64 = f.get(13)?.parse().ok()?;
    let cstime: u64 = f.get(14)?.parse().ok()?;
    Some((cutime + cstime) * 10_000_000)
}
