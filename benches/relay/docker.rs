//! The `docker` section: a JVM in a root Docker container (`--network=none`, its agent on the
//! container's own 127.0.0.1:5005, nothing published), as a developer in the `docker` group
//! reaches it and as root does, beside a JVM on this machine.
//!
//! - Stepping: an IDE (`Step.java`, the `far` and `exec` sections' JDI program) stepping
//!   through `serve` four ways, alternating within each repetition: `user`, a `docker` group
//!   member's `serve --far-copy` reaching the container through `docker exec` (jdwpmux copied
//!   in on first use, the far side running there); `exec`, root's `serve --exec C='docker
//!   exec -i C' --far-copy`, the same far side over the same exec without the runtime's
//!   discovery (which part of the user's cost is the exec's own); `root`, root's `serve`
//!   entering the container's network namespace; `host`, a JVM on this machine through
//!   `serve`.
//! - Listing: from `serve`'s start to the JVMs of N containers all listed ready (`list
//!   --json`): as the user (its first start copies jdwpmux into each container; later starts
//!   find it there) and as root.
//!
//! Each `serve` finds only its own JVMs (`--proc-match` on the folder of their classes: the
//! host's JVM, the stepped container's and the N listed ones each run classes of their own).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::docker_user::{Boxes, DockerUser};
use crate::far_paths::StepProgram;
use crate::jvm::{Debuggee, Jvm, Launch};
use crate::proxy::{Proxy, ProxyBin};
use crate::stats::{fmt, median};
use crate::table::{Row, Table};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    User,
    Exec,
    Root,
    Host,
}

pub const WAYS: [Way; 4] = [Way::User, Way::Exec, Way::Root, Way::Host];

impl Way {
    fn label(self) -> &'static str {
        match self {
            Way::User => "docker group member: serve --far-copy (through docker exec)",
            Way::Exec => "root: serve --exec C='docker exec -i C' --far-copy",
            Way::Root => "root: serve (enters the container)",
            Way::Host => "a JVM on this machine: serve",
        }
    }
}

/// Whether a `list --json` row is the JVM that `way` reaches, in container `name` (its
/// place as discovery names it) or, for `Host`, on this machine.
pub fn row_is(way: Way, name: &str, row: &Value) -> bool {
    let place = row["process"]["place"].as_str();
    let in_box = place == Some(format!("container {name} (docker)").as_str());
    match way {
        // Through the runtime the container is a host of its own, named by the runtime.
        Way::User => in_box && row["host"] == name,
        // The far side lists it from inside, under the host name given to --exec.
        Way::Exec => row["host"] == name,
        Way::Root => in_box && row["host"] == "local",
        Way::Host => place.is_none() && row["host"] == "local",
    }
}

/// Ready, with a debugger port.
pub fn ready(row: &Value) -> bool {
    row["state"] == "ready" && row["debugger_port"].is_u64()
}

/// One repetition's figures: per way, the median ms of a step and the attach to the first stop.
#[derive(Debug, Clone, Default)]
pub struct StepRep {
    pub step_ms: [Option<f64>; 4],
    pub first_ms: [Option<f64>; 4],
}

/// From `serve`'s start to every container's JVM listed ready, seconds.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    pub boxes: usize,
    /// The user's first start: jdwpmux copied into every container.
    pub user_first_s: f64,
    /// The user's later starts: jdwpmux found there.
    pub user_s: Vec<f64>,
    pub root_s: Vec<f64>,
}

pub struct DockerRun {
    pub steps: usize,
    pub reps: Vec<StepRep>,
    pub listed: Listed,
}

/// The whole section: `reps` stepping repetitions of `steps` steps each way, then the
/// listing of `boxes` containers (the user's first start, then `reps` starts of root and of
/// the user, alternating).
pub fn run(bin: &ProxyBin, reps: usize, steps: usize, boxes: usize) -> Result<DockerRun> {
    let mut user = DockerUser::new(bin)?;
    let step = StepProgram::compile()?;
    // Its classes readable by the user, whose IDE runs them too.
    let status = std::process::Command::new("chmod").args(["-R", "a+rX"]).arg(step.dir()).status()?;
    if !status.success() {
        bail!("chmod -R a+rX {}: {status}", step.dir().display());
    }
    let (host_prog, box_prog, many_prog) = (Debuggee::compile(0)?, Debuggee::compile(0)?, Debuggee::compile(0)?);
    let mut host = Jvm::launch(&host_prog, &Launch { small: true, ..Launch::default() })?;
    eprintln!("docker: starting the stepped container (the JDK image is imported first) ...");
    let mut one = Boxes::start(&box_prog, "step", 1)?;
    host.wait_ready(Duration::from_secs(120))?;
    let name = one.names[0].clone();
    let mut all = Vec::new();
    for rep in 0..reps {
        let mut r = StepRep::default();
        // Each repetition starts with another way, so none is always first.
        for k in 0..WAYS.len() {
            let i = (rep + k) % WAYS.len();
            let way = WAYS[i];
            eprintln!("docker: repetition {rep}, {} ...", way.label());
            let (jvm, prog) = if way == Way::Host { (&mut host, &host_prog) } else { (&mut one.jvms[0], &box_prog) };
            let (first, steps_ms) = session(way, jvm, prog, &name, &mut user, bin, &step, steps)?;
            r.first_ms[i] = Some(first);
            r.step_ms[i] = median(&steps_ms);
        }
        all.push(r);
    }
    drop(one);
    drop(host);
    eprintln!("docker: {boxes} containers ...");
    let listed = listing(bin, &mut user, &many_prog, boxes, reps)?;
    Ok(DockerRun { steps, reps: all, listed })
}

