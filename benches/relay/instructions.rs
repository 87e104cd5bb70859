//! The relay's own work per round trip, as instructions in user space counted by valgrind's
//! callgrind: the relay runs under `valgrind --tool=callgrind`, the counters are zeroed
//! after the warm-up (`callgrind_control -z`) and dumped after N round trips (`-d`). A count,
//! not a time: the same binary and traffic give the same figure on a busy machine, on any
//! CPU. The kernel's part (system calls, the TCP path, wake-ups) is not in it: that is what
//! `where_time` counts.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::jvm::Jvm;
use crate::jvm_suite::latency;
use crate::paths::{PathKind, Relay};
use crate::procs::Socat;
use crate::proxy::{Proxy, ProxyBin};
use crate::where_time::{with_relay_from, Subject};

/// The total of an event line of a callgrind output file ("summary: N" or "totals: N";
/// the first number is instructions, `Ir`).
pub fn parse_totals(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:"))?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Whether valgrind and callgrind_control are installed.
pub fn available() -> bool {
    let ok = |p: &str, a: &str| Command::new(p).arg(a).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    ok("valgrind", "--version") && ok("callgrind_control", "--version")
}

/// Instructions per round trip of `s`'s relay over `n` Version round trips.
pub fn measure(s: Subject, jvm: &mut Jvm, bin: &ProxyBin, n: usize) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("callgrind.out");
    let valgrind = ["valgrind".to_string(), "--tool=callgrind".into(), format!("--callgrind-out-file={}", out.display())];
    let start = |kind: PathKind, vm: SocketAddr| -> Result<Relay> {
        match kind {
            PathKind::Jdwpmux => {
                // The proxy starts through a script that execs valgrind: the pid stays the same.
                let script = dir.path().join("jdwpmux-under-callgrind");
                let quoted: Vec<String> = valgrind.iter().map(|a| format!("\"{a}\"")).collect();
                let text = format!("#!/bin/sh\nexec {} \"{}\" \"$@\"\n", quoted.join(" "), bin.path.display());
                std::fs::write(&script, text).context("write the callgrind wrapper")?;
                std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).context("make the wrapper executable")?;
                let wrapped = ProxyBin { path: script, ..bin.clone() };
                let pdir = tempfile::tempdir()?;
                let p = Proxy::start(&wrapped, &[vm], pdir.path())?;
                Ok(Relay::Proxy { proxy: p, _dir: pdir })
            }
            PathKind::Socat => Ok(Relay::Socat(Socat::start_under(vm.port(), None, &valgrind)?)),
            other => bail!("no relay process on the {} path", other.label()),
        }
    };
    let total = with_relay_from(s, jvm, start, |relay, c, version| {
        let pid = relay.pid().context("no relay process")?;
        control(pid, "-z")?;
        latency(c, n, version).context("round trips under callgrind")?;
        control(pid, "-d")?;
        dumped(&out, Duration::from_secs(30))
    })?;
    Ok(total as f64 / n as f64)
}

/// Runs `callgrind_control FLAG PID`.
fn control(pid: u32, flag: &str) -> Result<()> {
    let st = Command::new("callgrind_control").arg(flag).arg(pid.to_string()).stdout(Stdio::null()).stderr(Stdio::null()).status().context("run callgrind_control")?;
    if !st.success() {
        bail!("callgrind_control {flag} {pid} failed ({st})");
    }
    Ok(())
}

/// The totals of the first dump (`OUT.1`), once it is written.
fn dumped(out: &Path, within: Duration) -> Result<u64> {
    let file = PathBuf::from(format!("{}.1", out.display()));
    let deadline = Instant::now() + within;
    loop {
        if let Some(t) = std::fs::read_to_string(&file).ok().as_deref().and_then(parse_totals) {
            return Ok(t);
        }
        if Instant::now() > deadline {
            bail!("no callgrind dump in {}", file.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_of_a_dump() {
        let text = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd:  jdwpmux serve\npart: 1\n\npositions: line\nevents: Ir\nsummary: 134892408\n\nfl=(1) ???\nfn=(1) main\n0 12\n\ntotals: 134892408\n";
        assert_eq!(parse_totals(text), Some(134_892_408));
        assert_eq!(parse_totals("totals: 77 3\n"), Some(77), "the first event is Ir");
        assert_eq!(parse_totals("events: Ir\nsummary: x\n"), None);
        assert_eq!(parse_totals(""), None);
    }
}
