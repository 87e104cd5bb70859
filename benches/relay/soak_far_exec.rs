//! The far-side soak's second session: `Tally.java` in a real rootful Podman container
//! (`--network=none`, nothing published, its agent on the container's loopback), reached by a
//! second `serve --exec 'tally=podman exec -i C' --far always` (a second serve: `--far-path` is
//! one path for every host, and the container's jdwpmux is at /opt/jm, not where the test
//! host's is), with jdwpmux as the far side in the container. The container's root folder is
//! the `exec` section's: mount points only, this machine's /usr and JDK folders bound read-only
//! (`bound_rootfs`), this build of jdwpmux at /opt/jm, the app's classes at /app and a folder
//! of this machine at /log for the app's log, which the IDE reads here as it reads the test
//! host's. A second IDE (`soak_far_ide`, its own `Shared`) steps it for the whole run.
//!
//! On the schedule (`Act::KillExec`) the exec that carries the link is killed (-9): the
//! `podman exec` child of that serve whose command line ends in `far --attach`, found in
//! /proc. Before the kill the IDE is asked to hold its stop (`Shared::gate`) and holds it until
//! serve has run the exec again and said `the exec to tally is back`; then the log must not
//! have grown (the stop is still the VM's), the IDE steps on (checked as every step: no step
//! lost or done twice) and the far side in the container must be the one of before. Sampled
//! with the others: this serve's and the container's far side's RSS and open files (its pid
//! found from this machine's /proc, in the JVM's pid namespace). Dropping an [`ExecSide`]
//! stops its serve and removes the container, the engine's storage and the root folder,
//! whatever ended the run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::proxy::{Proxy, ProxyBin};
use crate::soak_far_check::{flat, level_and_end, LogTail, Mem, FD_SLACK, RSS_FACTOR, RSS_SLACK_KIB};
use crate::soak_far_ide::{IdeTotals, Shared, GATE_ASKED, GATE_GO_ON, GATE_HOLDING, GATE_OPEN};
use crate::stats::{fmt, fmt_opt, median};
use crate::table::{Row, Table};
use testkit::containers::{agent_up, bound_rootfs, host_binds, java_in_tree, Engine, JDK17_HOME};

/// The exec host's name: the host its rows carry.
pub const EXEC_HOST: &str = "tally";
/// Where this build of jdwpmux is inside the container.
const FAR_PATH: &str = "/opt/jm/jdwpmux";
/// What serve says when a new run of the exec has resumed the link.
const BACK_LINE: &str = "the exec to tally is back";

/// The container removed (`podman rm -f -t 0`) when dropped, before its engine goes.
struct Ctr {
    engine: Arc<Engine>,
    name: String,
}

impl Drop for Ctr {
    fn drop(&mut self) {
        if let Err(e) = self.engine.podman_blocking(&["rm", "--force", "--time", "0", &self.name]) {
            eprintln!("soak-far: could not remove container {}: {e:#}", self.name);
        }
    }
}

/// The container, its JVM and the serve that reaches it. Fields drop in this order: serve
/// (stopped first, in `drop`), the container, then the folders it mounted.
pub struct ExecSide {
    pub proxy: Proxy,
    ctr: Ctr,
    /// The agent's port on the container's loopback.
    pub port: u16,
    /// The JVM's pid here.
    jvm: u32,
    /// The app's log, here.
    pub log: PathBuf,
    _dirs: [tempfile::TempDir; 4],
}

/// The exec kills and what followed each.
#[derive(Debug, Default, Clone)]
pub struct ExecKills {
    pub kills: u64,
    /// Kills done while the IDE held a stop.
    pub held: u64,
    /// Kills after which serve ran the exec again and said so.
    pub relinked: u64,
    /// Kills after which the IDE stepped on.
    pub resumed: u64,
    /// From the kill to serve's line that the exec is back.
    pub relink_ms: Vec<f64>,
}

/// The second session's figures.
#[derive(Debug, Default)]
pub struct ExecRun {
    pub ide: IdeTotals,
    pub kills: ExecKills,
    pub serve: Vec<Mem>,
    pub far: Vec<Mem>,
}

