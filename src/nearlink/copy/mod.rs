//! This binary copied to a host that has no usable jdwpmux (`serve --far-copy`): probed,
//! judged, copied and checked through the host's ssh master (no new login), kept in the
//! user's cache folder there by version, and found there by the next start.
//!
//! - [`plan`]: the scripts run on the host, what the probe printed, and the decision. Pure.
//! - [`glibc`]: which glibc this binary needs, from its ELF version needs. Pure.
//!
//! This file is the thin running part: it runs the scripts through the master and logs.

pub mod glibc;
pub mod plan;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::process::Command;
use tracing::info;

use self::glibc::Glibc;
use self::plan::{Build, Mismatch, Plan};
use super::ready::Ready;
use super::ssh::{self, FarUnusable};
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
    #[error("cannot tell which glibc this jdwpmux needs: {0}")]
    Glibc(String),
    #[error("copying to {0}")]
    Copy(String),
}

/// The jdwpmux at `far_path` on the host, started; when there is none that can be used and
/// `copy` is on, this binary's copy in the host's cache folder (copied there first when it
/// is not there yet), started.
pub async fn start(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str, far_path: &str, copy: bool) -> Result<Ready, FarUnusable> {
    let first = match ssh::start(ssh, control, dest, far_path).await {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    if !copy {
        return Err(first);
    }
    match ensure(ssh, control, dest, label).await {
        Ok(path) => ssh::start(ssh, control, dest, &path.display().to_string()).await,
        Err(why) => Err(FarUnusable::NotCopied { first: first.to_string(), why: why.to_string() }),
    }
}

/// This binary's copy on the host: found in its cache folder, or copied there now.
pub async fn ensure(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str) -> Result<PathBuf, CopyError> {
    let build = this_build()?;
    let out = through_master(ssh, control, dest, &plan::probe_script(&build.version), Stdio::null(), PROBE_TIMEOUT).await.map_err(CopyError::Probe)?;
    let probe = plan::parse_probe(&out).map_err(|e| CopyError::Probe(e.to_string()))?;
    match plan::decide(&probe, &build) {
        Plan::Refuse(m) => Err(m.into()),
        Plan::Use(path) => {
            info!(host = %label, path = %path.display(), "jdwpmux {} found in {} on {label} (copied there before); nothing copied", build.version, path.display());
            Ok(path)
        }
        Plan::Copy(dir) => copy(ssh, control, dest, label, &dir, &build).await,
    }
}

async fn copy(ssh: &SshOptions, control: &Path, dest: &Destination, label: &str, dir: &Path, build: &Build) -> Result<PathBuf, CopyError> {
    let exe = std::env::current_exe().map_err(|source| CopyError::Exe { path: "the running binary".into(), source })?;
    let io = |source| CopyError::Exe { path: exe.clone(), source };
    let file = std::fs::File::open(&exe).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
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

/// What this binary is and needs; the glibc it needs is read from the binary once.
pub(crate) fn this_build() -> Result<Build, CopyError> {
    static NEED: OnceLock<Result<Option<Glibc>, String>> = OnceLock::new();
    let need = NEED.get_or_init(|| {
        if !cfg!(target_env = "gnu") {
            return Ok(None);
        }
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&exe).map_err(|e| format!("{}: {e}", exe.display()))?;
        glibc::needed(&bytes).map_err(|e| format!("{}: {e}", exe.display()))
    });
    let glibc = need.clone().map_err(CopyError::Glibc)?;
    Ok(Build {
        os: std::env::consts::OS.into(),
        arch: plan::build_arch(std::env::consts::ARCH, cfg!(target_endian = "little")),
        glibc,
        version: env!("CARGO_PKG_VERSION").into(),
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
    }
}
