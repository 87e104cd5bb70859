//! An IDE-shaped workload: a JDI program (`Ide.java`, compiled here with javac) attaches to
//! the HotSpot debuggee through a path, stops at a breakpoint and steps line after line,
//! reading frames, variables and thread status after every step, as a stepping IDE does,
//! until it has made a given number of JDI calls or a time budget is spent (socat's
//! delayed-ACK stalls make it 40 times slower than the other paths). Its own clock times the
//! stepping part; the figure is calls per second either way.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::jvm::Jvm;
use crate::paths::{PathKind, Relay};
use crate::procs::Proc;
use crate::proxy::ProxyBin;

const IDE_JAVA: &str = include_str!("Ide.java");

/// The compiled JDI program.
pub struct IdeProgram {
    dir: tempfile::TempDir,
}

impl IdeProgram {
    /// `Ide.java` compiled with the kit's `Jdi.java` into a folder of its own.
    pub fn compile() -> Result<IdeProgram> {
        Ok(IdeProgram { dir: compile_jdi("Ide", IDE_JAVA)? })
    }
}

/// The JDI program `class` (its source `source`) compiled with the kit's `Jdi.java`
/// (`javac_jdi`) into a folder of its own.
pub fn compile_jdi(class: &str, source: &str) -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    testkit::jdi::javac_jdi_blocking(dir.path(), &[(&format!("{class}.java"), source)])?;
    Ok(dir)
}

/// One IDE session through one path.
#[derive(Debug, Clone, Default)]
pub struct IdeRun {
    pub calls: u64,
    pub steps: u64,
    /// Wall time of the stepping part, seconds.
    pub secs: f64,
    /// JDI calls per second.
    pub calls_per_s: f64,
    /// Relay CPU over the whole session (None on the direct path).
    pub cpu_us_per_call: Option<f64>,
    /// The debuggee's CPU over the whole session (attach included), per step: what reading
    /// ahead would make the VM pay.
    pub vm_cpu_us_per_step: Option<f64>,
}

impl IdeRun {
    /// Stepping time per step (a step and the 10 reads after it).
    pub fn ms_per_step(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.secs * 1e3 / self.steps as f64)
    }
}

/// Parses the program's `done calls=C steps=S values=V ns=N` line.
pub fn parse_done(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.strip_prefix("done ")?;
    let field = |k: &str| rest.split_whitespace().find_map(|w| w.strip_prefix(k)?.parse::<u64>().ok());
    Some((field("calls=")?, field("steps=")?, field("ns=")?))
}

pub fn run(kind: PathKind, jvm: &mut Jvm, bin: &ProxyBin, prog: &IdeProgram, calls: u64, budget: Duration) -> Result<IdeRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let mut relay = Relay::start(kind, jvm.addr(), bin)?;
    let cpu = relay.cpu();
    let vm_cpu = crate::paths::CpuMeter::start(Some(jvm.pid()));
    let mut cmd = crate::procs::command("java");
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(prog.dir.path())
        .args(["Ide", "127.0.0.1", &relay.addr().port().to_string(), &calls.to_string()])
        .arg(budget.as_millis().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut ide = Proc::spawn("Ide", &mut cmd)?;
    let stdout = ide.take_stdout().context("Ide stdout")?;
    let done = BufReader::new(stdout).lines().map_while(Result::ok).find_map(|l| parse_done(&l));
    let cpu_ns = cpu.ns();
    let vm_cpu_ns = vm_cpu.ns();
    // The proxy goes first while the IDE is still attached: the VM sees one disconnect.
    if matches!(relay, Relay::Proxy { .. }) {
        relay.stop();
    }
    if let Some(mut stdin) = ide.take_stdin() {
        let _ = stdin.flush();
    }
    if !ide.wait_exit(Duration::from_secs(10)) {
        ide.kill();
    }
    relay.stop();
    let Some((made, steps, ns)) = done else {
        let log = relay.proxy_log().unwrap_or_default();
        bail!("the IDE program ended without its result line; proxy log tail:\n{log}");
    };
    let secs = ns as f64 / 1e9;
    Ok(IdeRun {
        calls: made,
        steps,
        secs,
        calls_per_s: made as f64 / secs,
        cpu_us_per_call: cpu_ns.map(|c| c as f64 / 1e3 / made as f64),
        vm_cpu_us_per_step: vm_cpu_ns.filter(|_| steps > 0).map(|c| c as f64 / 1e3 / steps as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_line() {
        assert_eq!(parse_done("done calls=20003 steps=1819 values=7276 ns=4200000000"), Some((20003, 1819, 4_200_000_000)));
        assert_eq!(parse_done("attached"), None);
        assert_eq!(parse_done("done calls=x steps=1 ns=2"), None);
    }
}