impl ExecSide {
    /// Runs the container with `classes` (Tally's) at /app and waits for its agent, then
    /// serve, and waits until it lists the VM ready.
    pub fn start(bin: &ProxyBin, classes: &Path) -> Result<ExecSide> {
        if !testkit::users::is_root() {
            bail!("the container's session needs root (rootful podman)");
        }
        for tool in ["podman", "runc"] {
            if crate::procs::command("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status().map(|s| !s.success()).unwrap_or(true) {
                bail!("{tool} is not installed (the container's session)");
            }
        }
        let engine = Engine::rootful()?;
        let root = tempfile::tempdir()?;
        bound_rootfs(root.path(), &["opt/jm", "log"])?;
        let bin_dir = tempfile::tempdir()?;
        std::fs::copy(&bin.path, bin_dir.path().join("jdwpmux"))?;
        let logs = tempfile::tempdir()?;
        let serve_dir = tempfile::tempdir()?;
        let ctr = Ctr { engine: engine.clone(), name: testkit::containers::unique_name("soakfar") };
        let port = testkit::containers::free_port();
        let mut args: Vec<String> = ["run", "-d", "--name", &ctr.name, "--network=none", "--env", "container=podman", "--tmpfs", "/tmp"].map(String::from).to_vec();
        args.extend(host_binds());
        for (from, to, how) in [(classes, "/app", "ro"), (bin_dir.path(), "/opt/jm", "ro"), (logs.path(), "/log", "rw")] {
            args.extend(["-v".to_string(), format!("{}:{to}:{how}", from.display())]);
        }
        args.extend(["--rootfs".to_string(), root.path().display().to_string(), format!("{JDK17_HOME}/bin/java")]);
        args.extend(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx64m"].map(String::from));
        args.push(format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{port}"));
        args.extend(["-cp", "/app", "Tally", "/log/tally.log"].map(String::from));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        engine.podman_blocking(&argv).context("podman run")?;
        let log = logs.path().join("tally.log");
        let jvm = wait_agent(&ctr, port, &log)?;
        let env: Vec<(&str, String)> = engine.env().into_iter().map(|(k, v)| (k, v.display().to_string())).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let control = serve_dir.path().join("control.sock").display().to_string();
        let exec = format!("{EXEC_HOST}=podman exec -i {}", ctr.name);
        let serve: Vec<String> = ["--control", &control, "serve", "--no-scan", "--no-proc", "--no-adb", "--base-port", "0", "--current-port", "0", "--exec", &exec, "--far", "always", "--far-path", FAR_PATH].map(String::from).to_vec();
        let proxy = Proxy::start_args(bin, &serve, serve_dir.path(), &env, 1, 0)?;
        let side = ExecSide { proxy, ctr, port, jvm, log, _dirs: [root, bin_dir, logs, serve_dir] };
        crate::soak_far_ide::ready_port(&bin.path, &side.proxy.control, EXEC_HOST, port, Duration::from_secs(120))
            .with_context(|| format!("serve --exec; its rows: {:?}\nits log:\n{}", side.proxy.list_json(bin).unwrap_or_default(), side.proxy.log_tail(3000)))?;
        Ok(side)
    }

    /// The runs of the exec serve has now: its children whose command line ends in `far
    /// --attach` (`podman exec -i C /opt/jm/jdwpmux far --attach`).
    pub fn execs(&self) -> Vec<u32> {
        let serve = self.proxy.pid();
        let pids = std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
        pids.filter(|pid| testkit::containers::ppid(*pid) == Some(serve) && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.ends_with(b"far\0--attach\0"))).collect()
    }

    /// The far side in the container (`jdwpmux far`, not the bridge of an exec): in the JVM's
    /// pid namespace, seen from here.
    pub fn far_pid(&self) -> Option<u32> {
        let live = testkit::process::named_in_pid_ns_of(self.jvm, "jdwpmux").into_iter().filter(|(_, state)| state != "Z");
        live.map(|(pid, _)| pid).find(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty() && !c.ends_with(b"--attach\0")))
    }

    /// Every jdwpmux process left in the container.
    pub fn jdwpmux_left(&self) -> Vec<(u32, String)> {
        testkit::process::named_in_pid_ns_of(self.jvm, "jdwpmux")
    }

    fn backs(&self) -> usize {
        String::from_utf8_lossy(&std::fs::read(&self.proxy.log).unwrap_or_default()).matches(BACK_LINE).count()
    }

