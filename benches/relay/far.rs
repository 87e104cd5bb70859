//! The `far` section: an IDE stepping through a JVM on an ssh test host (`Step.java`: a
//! suspend-all breakpoint, then step over line after line with the JDK's classes excluded
//! and a count filter, and after every stop the frames, the top frame's visible locals and
//! their values, `this` and its fields, the statics, strings, array heads and the thread's
//! name), through `ssh -L`, today's forward (`serve --ssh --far never`) and jdwpmux on the
//! far side (`serve --ssh --far always`), in the same run, the three paths alternating
//! within each repetition; on the namespace's veth with no added delay, and through a delay
//! relay in front of the host's sshd at D = 0, 10 and 25 ms one way (`delay_link`, which
//! also counts the link's round trips: per step, for the attach and for the first stop), and
//! on a thin link (`thin`: 10 Mbit/s with 25 ms each way, `rate_link`, a VPN). The
//! warm-up repetition runs through the kit's tap, counted (`testkit::ide_counts`): commands per step. Then the
//! far side's idle cost on a host with N JVMs beside today's scan (`far_idle`). With
//! `--far-jdb`, the real jdb goes through the same paths and links after the IDE in each
//! repetition (`jdb_far`): its attach, first stop and steps, timed and counted alike.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use testkit::delay_link::DelayLink;
use testkit::rate_link::RateLink;
use crate::far_paths::{self as fp, FarKind, FarWrapper, StepParams, StepProgram, StepRun, FAR_PATHS};
use crate::jdb_walk::JdbRun;
use crate::jvm::Debuggee;
use crate::proxy::ProxyBin;
use crate::remote::{Fail, VM_PORT};
use crate::remote_paths::Target;
use crate::report::ratio_text;
use crate::stats::{fmt, fmt_opt, median, paired};
use crate::table::{Row, Table};
use crate::test_hosts::BenchHost;

/// The far side's step may take this much longer than `ssh -L`'s on the link with no delay.
pub const STEP_VS_SSH_L: f64 = 1.3;
/// Link round trips a step may wait for through the far side (on the links with delay).
pub const TURNS_PER_STEP: f64 = 1.5;
/// Link round trips the first stop (its event to its views read) may wait for.
pub const FIRST_STOP_TURNS: f64 = 3.0;
/// Link round trips the attach may wait for, from the handshake to the breakpoint's event.
pub const ATTACH_TURNS: f64 = 3.0;
/// What an invoke adds to a step (`--far-ide-view`'s toString()): it runs on the far VM.
pub const TURNS_PER_INVOKE: f64 = 1.0;

#[derive(Debug, Clone)]
pub struct FarParams {
    /// Measured repetitions unless `--reps` says otherwise (the section's own: its runs are
    /// seconds each, where the other sections' are milliseconds).
    pub reps: usize,
    pub step: StepParams,
    /// The links: the veth itself first, then relays.
    pub links: Vec<Link>,
    /// Whether the measured repetitions go through the counting tap too (smoke: one
    /// repetition and no verdict, so it counts and times at once).
    pub tap_measured: bool,
    pub idle: crate::far_idle::IdleParams,
    /// Steps of jdb's runs (`--far-jdb`); 0: no jdb rows.
    pub jdb_steps: usize,
}

impl FarParams {
    pub fn new(smoke: bool) -> FarParams {
        if smoke {
            // The 10 ms relay checks the link's counting; 3 steps there take about a second.
            return FarParams {
                reps: 1,
                step: StepParams { steps: 3, budget: Duration::from_secs(3), ide_view: false },
                links: vec![Link::Veth, Link::Delay(Duration::from_millis(10))],
                tap_measured: true,
                idle: crate::far_idle::IdleParams { window: Duration::from_secs(2), settle: Duration::from_millis(500), jvms: vec![1] },
                jdb_steps: 0,
            };
        }
        FarParams {
            reps: 3,
            step: StepParams { steps: 300, budget: Duration::from_secs(5), ide_view: false },
            links: vec![Link::Veth, Link::Delay(Duration::ZERO), Link::Delay(Duration::from_millis(10)), Link::Delay(Duration::from_millis(25)), Link::THIN],
            tap_measured: false,
            idle: crate::far_idle::IdleParams { window: Duration::from_secs(30), settle: Duration::from_secs(3), jvms: vec![1, 4] },
            jdb_steps: 0,
        }
    }
}