/// `serve` for `way`, finding the JVMs of `prog` only.
fn start_serve(way: Way, prog: &Debuggee, name: &str, user: &mut DockerUser, bin: &ProxyBin, room_for: usize) -> Result<(Proxy, tempfile::TempDir)> {
    let mut args: Vec<String> = if way == Way::Exec {
        // No /proc here: the agent takes one debugger, and this serve would enter the
        // container itself and hold it.
        vec!["--no-proc".into(), "--exec".into(), format!("{name}=docker exec -i {name}"), "--far-copy".into()]
    } else {
        vec!["--proc".into(), "--proc-match".into(), prog.out_dir().display().to_string()]
    };
    args.extend(["--no-scan", "--no-adb", "--base-port", "0", "--current-port", "0"].map(String::from));
    // Root's own folder for its socket and log (the user's serve has one in its home).
    let dir = tempfile::tempdir()?;
    let proxy = match way {
        Way::User => {
            args.push("--far-copy".into());
            user.serve(bin, &args, room_for)?
        }
        Way::Exec | Way::Root | Way::Host => {
            let mut a = vec!["--control".to_string(), dir.path().join("control.sock").display().to_string(), "serve".into()];
            a.extend(args);
            a.extend(bin.extra.iter().cloned());
            Proxy::start_args(bin, &a, dir.path(), &[], room_for, 0)?
        }
    };
    Ok((proxy, dir))
}

/// One IDE session through `way`: attach to the first stop (ms), and each step (ms).
#[allow(clippy::too_many_arguments)]
fn session(way: Way, jvm: &mut Jvm, prog: &Debuggee, name: &str, user: &mut DockerUser, bin: &ProxyBin, step: &StepProgram, steps: usize) -> Result<(f64, Vec<f64>)> {
    jvm.wait_free(Duration::from_secs(60))?;
    jvm.session_ended();
    let (mut proxy, _dir) = start_serve(way, prog, name, user, bin, 1)?;
    let port = wait_rows(&proxy, bin, Duration::from_secs(180), |rows| rows.iter().find(|r| row_is(way, name, r) && ready(r)).and_then(|r| r["debugger_port"].as_u64()));
    // The user's serve takes only its own user's debuggers: the IDE runs as the user there.
    let prefix = if way == Way::User { user.wrapper() } else { Vec::new() };
    let got = port.and_then(|p| crate::exec::ide_as(&prefix, step, p as u16, steps));
    proxy.stop();
    got.with_context(|| format!("{}; serve's log:\n{}", way.label(), proxy.log_tail(3000)))
}

