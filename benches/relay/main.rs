//! The jdwpmux relay benchmark (`cargo bench --bench relay [-- --smoke]`): jdwpmux side by
//! side with a direct connection and socat, in the same run, paths alternating within each
//! repetition, reporting medians, paired ratios and PASS/FAIL per target of the issue.
//! It starts every peer itself (a HotSpot debuggee, in-process fake VMs, socat, the proxy)
//! and stops them on exit, also on panic. See benches/README.md.
// Cargo builds harness-less benches with cfg(test), so the modules' unit tests are
// compiled here without being run: they run from units.rs, the `relay_units` test target.
#![cfg_attr(test, allow(unused_imports, dead_code))]

include!("modules.rs");

use std::process::ExitCode;
use failures::Failures;
use params::{Opts, Params, Section};
use proxy::ProxyBin;
use sections::*;
use table::{Table, Verdict};

/// One part of the benchmark: it adds rows to the table and records failures.
type SectionFn = fn(&ProxyBin, &Params, &mut Table, &mut Failures);

fn main() -> ExitCode {
    let opts = match Opts::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.to_string() == "help" => {
            println!("{}", params::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("relay bench: {e}\n{}", params::USAGE);
            return ExitCode::from(2);
        }
    };
    let p = Params::new(&opts);
    procs::kill_children_on_signal();
    let bin = match params::locate_proxy().and_then(ProxyBin::probe) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("relay bench: no proxy binary: {e:#}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "relay bench, {} mode: {} (list: {}), {} repetitions + {} warm-up",
        if opts.smoke { "smoke" } else { "full" },
        bin.path.display(),
        if bin.has_list { "yes" } else { "no" },
        p.reps,
        p.warmup_reps
    );
    let mut t = Table::default();
    let mut f = Failures::default();
    let sections: [(Section, SectionFn); 18] = [
        (Section::Where, where_section),
        (Section::Jvm, jvm_section),
        (Section::Bulk, bulk_section),
        (Section::Scale, scale_section),
        (Section::Ddm, ddm_section),
        (Section::Startup, startup_section),
        (Section::Decode, decode_section),
        (Section::Stats, stats_section),
        (Section::Owner, owner_section),
        (Section::Soak, soak_section),
        (Section::SoakFar, soak_far::section),
        (Section::Remote, remote_section),
        (Section::Far, far_section),
        (Section::FarMut, far_mut_section),
        (Section::Thin, thin_section),
        (Section::Containers, containers_section),
        (Section::Exec, exec_section),
        (Section::Docker, docker_section),
    ];
    for (s, run) in sections {
        if !opts.wants(s) {
            continue;
        }
        // A bug in one section must not hide the others; children die in Drop on unwind.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&bin, &p, &mut t, &mut f)));
        if caught.is_err() {
            f.add(s.name(), "panicked");
        }
    }
    println!("\n{}", t.render());
    println!("targets: {} PASS, {} FAIL", t.count(Verdict::Pass), t.count(Verdict::Fail));
    if f.0.is_empty() {
        println!("functional checks: all passed");
        ExitCode::SUCCESS
    } else {
        println!("functional failures ({}):", f.0.len());
        for m in &f.0 {
            println!("  - {}", m.lines().next().unwrap_or(""));
        }
        ExitCode::from(1)
    }
}