/// A way to the test host's sshd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// The namespace's veth itself.
    Veth,
    /// A delay relay at D one way, which counts the link's round trips.
    Delay(Duration),
    /// A thin link: a bandwidth limit and a delay one way (no round trips counted: a
    /// packet's wait for the link blurs when an answer could have come).
    Thin { bits_per_s: u64, delay: Duration },
}

impl Link {
    /// A VPN's: 10 Mbit/s, 25 ms each way (issue 43's).
    pub const THIN: Link = Link::Thin { bits_per_s: 10_000_000, delay: Duration::from_millis(25) };
}

/// A link's name in the table.
pub fn link_label(l: Link) -> String {
    match l {
        Link::Veth => "veth".into(),
        Link::Delay(d) => format!("relay +{} ms", d.as_millis()),
        Link::Thin { bits_per_s, delay } => format!("thin {} Mbit/s +{} ms", bits_per_s / 1_000_000, delay.as_millis()),
    }
}

/// A relay in front of the host's sshd, kept while the runs use it.
enum Relay {
    Delay(DelayLink),
    Thin(RateLink),
}

impl Relay {
    fn start(link: Link, to: SocketAddr) -> Result<Option<Relay>> {
        Ok(match link {
            Link::Veth => None,
            Link::Delay(d) => Some(Relay::Delay(DelayLink::start(to, d)?)),
            Link::Thin { bits_per_s, delay } => Some(Relay::Thin(RateLink::start(to, bits_per_s, delay)?)),
        })
    }

    fn port(&self) -> u16 {
        match self {
            Relay::Delay(r) => r.port(),
            Relay::Thin(r) => r.port(),
        }
    }

    /// The relay that counts round trips, if this is one.
    fn counting(&self) -> Option<&DelayLink> {
        match self {
            Relay::Delay(r) => Some(r),
            Relay::Thin(_) => None,
        }
    }
}

/// One repetition: per link, per path, a run.
type FarRep = Vec<[Option<StepRun>; 3]>;
/// jdb's of one repetition: per link, per path.
type JdbRep = Vec<[Option<JdbRun>; 3]>;