/// Polls `list --json` until `done` gives a value; an error with the rows at `limit`.
fn wait_rows<T>(proxy: &Proxy, bin: &ProxyBin, limit: Duration, done: impl Fn(&[Value]) -> Option<T>) -> Result<T> {
    let deadline = Instant::now() + limit;
    loop {
        let rows = proxy.list_json(bin).unwrap_or_default();
        if let Some(v) = done(&rows) {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("not listed ready within {limit:?}: {rows:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `boxes` containers; the time from each `serve`'s start to all of them listed ready.
fn listing(bin: &ProxyBin, user: &mut DockerUser, prog: &Arc<Debuggee>, boxes: usize, reps: usize) -> Result<Listed> {
    let mut many = Boxes::start(prog, "list", boxes)?;
    let names = many.names.clone();
    let mut order = vec![Way::User];
    for _ in 0..reps {
        order.extend([Way::Root, Way::User]);
    }
    let mut l = Listed { boxes, ..Listed::default() };
    for (k, way) in order.into_iter().enumerate() {
        // Every agent free again (the last serve's connections closed) before the clock starts.
        for j in &mut many.jvms {
            j.wait_free(Duration::from_secs(60))?;
            j.session_ended();
        }
        let t0 = Instant::now();
        let (mut proxy, _dir) = start_serve(way, prog, "", user, bin, boxes)?;
        let all = |rows: &[Value]| names.iter().all(|n| rows.iter().any(|r| row_is(way, n, r) && ready(r))).then_some(());
        let got = wait_rows(&proxy, bin, Duration::from_secs(120 + 10 * boxes as u64), all);
        let s = t0.elapsed().as_secs_f64();
        proxy.stop();
        got.with_context(|| format!("{}: {boxes} containers; serve's log:\n{}", way.label(), proxy.log_tail(3000)))?;
        eprintln!("docker: {} listed {boxes} ready in {s:.2} s", way.label());
        match (way, k) {
            (Way::User, 0) => l.user_first_s = s,
            (Way::User, _) => l.user_s.push(s),
            _ => l.root_s.push(s),
        }
    }
    Ok(l)
}

/// The section's rows.
pub fn rows(t: &mut Table, r: &DockerRun) {
    if !r.reps.is_empty() {
        t.section(&format!("An IDE stepping through a JVM in a root Docker container ({} steps a session; medians of {} repetitions)", r.steps, r.reps.len()));
        let med = |f: &dyn Fn(&StepRep) -> Option<f64>| median(&r.reps.iter().filter_map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN);
        let h = WAYS.iter().position(|w| *w == Way::Host).unwrap_or(0);
        let host = med(&|x| x.step_ms[h]);
        for (i, way) in WAYS.iter().enumerate() {
            let step = med(&|x| x.step_ms[i]);
            let first = med(&|x| x.first_ms[i]);
            t.push(Row::proxy_only(&format!("{}: ms a step / attach to the first stop", way.label()), format!("{} / {}", fmt(step), fmt(first))).judged(format!("{} x host", fmt(step / host)), "", None));
        }
    }
    let l = &r.listed;
    if l.boxes == 0 {
        return;
    }
    t.section(&format!("{} root Docker containers: from serve's start to all their JVMs listed ready", l.boxes));
    let s = |v: &[f64]| median(v).map_or("-".into(), |m| format!("{} s (median of {})", fmt(m), v.len()));
    t.push(Row::proxy_only("docker group member, serve --far-copy: first start (copies jdwpmux into each)", format!("{} s", fmt(l.user_first_s))));
    t.push(Row::proxy_only("docker group member, serve --far-copy: later starts (jdwpmux there)", s(&l.user_s)));
    t.push(Row::proxy_only("root, serve (enters each container)", s(&l.root_s)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_way_takes_its_own_row() {
        let user = json!({"host": "jmb1", "state": "ready", "debugger_port": 8600, "process": {"place": "container jmb1 (docker)"}});
        let root = json!({"host": "local", "state": "ready", "debugger_port": 8601, "process": {"place": "container jmb1 (docker)"}});
        let here = json!({"host": "local", "state": "ready", "debugger_port": 8602, "process": {"agent": "5005"}});
        let other = json!({"host": "local", "state": "ready", "debugger_port": 8603, "process": {"place": "container jmb10 (docker)"}});
        let far = json!({"host": "jmb1", "state": "ready", "debugger_port": 8604, "process": {"agent": "5005"}});
        let table = [
            (Way::User, [true, false, false, false, false]),
            (Way::Exec, [true, false, false, false, true]),
            (Way::Root, [false, true, false, false, false]),
            (Way::Host, [false, false, true, false, false]),
        ];
        for (way, want) in table {
            let got: Vec<bool> = [&user, &root, &here, &other, &far].iter().map(|r| row_is(way, "jmb1", r)).collect();
            assert_eq!(got, want, "{way:?}");
        }
        assert!(ready(&user));
        assert!(!ready(&json!({"state": "ready", "debugger_port": null})));
        assert!(!ready(&json!({"state": "unreachable", "debugger_port": 8600})));
    }

    #[test]
    fn rows_say_what_was_measured() {
        let reps = vec![StepRep { step_ms: [Some(6.0), Some(5.0), Some(4.0), Some(3.0)], first_ms: [Some(200.0), Some(180.0), Some(150.0), Some(100.0)] }];
        let listed = Listed { boxes: 20, user_first_s: 9.0, user_s: vec![4.0, 5.0], root_s: vec![2.0] };
        let mut t = Table::default();
        rows(&mut t, &DockerRun { steps: 100, reps, listed });
        let text = t.render();
        assert!(text.contains("2.00 x host") && text.contains("1.33 x host"), "{text}");
        assert!(text.contains("20 root Docker containers") && text.contains("(median of 2)"), "{text}");
    }
}
