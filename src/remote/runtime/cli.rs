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
/// Root's Podman, to a user whom sudo lets run it without a password (`--podman-sudo`).
pub const SUDO_PODMAN: [&str; 3] = ["sudo", "-n", "podman"];
/// How long `docker version` may take to say whether the engine answers this user.
const ASK_TIMEOUT: Duration = Duration::from_secs(20);
/// A refusal is asked again after this (the user added to the group, the engine started).
const ASK_AGAIN: Duration = Duration::from_secs(60);
/// What a CLI answer may print, each stream.
const MAX_ANSWER: usize = 16 * 1024;

/// Which CLI is asked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// `docker`, as this user.
    #[default]
    Docker,
    /// `sudo -n podman`: root's Podman.
    SudoPodman,
}

impl Cli {
    /// The words that run it.
    fn words(self) -> &'static [&'static str] {
        match self {
            Cli::Docker => &[DOCKER],
            Cli::SudoPodman => &SUDO_PODMAN,
        }
    }

    /// The arguments that make it say its (engine's) version.
    fn version_args(self) -> &'static [&'static str] {
        match self {
            Cli::Docker => &["version", "--format", "{{.Server.Version}}"],
            Cli::SudoPodman => &["version", "--format", "{{.Client.Version}}"],
        }
    }
}

/// Whether this user may use the runtime: asked once, a refusal again after [`ASK_AGAIN`].
#[derive(Debug, Default)]
pub struct Access {
    cli: Cli,
    /// The last answer and when: Ok(the engine's version) or Err(why not).
    last: Option<(Instant, Result<String, String>)>,
}

impl Access {
    /// Asks `cli`.
    pub fn of(cli: Cli) -> Access {
        Access { cli, last: None }
    }

    /// Ok(the engine's version) when this user may use it now; else why not.
    pub async fn check(&mut self) -> Result<String, String> {
        match &self.last {
            Some((_, Ok(v))) => return Ok(v.clone()),
            Some((at, Err(why))) if at.elapsed() < ASK_AGAIN => return Err(why.clone()),
            _ => {}
        }
        let answer = ask_version(self.cli).await;
        self.last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// The last answer, without asking (None: never asked).
    pub fn known(&self) -> Option<bool> {
        self.last.as_ref().map(|(_, a)| a.is_ok())
    }
}

async fn run(args: &[&str]) -> Result<(Option<i32>, String, String), String> {
    run_cli(Cli::Docker, args).await
}

async fn run_cli(cli: Cli, args: &[&str]) -> Result<(Option<i32>, String, String), String> {
    let words = cli.words();
    let shown = words.join(" ");
    let mut cmd = Command::new(words[0]);
    cmd.args(&words[1..]).args(args).stdin(Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(ASK_TIMEOUT, bounded_output(cmd, MAX_ANSWER)).await {
        Err(_) => Err(format!("`{shown} {}` did not answer within {} s", args.join(" "), ASK_TIMEOUT.as_secs())),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("no {} command here", words[0])),
        Ok(Err(e)) => Err(format!("cannot run {shown}: {e}")),
        Ok(Ok(o)) => Ok((o.status, String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())),
    }
}

/// What `docker version` (`sudo -n podman version`) says of the engine: its version, or why
/// this user cannot use it (sudo's own words when it asks for a password).
async fn ask_version(cli: Cli) -> Result<String, String> {
    let (code, out, err) = run_cli(cli, cli.version_args()).await?;
    let version = out.lines().next().unwrap_or("").trim().to_string();
    if code == Some(0) && !version.is_empty() {
        return Ok(crate::safe_text::shown(&version).into_owned());
    }
    Err(said(&err, &out).unwrap_or_else(|| format!("`{} version` exited with {code:?}", cli.words().join(" "))))
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

/// The `--exec` that reaches root's Podman container `name`: `NAME=sudo -n podman exec -i
/// NAME`.
pub fn sudo_podman_exec_spec(name: &str) -> Option<ExecSpec> {
    format!("{name}={} exec -i {name}", SUDO_PODMAN.join(" ")).parse().ok()
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
        let spec = sudo_podman_exec_spec("vault").unwrap();
        assert_eq!(spec.words, ["sudo", "-n", "podman", "exec", "-i", "vault"]);
        assert_eq!(spec.place().to_string(), "container vault (podman)");
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
