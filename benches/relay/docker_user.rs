//! What the `docker` section stands on: JVMs in root Docker containers of the test kit's
//! engine (`testkit::containers::DockerEngine`: the dockerd answering on the default socket,
//! else one it starts; the host's JDK 17 imported as an image), and a member of the `docker`
//! group whose `serve` runs as that user, as a developer runs it: its own copy of the binary
//! in its home, `setpriv --init-groups` (the group), a fresh login's environment.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use testkit::containers::{docker_blocking, DockerEngine, DOCKER_SOCK, JDK17_HOME, PID_LABEL};
use testkit::users::TestUser;

use crate::jvm::{Debuggee, Jvm, Launch};
use crate::proxy::{Proxy, ProxyBin};

/// The agent's port on each container's own loopback (nothing published).
pub const AGENT_PORT: u16 = 5005;

/// Why the section cannot run here (not root, no Docker Engine tools, no JDK 17), or None.
pub fn unavailable() -> Option<String> {
    testkit::containers::docker_unavailable()
}

/// JVMs of `prog` in root Docker containers (`--network=none`, the agent on the container's
/// 127.0.0.1:5005, the classes bound read-only at their path here), each run by an attached
/// `docker run` whose output the [`Jvm`] reads (ready line, the agent's listens). Every
/// container carries the test kit's pid label (its sweep removes them should this process be
/// killed) and is removed on drop.
pub struct Boxes {
    pub jvms: Vec<Jvm>,
    pub names: Vec<String>,
}

impl Boxes {
    /// `n` containers named after `tag`, waited for until every JVM is ready.
    pub fn start(prog: &Arc<Debuggee>, tag: &str, n: usize) -> Result<Boxes> {
        let engine = DockerEngine::get_blocking().context("a Docker Engine")?;
        let image = engine.image_blocking().context("the JDK image")?.to_string();
        let classes = prog.out_dir().display().to_string();
        let mut b = Boxes { jvms: Vec::new(), names: Vec::new() };
        for i in 0..n {
            let name = format!("jmbench{tag}{}x{i}", std::process::id());
            // Named first: from here on drop removes it, whatever `docker run` does.
            b.names.push(name.clone());
            b.jvms.push(Jvm::launch(prog, &Launch { prefix: run_prefix(&name, &image, &classes), port: AGENT_PORT, small: true })?);
        }
        for (j, name) in b.jvms.iter_mut().zip(&b.names) {
            j.wait_ready(Duration::from_secs(120 + 5 * n as u64)).with_context(|| format!("the JVM in container {name}"))?;
        }
        Ok(b)
    }
}

impl Drop for Boxes {
    fn drop(&mut self) {
        if self.names.is_empty() {
            return;
        }
        let mut args = vec!["rm", "--force"];
        args.extend(self.names.iter().map(String::as_str));
        if let Err(e) = docker_blocking(&args) {
            eprintln!("docker: could not remove the containers {:?}: {e:#}", self.names);
        }
    }
}

/// `docker run` (on the default socket, attached) up to the image; `java ...` follows.
fn run_prefix(name: &str, image: &str, classes: &str) -> Vec<String> {
    let mut a: Vec<String> = ["env", "-u", "DOCKER_CONTEXT"].map(String::from).to_vec();
    a.push(format!("DOCKER_HOST=unix://{DOCKER_SOCK}"));
    a.extend(["docker", "run", "--name", name, "--network=none", "--label"].map(String::from));
    a.push(format!("{PID_LABEL}={}", std::process::id()));
    // A /tmp of its own that can run a program (where `--far-copy` may put jdwpmux).
    a.extend(["--tmpfs", "/tmp:exec", "-e"].map(String::from));
    a.push(format!("PATH={JDK17_HOME}/bin:/usr/bin:/bin"));
    a.extend(["-v".to_string(), format!("{classes}:{classes}:ro"), image.to_string()]);
    a
}

/// A member of the `docker` group (made for the run, removed on drop) and its copy of the
/// binary.
pub struct DockerUser {
    user: TestUser,
    home: PathBuf,
    bin: PathBuf,
    serves: usize,
}

impl DockerUser {
    pub fn new(bin: &ProxyBin) -> Result<DockerUser> {
        let user = TestUser::docker_member("dkbench")?;
        let home = user.home.clone().context("the user has no home")?;
        let dir = home.join("jm");
        std::fs::create_dir_all(&dir)?;
        let own = home.join("jm/jdwpmux");
        std::fs::copy(&bin.path, &own).with_context(|| format!("copy {} into the user's home", bin.path.display()))?;
        for p in [&dir, &own] {
            std::os::unix::fs::chown(p, Some(user.uid), Some(user.gid))?;
        }
        Ok(DockerUser { user, home, bin: own, serves: 0 })
    }

    /// Starts `serve SERVE_ARGS` as this user with its groups, its control socket and log in
    /// a fresh folder of its own; waits for its current-VM port.
    pub fn serve(&mut self, bin: &ProxyBin, serve_args: &[String], room_for: usize) -> Result<Proxy> {
        self.serves += 1;
        let dir = self.home.join(format!("serve{}", self.serves));
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        std::os::unix::fs::chown(&dir, Some(self.user.uid), Some(self.user.gid))?;
        let words = self.wrapper();
        let (program, rest) = words.split_first().context("an empty wrapper")?;
        let mut args: Vec<String> = rest.to_vec();
        args.push(self.bin.display().to_string());
        args.extend(["--control".to_string(), dir.join("control.sock").display().to_string(), "serve".into()]);
        args.extend(serve_args.iter().cloned());
        args.extend(bin.extra.iter().cloned());
        let as_user = ProxyBin { path: PathBuf::from(program), ..bin.clone() };
        Proxy::start_args(&as_user, &args, &dir, &[], room_for, 0)
    }

    /// The words that run a program as this user: `setpriv` to it with its groups and a
    /// fresh environment, then (as the user, since a change of uid clears it) the
    /// parent-death signal again, so that the program dies with the benchmark; from `/`.
    /// The user's `serve` takes debuggers of its own user only: its IDE runs under this too.
    pub fn wrapper(&self) -> Vec<String> {
        let mut w = self.user.prefix_with_groups();
        w.extend(["setpriv", "--pdeathsig", "KILL", "--", "env", "-C", "/", "PATH=/usr/local/bin:/usr/bin:/bin", "NO_COLOR=1"].map(String::from));
        w.push(format!("HOME={}", self.home.display()));
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_prefix_keeps_the_container_closed() {
        let p = run_prefix("jmx", "img:1", "/c/out").join(" ");
        assert!(p.contains("docker run --name jmx --network=none --label jdwpmux.test.pid="), "{p}");
        assert!(p.contains("-v /c/out:/c/out:ro img:1") && p.ends_with("img:1"), "{p}");
        assert!(!p.contains(" -p ") && !p.contains("--publish"), "nothing published: {p}");
    }
}