pub fn run(bin: &ProxyBin, p: &FarParams, reps: usize, warmup: usize, t: &mut Table, fail: Fail) {
    if !crate::test_hosts::can_run("far", fail) {
        return;
    }
    if !bin.has_control || !bin.has_list {
        eprintln!("far: skipped, {} has no --control or no list", bin.path.display());
        return;
    }
    let made = (|| -> Result<_> { Ok((crate::test_hosts::keys()?, Debuggee::compile(0)?, StepProgram::compile()?, FarWrapper::new(&bin.path)?)) })();
    let (keys, prog, ide, wrapper) = match made {
        Ok(m) => m,
        Err(e) => return fail("far: set-up", format!("{e:#}")),
    };
    eprintln!("far: {reps} repetitions + {warmup} warm-up (the section's own; --reps sets it); a test host with the HotSpot debuggee ...");
    let mut host = match start_host(&keys, &prog, "far", 1) {
        Ok(h) => h,
        Err(e) => return fail("far: the debuggee's host", format!("{e:#}")),
    };
    // One relay per link, each a Host of its own in the ssh config (same host key).
    let mut relays: Vec<(Link, String, Option<Relay>)> = Vec::new();
    for (i, l) in p.links.iter().enumerate() {
        let made = Relay::start(*l, SocketAddr::from((host.addr(), 22))).and_then(|r| match r {
            None => Ok((host.alias().to_string(), None)),
            Some(r) => {
                let alias = format!("far-link{i}");
                keys.add_host(&alias, Ipv4Addr::LOCALHOST, "id_ed25519", &format!("  Port {}\n  HostKeyAlias {}\n", r.port(), host.addr()))?;
                Ok((alias, Some(r)))
            }
        });
        match made {
            Ok((alias, r)) => relays.push((*l, alias, r)),
            Err(e) => return fail("far: relay", format!("{e:#}")),
        }
    }
    let ns = host.ns().to_string();
    let mut all: Vec<FarRep> = Vec::new();
    let mut jdbs: Vec<JdbRep> = Vec::new();
    let mut counted: [Option<testkit::ide_counts::IdeCounts>; 3] = Default::default();
    for rep in 0..warmup + reps {
        let warm = rep < warmup;
        let tap = warm || p.tap_measured;
        let mut row: FarRep = Vec::new();
        let mut jdb_row: JdbRep = Vec::new();
        for (link, alias, relay) in &relays {
            let mut runs: [Option<StepRun>; 3] = Default::default();
            let mut jdb_runs: [Option<JdbRun>; 3] = Default::default();
            // The warm-up repetition counts commands on the veth only; jdb has none.
            if warm && *link != Link::Veth {
                row.push(runs);
                jdb_row.push(jdb_runs);
                continue;
            }
            let target = Target { config: keys.ssh_config(), host: alias.clone(), port: VM_PORT };
            for kind in FarKind::order(rep) {
                let Some(jvm) = host.jvms.first_mut() else { return };
                match fp::run(kind, jvm, &target, &ns, bin, &wrapper, &ide, &p.step, tap && *link == Link::Veth, relay.as_ref().and_then(Relay::counting)) {
                    Ok(r) => {
                        if let Some(s) = &r.tap {
                            counted[kind.column()] = Some(s.clone());
                        }
                        runs[kind.column()] = Some(r);
                    }
                    Err(e) => fail(&format!("far repetition {rep}, {}, {}", link_label(*link), kind.label()), format!("{e:#}")),
                }
            }
            let ms = FAR_PATHS.map(|k| runs[k.column()].as_ref().and_then(|r| median(&r.step_ms)).map_or("-".into(), fmt));
            let tag = if warm { " (warm-up, counted, discarded)" } else { "" };
            eprintln!("far repetition {rep}{tag}, {}: ms per step ssh -L / --far never / --far always = {}", link_label(*link), ms.join(" / "));
            row.push(runs);
            if p.jdb_steps > 0 && !warm {
                for kind in FarKind::order(rep) {
                    let Some(jvm) = host.jvms.first_mut() else { return };
                    match crate::jdb_far::run(kind, jvm, &target, &ns, bin, &wrapper, p.jdb_steps, relay.as_ref().and_then(Relay::counting)) {
                        Ok(r) => jdb_runs[kind.column()] = Some(r),
                        Err(e) => fail(&format!("far repetition {rep}, jdb, {}, {}", link_label(*link), kind.label()), format!("{e:#}")),
                    }
                }
                let say = |f: &dyn Fn(&JdbRun) -> Option<f64>| FAR_PATHS.map(|k| jdb_runs[k.column()].as_ref().and_then(f).map_or("-".into(), fmt)).join(" / ");
                let turns = FAR_PATHS.map(|k| jdb_runs[k.column()].as_ref().and_then(|r| r.turns).map_or("-".into(), |x| format!("{}/{}/{}", x.attach, x.first_stop, fmt(x.per_step)))).join(" / ");
                eprintln!(
                    "far repetition {rep}, jdb, {}: ssh -L / --far never / --far always: attach ms {}; first stop ms {}; ms per step {}; round trips attach/first stop/step {turns}",
                    link_label(*link),
                    say(&|r| Some(r.attach_ms)),
                    say(&|r| Some(r.first_stop_ms)),
                    say(&|r| median(&r.step_ms)),
                );
            }
            jdb_row.push(jdb_runs);
        }
        if !warm {
            all.push(row);
            jdbs.push(jdb_row);
        }
    }
    step_rows(t, p, &all, &counted);
    if p.jdb_steps > 0 {
        jdb_rows(t, p, &jdbs);
    }
    // The idle host with one JVM is this one; then one with four.
    crate::far_idle::run(bin, &keys, &prog, &mut host, &wrapper, &p.idle, t, fail);
}

