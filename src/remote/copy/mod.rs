//! This binary copied to a host that has no usable jdwpmux (`serve --far-copy`): probed,
//! judged, copied and checked through the host's ssh master (no new login), kept in the
//! user's cache folder there by version, and found there by the next start of this same
//! build (another build of the version is copied over).
//!
//! - [`plan`]: the scripts run on the host, what the probe printed, and the decision. Pure.
//! - [`glibc`]: which glibc this binary needs, from its ELF version needs. Pure.
//! - [`identity`]: which build a file is (its size and CRCs, as `cksum` or `crc32` on the
//!   host says them). Pure.
//!
//! This file is the thin running part: it runs the scripts through the master and logs.

pub mod glibc;
pub mod identity;
pub mod plan;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::process::Command;
use tracing::{debug, info};

use self::glibc::Glibc;
use self::identity::Identity;
use self::plan::{Build, Mismatch, Plan};
use crate::remote::protocol::ready::Ready;
use crate::remote::ssh::start_far::{self as ssh, FarUnusable};
use crate::remote::{Destination, SshOptions};

/// How long the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a copy may take: this, plus a second per `MIN_RATE` bytes (a slow link is slow,
/// a stuck one ends).
const COPY_TIMEOUT: Duration = Duration::from_secs(60);
const MIN_RATE: u64 = 50_000;

/// Why this binary was not copied to a host (or not found there).
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{0}")]
    Mismatch(#[from] Mismatch),
    #[error("{0}")]
    Probe(String),
    #[error("cannot read this jdwpmux ({path}): {source}")]
    Exe { path: PathBuf, source: std::io::Error },
    /// This binary could not be read, or its glibc needs not told: said whole.
    #[error("{0}")]
    This(String),
    #[error("copying to {0}")]
    Copy(String),
}