    /// The far side's own log in the container (its folder in the container's /tmp), its end.
    pub fn far_log(&self) -> String {
        let out = self.ctr.engine.podman_blocking(&["exec", &self.ctr.name, "sh", "-c", "tail -c 6000 /tmp/jdwpmux-far-0/far.log"]);
        out.unwrap_or_else(|e| format!("(not read: {e:#})"))
    }

    /// The exec killed while the IDE (`shared`) holds a stop; then serve's new exec, the same
    /// far side, and the IDE stepping on, within `limit` each. What went wrong goes to `shared`.
    pub fn kill_exec(&self, shared: &Shared, limit: Duration, k: &mut ExecKills) {
        shared.gate.store(GATE_ASKED, Ordering::SeqCst);
        let held = shared.gate_is(GATE_HOLDING, limit) || shared.gate.compare_exchange(GATE_ASKED, GATE_OPEN, Ordering::SeqCst, Ordering::SeqCst).is_err();
        if !held {
            shared.problem(format!("the IDE held no stop within {limit:?} for the exec kill"));
        }
        let (execs, far, backs) = (self.execs(), self.far_pid(), self.backs());
        eprintln!("soak-far: killing the exec into the container (pids {execs:?}; far side {far:?}; the IDE holding a stop: {held})");
        if execs.is_empty() {
            shared.problem("no exec into the container to kill".into());
            shared.gate.store(GATE_GO_ON, Ordering::SeqCst);
            return;
        }
        let t = Instant::now();
        for pid in &execs {
            // SAFETY: kill(2) with a pid read just now of serve's own child.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        k.kills += 1;
        k.held += u64::from(held);
        let steps = shared.steps.load(Ordering::SeqCst);
        let deadline = t + limit;
        let relinked = loop {
            if self.backs() > backs && self.execs().iter().any(|p| !execs.contains(p)) {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if relinked {
            k.relinked += 1;
            k.relink_ms.push(t.elapsed().as_secs_f64() * 1e3);
        } else {
            shared.problem(format!("serve did not run the exec again within {limit:?}; its log:\n{}", self.proxy.log_tail(2000)));
        }
        if self.far_pid() != far {
            shared.problem(format!("the far side in the container is another one after the exec kill: {far:?} before, {:?} now", self.far_pid()));
        }
        // The IDE checks the log once more, then steps on.
        if held {
            shared.gate.store(GATE_GO_ON, Ordering::SeqCst);
        }
        let deadline = Instant::now() + limit;
        while shared.steps.load(Ordering::SeqCst) <= steps {
            if Instant::now() > deadline || shared.stop.load(Ordering::SeqCst) {
                shared.problem(format!("the IDE did not step on within {limit:?} after the exec kill"));
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        k.resumed += 1;
    }

    /// Samples this serve and the far side in the container.
    pub fn sample(&self, at: Duration, x: &mut ExecRun) {
        if let Some(m) = crate::soak_far::mem(self.proxy.pid(), at) {
            x.serve.push(m);
        }
        if let Some(m) = self.far_pid().and_then(|pid| crate::soak_far::mem(pid, at)) {
            x.far.push(m);
        }
    }
}

impl Drop for ExecSide {
    fn drop(&mut self) {
        self.proxy.stop();
    }
}

/// Waits for the JVM in the container: its pid here (`podman inspect`, then the java in that
/// tree), its agent listening on the container's loopback, and the app's first log line.
fn wait_agent(ctr: &Ctr, port: u16, log: &Path) -> Result<u32> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let top = ctr.engine.podman_blocking(&["inspect", "--format", "{{.State.Pid}}", &ctr.name])?;
        let jvm = top.trim().parse::<u32>().ok().filter(|p| *p != 0).and_then(java_in_tree);
        let mut tail = LogTail::default();
        tail.feed(&std::fs::read(log).unwrap_or_default());
        if let Some(jvm) = jvm.filter(|j| agent_up(*j, port) && tail.value.is_some()) {
            return Ok(jvm);
        }
        if Instant::now() > deadline {
            let logs = ctr.engine.podman_blocking(&["logs", &ctr.name]).unwrap_or_default();
            bail!("the JVM in container {} did not listen on 127.0.0.1:{port} and log within 120 s (pid {top:?}); its output:\n{logs}", ctr.name);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The second session's failures beyond its IDE's own: no step, an exec kill not held
/// through, not run again or not resumed, no kill at all, memory or open files not flat.
pub fn judge(x: &ExecRun, warmup: Duration, planned: usize) -> Vec<String> {
    let mut add = Vec::new();
    if x.ide.steps == 0 {
        add.push("the container's session: no step was completed".to_string());
    }
    let k = &x.kills;
    if k.kills != planned as u64 || k.held != k.kills || k.relinked != k.kills || k.resumed != k.kills {
        add.push(format!("the container's session: exec kills {} of {planned} planned, {} held through a stop, {} run again, {} resumed", k.kills, k.held, k.relinked, k.resumed));
    }
    for (who, samples) in [("the container's serve", &x.serve), ("the far side in the container", &x.far)] {
        match level_and_end(samples, warmup) {
            Some((level, end)) => {
                let (rss, fds) = flat(&level, &end);
                if !rss || !fds {
                    add.push(format!("{who} not flat: {} KiB {} fds at {:?}, {} KiB {} fds at the end", level.rss_kib, level.fds, level.at, end.rss_kib, end.fds));
                }
            }
            None => add.push(format!("no samples of {who}")),
        }
    }
    add
}

/// The second session's rows.
pub fn rows(t: &mut Table, x: &ExecRun, warmup: Duration) {
    let i = &x.ide;
    let ok = |b: bool| Some(b);
    t.push(Row::proxy_only("soak-far exec: steps done, stops checked; IDE sessions (the container's JVM)", format!("{}, {}; {}", i.steps, i.stops, i.sessions)).judged(String::new(), "> 0", ok(i.steps > 0)));
    t.push(
        Row::proxy_only("soak-far exec: stops differing from the app's log / holds the app ran in / sessions lost", format!("{} / {} / {}", i.values_wrong, i.ran_while_stopped, i.sessions_lost))
            .judged(String::new(), "0 / 0 / 0", ok(i.values_wrong == 0 && i.ran_while_stopped == 0 && i.sessions_lost == 0)),
    );
    let q = |p: f64| crate::far::quantile(&i.step_ms, p);
    t.push(Row::proxy_only("soak-far exec: ms per step median / p99 / max (a stop held through an exec kill not counted)", format!("{} / {} / {}", fmt_opt(median(&i.step_ms)), fmt_opt(q(99.0)), fmt_opt(q(100.0)))));
    let k = &x.kills;
    t.push(
        Row::proxy_only("soak-far exec: execs killed / held through a stop / run again / the IDE stepped on", format!("{} / {} / {} / {}", k.kills, k.held, k.relinked, k.resumed))
            .judged(String::new(), "all equal, > 0", ok(k.kills > 0 && k.held == k.kills && k.relinked == k.kills && k.resumed == k.kills)),
    );
    let relink = |p: f64| crate::far::quantile(&k.relink_ms, p);
    t.push(Row::proxy_only("soak-far exec: ms from the kill to serve's `exec is back` median / max", format!("{} / {}", fmt_opt(median(&k.relink_ms)), fmt_opt(relink(100.0)))));
    let rule = format!("end <= level x {RSS_FACTOR} + {} MiB, <= level + {FD_SLACK} fds", RSS_SLACK_KIB / 1024);
    for (who, samples) in [("serve --exec", &x.serve), ("far side in the container", &x.far)] {
        let le = level_and_end(samples, warmup);
        let cell = le.map_or("-".into(), |(l, e)| format!("{} MiB {} fds at {:.0} s / {} MiB {} fds at {:.0} s", fmt(l.rss_kib as f64 / 1024.0), l.fds, l.at.as_secs_f64(), fmt(e.rss_kib as f64 / 1024.0), e.fds, e.at.as_secs_f64()));
        t.push(Row::proxy_only(&format!("soak-far exec: {who} RSS, open files: level after warm-up / end"), cell).judged(String::new(), &rule, le.map(|(l, e)| flat(&l, &e) == (true, true))));
        let series: Vec<String> = samples.iter().map(|m| fmt(m.rss_kib as f64 / 1024.0)).collect();
        t.push(Row::proxy_only(&format!("soak-far exec: {who} RSS MiB at each sample"), series.join(", ")));
    }
}