pub(crate) fn start_host(keys: &testkit::testhost::Keys, prog: &Arc<Debuggee>, alias: &str, jvms: usize) -> Result<BenchHost> {
    let mut h = BenchHost::start(keys, alias)?;
    for j in 0..jvms {
        h.launch(prog, VM_PORT + j as u16, jvms > 1)?;
    }
    h.wait_ready(Duration::from_secs(180))?;
    Ok(h)
}

/// Per repetition, a figure of one path on link `li`.
fn per_rep(all: &[FarRep], li: usize, col: usize, f: &dyn Fn(&StepRun) -> Option<f64>) -> Vec<Option<f64>> {
    all.iter().map(|r| r.get(li).and_then(|l| l[col].as_ref()).and_then(f)).collect()
}

/// Every step of one path on link `li`, all repetitions pooled.
fn pooled(all: &[FarRep], li: usize, col: usize) -> Vec<f64> {
    all.iter().filter_map(|r| r.get(li).and_then(|l| l[col].as_ref())).flat_map(|r| r.step_ms.iter().copied()).collect()
}

/// The value at percentile `q` (0-100) of `v`, nearest rank.
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    s.get(rank.min(s.len()) - 1).copied()
}

/// Link round trips per step from the time: what a step took more than on the veth, over
/// the round trip the relay added (2 D).
pub fn link_round_trips(step_ms: f64, veth_ms: f64, one_way: Duration) -> Option<f64> {
    let rtt = 2.0 * one_way.as_secs_f64() * 1e3;
    (rtt > 0.0).then(|| (step_ms - veth_ms) / rtt)
}

/// One figure of a run's counted round trips.
type TurnFigure = fn(&fp::LinkTurns) -> f64;

/// The round trips the delay relay counted on link `li` (one way `d`): per step, for the
/// attach and for the first stop; medians of the runs. The targets are judged for the far
/// side on the links with delay (with none, turns are counted but the chunks of a step may
/// overlap in other ways).
fn turn_rows(t: &mut Table, all: &[FarRep], li: usize, label: &str, d: Duration, ide_view: bool) {
    let of = |c: usize, f: &dyn Fn(&fp::LinkTurns) -> f64| median(&per_rep(all, li, c, &|r| r.turns.map(|x| f(&x))).into_iter().flatten().collect::<Vec<_>>());
    let judged = !d.is_zero();
    let rows: [(&str, TurnFigure, Option<f64>); 3] = [
        ("link round trips per step, counted on the link", |x| x.per_step, Some(TURNS_PER_STEP + if ide_view { TURNS_PER_INVOKE } else { 0.0 })),
        ("link round trips of the first stop (event to views read), counted", |x| x.first_stop as f64, Some(FIRST_STOP_TURNS)),
        ("link round trips from attach to the breakpoint's event, counted", |x| x.attach as f64, Some(ATTACH_TURNS)),
    ];
    for (what, f, target) in rows {
        let cells = [0, 1, 2].map(|c| fmt_opt(of(c, &f)));
        let far = of(FarKind::Far.column(), &f);
        let r = Row::new(&format!("{label}: {what}"), [cells[0].clone(), cells[1].clone(), cells[2].clone(), String::new()]);
        t.push(match target {
            Some(limit) if judged => r.judged(String::new(), &format!("--far always <= {limit}"), far.map(|v| v <= limit)),
            _ => r.judged(String::new(), "", None),
        });
    }
}

