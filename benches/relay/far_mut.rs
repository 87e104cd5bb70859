//! The `far-mut` section: traffic no near answer serves, through the `far` section's three
//! paths (`ssh -L`, `serve --ssh --far never`, `serve --ssh --far always`) to a JVM on an
//! ssh test host on the namespace's veth (no added delay), alternating within each
//! repetition. `Mut.java` (JDI, compiled here) makes UTF8Test's sequential mutations for a
//! fixed count of strings: CreateString, the static String field `Walk.label` set to it
//! (ClassesBySignature and ClassType.SetValues), read back (ReferenceType.GetValues), its
//! value read (StringReference.Value) and compared; every command waits for its reply.
//!
//! Rows: ms per string (the median of fixed chunks, and their p90), µs per command (the
//! commands counted by the kit's tap in the warm-up repetition), the far side's time over the
//! forward's (`--far never`) judged against [`FAR_VS_FORWARD`], and CPU µs per command of
//! the path's processes here (serve and its ssh master, or `ssh -L`), of the far side's
//! process (`jdwpmux far`) and of the host's others (sshd, the JVM). A value read back that
//! differs from the string made is a functional failure.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::far_paths::{self as fp, CountingTap, FarKind, FarWrapper, Path3, FAR_PATHS};
use crate::jvm::{Debuggee, Jvm};
use crate::procs::Proc;
use crate::proxy::ProxyBin;
use crate::remote::{Fail, VM_PORT};
use crate::remote_paths::Target;
use crate::report::ratio_text;
use crate::sched_wait::SchedSnap;
use crate::stats::{fmt, fmt_opt, median, paired};
use crate::table::{Row, Table};

const MUT_JAVA: &str = include_str!("Mut.java");

/// The far side's time per string may be this much of the forward's (`--far never`).
pub const FAR_VS_FORWARD: f64 = 1.1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutParams {
    pub reps: usize,
    /// Strings timed per run.
    pub strings: usize,
    /// Strings per timed chunk (the figure is the chunks' median).
    pub chunk: usize,
    /// Strings made before the timing starts (JIT, the classes read).
    pub warm: usize,
}

impl MutParams {
    pub fn new(smoke: bool) -> MutParams {
        if smoke {
            return MutParams { reps: 1, strings: 400, chunk: 100, warm: 100 };
        }
        MutParams { reps: 3, strings: 5000, chunk: 250, warm: 500 }
    }
}

/// One run's figures.
#[derive(Debug, Clone, Default)]
pub struct MutRun {
    /// ms per string of each chunk.
    pub chunk_ms: Vec<f64>,
    /// ms per string over the whole timed part.
    pub ms_per_string: f64,
    /// The debugger's commands while timed (through the tap only).
    pub commands: Option<u64>,
    /// Of them, how many of each (command set, command), most first.
    pub mix: Vec<((u8, u8), u64)>,
    /// CPU ns while timed: the path's processes here, the far side's, the host's others.
    pub cpu_ns: [Option<u64>; 3],
    pub strings: usize,
}

/// What the program printed.
#[derive(Debug, Default, PartialEq)]
pub struct Printed {
    pub chunk_ns: Vec<u64>,
    /// (strings, mismatches, ns, first mismatch)
    pub measured: Option<(usize, usize, u64, Option<usize>)>,
}

impl Printed {
    pub fn line(&mut self, l: &str) {
        if let Some(v) = l.strip_prefix("chunk_ns=") {
            self.chunk_ns = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        } else if let Some(rest) = l.strip_prefix("measured ") {
            let field = |k: &str| rest.split_whitespace().find_map(|w| w.strip_prefix(k)?.parse::<u64>().ok());
            if let (Some(s), Some(m), Some(ns)) = (field("strings="), field("mismatches="), field("ns=")) {
                self.measured = Some((s as usize, m as usize, ns, field("first=").map(|f| f as usize)));
            }
        }
    }
}

/// One repetition: per path, a run.
type MutRep = [Option<MutRun>; 3];

