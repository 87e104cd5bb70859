//! The jdwpmux relay benchmark (`cargo bench --bench relay [-- --smoke]`): jdwpmux side by
//! side with a direct connection and socat, in the same run, paths alternating within each
//! repetition, reporting medians, paired ratios and PASS/FAIL per target of the issue.
//! It starts every peer itself (a HotSpot debuggee, in-process fake VMs, socat, the proxy)
//! and stops them on exit, also on panic. See benches/README.md.
// Cargo builds harness-less benches with cfg(test), so the modules' unit tests are
// compiled here without being run: they run from tests/bench_harness.rs.
#![cfg_attr(test, allow(unused_imports, dead_code))]

#[path = "relay/bulk.rs"]
mod bulk;
#[path = "relay/capture_gen.rs"]
mod capture_gen;
#[path = "relay/containers.rs"]
mod containers;
#[path = "relay/exec.rs"]
mod exec;
#[path = "relay/cpu_budget.rs"]
mod cpu_budget;
#[path = "../tests/support/delay_link.rs"]
mod delay_link;
#[path = "../tests/support/link_relay.rs"]
mod link_relay;
#[path = "relay/ddm_wire.rs"]
mod ddm_wire;
#[path = "relay/decode.rs"]
mod decode;
#[path = "relay/fake_vm.rs"]
mod fake_vm;
#[path = "relay/far.rs"]
mod far;
#[path = "../tests/support/rate_link.rs"]
mod rate_link;
#[path = "relay/thin.rs"]
mod thin;
#[path = "relay/far_idle.rs"]
mod far_idle;
#[path = "relay/far_paths.rs"]
mod far_paths;
#[path = "relay/ide.rs"]
mod ide;
#[path = "relay/jdwp_tap.rs"]
mod jdwp_tap;
#[path = "relay/jdwp_ops.rs"]
mod jdwp_ops;
#[path = "relay/jdb_far.rs"]
mod jdb_far;
#[path = "relay/jvm.rs"]
mod jvm;
#[path = "relay/jvm_suite.rs"]
mod jvm_suite;
#[path = "relay/owner_cost.rs"]
mod owner_cost;
#[path = "relay/params.rs"]
mod params;
#[path = "relay/paths.rs"]
mod paths;
#[path = "relay/procs.rs"]
mod procs;
#[path = "relay/proc_tree.rs"]
mod proc_tree;
#[path = "relay/proxy.rs"]
mod proxy;
#[path = "relay/remote.rs"]
mod remote;
#[path = "relay/remote_paths.rs"]
mod remote_paths;
#[path = "relay/report.rs"]
mod report;
#[path = "relay/sched_wait.rs"]
mod sched_wait;
#[path = "relay/scale.rs"]
mod scale;
#[path = "relay/soak.rs"]
mod soak;
#[path = "relay/soak_report.rs"]
mod soak_report;
#[path = "relay/soak_debugger.rs"]
mod soak_debugger;
#[path = "relay/soak_world.rs"]
mod soak_world;
#[path = "relay/web_page.rs"]
mod web_page;
#[path = "relay/stats.rs"]
mod stats;
#[path = "relay/stats_cost.rs"]
mod stats_cost;
#[path = "relay/table.rs"]
mod table;
#[path = "relay/test_hosts.rs"]
mod test_hosts;
// The integration tests' test hosts (network namespaces with sshd), used as they are.
#[allow(dead_code)]
#[path = "../tests/support/testhost.rs"]
mod testhost;
#[allow(dead_code)]
#[path = "../tests/support/testnet.rs"]
mod testnet;
#[path = "relay/where_time.rs"]
mod where_time;
#[path = "relay/instructions.rs"]
mod instructions;
#[path = "relay/one_cpu.rs"]
mod one_cpu;
#[path = "relay/wire.rs"]
mod wire;
#[path = "relay/sections.rs"]
mod sections;

use std::process::ExitCode;
use params::{Opts, Params, Section};
use proxy::ProxyBin;
use sections::*;
use table::{Table, Verdict};

/// One part of the benchmark: it adds rows to the table and records failures.
type SectionFn = fn(&ProxyBin, &Params, &mut Table, &mut Failures);

/// Functional failures (wrong or missing replies, dead peers); they decide the exit code.
#[derive(Default)]
pub(crate) struct Failures(Vec<String>);

impl Failures {
    pub(crate) fn add(&mut self, what: &str, e: impl std::fmt::Display) {
        let mut msg = format!("{what}: {e}");
        if msg.len() > 4000 {
            let cut = (0..=4000).rev().find(|i| msg.is_char_boundary(*i)).unwrap_or(0);
            msg.truncate(cut);
            msg.push_str(" [...]");
        }
        eprintln!("FAILED {msg}");
        self.0.push(msg);
    }
}

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
    let sections: [(Section, SectionFn); 15] = [
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
        (Section::Remote, remote_section),
        (Section::Far, far_section),
        (Section::Thin, thin_section),
        (Section::Containers, containers_section),
        (Section::Exec, exec_section),
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