fn step_rows(t: &mut Table, p: &FarParams, all: &[FarRep], counted: &[Option<testkit::ide_counts::IdeCounts>; 3]) {
    if all.iter().all(|r| r.iter().all(|l| l.iter().all(Option::is_none))) {
        return;
    }
    t.section(&format!(
        "an IDE stepping (Step.java: suspend-all breakpoint, step over with class exclusions and a count filter, after each stop frames, locals, this and its fields, statics, strings, array heads, thread name{}) through a JVM on an ssh test host (30 idle pool threads beside its own), up to {} steps or {} s a run, {} repetitions; ms per step = median (p90) of all steps; ratio = --far always / ssh -L, median of per-repetition ratios of the runs' medians (range)",
        if p.step.ide_view { "; as IntelliJ also: the class list at attach, the threads view (every thread's name, status, suspend count, frame count) and this.toString() invoked" } else { "" },
        p.step.steps,
        p.step.budget.as_secs_f64(),
        all.len()
    ));
    t.columns(["ssh -L", "jdwpmux --far never", "jdwpmux --far always", "--far always / never"]);
    let run_median = |r: &StepRun| median(&r.step_ms);
    let veth_medians: Vec<Option<f64>> = (0..3).map(|c| median(&pooled(all, 0, c))).collect();
    for (li, link) in p.links.iter().enumerate() {
        let label = link_label(*link);
        let cells3 = |f: &dyn Fn(usize) -> String| [f(0), f(1), f(2)];
        let step_cell = |c: usize| {
            let v = pooled(all, li, c);
            match (median(&v), quantile(&v, 90.0)) {
                (Some(m), Some(q)) => format!("{} ({})", fmt(m), fmt(q)),
                _ => "-".into(),
            }
        };
        let [a, b, c] = cells3(&step_cell);
        let never = paired(&per_rep(all, li, 2, &run_median), &per_rep(all, li, 1, &run_median));
        let r = Row::new(&format!("{label}: ms per step, median (p90)"), [a, b, c, if never.is_empty() { String::new() } else { ratio_text(&never) }]);
        let ratios = paired(&per_rep(all, li, 2, &run_median), &per_rep(all, li, 0, &run_median));
        let text = if ratios.is_empty() { String::new() } else { format!("{} x ssh -L", ratio_text(&ratios)) };
        // The target is on the link with no added delay: the veth.
        t.push(match link {
            Link::Veth => r.judged(text, &format!("<= {STEP_VS_SSH_L} x ssh -L"), median(&ratios).map(|m| m <= STEP_VS_SSH_L)),
            _ => r.judged(text, "", None),
        });
        let first = |c: usize| fmt_opt(median(&per_rep(all, li, c, &|r| Some(r.first_ms)).into_iter().flatten().collect::<Vec<_>>()));
        let [a, b, c] = cells3(&first);
        let fr = paired(&per_rep(all, li, 2, &|r| Some(r.first_ms)), &per_rep(all, li, 0, &|r| Some(r.first_ms)));
        t.push(Row::new(&format!("{label}: attach to the first stop shown, ms"), [a, b, c, String::new()]).judged(
            if fr.is_empty() { String::new() } else { format!("{} x ssh -L", ratio_text(&fr)) },
            "",
            None,
        ));
        let own = |c: usize| fmt_opt(median(&per_rep(all, li, c, &|r| r.first_stop_ms).into_iter().flatten().collect::<Vec<_>>()));
        let [a, b, c] = cells3(&own);
        let fr = paired(&per_rep(all, li, 2, &|r| r.first_stop_ms), &per_rep(all, li, 0, &|r| r.first_stop_ms));
        t.push(Row::new(&format!("{label}: the first stop (its event to its views read), ms"), [a, b, c, String::new()]).judged(
            if fr.is_empty() { String::new() } else { format!("{} x ssh -L", ratio_text(&fr)) },
            "",
            None,
        ));
        if let Link::Delay(d) = link {
            turn_rows(t, all, li, &label, *d, p.step.ide_view);
            let rt = |c: usize| {
                let m = median(&pooled(all, li, c));
                fmt_opt(m.zip(veth_medians.get(c).copied().flatten()).and_then(|(m, v)| link_round_trips(m, v, *d)))
            };
            let [a, b, c] = cells3(&rt);
            if !d.is_zero() {
                t.push(Row::new(&format!("{label}: time per step in link round trips, (step - veth step) / {} ms (waits and stalls)", 2 * d.as_millis()), [a, b, c, String::new()]));
            }
        }
        let sched = |what: usize, c: usize| {
            let v: Vec<Option<f64>> = per_rep(all, li, c, &|r| r.sched.map(|g| if what == 0 { g[0].0 + g[1].0 } else { g[0].1 + g[1].1 + g[2].1 }));
            let parts = |k: usize| median(&per_rep(all, li, c, &|r| r.sched.map(|g| if what == 0 { g[k].0 } else { g[k].1 })).into_iter().flatten().collect::<Vec<_>>());
            match median(&v.into_iter().flatten().collect::<Vec<_>>()) {
                Some(m) if what == 0 => format!("{} ({} + {})", fmt(m), fmt_opt(parts(0)), fmt_opt(parts(1))),
                Some(m) => format!("{} ({} + {} + {})", fmt(m), fmt_opt(parts(0)), fmt_opt(parts(1)), fmt_opt(parts(2))),
                None => "-".into(),
            }
        };
        let [a, b, c] = cells3(&|c| sched(0, c));
        t.push(Row::new(&format!("{label}: CPU µs per step, path's processes here + host's (sshd, far side, JVM)"), [a, b, c, String::new()]));
        let [a, b, c] = cells3(&|c| sched(1, c));
        t.push(Row::new(&format!("{label}: µs per step waiting for a CPU, here + host + the IDE"), [a, b, c, String::new()]));
        let setup = |c: usize| fmt_opt(median(&per_rep(all, li, c, &|r| Some(r.setup_ms / 1e3)).into_iter().flatten().collect::<Vec<_>>()));
        let [a, b, c] = cells3(&setup);
        t.push(Row::new(&format!("{label}: path ready after s (ssh up; serve: VM listed ready)"), [a, b, c, String::new()]));
    }
    let count = |f: &dyn Fn(&testkit::ide_counts::IdeCounts) -> String| counted.clone().map(|s| s.as_ref().map_or("-".into(), f));
    let [a, b, c] = count(&|s| s.per_step().map_or("-".into(), |(cmds, seq)| format!("{} ({})", fmt(cmds), fmt(seq))));
    t.push(Row::new("commands per step (of them sequential), counted by a tap before the IDE in the warm-up run", [a, b, c, String::new()]));
    let [a, b, c] = count(&|s| format!("{} + {}", s.attach, s.first_stop.map_or("-".into(), |f| f.to_string())));
    t.push(Row::new("commands: attach to the breakpoint + the first stop's views and first step's request", [a, b, c, String::new()]));
}