pub fn run(bin: &ProxyBin, p: &MutParams, warmup: usize, t: &mut Table, fail: Fail) {
    if !crate::test_hosts::can_run("far-mut", fail) {
        return;
    }
    if !bin.has_control || !bin.has_list {
        eprintln!("far-mut: skipped, {} has no --control or no list", bin.path.display());
        return;
    }
    let made = (|| -> Result<_> { Ok((crate::test_hosts::keys()?, Debuggee::compile(0)?, crate::ide::compile_jdi("Mut", MUT_JAVA)?, FarWrapper::new(&bin.path)?)) })();
    let (keys, prog, mut_dir, wrapper) = match made {
        Ok(m) => m,
        Err(e) => return fail("far-mut: set-up", format!("{e:#}")),
    };
    eprintln!("far-mut: {} repetitions + {warmup} warm-up of {} strings a path; a test host with the HotSpot debuggee ...", p.reps, p.strings);
    let mut host = match crate::far::start_host(&keys, &prog, "farmut", 1) {
        Ok(h) => h,
        Err(e) => return fail("far-mut: the debuggee's host", format!("{e:#}")),
    };
    let ns = host.ns().to_string();
    let target = Target { config: keys.ssh_config(), host: host.alias().to_string(), port: VM_PORT };
    let mut all: Vec<MutRep> = Vec::new();
    let mut counted: [Option<f64>; 3] = [None; 3];
    let mut mixes: [String; 3] = Default::default();
    for rep in 0..warmup + p.reps {
        let warm = rep < warmup;
        let mut runs: MutRep = Default::default();
        for kind in FarKind::order(rep) {
            let Some(jvm) = host.jvms.first_mut() else { return };
            match one(kind, jvm, &target, &ns, bin, &wrapper, mut_dir.path(), p, warm || p.reps == 1) {
                Ok(r) => {
                    if let Some(c) = r.commands {
                        counted[kind.column()] = Some(c as f64 / r.strings.max(1) as f64);
                        mixes[kind.column()] = r.mix.iter().map(|((s, c), n)| format!("{s}.{c} {}", fmt(*n as f64 / r.strings.max(1) as f64))).collect::<Vec<_>>().join(", ");
                    }
                    runs[kind.column()] = Some(r);
                }
                Err(e) => fail(&format!("far-mut repetition {rep}, {}", kind.label()), format!("{e:#}")),
            }
        }
        let ms = FAR_PATHS.map(|k| runs[k.column()].as_ref().and_then(|r| median(&r.chunk_ms)).map_or("-".into(), |v| format!("{v:.3}")));
        let tag = if warm { " (warm-up, counted, discarded)" } else { "" };
        eprintln!("far-mut repetition {rep}{tag}: ms per string ssh -L / --far never / --far always = {}", ms.join(" / "));
        if !warm {
            all.push(runs);
        }
    }
    rows(t, p, &all, &counted, &mixes);
}

