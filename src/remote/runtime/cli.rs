//! The runtime's CLI as this user runs it: whether it may be used now, a container's name
//! from it, and the `--exec` that reaches a container through it. Docker's CLI follows its
//! own configuration (`DOCKER_HOST`, `docker context`), so a remote engine or Docker Desktop
//! is used as the user set it up.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::names::{self, RuntimeName};
use crate::remote::exec::ExecSpec;
use crate::remote::ssh::start_far::bounded_output;

/// The runtime's CLI.
pub const DOCKER: &str = "docker";
/// How long `docker version` may take to say whether the engine answers this user.
const ASK_TIMEOUT: Duration = Duration::from_secs(20);
/// A refusal is asked again after this (the user added to the group, the engine started).
const ASK_AGAIN: Duration = Duration::from_secs(60);
/// What a CLI answer may print, each stream.
const MAX_ANSWER: usize = 16 * 1024;

/// Whether this user may use the runtime: asked once, a refusal again after [`ASK_AGAIN`].
#[derive(Debug, Default)]
pub struct Access {
    /// The last answer and when: Ok(the engine's version) or Err(why not).
    last: Option<(Instant, Result<String, String>)>,
}

impl Access {
    /// Ok(the engine's version) when this user may use it now; else why not.
    pub async fn check(&mut self) -> Result<String, String> {
        match &self.last {
            Some((_, Ok(v))) => return Ok(v.clone()),
            Some((at, Err(why))) if at.elapsed() < ASK_AGAIN => return Err(why.clone()),
            _ => {}
        }
        let answer = ask_version().await;
        self.last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// The last answer, without asking (None: never asked).
    pub fn known(&self) -> Option<bool> {
        self.last.as_ref().map(|(_, a)| a.is_ok())
    }
}

async fn run(args: &[&str]) -> Result<(Option<i32>, String, String), String> {
    let mut cmd = Command::new(DOCKER);
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(ASK_TIMEOUT, bounded_output(cmd, MAX_ANSWER)).await {
        Err(_) => Err(format!("`{DOCKER} {}` did not answer within {} s", args.join(" "), ASK_TIMEOUT.as_secs())),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("no {DOCKER} command here")),
        Ok(Err(e)) => Err(format!("cannot run {DOCKER}: {e}")),
        Ok(Ok(o)) => Ok((o.status, String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())),
    }
}

/// What `docker version` says of the engine: its version, or why this user cannot use it.
async fn ask_version() -> Result<String, String> {
    let (code, out, err) = run(&["version", "--format", "{{.Server.Version}}"]).await?;
    let version = out.lines().next().unwrap_or("").trim().to_string();
    if code == Some(0) && !version.is_empty() {
        return Ok(crate::safe_text::shown(&version).into_owned());
    }
    Err(said(&err, &out).unwrap_or_else(|| format!("`{DOCKER} version` exited with {code:?}")))
}

/// The first line either stream said (Docker puts some errors on stdout), shown safely.
fn said(err: &str, out: &str) -> Option<String> {
    [err, out].iter().flat_map(|s| s.lines()).map(str::trim).find(|l| !l.is_empty()).map(|l| crate::safe_text::shown(l).into_owned())
}

/// The container's name (and compose service) as the runtime reports it; None when it
/// says nothing usable (the container gone meanwhile).
pub async fn inspect(id: &str) -> Option<RuntimeName> {
    if !names::is_id(id) {
        return None;
    }
    let (code, out, _) = tokio::time::timeout(names::INSPECT_TIMEOUT, run(&["inspect", "--type", "container", "--format", names::INSPECT_FORMAT, id])).await.ok()?.ok()?;
    (code == Some(0)).then(|| names::parse_inspect(&out)).flatten()
}

/// The `--exec` that reaches the container named `name`: `NAME=docker exec -i NAME` (by
/// name: a container made again under its name is the same place to the user); its rows show
/// `compose`, the Compose service the runtime named.
pub fn exec_spec(name: &str, compose: Option<String>) -> Option<ExecSpec> {
    let mut spec: ExecSpec = format!("{name}={DOCKER} exec -i {name}").parse().ok()?;
    spec.compose = compose;
    Some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::place::{Place, Runtime};

    #[test]
    fn a_container_is_reached_by_its_name() {
        let spec = exec_spec("orders-api", None).unwrap();
        assert_eq!(spec.words, ["docker", "exec", "-i", "orders-api"]);
        assert_eq!(spec.name, "orders-api");
        assert_eq!(spec.place(), Place::Container { runtime: Runtime::Docker, name: "orders-api".into(), id: None, compose: None });
        assert_eq!(exec_spec("local", None), None);
        let spec = exec_spec("shop-orders-1", Some("shop/orders".into())).unwrap();
        assert_eq!(spec.place().to_string(), "container shop-orders-1 (docker, compose shop/orders)");
    }

    #[test]
    fn either_stream_is_heard() {
        assert_eq!(said("", "permission denied while trying to connect\n").as_deref(), Some("permission denied while trying to connect"));
        assert_eq!(said("\n  Cannot connect to the Docker daemon\n", "x").as_deref(), Some("Cannot connect to the Docker daemon"));
        assert_eq!(said("", ""), None);
    }
}