/// Per repetition, a figure of jdb through one path on link `li`.
fn jdb_per_rep(all: &[JdbRep], li: usize, col: usize, f: &dyn Fn(&JdbRun) -> Option<f64>) -> Vec<Option<f64>> {
    all.iter().map(|r| r.get(li).and_then(|l| l[col].as_ref()).and_then(f)).collect()
}

fn jdb_rows(t: &mut Table, p: &FarParams, all: &[JdbRep]) {
    if all.iter().all(|r| r.iter().all(|l| l.iter().all(Option::is_none))) {
        return;
    }
    t.section(&format!(
        "jdb (the JDK's, `jdb -attach`, typed at as a person does: each command after the last one's prompt) through the same paths and links: attach = jdb's start (its own JVM's start included) to `stop at Walk:LINE` set and `resume` answered; first stop = the breakpoint's hit shown to `where` and `locals` answered; a step = `next`, `where`, `locals`; up to {} steps a run, {} repetitions; medians; ratio = --far always / ssh -L",
        p.jdb_steps,
        all.len()
    ));
    t.columns(["ssh -L", "jdwpmux --far never", "jdwpmux --far always", "--far always / never"]);
    let med = |li: usize, c: usize, f: &dyn Fn(&JdbRun) -> Option<f64>| median(&jdb_per_rep(all, li, c, f).into_iter().flatten().collect::<Vec<_>>());
    for (li, link) in p.links.iter().enumerate() {
        let label = link_label(*link);
        let figures: [(&str, JdbFigure); 3] = [
            ("jdb attach, ms", |r| Some(r.attach_ms)),
            ("jdb first stop, ms", |r| Some(r.first_stop_ms)),
            ("jdb ms per step (next, where, locals), median", |r| median(&r.step_ms)),
        ];
        for (what, f) in figures {
            let cells = [0, 1, 2].map(|c| fmt_opt(med(li, c, &f)));
            let never = paired(&jdb_per_rep(all, li, 2, &f), &jdb_per_rep(all, li, 1, &f));
            let ratios = paired(&jdb_per_rep(all, li, 2, &f), &jdb_per_rep(all, li, 0, &f));
            let r = Row::new(&format!("{label}: {what}"), [cells[0].clone(), cells[1].clone(), cells[2].clone(), if never.is_empty() { String::new() } else { ratio_text(&never) }]);
            t.push(r.judged(if ratios.is_empty() { String::new() } else { format!("{} x ssh -L", ratio_text(&ratios)) }, "", None));
        }
        let Link::Delay(d) = link else { continue };
        let rows: [(&str, TurnFigureJdb, f64); 3] = [
            ("jdb link round trips of the attach, counted", |x| x.attach as f64, ATTACH_TURNS),
            ("jdb link round trips of the first stop, counted", |x| x.first_stop as f64, FIRST_STOP_TURNS),
            ("jdb link round trips per step, counted", |x| x.per_step, TURNS_PER_STEP),
        ];
        for (what, f, limit) in rows {
            let of = |c: usize| med(li, c, &|r| r.turns.map(|x| f(&x)));
            let cells = [0, 1, 2].map(|c| fmt_opt(of(c)));
            let r = Row::new(&format!("{label}: {what}"), [cells[0].clone(), cells[1].clone(), cells[2].clone(), String::new()]);
            t.push(if d.is_zero() {
                r.judged(String::new(), "", None)
            } else {
                r.judged(String::new(), &format!("--far always <= {limit}"), of(FarKind::Far.column()).map(|v| v <= limit))
            });
        }
    }
}

