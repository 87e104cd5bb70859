//! Turns the per-repetition results into table rows: medians per path, the paired ratio
//! of each repetition (jdwpmux against the better socat, or against direct) and its median,
//! and the verdict against the targets.

use crate::bulk::BulkRun;
use crate::ide::IdeRun;
use crate::jdb_walk::JdbRun;
use crate::jvm_suite::JvmRun;
use crate::paths::PathKind;
use crate::stats::{best_of, fmt, fmt_opt, max, median, paired};
use crate::table::{Row, Table};

/// One repetition: a result (or a failed run) per path, indexed by `PathKind::index`.
pub type Rep<T> = [Option<T>; 4];

/// The values of one figure for one path across repetitions.
pub fn col<T>(reps: &[Rep<T>], kind: PathKind, f: impl Fn(&T) -> Option<f64>) -> Vec<Option<f64>> {
    reps.iter().map(|r| r[kind.index()].as_ref().and_then(&f)).collect()
}

fn med(v: &[Option<f64>]) -> Option<f64> {
    median(&v.iter().flatten().copied().collect::<Vec<_>>())
}

/// Median of each path's values, formatted.
fn cells<T>(reps: &[Rep<T>], f: &impl Fn(&T) -> Option<f64>) -> [String; 4] {
    crate::paths::PATHS.map(|k| fmt_opt(med(&col(reps, k, f))))
}

/// How a row's ratio is formed and judged.
#[derive(Clone, Copy)]
pub enum Judge {
    /// No target; shows jdwpmux / direct.
    Info,
    /// No target; shows jdwpmux / best socat.
    InfoVsSocat,
    /// jdwpmux / best socat, smaller is better; median must be <= `limit` (and every
    /// repetition <= `each` when given).
    VsSocatLower { limit: f64, each: Option<f64> },
    /// jdwpmux / best socat, larger is better; median must be >= `limit`.
    VsSocatHigher { limit: f64 },
    /// jdwpmux / direct, larger is better; median must be >= `limit`.
    VsDirectHigher { limit: f64 },
    /// jdwpmux / direct, smaller is better; median must be <= `limit`.
    VsDirectLower { limit: f64 },
}

pub fn row<T>(metric: &str, reps: &[Rep<T>], judge: Judge, f: impl Fn(&T) -> Option<f64>) -> Row {
    let get = |k| col(reps, k, &f);
    let proxy = get(PathKind::Jdwpmux);
    let r = Row::new(metric, cells(reps, &f));
    match judge {
        Judge::Info => {
            let ratios = paired(&proxy, &get(PathKind::Direct));
            match median(&ratios) {
                Some(_) => r.judged(format!("{} x direct", ratio_text(&ratios)), "", None),
                None => r,
            }
        }
        Judge::InfoVsSocat => {
            let socat = best_of(&get(PathKind::Socat), &get(PathKind::Socat64k), true);
            let ratios = paired(&proxy, &socat);
            match median(&ratios) {
                Some(_) => r.judged(format!("{} x socat", ratio_text(&ratios)), "", None),
                None => r,
            }
        }
        Judge::VsSocatLower { limit, each } => {
            let socat = best_of(&get(PathKind::Socat), &get(PathKind::Socat64k), true);
            let ratios = paired(&proxy, &socat);
            let (m, hi) = (median(&ratios), max(&ratios));
            let each_ok = match each {
                Some(e) => hi.is_some_and(|h| h <= e),
                None => true,
            };
            let ok = m.map(|m| m <= limit && each_ok);
            let target = match each {
                Some(e) => format!("<= {limit:.2} x socat, each <= {e:.2}"),
                None => format!("<= {limit:.2} x socat"),
            };
            r.judged(ratio_text(&ratios), &target, ok)
        }
        Judge::VsSocatHigher { limit } => {
            let socat = best_of(&get(PathKind::Socat), &get(PathKind::Socat64k), false);
            let ratios = paired(&proxy, &socat);
            r.judged(ratio_text(&ratios), &format!(">= {limit:.2} x socat"), median(&ratios).map(|m| m >= limit))
        }
        Judge::VsDirectHigher { limit } => {
            let ratios = paired(&proxy, &get(PathKind::Direct));
            r.judged(ratio_text(&ratios), &format!(">= {limit:.2} x direct"), median(&ratios).map(|m| m >= limit))
        }
        Judge::VsDirectLower { limit } => {
            let ratios = paired(&proxy, &get(PathKind::Direct));
            r.judged(ratio_text(&ratios), &format!("<= {limit:.2} x direct"), median(&ratios).map(|m| m <= limit))
        }
    }
}