/// One run of `Mut` through `kind`; through the counting tap when `tap`.
#[allow(clippy::too_many_arguments)]
fn one(kind: FarKind, jvm: &mut Jvm, t: &Target, ns: &str, bin: &ProxyBin, far: &FarWrapper, prog: &std::path::Path, p: &MutParams, tap: bool) -> Result<MutRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let (mut path, port) = fp::start(kind, t, bin, far)?;
    let tap = if tap { Some(CountingTap::start(port)?) } else { None };
    let port = tap.as_ref().map_or(port, CountingTap::port);
    let mut cmd = crate::procs::command("java");
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(prog)
        .args(["Mut", "127.0.0.1", &port.to_string(), &p.strings.to_string(), &p.chunk.to_string(), &p.warm.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut java = Proc::spawn("Mut", &mut cmd)?;
    let out = java.take_stdout().context("Mut stdout")?;
    let err = java.take_stderr().context("Mut stderr")?;
    let mut stdin = java.take_stdin().context("Mut stdin")?;
    let (tx, rx) = mpsc::sync_channel::<String>(64);
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || BufReader::new(err).lines().map_while(Result::ok).take(40).collect::<Vec<_>>().join("\n"));
    // The path's processes here, the far side's, and the host's others (sshd, the JVM).
    let local: Vec<u32> = match &path {
        Path3::Ssh(r) => r.local_pids(),
        Path3::Jdwpmux { proxy, .. } => crate::proc_tree::with_children(proxy.pid()).iter().map(|s| s.pid).collect(),
    };
    let groups = || {
        let far_pids = fp::far_pids(ns);
        let others = crate::proc_tree::netns_members(ns).into_iter().map(|s| s.pid).filter(|p| !far_pids.contains(p)).collect();
        [local.clone(), far_pids, others]
    };
    let snap = || groups().map(|g| (SchedSnap::take(&g), !g.is_empty()));
    // A hung reply must fail the run: JDI itself would wait for ever.
    let deadline = Instant::now() + Duration::from_secs(120) + Duration::from_millis(20 * (p.strings + p.warm) as u64);
    let wait_for = |want: &str, printed: &mut Printed| -> bool {
        while let Ok(l) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            printed.line(&l);
            if l.starts_with(want) {
                return true;
            }
        }
        false
    };
    let mut printed = Printed::default();
    let mut marks = None;
    if wait_for("ready", &mut printed) {
        let before = (snap(), tap.as_ref().map(CountingTap::commands));
        let _ = writeln!(stdin, "go").and_then(|_| stdin.flush());
        if wait_for("measured ", &mut printed) {
            let after = (snap(), tap.as_ref().map(CountingTap::commands));
            marks = Some((before, after));
            let _ = writeln!(stdin, "restore").and_then(|_| stdin.flush());
            wait_for("done", &mut printed);
        }
    }
    // jdwpmux goes first while the program is still attached: the VM sees one disconnect.
    let log = match &mut path {
        Path3::Jdwpmux { proxy, .. } => {
            let l = if marks.is_some() { String::new() } else { proxy.log_tail(3000) };
            proxy.stop();
            l
        }
        Path3::Ssh(r) => r.log_tail(),
    };
    drop(stdin);
    if !java.wait_exit(Duration::from_secs(10)) {
        java.kill();
    }
    drop(tap);
    if let Path3::Ssh(r) = &mut path {
        r.stop();
    }
    if kind == FarKind::Far {
        fp::far_gone(ns, Duration::from_secs(20)).with_context(|| format!("far side's log:\n{}", far.log()))?;
    }
    let said = errors.join().unwrap_or_default();
    let (Some(((b, cb), (a, ca))), Some((strings, mismatches, ns_total, first))) = (marks, printed.measured) else {
        bail!("Mut ended without its figures: {said}\n{} log:\n{log}\nfar side's log:\n{}", kind.label(), far.log());
    };
    if mismatches > 0 || strings != p.strings {
        bail!("{mismatches} of {strings} strings read back otherwise than made (first: string {first:?}); {} strings asked", p.strings);
    }
    let cpu_ns = [0, 1, 2].map(|i| (a[i].1 || b[i].1).then(|| a[i].0.since(&b[i].0).0));
    let chunk_ms = printed.chunk_ns.iter().take(strings / p.chunk).map(|n| *n as f64 / 1e6 / p.chunk as f64).collect();
    let timed = cb.zip(ca).map(|(b, a)| a.get(b.len()..).unwrap_or_default().to_vec());
    Ok(MutRun { chunk_ms, ms_per_string: ns_total as f64 / 1e6 / strings as f64, commands: timed.as_ref().map(|t| t.len() as u64), mix: timed.as_deref().map(mix).unwrap_or_default(), cpu_ns, strings })
}