/// One figure of a jdb run's counted round trips.
type TurnFigureJdb = fn(&crate::jdb_walk::JdbTurns) -> f64;
/// One figure of a jdb run.
type JdbFigure = fn(&JdbRun) -> Option<f64>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_round_trips() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&v, 90.0), Some(9.0));
        assert_eq!(quantile(&v, 50.0), Some(5.0));
        assert_eq!(quantile(&[], 90.0), None);
        assert_eq!(link_round_trips(253.0, 3.0, Duration::from_millis(25)), Some(5.0));
        assert_eq!(link_round_trips(3.0, 3.0, Duration::ZERO), None);
    }

    #[test]
    fn sizes() {
        let full = FarParams::new(false);
        assert_eq!(full.links, vec![Link::Veth, Link::Delay(Duration::ZERO), Link::Delay(Duration::from_millis(10)), Link::Delay(Duration::from_millis(25)), Link::THIN]);
        assert_eq!(full.idle.jvms, vec![1, 4]);
        assert!(!full.tap_measured);
        assert_eq!((full.jdb_steps, FarParams::new(true).jdb_steps), (0, 0), "jdb only with --far-jdb");
        assert_eq!(full.reps, 3);
        let smoke = FarParams::new(true);
        assert_eq!((smoke.links.len(), smoke.step.steps, smoke.idle.jvms.len(), smoke.reps), (2, 3, 1, 1));
        assert_eq!(link_label(Link::Delay(Duration::from_millis(10))), "relay +10 ms");
        assert_eq!(link_label(Link::THIN), "thin 10 Mbit/s +25 ms");
    }
}