/// The median of paired ratios with their range over the repetitions: "0.912 (0.88-0.97)".
pub fn ratio_text(ratios: &[f64]) -> String {
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    match (median(ratios), max(ratios)) {
        (Some(m), Some(hi)) if ratios.len() > 1 => format!("{} ({}-{})", fmt(m), fmt(lo), fmt(hi)),
        (m, _) => fmt_opt(m),
    }
}

/// The targets of the round-trip speed work: latency and CPU per round trip well below a
/// byte relay's, pipelining well above it, bulk replies at the direct connection's speed.
pub const LATENCY_VS_SOCAT: f64 = 0.90;
pub const PIPELINED_VS_SOCAT: f64 = 1.30;
pub const ALL_CLASSES_VS_DIRECT: f64 = 0.98;
pub const ARRAY_VS_DIRECT: f64 = 0.98;
pub const CPU_RT_VS_SOCAT: f64 = 0.80;
/// What a second, idle debugger may cost the first: 5 %.
pub const IDLE_DEBUGGER_COST: f64 = 0.05;

pub fn jvm_rows(t: &mut Table, reps: &[Rep<JvmRun>], n: usize, window: usize, classes: usize) {
    t.section(&format!(
        "real HotSpot JVM, {} repetitions, medians; ratio = median of per-repetition ratios (range); \
         client: blocking socket, TCP_NODELAY, 256 KiB reads, window {window} when pipelined",
        reps.len()
    ));
    t.push(row(
        &format!("latency µs per round trip ({n} Version)"),
        reps,
        Judge::VsSocatLower { limit: LATENCY_VS_SOCAT, each: None },
        |r| Some(r.latency_us),
    ));
    t.push(row("latency jdwpmux/direct", reps, Judge::Info, |r| Some(r.latency_us)));
    t.push(row("latency p99 µs", reps, Judge::Info, |r| Some(r.latency_p99_us)));
    t.push(row(
        &format!("pipelined requests/s (window {window})"),
        reps,
        Judge::VsSocatHigher { limit: PIPELINED_VS_SOCAT },
        |r| Some(r.pipelined_rps),
    ));
    t.push(row(
        &format!("AllClasses MB/s ({classes} classes)"),
        reps,
        Judge::VsDirectHigher { limit: ALL_CLASSES_VS_DIRECT },
        |r| Some(r.all_classes_mbps),
    ));
    t.push(row("4 MiB byte[] GetValues MB/s", reps, Judge::VsDirectHigher { limit: ARRAY_VS_DIRECT }, |r| {
        Some(r.array_mbps)
    }));
    plain_client_rows(t, reps, n);
    idle_debugger_rows(t, reps);
    t.section("relay CPU (user+system of the socat / jdwpmux process)");
    let lower = Judge::VsSocatLower { limit: 1.0, each: None };
    t.push(row("CPU µs per round trip", reps, Judge::VsSocatLower { limit: CPU_RT_VS_SOCAT, each: None }, |r| r.cpu_rt_us));
    t.push(row("CPU µs per pipelined request", reps, lower, |r| r.cpu_req_us));
    t.push(row("CPU ms per MB, AllClasses", reps, lower, |r| r.cpu_all_classes_ms_per_mb));
    t.push(row("CPU ms per MB, 4 MiB array", reps, lower, |r| r.cpu_array_ms_per_mb));
    pipelined_budget_rows(t, reps);
}

/// Where the machine's CPU goes while requests are pipelined (`cpu_budget`): when the
/// machine is nearly all busy, throughput follows the CPU every process spends per
/// request, of which the relay's is one part.
fn pipelined_budget_rows(t: &mut Table, reps: &[Rep<JvmRun>]) {
    if reps.iter().all(|r| r.iter().flatten().all(|run| run.pipe_busy_share.is_none())) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    t.section(&format!("pipelined run: CPU of every process per request, and how busy the machine ({cpus} CPUs) was"));
    t.push(row("client thread CPU µs per pipelined request", reps, Judge::InfoVsSocat, |r| r.pipe_client_us));
    t.push(row("JVM CPU µs per pipelined request", reps, Judge::InfoVsSocat, |r| r.pipe_jvm_us));
    t.push(row("client + JVM + relay CPU µs per request", reps, Judge::InfoVsSocat, |r| {
        Some(r.pipe_client_us? + r.pipe_jvm_us? + r.cpu_req_us.unwrap_or(0.0))
    }));
    t.push(Row::new("machine CPU busy % while pipelining", cells(reps, &|r: &JvmRun| r.pipe_busy_share.map(|s| s * 100.0))));
}