/// How many of each command, most first (then by command set and command).
pub fn mix(commands: &[(u8, u8)]) -> Vec<((u8, u8), u64)> {
    let mut m: std::collections::BTreeMap<(u8, u8), u64> = std::collections::BTreeMap::new();
    for c in commands {
        *m.entry(*c).or_default() += 1;
    }
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn per_rep(all: &[MutRep], col: usize, f: &dyn Fn(&MutRun) -> Option<f64>) -> Vec<Option<f64>> {
    all.iter().map(|r| r[col].as_ref().and_then(f)).collect()
}

fn rows(t: &mut Table, p: &MutParams, all: &[MutRep], counted: &[Option<f64>; 3], mixes: &[String; 3]) {
    if all.iter().all(|r| r.iter().all(Option::is_none)) {
        return;
    }
    t.section(&format!(
        "sequential mutations no near answer serves (Mut.java, UTF8Test's shape: CreateString, ClassType.setValue of a static String, getValue, StringReference.Value, compared) through a JVM on an ssh test host, veth, {} strings a run after {} warm-up, {} repetitions; ms per string = median of {}-string chunks over the runs (p90); ratio = --far always / --far never, median of per-repetition ratios of the runs' medians (range)",
        p.strings,
        p.warm,
        all.len(),
        p.chunk
    ));
    t.columns(["ssh -L", "jdwpmux --far never", "jdwpmux --far always", "--far always / ssh -L"]);
    let run_median = |r: &MutRun| median(&r.chunk_ms);
    let pooled = |c: usize| all.iter().filter_map(|r| r[c].as_ref()).flat_map(|r| r.chunk_ms.iter().copied()).collect::<Vec<_>>();
    let cell = |c: usize| {
        let v = pooled(c);
        match (median(&v), crate::far::quantile(&v, 90.0)) {
            (Some(m), Some(q)) => format!("{m:.3} ({q:.3})"),
            _ => "-".into(),
        }
    };
    let vs_ssh = paired(&per_rep(all, 2, &run_median), &per_rep(all, 0, &run_median));
    let vs_forward = paired(&per_rep(all, 2, &run_median), &per_rep(all, 1, &run_median));
    t.push(Row::new("ms per string, median (p90)", [cell(0), cell(1), cell(2), if vs_ssh.is_empty() { String::new() } else { ratio_text(&vs_ssh) }]).judged(
        if vs_forward.is_empty() { String::new() } else { format!("{} x --far never", ratio_text(&vs_forward)) },
        &format!("<= {FAR_VS_FORWARD} x --far never"),
        median(&vs_forward).map(|m| m <= FAR_VS_FORWARD),
    ));
    let per_string = median(&counted.iter().flatten().copied().collect::<Vec<_>>());
    let [a, b, c] = counted.map(|v| v.map_or("-".into(), fmt));
    t.push(Row::new("commands per string, counted by the kit's tap in the warm-up repetition", [a, b, c, String::new()]));
    if let Some(m) = mixes.iter().find(|m| !m.is_empty()) {
        t.push(Row::proxy_only("commands per string by command set.command, counted (the first path's)", m.clone()));
    }
    let us = |c: usize| median(&pooled(c)).zip(per_string).map(|(m, n)| m * 1e3 / n);
    t.push(Row::new("µs per command (ms per string / commands per string)", [fmt_opt(us(0)), fmt_opt(us(1)), fmt_opt(us(2)), String::new()]));
    let cpu = |c: usize, g: usize| {
        let v: Vec<f64> = all.iter().filter_map(|r| r[c].as_ref()).filter_map(|r| r.cpu_ns[g].map(|ns| ns as f64 / 1e3 / r.strings as f64)).collect();
        median(&v).zip(per_string).map(|(m, n)| m / n)
    };
    for (g, what) in [(0, "the path's processes here (serve and its ssh, or ssh -L)"), (1, "the far side (jdwpmux far)"), (2, "the host's others (sshd, the JVM)")] {
        t.push(Row::new(&format!("CPU µs per command, {what}"), [0, 1, 2, 3].map(|c| if c == 3 { String::new() } else if g == 1 && c != 2 { "-".to_string() } else { fmt_opt(cpu(c, g)) })));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_lines_are_read() {
        let mut p = Printed::default();
        for l in ["ready", "chunk_ns=1000000,2500000", "measured strings=500 mismatches=0 ns=750000000", "done"] {
            p.line(l);
        }
        assert_eq!(p, Printed { chunk_ns: vec![1_000_000, 2_500_000], measured: Some((500, 0, 750_000_000, None)) });
        p.line("measured strings=500 mismatches=2 ns=7 first=31");
        assert_eq!(p.measured, Some((500, 2, 7, Some(31))));
        let mut none = Printed::default();
        none.line("measured strings=x mismatches=0 ns=1");
        assert_eq!(none.measured, None);
    }

    #[test]
    fn sizes() {
        let (full, smoke) = (MutParams::new(false), MutParams::new(true));
        assert_eq!((full.reps, smoke.reps), (3, 1));
        assert_eq!(full.strings % full.chunk, 0, "whole chunks");
        assert_eq!(smoke.strings % smoke.chunk, 0, "whole chunks");
    }

    #[test]
    fn commands_are_counted_by_kind() {
        assert_eq!(mix(&[(11, 1), (1, 11), (11, 1), (3, 2)]), vec![((11, 1), 2), ((1, 11), 1), ((3, 2), 1)]);
        assert!(mix(&[]).is_empty());
    }
}
