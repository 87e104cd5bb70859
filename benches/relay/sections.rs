//! The benchmark's sections: each runs its paths side by side, adds its rows to the table
//! and records functional failures; `main` runs those the command line asks for.

use crate::params::Params;
use crate::paths::PathKind;
use crate::proxy::ProxyBin;
use crate::report::Rep;
use crate::stats::{fmt, fmt_opt, median};
use crate::table::{Row, Table};
use crate::failures::Failures;
use crate::*;
use testkit::fake_vm::lean::{LeanConfig, LeanVms};

pub(crate) fn jvm_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    eprintln!("starting the HotSpot debuggee ({} generated classes) ...", p.classes);
    let mut jvm = match jvm::Jvm::start(p.classes) {
        Ok(j) => j,
        Err(e) => return f.add("HotSpot debuggee", format!("{e:#}")),
    };
    let ide_prog = match ide::IdeProgram::compile() {
        Ok(i) => Some(i),
        Err(e) => {
            f.add("IDE workload", format!("{e:#}"));
            None
        }
    };
    let mut reps: Vec<Rep<jvm_suite::JvmRun>> = Vec::new();
    let mut ide_reps: Vec<Rep<ide::IdeRun>> = Vec::new();
    let mut jdb_reps: Vec<Rep<jdb_walk::JdbRun>> = Vec::new();
    for rep in 0..p.warmup_reps + p.reps {
        if !jvm.alive() {
            f.add(&format!("JVM repetition {rep}"), "the debuggee had died; starting a new one");
            jvm = match jvm::Jvm::start(p.classes) {
                Ok(j) => j,
                Err(e) => return f.add("HotSpot debuggee restart", format!("{e:#}")),
            };
        }
        let mut row: Rep<jvm_suite::JvmRun> = Default::default();
        for kind in PathKind::order(rep) {
            match jvm_suite::run(kind, &mut jvm, bin, &p.jvm, rep % 2 == 1) {
                Ok(r) => row[kind.index()] = Some(r),
                Err(e) => f.add(&format!("JVM repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let lat = row.each_ref().map(|r| r.as_ref().map_or("-".into(), |r| fmt(r.latency_us)));
        let tag = if rep < p.warmup_reps { " (warm-up, discarded)" } else { "" };
        eprintln!("JVM repetition {rep}{tag}: latency µs direct/socat/socat64k/jdwpmux = {}", lat.join(" / "));
        let mut ide_row: Rep<ide::IdeRun> = Default::default();
        for kind in PathKind::order(rep).into_iter().filter(|_| ide_prog.is_some()) {
            let Some(prog) = ide_prog.as_ref() else { break };
            match ide::run(kind, &mut jvm, bin, prog, p.jvm.ide_calls, p.jvm.ide_budget) {
                Ok(r) => ide_row[kind.index()] = Some(r),
                Err(e) => f.add(&format!("IDE workload, repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let cps = ide_row.each_ref().map(|r| r.as_ref().map_or("-".into(), |r| fmt(r.calls_per_s)));
        eprintln!("IDE repetition {rep}{tag}: JDI calls/s = {}", cps.join(" / "));
        let mut jdb_row: Rep<jdb_walk::JdbRun> = Default::default();
        for kind in PathKind::order(rep) {
            match jdb_local::run(kind, &mut jvm, bin, p.jvm.jdb_steps) {
                Ok(r) => jdb_row[kind.index()] = Some(r),
                Err(e) => f.add(&format!("jdb, repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let step = jdb_row.each_ref().map(|r| r.as_ref().and_then(|r| median(&r.step_ms)).map_or("-".into(), fmt));
        eprintln!("jdb repetition {rep}{tag}: ms a step = {}", step.join(" / "));
        if rep >= p.warmup_reps {
            reps.push(row);
            ide_reps.push(ide_row);
            jdb_reps.push(jdb_row);
        }
    }
    let classes = reps.iter().flatten().flatten().map(|r| r.classes).max().unwrap_or(0);
    report::jvm_rows(t, &reps, p.jvm.latency_n, p.jvm.window, classes);
    report::ide_rows(t, &ide_reps, p.jvm.ide_calls, p.jvm.ide_budget);
    report::jdb_rows(t, &jdb_reps, p.jvm.jdb_steps);
}

pub(crate) fn where_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    use where_time::{Group, Subject};
    eprintln!("where the time goes: a small HotSpot debuggee ...");
    let mut jvm = match jvm::Jvm::start(10) {
        Ok(j) => j,
        Err(e) => return f.add("HotSpot debuggee", format!("{e:#}")),
    };
    t.section(&format!("per Version round trip against HotSpot, counted over {} (relay process; syscalls under strace -f -c)", p.where_n));
    let mut got = Vec::new();
    for s in Subject::ALL {
        eprintln!("  {} ...", s.label());
        match where_time::measure(s, &mut jvm, bin, p.where_n) {
            Ok(c) => got.push((s, c)),
            Err(e) => f.add(&format!("where: {}", s.label()), format!("{e:#}")),
        }
    }
    let cell = |v: f64| fmt(v);
    let line = |what: &str, v: &dyn Fn(&where_time::Counts) -> f64| {
        let cells: Vec<String> = got.iter().map(|(s, c)| format!("{} {}", s.label(), cell(v(c)))).collect();
        Row::proxy_only(what, cells.join(" | "))
    };
    for g in Group::ALL {
        t.push(line(g.label(), &|c| c.group(g)));
    }
    t.push(line("voluntary context switches (sleeps)", &|c| c.voluntary));
    t.push(line("involuntary context switches (preempted)", &|c| c.involuntary));
    t.push(line("migrations to another CPU", &|c| c.migrations));
    for (s, c) in &got {
        let mut calls: Vec<(&String, &f64)> = c.syscalls.iter().filter(|(_, n)| **n >= 0.01).collect();
        calls.sort_by(|a, b| b.1.total_cmp(a.1));
        let text: Vec<String> = calls.iter().map(|(k, n)| format!("{k} {}", fmt(**n))).collect();
        t.push(Row::proxy_only(&format!("{}: every system call", s.label()), text.join(", ")));
    }
    if instructions::available() {
        eprintln!("  user-space instructions under callgrind ...");
        let mut cells = Vec::new();
        for s in Subject::ALL {
            match instructions::measure(s, &mut jvm, bin, p.where_n) {
                Ok(i) => cells.push(format!("{} {}", s.label(), fmt(i))),
                Err(e) => f.add(&format!("where: instructions, {}", s.label()), format!("{e:#}")),
            }
        }
        t.push(Row::proxy_only("user-space instructions (valgrind --tool=callgrind)", cells.join(" | ")));
    } else {
        eprintln!("  (no valgrind: no instruction counts)");
    }
    eprintln!("  the same round trips with the VM, the relay and the client on one CPU ...");
    match one_cpu::run(&mut jvm, bin, p.where_n, p.warmup_reps, p.reps) {
        Ok((cpu, reps)) => {
            t.section(&format!(
                "VM, relay and client pinned to CPU {cpu}: {} Version round trips, {} repetitions, medians; ratio = median of paired ratios (range)",
                p.where_n,
                reps.len()
            ));
            t.push(report::row("latency µs per round trip, one CPU", &reps, report::Judge::InfoVsSocat, |r| Some(r.latency_us)));
            t.push(report::row("latency jdwpmux/direct, one CPU", &reps, report::Judge::Info, |r| Some(r.latency_us)));
            t.push(report::row("relay CPU µs per round trip, one CPU", &reps, report::Judge::InfoVsSocat, |r| r.cpu_rt_us));
        }
        Err(e) => f.add("where: one CPU", format!("{e:#}")),
    }
}

pub(crate) fn bulk_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let vm = match LeanVms::start(1, LeanConfig { ddm: false, thst_every: None, threads: 0 }) {
        Ok(v) => v,
        Err(e) => return f.add("fake VM", format!("{e:#}")),
    };
    let mut reps: Vec<Rep<bulk::BulkRun>> = Vec::new();
    for rep in 0..p.warmup_reps + p.reps {
        let mut row: Rep<bulk::BulkRun> = Default::default();
        for kind in PathKind::order(rep) {
            match bulk::run(kind, vm.addrs[0], bin, p.bulk_size) {
                Ok(r) => row[kind.index()] = Some(r),
                Err(e) => f.add(&format!("large reply, repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let mbps = row.each_ref().map(|r| r.as_ref().map_or("-".into(), |r| fmt(r.mbps)));
        eprintln!("large reply repetition {rep}: MB/s = {}", mbps.join(" / "));
        if rep >= p.warmup_reps {
            reps.push(row);
        }
    }
    report::bulk_rows(t, &reps, p.bulk_size);
}

pub(crate) fn scale_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let n = p.scale_vms;
    t.section(&format!("{n} idle DDM VMs (THST every 500 ms each), {:?} window", p.scale_window));
    eprintln!("scale: {n} fake DDM VMs ...");
    match scale::scale(bin, n, p.scale_settle, p.scale_window) {
        Ok(r) => {
            if let Some(e) = &r.probe_error {
                f.add("scale", e);
            }
            let mib = |k: Option<u64>| k.map(|k| k as f64 / 1024.0);
            t.push(Row::proxy_only(
                &format!("{} VMs: probed with HELO after s, then settled s", r.vms),
                format!("{} after {} s, +{} s", r.probed, fmt(r.probe_all.as_secs_f64()), fmt(r.settled.as_secs_f64())),
            ));
            let rss = format!("{} (peak {})", fmt_opt(mib(r.rss_kib)), fmt_opt(mib(r.peak_rss_kib)));
            t.push(Row::proxy_only(&format!("{} VMs: RSS MiB", r.vms), rss).judged(
                String::new(),
                "<= 100 MiB",
                mib(r.rss_kib).map(|m| m <= 100.0),
            ));
            let pct = r.cpu_share.map(|c| c * 100.0);
            t.push(Row::proxy_only(&format!("{} VMs: CPU % of one core", r.vms), fmt_opt(pct)).judged(
                String::new(),
                "< 5%",
                pct.map(|c| c < 5.0),
            ));
            let list = match &r.list_ms {
                Ok(ms) => format!("{} ms", fmt(*ms)),
                Err(why) => format!("list: {why}"),
            };
            if let Err(why) = &r.list_ms {
                if bin.has_list {
                    f.add("jdwpmux list", why);
                }
            }
            t.push(Row::proxy_only(&format!("{} VMs: jdwpmux list", r.vms), list));
            match &r.page {
                Some(Ok(page)) => {
                    let pct = page.cpu_share.map(|c| c * 100.0);
                    t.push(Row::proxy_only(&format!("{} VMs, monitor page open: CPU % of one core", r.vms), fmt_opt(pct)).judged(
                        String::new(),
                        "< 5%",
                        pct.map(|c| c < 5.0),
                    ));
                    let what = format!("{} lists, {} thread tables, {} KiB/s", page.vms_events, page.threads_events, fmt(page.bytes_per_s / 1024.0));
                    t.push(Row::proxy_only(&format!("{} VMs, monitor page open: events in the window", r.vms), what));
                }
                Some(Err(why)) => f.add("monitor page", why),
                None => {}
            }
        }
        Err(e) => f.add("scale", format!("{e:#}")),
    }
}

pub(crate) fn ddm_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    t.section(&format!("DDM decode: one VM floods {} THST chunks ({} threads each) while a debugger works", p.ddm_chunks, p.ddm_threads));
    eprintln!("DDM flood: {} chunks ...", p.ddm_chunks);
    match scale::ddm_flood(bin, p.ddm_chunks, p.ddm_threads) {
        Ok(r) => {
            let lossless = r.logged == p.ddm_chunks && r.sent == p.ddm_chunks && r.malformed == 0;
            if !lossless {
                f.add(
                    "DDM decode",
                    format!("{} chunks sent, {} logged, {} malformed of {} (is the DDM decoder wired in?)", r.sent, r.logged, r.malformed, p.ddm_chunks),
                );
            }
            let no_stall = r.rtt_max_us <= p.stall_limit.as_secs_f64() * 1e6 && r.round_trips > 0;
            t.push(Row::proxy_only("DDM chunks/s decoded and logged", fmt(r.chunks_per_s)).judged(
                String::new(),
                ">= 100000, no loss, no stall",
                Some(r.chunks_per_s >= 100_000.0 && lossless && no_stall),
            ));
            t.push(Row::proxy_only("DDM chunks logged / sent", format!("{} / {}", r.logged, r.sent)));
            t.push(Row::proxy_only("proxy CPU µs per DDM chunk", fmt_opt(r.cpu_us_per_chunk)));
            let rtt = format!(
                "{} / {} ({} trips; fake VM's own max {})",
                fmt(r.rtt_p99_us),
                fmt(r.rtt_max_us),
                r.round_trips,
                fmt(r.vm_max_reply_us)
            );
            t.push(Row::proxy_only("debugger RTT during flood p99 / max µs", rtt).judged(
                String::new(),
                &format!("max <= {} ms", p.stall_limit.as_millis()),
                Some(no_stall),
            ));
        }
        Err(e) => f.add("DDM flood", format!("{e:#}")),
    }
}

pub(crate) fn startup_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let vm = match LeanVms::start(1, LeanConfig { ddm: false, thst_every: None, threads: 0 }) {
        Ok(v) => v,
        Err(e) => return f.add("fake VM", format!("{e:#}")),
    };
    let Ok(dir) = tempfile::tempdir() else { return f.add("startup", "no tempdir") };
    let mut ms = Vec::new();
    for i in 0..p.startup_runs {
        match proxy::startup_once(bin, vm.addrs[0], dir.path()) {
            Ok(d) => ms.push(d.as_secs_f64() * 1e3),
            Err(e) => return f.add(&format!("startup run {i}"), format!("{e:#}")),
        }
    }
    t.section(&format!("startup: exec to the 'listening' lines, median of {}", ms.len()));
    let m = median(&ms);
    t.push(Row::proxy_only("startup ms", fmt_opt(m)).judged(String::new(), "<= 50 ms", m.map(|m| m <= 50.0)));
}

pub(crate) fn decode_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let Ok(dir) = tempfile::tempdir() else { return f.add("decode", "no tempdir") };
    let file = dir.path().join("session.pcapng");
    eprintln!("decode: writing a {} MiB capture ...", p.decode_bytes >> 20);
    let info = match capture_gen::write_capture(&file, p.decode_bytes) {
        Ok(i) => i,
        Err(e) => return f.add("decode: writing the capture", format!("{e:#}")),
    };
    let mib = info.bytes as f64 / (1 << 20) as f64;
    t.section(&format!(
        "jdwpmux decode: a {} MiB pcapng capture ({} packets, {} requests), output read through a pipe; median of {}",
        fmt(mib),
        info.packets,
        info.requests,
        p.decode_runs
    ));
    let modes: [(&str, &[&str], bool); 3] =
        [("decode (text)", &[], true), ("decode --stats", &["--stats"], true), ("decode --trace", &["--trace", "/dev/null"], false)];
    for (label, args, judged) in modes {
        let mut runs = Vec::new();
        for i in 0..p.decode_runs {
            match decode::run(&bin.path, &file, args) {
                Ok(r) => runs.push(r),
                Err(e) => return f.add(&format!("{label}, run {i}"), format!("{e:#}")),
            }
        }
        if args.is_empty() && runs.iter().any(|r| r.out_bytes == 0) {
            f.add(label, "printed nothing");
        }
        let mbps = median(&runs.iter().map(|r| r.mbps).collect::<Vec<_>>());
        let rss = runs.iter().filter_map(|r| r.peak_rss_kib).max().map(|k| k as f64 / 1024.0);
        let per_cpu = median(&runs.iter().filter_map(|r| r.mb_per_cpu_s).collect::<Vec<_>>());
        let target = if judged { ">= 100 MB/s, RSS <= 64 MiB" } else { "RSS <= 64 MiB" };
        let ok = match (mbps, rss) {
            (Some(m), Some(r)) => Some((!judged || m >= 100.0) && r <= 64.0),
            _ => None,
        };
        let cell = format!("{} MB/s ({} per CPU s), peak RSS {} MiB", fmt_opt(mbps), fmt_opt(per_cpu), fmt_opt(rss));
        eprintln!("{label}: {cell}");
        t.push(Row::proxy_only(&format!("{label} MB/s; peak RSS"), cell).judged(String::new(), target, ok));
    }
}

pub(crate) fn stats_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let vm = match LeanVms::start(1, LeanConfig { ddm: false, thst_every: None, threads: 0 }) {
        Ok(v) => v,
        Err(e) => return f.add("fake VM", format!("{e:#}")),
    };
    let n = p.stats_round_trips;
    let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..p.warmup_reps + p.reps {
        // Alternate which goes first, as the relay paths do.
        let order = if rep % 2 == 0 { [true, false] } else { [false, true] };
        let mut pair = [0.0f64; 2];
        for stats_on in order {
            match stats_cost::cpu_per_round_trip(bin, vm.addrs[0], n, stats_on) {
                Ok(us) => pair[usize::from(stats_on)] = us,
                Err(e) => return f.add(&format!("stats cost, repetition {rep}"), format!("{e:#}")),
            }
        }
        eprintln!("stats cost repetition {rep}: CPU µs per round trip, counting on / off = {} / {}", fmt(pair[1]), fmt(pair[0]));
        if rep >= p.warmup_reps {
            on.push(pair[1]);
            off.push(pair[0]);
            ratios.push(pair[1] / pair[0]);
        }
    }
    let book = stats_cost::bookkeeping_ns(1_000_000);
    t.section(&format!(
        "always-on traffic figures: {n} Version round trips through jdwpmux against a fake VM, counting on and off (JDWPMUX_STATS=off), alternating; medians of {}",
        ratios.len()
    ));
    let (m_on, m_off, m_ratio) = (median(&on), median(&off), median(&ratios));
    t.push(Row::proxy_only("CPU µs per round trip, counting on / off", format!("{} / {}", fmt_opt(m_on), fmt_opt(m_off))).judged(
        m_ratio.map_or("-".into(), |r| format!("{} x off", fmt(r))),
        "<= 1.02 x off",
        m_ratio.map(|r| r <= 1.02),
    ));
    let share = m_on.map(|us| book / 1e3 / us * 100.0);
    t.push(Row::proxy_only("bookkeeping ns per round trip (in process)", format!("{} ({} % of the round trip's CPU)", fmt(book), fmt_opt(share))));
}

pub(crate) fn owner_section(_bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    if let Err(e) = jdwpmux::fd_limit::raise() {
        eprintln!("owner: cannot raise the open-file limit: {e}");
    }
    let few = match owner_cost::measure(1, p.owner_diag_n, p.owner_proc_n) {
        Ok(c) => c,
        Err(e) => return f.add("owner check, few sockets", format!("{e:#}")),
    };
    let many = match owner_cost::measure(p.owner_pairs, p.owner_diag_n, p.owner_proc_n) {
        Ok(c) => c,
        Err(e) => return f.add(&format!("owner check, {} connections", p.owner_pairs), format!("{e:#}")),
    };
    t.section(&format!(
        "owner check per accept: the connecting socket's uid by its address pair, {} sock_diag and {} /proc lookups, with {} and with {} TCP sockets in the namespace",
        p.owner_diag_n, p.owner_proc_n, few.sockets, many.sockets
    ));
    eprintln!(
        "owner check: sock_diag {} / {} µs, /proc/net/tcp {} / {} µs ({} / {} sockets)",
        fmt(few.diag_us),
        fmt(many.diag_us),
        fmt(few.proc_us),
        fmt(many.proc_us),
        few.sockets,
        many.sockets
    );
    t.push(Row::proxy_only("sock_diag µs per accept, few / many sockets", format!("{} / {}", fmt(few.diag_us), fmt(many.diag_us))).judged(
        String::new(),
        "<= 50 µs with many",
        Some(many.diag_us <= 50.0),
    ));
    t.push(Row::proxy_only(
        "/proc/net/tcp fallback µs per accept, few / many sockets",
        format!("{} / {}", fmt(few.proc_us), fmt(many.proc_us)),
    ));
}

pub(crate) fn soak_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let sp = &p.soak;
    eprintln!("soak: {} VMs, {} debuggers, {:?} ...", sp.vms, sp.debuggers, sp.duration);
    let r = match soak::run(bin, sp) {
        Ok(r) => r,
        Err(e) => return f.add("soak", format!("{e:#}")),
    };
    t.section(&format!("load and soak for {:.0} s: {}", r.wall.as_secs_f64(), r.params_line));
    t.push(Row::proxy_only("soak: commands done (checked), per second", format!("{} ({}/s)", r.done, fmt(r.rate()))));
    t.push(Row::proxy_only("soak: replies mismatched / commands lost", format!("{} / {}", r.mismatched, r.lost)).judged(
        String::new(),
        "0 / 0",
        Some(r.mismatched == 0 && r.lost == 0),
    ));
    let mib = |s: Option<soak::Sample>| s.map_or("-".into(), |s| format!("{} MiB {} fds", fmt(s.rss_kib as f64 / 1024.0), s.fds));
    t.push(Row::proxy_only("soak: daemon RSS, open files at start / middle / end", format!("{} / {} / {}", mib(r.start), mib(r.middle), mib(r.end))).judged(
        String::new(),
        "end <= middle + 4 MiB, + 25 fds",
        r.rss_flat().zip(r.fds_flat()).map(|(a, b)| a && b),
    ));
    t.push(Row::proxy_only("soak: daemon CPU % of one core", fmt_opt(r.cpu_share.map(|c| c * 100.0))));
    t.push(Row::proxy_only("soak: VMs killed / found again; debugger attaches", format!("{} / {}; {}", r.vms_killed, r.vms_found, r.attaches)));
    for n in &r.notes {
        eprintln!("soak note: {n}");
    }
    let command = match std::env::args().skip(1).filter(|a| a != "--bench").collect::<Vec<_>>() {
        a if a.is_empty() => "cargo bench --bench relay".to_string(),
        a => format!("cargo bench --bench relay -- {}", a.join(" ")),
    };
    println!("\nsoak figures (for benches/README.md):\n\n{}", soak_report::markdown(&r, &command));
    for why in &r.failures {
        f.add("soak", why);
    }
}

pub(crate) fn remote_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    remote::run(bin, &p.remote, p.reps, p.warmup_reps, t, &mut |what, why| f.add(what, why));
}

pub(crate) fn containers_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let (jvms, rounds) = if p.reps <= 1 { (3, 20) } else { (50, 200) };
    let mut runs = Vec::new();
    for rep in 0..p.reps.min(3) {
        eprintln!("containers: {jvms} JVMs in namespaces of their own, repetition {rep} ...");
        match containers::run(bin, jvms, rounds) {
            Ok(r) => runs.push(r),
            Err(e) => return f.add("containers", format!("{e:#}")),
        }
    }
    containers::rows(t, &runs);
}

pub(crate) fn exec_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    let (reps, steps, idle) = if p.reps <= 1 { (1, 20, std::time::Duration::from_secs(3)) } else { (p.reps.min(5), 100, std::time::Duration::from_secs(20)) };
    match exec::run(bin, reps, steps, idle) {
        Ok((runs, idle)) => exec::rows(t, &runs, idle, steps),
        Err(e) => f.add("exec", format!("{e:#}")),
    }
}

pub(crate) fn docker_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    // Not runnable here (not root, no Docker Engine): as a test that cannot run, recorded,
    // and a failure unless JDWPMUX_TEST_ALLOW_SKIP=1 lets it be skipped.
    if let Some(why) = docker_user::unavailable() {
        if let Err(e) = testkit::skip::not_run_as("bench relay: docker", &format!("docker: {why}")) {
            f.add("docker: not run", e);
        }
        return;
    }
    // Smoke: one repetition of 20 steps, 3 containers listed.
    let (reps, steps, boxes) = if p.reps <= 1 { (1, 20, 3) } else { (p.reps.min(5), 100, 20) };
    match docker::run(bin, reps, steps, boxes) {
        Ok(r) => docker::rows(t, &r),
        Err(e) => f.add("docker", format!("{e:#}")),
    }
}

pub(crate) fn far_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    far::run(bin, &p.far, p.far.reps, p.warmup_reps, t, &mut |what, why| f.add(what, why));
}

pub(crate) fn far_mut_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    far_mut::run(bin, &p.far_mut, p.warmup_reps, t, &mut |what, why| f.add(what, why));
}

pub(crate) fn thin_section(bin: &ProxyBin, p: &Params, t: &mut Table, f: &mut Failures) {
    thin::run(bin, &p.thin, t, &mut |what, why| f.add(what, why));
}