/// The same round trips from a client with other habits, as older JDI versions have: one
/// command in flight and Nagle's algorithm left on, so no figure rests on one client alone.
fn plain_client_rows(t: &mut Table, reps: &[Rep<JvmRun>], n: usize) {
    if reps.iter().all(|r| r.iter().flatten().all(|run| run.plain_latency_us.is_none())) {
        return;
    }
    t.section("second client: one command in flight, Nagle on (TCP_NODELAY off)");
    t.push(row(
        &format!("latency µs per round trip ({n} Version)"),
        reps,
        Judge::VsSocatLower { limit: LATENCY_VS_SOCAT, each: None },
        |r| r.plain_latency_us,
    ));
    t.push(row("latency jdwpmux/direct", reps, Judge::Info, |r| r.plain_latency_us));
    t.push(row("CPU µs per round trip", reps, Judge::VsSocatLower { limit: CPU_RT_VS_SOCAT, each: None }, |r| {
        r.plain_cpu_rt_us
    }));
}

/// The cost of a second, idle debugger on the same VM: jdwpmux with it against jdwpmux
/// alone, paired per repetition.
fn idle_debugger_rows(t: &mut Table, reps: &[Rep<JvmRun>]) {
    t.section("jdwpmux with a second, idle debugger attached to the VM vs. alone (paired)");
    let alone_lat = col(reps, PathKind::Jdwpmux, |r| Some(r.latency_us));
    let idle_lat = col(reps, PathKind::Jdwpmux, |r| r.idle2_latency_us);
    let ratios = paired(&idle_lat, &alone_lat);
    let limit = 1.0 + IDLE_DEBUGGER_COST;
    t.push(
        Row::proxy_only("latency µs per round trip, 2nd debugger idle", fmt_opt(med(&idle_lat))).judged(
            format!("{} x alone", ratio_text(&ratios)),
            &format!("<= {limit:.2} x alone"),
            median(&ratios).map(|m| m <= limit),
        ),
    );
    let alone_rps = col(reps, PathKind::Jdwpmux, |r| Some(r.pipelined_rps));
    let idle_rps = col(reps, PathKind::Jdwpmux, |r| r.idle2_pipelined_rps);
    let ratios = paired(&idle_rps, &alone_rps);
    let limit = 1.0 - IDLE_DEBUGGER_COST;
    t.push(
        Row::proxy_only("pipelined requests/s, 2nd debugger idle", fmt_opt(med(&idle_rps))).judged(
            format!("{} x alone", ratio_text(&ratios)),
            &format!(">= {limit:.2} x alone"),
            median(&ratios).map(|m| m >= limit),
        ),
    );
}

/// The IDE-shaped JDI workload: its rate against direct and socat, and the relay's CPU.
pub fn ide_rows(t: &mut Table, reps: &[Rep<IdeRun>], calls: u64, budget: std::time::Duration) {
    if reps.iter().all(|r| r.iter().all(Option::is_none)) {
        return;
    }
    t.section(&format!("an IDE stepping session (JDI program, up to {calls} calls or {}s: step, frames, values, status)", budget.as_secs()));
    t.push(row("IDE JDI calls/s", reps, Judge::VsDirectHigher { limit: 0.95 }, |r| Some(r.calls_per_s)));
    t.push(row("IDE JDI calls/s vs socat", reps, Judge::VsSocatHigher { limit: 1.0 }, |r| Some(r.calls_per_s)));
    t.push(row("IDE relay CPU µs per JDI call", reps, Judge::VsSocatLower { limit: 1.0, each: None }, |r| r.cpu_us_per_call));
    t.push(row("IDE ms a step", reps, Judge::VsDirectLower { limit: 1.0 }, |r| r.ms_per_step()));
    t.push(row("IDE: the VM's CPU µs a step", reps, Judge::VsDirectLower { limit: 1.2 }, |r| r.vm_cpu_us_per_step));
}

/// jdb walking the local debuggee through each path: `next`, `where` and `locals` a step.
pub fn jdb_rows(t: &mut Table, reps: &[Rep<JdbRun>], steps: usize) {
    if reps.iter().all(|r| r.iter().all(Option::is_none)) {
        return;
    }
    t.section(&format!("jdb stepping the local debuggee (up to {steps} steps or {}s a run: `next`, `where`, `locals`, each to its prompt)", crate::jdb_local::BUDGET.as_secs()));
    t.push(row("jdb ms a step (next + where + locals)", reps, Judge::VsDirectLower { limit: 1.0 }, |r| median(&r.step_ms)));
    t.push(row("jdb ms from the breakpoint's stop to where + locals", reps, Judge::Info, |r| Some(r.first_stop_ms)));
}

