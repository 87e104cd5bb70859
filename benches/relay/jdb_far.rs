//! The `far` section's jdb (`--far-jdb`): the real `jdb` typed at through the same three
//! paths as the IDE (`ssh -L`, `--far never`, `--far always`) and links, walking as
//! `jdb_walk` says, the delay relay's round trips counted at its marks.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use testkit::delay_link::DelayLink;
use crate::far_paths::{self as fp, FarKind, FarWrapper, Path3};
use crate::jdb_walk::{attach, walk, JdbMarks, JdbRun};
use crate::jvm::Jvm;
use crate::proxy::ProxyBin;
use crate::remote_paths::Target;

/// Steps per run (each `next`, `where`, `locals`), unless the budget ends them sooner.
pub const JDB_STEPS: usize = 6;
/// Stepping stops after this long even if fewer steps were made.
pub const JDB_BUDGET: Duration = Duration::from_secs(20);

/// One jdb session through `kind` against `jvm` (the host of `t`, namespace `ns`); `link` is
/// the delay relay `t` goes through, if any.
#[allow(clippy::too_many_arguments)]
pub fn run(kind: FarKind, jvm: &mut Jvm, t: &Target, ns: &str, bin: &ProxyBin, far: &FarWrapper, steps: usize, link: Option<&DelayLink>) -> Result<JdbRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let (mut path, port) = fp::start(kind, t, bin, far)?;
    let count = || link.map_or(0, DelayLink::turns);
    let mut marks = JdbMarks { start: count(), ..JdbMarks::default() };
    let t0 = Instant::now();
    let (mut jdb_proc, mut jdb) = attach(port)?;
    let mut r = JdbRun::default();
    let session = (|| -> Result<()> {
        walk(&mut jdb, t0, steps, JDB_BUDGET, &count, &mut marks, &mut r)?;
        jdb.send("cont")
    })();
    // jdwpmux goes first while jdb is still attached: the VM sees one disconnect.
    let log = match &mut path {
        Path3::Jdwpmux { proxy, .. } => {
            let l = if session.is_ok() { String::new() } else { proxy.log_tail(3000) };
            proxy.stop();
            l
        }
        Path3::Ssh(r) => r.log_tail(),
    };
    jdb.quit();
    if !jdb_proc.wait_exit(Duration::from_secs(15)) {
        jdb_proc.kill();
    }
    if let Path3::Ssh(r) = &mut path {
        r.stop();
    }
    if kind == FarKind::Far {
        fp::far_gone(ns, Duration::from_secs(20)).with_context(|| format!("after serve stopped; far side's log:\n{}", far.log()))?;
    }
    session.with_context(|| format!("jdb through {}; log:\n{log}\nfar side's log:\n{}", kind.label(), if kind == FarKind::Far { far.log() } else { String::new() }))?;
    r.turns = link.and_then(|_| marks.figures(r.step_ms.len()));
    Ok(r)
}
