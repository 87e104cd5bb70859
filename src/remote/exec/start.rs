//! The jdwpmux a container's exec runs: the one the container has (`--far-path`, else
//! `jdwpmux` on its PATH), asked for its version through the exec; else, with `--far-copy`,
//! this binary copied in through the same exec (probed first: `place`), kept by version in
//! the folder the probe chose and found there by the next start. What cannot be done is one
//! line saying why and what to do; what the exec itself said when it failed (`kubectl`'s
//! "Forbidden", a missing container, Docker's errors on stdout) is its own words (`answer`).

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use tracing::info;

use super::answer::Answer;
use super::place::{self, Refusal};
use super::spec::ExecSpec;
use crate::remote::copy::plan::{self, Mismatch, Plan};
use crate::remote::far_choice::FarChoice;
use crate::remote::ssh::start_far::bounded_output;

/// How long `--version` or the probe may take through the exec.
const ASK_TIMEOUT: Duration = Duration::from_secs(30);
/// What they may print, each stream.
const MAX_ANSWER: usize = 64 * 1024;
/// A copy may take this, plus a second per `MIN_RATE` bytes.
const COPY_TIMEOUT: Duration = Duration::from_secs(60);
const MIN_RATE: u64 = 1_000_000;

/// Why the far side cannot be run in the container now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotStarted {
    /// The exec itself failed: its words. Tried again after a backoff.
    #[error("{0}")]
    Exec(String),
    /// It runs, but no jdwpmux can be used there: why, and what to do. Tried again seldom.
    #[error("{0}")]
    Unusable(String),
}

/// How a failed exec is shown: the command, how it ended, what it said (stderr, else stdout).
fn failure(answer: &Answer, spec: &ExecSpec, what: &str) -> NotStarted {
    NotStarted::Exec(answer.failure_text(&format!("{} {what}", crate::safe_text::shown(&spec.text))))
}

async fn ask(spec: &ExecSpec, more: &[&str], stdin: Stdio, limit: Duration) -> Result<Answer, NotStarted> {
    let argv = spec.with(more);
    let (program, args) = argv.split_first().ok_or_else(|| NotStarted::Exec("no command".into()))?;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(stdin).kill_on_drop(true);
    let out = match tokio::time::timeout(limit, bounded_output(cmd, MAX_ANSWER)).await {
        Err(_) => return Err(NotStarted::Exec(format!("`{}` did not answer within {} s", crate::safe_text::shown(&spec.text), limit.as_secs()))),
        Ok(Err(e)) => return Err(NotStarted::Exec(format!("cannot run {program}: {e}"))),
        Ok(Ok(o)) => o,
    };
    Ok(Answer::new(out.status, &out.stdout, &out.stderr))
}

/// The path of the jdwpmux to run in the container.
pub async fn find(spec: &ExecSpec, far: &FarChoice) -> Result<String, NotStarted> {
    let ours = format!("jdwpmux {}", env!("CARGO_PKG_VERSION"));
    let name = &spec.name;
    let first = ask(spec, &[&far.path, "--version"], Stdio::null(), ASK_TIMEOUT).await?;
    let theirs = first.stdout.lines().next().unwrap_or("").trim().to_string();
    let why = if first.code == Some(0) && theirs == ours {
        return Ok(far.path.clone());
    } else if first.code == Some(0) && theirs.starts_with("jdwpmux ") {
        format!("the jdwpmux in {name} ({far_path}) is {theirs}, this one is {ours}", far_path = far.path)
    } else if first.not_found() {
        format!("{name} has no jdwpmux ({} was not found there)", far.path)
    } else {
        return Err(failure(&first, spec, &format!("{} --version", far.path)));
    };
    let image = format!("use an image with {ours} in it (or name it with --far-path)");
    if !far.copy {
        return Err(NotStarted::Unusable(format!("{why}: {image}, or let serve copy this one in through the exec with --far-copy")));
    }
    copy_in(spec, &why, &image).await
}

/// This binary in the container: found where an earlier copy put it, or copied there now.
async fn copy_in(spec: &ExecSpec, why: &str, image: &str) -> Result<String, NotStarted> {
    let name = &spec.name;
    let unusable = |text: String| NotStarted::Unusable(format!("{why}, and this jdwpmux is not copied in: {text}"));
    let build = crate::remote::copy::build_off_runtime().await.map_err(|e| unusable(format!("{e}; {image}")))?;
    let exe = crate::remote::copy::this_exe().map_err(|e| unusable(format!("this binary cannot be read ({e}); {image}")))?;
    let size = build.identity.size;
    let probe = ask(spec, &["sh", "-c", &place::probe_script(&build.version)], Stdio::null(), ASK_TIMEOUT).await?;
    if probe.not_found() {
        return Err(unusable(format!("{name} has no shell (sh) to copy it in with; {image}, or debug it from its node (serve --ssh NODE: jdwpmux there enters the node's containers)")));
    }
    if probe.code != Some(0) {
        return Err(failure(&probe, spec, "sh -c PROBE"));
    }
    let dir = match place::decide(&probe.stdout, &build, size) {
        Ok(Plan::Use(path)) => {
            info!(exec = %name, path = %path.display(), "jdwpmux {} found in {name} at {} (copied there before); nothing copied", build.version, path.display());
            return Ok(path.display().to_string());
        }
        Ok(Plan::Copy(dir, there)) => {
            if let Some(why) = there.said() {
                info!(exec = %name, path = %dir.join(plan::NAME).display(), "jdwpmux {} in {name} at {}: {why}", build.version, dir.join(plan::NAME).display());
            }
            dir
        }
        // A static (musl) build of serve copies itself anywhere its OS and machine match.
        Ok(Plan::Refuse(m @ (Mismatch::NoGlibc { .. } | Mismatch::OldGlibc { .. }))) => {
            return Err(unusable(format!("{}; {image}, or run a static build of jdwpmux here (cargo build --release --target {}-unknown-linux-musl), which --far-copy copies into any image", Refusal::from(m), std::env::consts::ARCH)))
        }
        Ok(Plan::Refuse(m)) => return Err(unusable(format!("{}; {image}", Refusal::from(m)))),
        Err(r @ Refusal::NoPlace(_)) => {
            let mount = if r.noexec() { "or mount /tmp so that files there can run (docker run --tmpfs /tmp:exec, a Kubernetes emptyDir)" } else { "or mount a writable volume (an emptyDir at /tmp)" };
            return Err(unusable(format!("{r}; {image}, {mount}")));
        }
        Err(r) => return Err(unusable(format!("{r}; {image}"))),
    };
    let path = dir.join(plan::NAME);
    info!(exec = %name, path = %path.display(), bytes = size, "copying this jdwpmux ({size} bytes) into {name} at {}", path.display());
    let began = std::time::Instant::now();
    let file = std::fs::File::open(&exe).map_err(|e| unusable(format!("{}: {e}", exe.display())))?;
    let limit = COPY_TIMEOUT + Duration::from_secs(size / MIN_RATE);
    let copied = ask(spec, &["sh", "-c", &plan::copy_script(&dir, size, &build.version)], Stdio::from(file), limit).await?;
    if copied.code != Some(0) || !plan::runs_as(&copied.stdout, &build.version) {
        return Err(failure(&copied, spec, "sh -c COPY"));
    }
    info!(exec = %name, path = %path.display(), "copied this jdwpmux into {name} in {:.1} s", began.elapsed().as_secs_f64());
    Ok(path.display().to_string())
}
