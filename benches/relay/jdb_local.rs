//! The `jvm` section's jdb: the real `jdb` walking the local HotSpot debuggee (`jdb_walk`:
//! attach, the first stop, then `next`, `where`, `locals` a step) through each local path
//! (direct, socat, jdwpmux), as a person stepping with jdb feels it: milliseconds from each
//! `next` to `locals` answered.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::jdb_walk::{attach, walk, JdbMarks, JdbRun};
use crate::jvm::Jvm;
use crate::paths::{PathKind, Relay};
use crate::proxy::ProxyBin;

/// Steps per run, unless the budget ends them sooner (socat's delayed-ACK stalls).
pub const STEPS: usize = 40;
/// Stepping stops after this long even if fewer steps were made.
pub const BUDGET: Duration = Duration::from_secs(10);

/// One jdb session through `kind` against the local `jvm`, at most `steps` steps.
pub fn run(kind: PathKind, jvm: &mut Jvm, bin: &ProxyBin, steps: usize) -> Result<JdbRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    jvm.session_ended();
    let mut relay = Relay::start(kind, jvm.addr(), bin)?;
    let t0 = Instant::now();
    let (mut jdb_proc, mut jdb) = attach(relay.addr().port())?;
    let mut r = JdbRun::default();
    let mut marks = JdbMarks::default();
    let session = (|| -> Result<()> {
        walk(&mut jdb, t0, steps, BUDGET, &|| 0, &mut marks, &mut r)?;
        jdb.send("cont")
    })();
    let log = if session.is_ok() { String::new() } else { relay.proxy_log().unwrap_or_default() };
    // The proxy goes first while jdb is still attached: the VM sees one disconnect.
    if matches!(relay, Relay::Proxy { .. }) {
        relay.stop();
    }
    jdb.quit();
    if !jdb_proc.wait_exit(Duration::from_secs(15)) {
        jdb_proc.kill();
    }
    relay.stop();
    session.with_context(|| format!("jdb through {}; proxy log:\n{log}", kind.label()))?;
    anyhow::ensure!(!r.step_ms.is_empty(), "jdb through {} made no step within {:?}", kind.label(), BUDGET);
    Ok(r)
}