pub fn bulk_rows(t: &mut Table, reps: &[Rep<BulkRun>], size: u32) {
    let mib = size >> 20;
    t.section(&format!("one {mib} MiB reply from the fake VM, {} repetitions", reps.len()));
    t.push(row(&format!("{mib} MiB reply MB/s"), reps, Judge::Info, |r| Some(r.mbps)));
    t.push(row(&format!("CPU ms per MB, {mib} MiB reply"), reps, Judge::VsSocatLower { limit: 1.0, each: None }, |r| {
        r.cpu_ms_per_mb
    }));
    let peak = |r: &BulkRun| r.peak_rss_kib.map(|k| k as f64 / 1024.0);
    let worst = max(&col(reps, PathKind::Jdwpmux, peak).into_iter().flatten().collect::<Vec<_>>());
    let mut cells = crate::paths::PATHS.map(|k| fmt_opt(max(&col(reps, k, peak).into_iter().flatten().collect::<Vec<_>>())));
    cells[PathKind::Direct.index()] = String::new();
    t.push(Row::new(&format!("peak RSS MiB relaying {mib} MiB (max)"), cells).judged(
        String::new(),
        "<= 64 MiB",
        worst.map(|w| w <= 64.0),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Verdict;

    fn rep(d: f64, s: f64, s64: f64, j: f64) -> Rep<f64> {
        [Some(d), Some(s), Some(s64), Some(j)]
    }

    #[test]
    fn ratios_pair_within_a_repetition() {
        // jdwpmux is 0.9x the better socat in each repetition, even though medians drift.
        let reps = vec![rep(5.0, 10.0, 12.0, 9.0), rep(50.0, 110.0, 100.0, 90.0), rep(6.0, 20.0, 20.0, 18.0)];
        let r = row("lat", &reps, Judge::VsSocatLower { limit: 1.0, each: Some(1.1) }, |v| Some(*v));
        assert_eq!(r.verdict, Verdict::Pass);
        assert!(r.ratio.starts_with("0.900"), "{}", r.ratio);
        assert_eq!(r.cells[3], "18.0");
        let slow = vec![rep(5.0, 10.0, 10.0, 9.0), rep(5.0, 10.0, 10.0, 12.0), rep(5.0, 10.0, 10.0, 9.5)];
        let r = row("lat", &slow, Judge::VsSocatLower { limit: 1.0, each: Some(1.1) }, |v| Some(*v));
        assert_eq!(r.verdict, Verdict::Fail, "one repetition above 1.10");
    }

    #[test]
    fn ratios_show_their_range() {
        assert_eq!(ratio_text(&[0.95, 0.88, 0.91]), "0.910 (0.880-0.950)");
        assert_eq!(ratio_text(&[1.2]), "1.20", "one repetition has no range");
        assert_eq!(ratio_text(&[]), "-");
    }

    #[test]
    fn higher_is_better_judges() {
        let reps = vec![rep(100.0, 50.0, 60.0, 96.0)];
        let d = row("x", &reps, Judge::VsDirectHigher { limit: 0.95 }, |v| Some(*v));
        assert_eq!(d.verdict, Verdict::Pass);
        let s = row("x", &reps, Judge::VsSocatHigher { limit: 1.1 }, |v| Some(*v));
        assert_eq!(s.verdict, Verdict::Pass, "96 / 60 = 1.6");
        let none: Vec<Rep<f64>> = vec![[Some(1.0), None, None, None]];
        assert_eq!(row("x", &none, Judge::VsSocatHigher { limit: 1.1 }, |v| Some(*v)).verdict, Verdict::Info);
    }

    #[test]
    fn lower_than_direct_judges() {
        // A step through jdwpmux at 5.5 ms against 5.0 direct is 1.10 x: a FAIL against 1.0,
        // a PASS against 1.2 (the VM's CPU).
        let reps = vec![rep(5.0, 7.0, 7.0, 5.5), rep(4.0, 6.0, 6.0, 4.4)];
        let step = row("x", &reps, Judge::VsDirectLower { limit: 1.0 }, |v| Some(*v));
        assert_eq!(step.verdict, Verdict::Fail);
        assert!(step.ratio.starts_with("1.10"), "{}", step.ratio);
        assert_eq!(row("x", &reps, Judge::VsDirectLower { limit: 1.2 }, |v| Some(*v)).verdict, Verdict::Pass);
        let faster = vec![rep(5.0, 7.0, 7.0, 4.0)];
        assert_eq!(row("x", &faster, Judge::VsDirectLower { limit: 1.0 }, |v| Some(*v)).verdict, Verdict::Pass);
    }

    #[test]
    fn an_ide_step_is_its_stepping_time_over_its_steps() {
        let r = IdeRun { steps: 400, secs: 2.0, ..IdeRun::default() };
        assert_eq!(r.ms_per_step(), Some(5.0));
        assert_eq!(IdeRun::default().ms_per_step(), None, "no step, no figure");
    }
}
