//! The soak run's figures as markdown rows for benches/README.md: the daemon's memory and
//! open files once a minute, its CPU, and whether each target held.

use std::time::Duration;

use crate::soak::{secs, Sample, SoakResult};
use crate::stats::fmt;

fn mib(kib: u64) -> String {
    fmt(kib as f64 / 1024.0)
}

/// The figures as markdown rows, ready for benches/README.md.
pub fn markdown(r: &SoakResult, command: &str) -> String {
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, m)| m.trim().to_string()))
        .unwrap_or_default();
    let s = |x: Option<Sample>| x.map_or("-".into(), |s| format!("{} MiB, {} fds (at {:.0} s; {} VMs connected, {} debuggers)", mib(s.rss_kib), s.fds, s.at.as_secs_f64(), s.vms_connected, s.debuggers));
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{} %", fmt(v * 100.0)));
    let per_cmd = r.cpu_share.map(|c| c * r.wall.as_secs_f64() * 1e6 / r.done.max(1) as f64);
    let rss_range = r.samples.iter().map(|s| s.rss_kib);
    let fd_range = r.samples.iter().map(|s| s.fds);
    let rows: Vec<(String, String)> = vec![
        ("command".into(), format!("`{command}`")),
        ("date".into(), date),
        ("machine".into(), format!("{cores} cores ({model})")),
        ("set-up".into(), r.params_line.clone()),
        ("duration".into(), format!("{:.0} s", r.wall.as_secs_f64())),
        ("commands done (checked)".into(), format!("{} ({} /s)", r.done, fmt(r.rate()))),
        ("replies mismatched".into(), r.mismatched.to_string()),
        ("commands lost".into(), r.lost.to_string()),
        (
            "commands cut by their VM's death (no reply owed; answered VM_DEAD)".into(),
            format!("{} in {} sessions ({} VM_DEAD)", r.cut, r.sessions_cut, r.vm_dead),
        ),
        ("burst round trip p50 / p99 / max".into(), format!("{} / {} / {} ms", fmt(r.burst_p50_ms), fmt(r.burst_p99_ms), fmt(r.burst_max_ms))),
        ("VMs killed / started / found again by the daemon".into(), format!("{} ({} with debuggers) / {} / {}", r.vms_killed, r.vms_killed_debugged, r.vms_started, r.vms_found)),
        ("time to find a new VM, median / max".into(), format!("{} / {} ms", r.found_ms_median.map_or("-".into(), fmt), r.found_ms_max.map_or("-".into(), fmt))),
        ("debugger attaches (to a shared VM) / detaches (Dispose)".into(), format!("{} ({}) / {} ({})", r.attaches, r.shared_attaches, r.detaches, r.disposes)),
        ("attaches failed with the VM up / raced a VM's death".into(), format!("{} / {}", r.attach_failed, r.attach_raced)),
        ("most debuggers on one VM / most VMs with 2+ debuggers".into(), format!("{} / {}", r.most_per_vm, r.most_shared_vms)),
        ("daemon RSS, open files: start".into(), s(r.start)),
        ("daemon RSS, open files: middle".into(), s(r.middle)),
        ("daemon RSS, open files: end".into(), s(r.end)),
        (
            "daemon RSS, open files: range over the samples".into(),
            format!(
                "{}..{} MiB, {}..{} fds ({} samples)",
                rss_range.clone().min().map_or("-".into(), mib),
                rss_range.max().map_or("-".into(), mib),
                fd_range.clone().min().unwrap_or(0),
                fd_range.max().unwrap_or(0),
                r.samples.len()
            ),
        ),
        (
            "daemon RSS MiB, once a minute".into(),
            series(&r.samples, r.wall).iter().map(|s| mib(s.rss_kib)).collect::<Vec<_>>().join(", "),
        ),
        (
            "flat (end <= middle + 4 MiB; end <= middle + 25 fds)".into(),
            format!("RSS {}, fds {}", verdict(r.rss_flat()), verdict(r.fds_flat())),
        ),
        ("daemon CPU, % of one core".into(), format!("{} ({} µs per command)", pct(r.cpu_share), per_cmd.map_or("-".into(), fmt))),
        ("benchmark's own CPU (fake VMs, debuggers), % of one core".into(), pct(r.bench_cpu_share)),
        ("panics in the daemon's log".into(), r.panics_in_log.to_string()),
        ("verdict".into(), if r.failures.is_empty() { "PASS".into() } else { format!("FAIL: {}", r.failures.join("; ")) }),
    ];
    let mut out = String::from("| figure | value |\n| --- | --- |\n");
    for (k, v) in rows {
        out.push_str(&format!("| {k} | {v} |\n"));
    }
    out
}

/// The samples once a minute and the last (every sample of a run under three minutes).
pub(crate) fn series(samples: &[Sample], wall: Duration) -> Vec<Sample> {
    let every = if wall >= secs(180) { secs(60) } else { Duration::ZERO };
    let mut out: Vec<Sample> = Vec::new();
    for s in samples {
        if out.last().is_none_or(|l| s.at >= l.at + every) {
            out.push(*s);
        }
    }
    // The end figure, always.
    if let Some(last) = samples.last().filter(|l| out.last().is_some_and(|o| o.at != l.at)) {
        out.push(*last);
    }
    out
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}