/// The jdwpmux at `far_path` on the host, started; when there is none that can be used and
/// `copy` is on, this binary's copy in the host's cache folder (copied there first when it
/// is not there yet), started.
pub async fn start(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str, far_path: &str, copy: bool) -> Result<Ready, FarUnusable> {
    let first = match start_or_beside(ssh, control, dest, label, far_path).await {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    if !copy {
        return Err(first);
    }
    match ensure(ssh, control, dest, label).await {
        Ok(path) => start_or_beside(ssh, control, dest, label, &path.display().to_string()).await,
        Err(why) => Err(FarUnusable::NotCopied { first: first.to_string(), why: why.to_string() }),
    }
}

/// The far side at `far_path` started (or found); when a far side of another protocol runs
/// in its folder (a leftover of an older jdwpmux, which would lock this one out until its
/// hold ends), this one's is started beside it (`far --beside`: a folder of its protocol's
/// inside), said in one line the first time. The one running is left alone: whether it
/// holds a debugger cannot be asked in a protocol this side does not speak, and it ends by
/// itself after its hold once unused. Never a loop: the next start finds this one's beside
/// it, and a binary that cannot start beside one gives the first refusal back.
async fn start_or_beside(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str, far_path: &str) -> Result<Ready, FarUnusable> {
    let first = ssh::start(ssh, control, dest, far_path, false).await;
    let Err(FarUnusable::Version { running: Some(pid), version, protocols }) = &first else { return first };
    match ssh::start(ssh, control, dest, far_path, true).await {
        Ok(ready) => {
            let line = beside_line(label, *pid, version, protocols, ready.pid);
            if first_time(&FOUND_SAID, label, &ready.socket) {
                info!(host = %label, socket = %ready.socket.display(), "{line}");
            } else {
                debug!(host = %label, "{line}");
            }
            Ok(ready)
        }
        Err(e) => {
            debug!(host = %label, "jdwpmux could not start beside the one of another protocol: {e}");
            first
        }
    }
}

/// The one line said when this jdwpmux's far side starts beside one of another protocol.
pub fn beside_line(label: &str, pid: u32, version: &str, protocols: &std::ops::RangeInclusive<u16>, ours: Option<u32>) -> String {
    let ours = ours.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    format!(
        "jdwpmux on {label} (pid {pid}, jdwpmux {version}) speaks far-side protocol {}, which this one does not: this one's runs beside it ({ours}, in a folder of its own) and is used; pid {pid} is left alone (it ends by itself after its hold once unused)",
        crate::remote::protocol::ready::said(protocols)
    )
}

/// This binary's copy on the host: found in its cache folder, or copied there now.
pub async fn ensure(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str) -> Result<PathBuf, CopyError> {
    let build = build_off_runtime().await?;
    let out = through_master(ssh, control, dest, &plan::probe_script(&build.version), Stdio::null(), PROBE_TIMEOUT).await.map_err(CopyError::Probe)?;
    let probe = plan::parse_probe(&out).map_err(|e| CopyError::Probe(e.to_string()))?;
    match plan::decide(&probe, &build) {
        Plan::Refuse(m) => Err(m.into()),
        Plan::Use(path) => {
            let line = format!("jdwpmux {} found in {} on {label} (copied there before); nothing copied", build.version, path.display());
            // Every start looks again (a reconnect runs two: the check that the far side
            // still runs, and the start through the new master): news only the first time.
            if first_time(&FOUND_SAID, label, &path) {
                info!(host = %label, path = %path.display(), "{line}");
            } else {
                debug!(host = %label, path = %path.display(), "{line}");
            }
            Ok(path)
        }
        Plan::Copy(dir, there) => {
            if let Some(why) = there.said() {
                info!(host = %label, path = %dir.join(plan::NAME).display(), "jdwpmux {} in {} on {label}: {why}", build.version, dir.join(plan::NAME).display());
            }
            copy(ssh, control, dest, label, &dir, &build).await
        }
    }
}

/// The hosts and paths a once-said line was said for already (a copy found there, a far side
/// started beside another), for this daemon's life.
static FOUND_SAID: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// Whether `label`'s copy at `path` is said now for the first time (and notes it). Bounded
/// by the hosts served and the paths their copies were found at.
fn first_time(said: &Mutex<Vec<(String, PathBuf)>>, label: &str, path: &Path) -> bool {
    let mut said = said.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.iter().any(|(l, p)| l == label && p == path) {
        return false;
    }
    said.push((label.to_string(), path.to_path_buf()));
    true
}

async fn copy(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str, dir: &Path, build: &Build) -> Result<PathBuf, CopyError> {
    let exe = this_exe().map_err(|source| CopyError::Exe { path: "the running binary".into(), source })?;
    let file = std::fs::File::open(&exe).map_err(|source| CopyError::Exe { path: exe.clone(), source })?;
    let size = build.identity.size;
    let path = dir.join(plan::NAME);
    info!(host = %label, path = %path.display(), bytes = size, "copying this jdwpmux ({size} bytes) to {label}:{}", path.display());
    let began = Instant::now();
    let limit = COPY_TIMEOUT + Duration::from_secs(size / MIN_RATE);
    let out = through_master(ssh, control, dest, &plan::copy_script(dir, size, &build.version), Stdio::from(file), limit).await.map_err(|e| CopyError::Copy(format!("{label}: {e}")))?;
    if !plan::runs_as(&out, &build.version) {
        return Err(CopyError::Copy(format!("{label}: the copy said {:?} to --version", out.trim())));
    }
    info!(host = %label, path = %path.display(), "copied this jdwpmux to {label} in {:.1} s", began.elapsed().as_secs_f64());
    Ok(path)
}

/// Runs `script` with `sh` on the host through the master; its output, or what went wrong.
async fn through_master(ssh: &SshOptions, control: &Path, dest: &Destination, script: &str, stdin: Stdio, limit: Duration) -> Result<String, String> {
    let remote = format!("sh -c {}", ssh::shell_quote(script));
    let args = ssh::master_command(ssh, control, dest, &remote).map_err(|e| e.to_string())?;
    let run = Command::new(&ssh.program).args(args).stdin(stdin).kill_on_drop(true).output();
    let out = match tokio::time::timeout(limit, run).await {
        Err(_) => return Err(format!("no answer within {limit:?}")),
        Ok(Err(e)) => return Err(format!("cannot run {}: {e}", ssh.program.display())),
        Ok(Ok(o)) => o,
    };
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let said: String = err.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("nothing").chars().take(300).collect();
    Err(match out.status.code() {
        Some(c) => format!("exited with {c}: {said}"),
        None => format!("was ended by a signal: {said}"),
    })
}

/// The file of the running binary, to read and copy: `/proc/self/exe` where there is one,
/// which is the bytes running even when the path they were started from has since been
/// rebuilt, so the identity compared and the bytes copied are one build.
pub(crate) fn this_exe() -> std::io::Result<PathBuf> {
    let proc = Path::new("/proc/self/exe");
    if proc.exists() {
        return Ok(proc.to_path_buf());
    }
    std::env::current_exe()
}

/// `this_build` on a blocking thread: its first call reads and sums the whole binary.
pub(crate) async fn build_off_runtime() -> Result<Build, CopyError> {
    tokio::task::spawn_blocking(this_build).await.map_err(|e| CopyError::This(format!("reading this jdwpmux: {e}")))?
}

/// What this binary is and needs; its bytes are read once, for the glibc it needs and its
/// identity.
pub(crate) fn this_build() -> Result<Build, CopyError> {
    static READ: OnceLock<Result<(Option<Glibc>, Identity), String>> = OnceLock::new();
    let read = READ.get_or_init(|| {
        let exe = this_exe().map_err(|e| format!("cannot find this jdwpmux: {e}"))?;
        let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read this jdwpmux ({}): {e}", exe.display()))?;
        let glibc = if cfg!(target_env = "gnu") { glibc::needed(&bytes).map_err(|e| format!("cannot tell which glibc this jdwpmux needs: {}: {e}", exe.display()))? } else { None };
        Ok((glibc, Identity::of(&bytes)))
    });
    let (glibc, identity) = read.clone().map_err(CopyError::This)?;
    Ok(Build {
        os: std::env::consts::OS.into(),
        arch: plan::build_arch(std::env::consts::ARCH, cfg!(target_endian = "little")),
        glibc,
        version: env!("CARGO_PKG_VERSION").into(),
        identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_build_is_what_it_runs_on() {
        let b = this_build().unwrap();
        assert_eq!((b.os.as_str(), b.version.as_str()), (std::env::consts::OS, env!("CARGO_PKG_VERSION")));
        assert_eq!(b.glibc.is_some(), cfg!(target_env = "gnu"));
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(b.identity, Identity::of(&bytes), "the identity is of the bytes running");
    }

    #[test]
    fn the_beside_line_names_both_far_sides() {
        assert_eq!(
            beside_line("box", 41, "0.0.9", &(1..=1), Some(77)),
            "jdwpmux on box (pid 41, jdwpmux 0.0.9) speaks far-side protocol 1, which this one does not: this one's runs beside it (pid 77, in a folder of its own) and is used; pid 41 is left alone (it ends by itself after its hold once unused)"
        );
        assert!(beside_line("box", 41, "?", &crate::remote::protocol::ready::UNKNOWN, None).contains("speaks far-side protocol unknown (it did not record it), which this one does not"));
    }

    #[test]
    fn a_copy_found_is_news_once_per_host_and_path() {
        let said = Mutex::new(Vec::new());
        let (a, b) = (Path::new("/home/u/.cache/jdwpmux/0.1.0/jdwpmux"), Path::new("/other/jdwpmux"));
        assert!(first_time(&said, "box", a), "the first start says it");
        assert!(!first_time(&said, "box", a), "the check and the start of a reconnect do not say it again");
        assert!(first_time(&said, "box", b), "found elsewhere: news");
        assert!(first_time(&said, "other", a), "another host: news");
        assert!(!first_time(&said, "other", a));
    }
}
