//! A Docker Engine of one test's own, for what cannot be done to the shared one (`docker`):
//! stopping and starting the engine itself while its containers run on. It listens on a
//! socket in a folder of its own (`DOCKER_HOST=unix://...` reaches it), keeps its data and
//! run state there, and runs with `--live-restore`, so its containers outlive its restarts
//! as a production engine's do. Dropping it removes its containers, stops it and removes its
//! folder; a dockerd is only ever stopped by the pid this started.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

/// From start to `docker info` answering.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A private dockerd and its folder.
pub struct PrivateDockerd {
    dir: PathBuf,
    pid: Option<u32>,
}

impl PrivateDockerd {
    /// Starts one (root only), and waits until it answers.
    pub fn start() -> Result<PrivateDockerd> {
        // Short: the socket's path must fit a sockaddr_un.
        let dir = PathBuf::from(format!("/run/jmpd{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir)?;
        let mut d = PrivateDockerd { dir, pid: None };
        d.run()?;
        Ok(d)
    }

    /// `unix:///run/jmpd.../docker.sock`: what `DOCKER_HOST` names.
    pub fn host(&self) -> String {
        format!("unix://{}", self.dir.join("docker.sock").display())
    }

    /// A `docker` command for this engine.
    pub fn command(&self) -> Command {
        let mut c = Command::new("docker");
        c.env("DOCKER_HOST", self.host()).stdin(Stdio::null());
        c
    }

    /// Runs `docker ARGS` against this engine: its stdout, or why not.
    pub fn docker(&self, args: &[&str]) -> Result<String> {
        let out = self.command().args(args).output().with_context(|| format!("docker {}", args.join(" ")))?;
        if !out.status.success() {
            bail!("docker {}: {}: {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn run(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("dockerd.log"))?;
        let pidfile = self.dir.join("dockerd.pid");
        let _ = std::fs::remove_file(&pidfile);
        let status = Command::new("setsid")
            .args(["-f", "dockerd", "--bridge", "none", "--iptables=false", "--ip6tables=false", "--live-restore", "-H"])
            .arg(self.host())
            .arg("--data-root")
            .arg(self.dir.join("data"))
            .arg("--exec-root")
            .arg(self.dir.join("exec"))
            .arg("--pidfile")
            .arg(&pidfile)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .current_dir("/")
            .status()
            .context("run setsid -f dockerd")?;
        if !status.success() {
            bail!("setsid -f dockerd: {status}");
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if self.pid.is_none() {
                self.pid = std::fs::read_to_string(&pidfile).ok().and_then(|p| p.trim().parse().ok());
            }
            if self.pid.is_some() && self.command().args(["info", "--format", "{{.ServerVersion}}"]).output().is_ok_and(|o| o.status.success()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("the private dockerd did not answer in {READY_TIMEOUT:?}: {}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the engine (SIGTERM, waited for); its containers run on (`--live-restore`).
    pub fn stop(&mut self) -> Result<()> {
        let Some(pid) = self.pid.take() else { return Ok(()) };
        // SAFETY: kill with the pid this started (from its own pid file).
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let deadline = Instant::now() + READY_TIMEOUT;
        while Path::new(&format!("/proc/{pid}")).exists() {
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                bail!("the private dockerd (pid {pid}) did not end on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Starts it again, on the same socket and data.
    pub fn restart_after_stop(&mut self) -> Result<()> {
        self.run()
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Imports the JDK image (the kit's root folder) as `TAG`.
    pub fn import_jdk(&self, tag: &str) -> Result<()> {
        let rootfs = image()?.rootfs.clone();
        let tar = Command::new("tar").arg("-C").arg(&rootfs).args(["-c", "."]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().context("run tar")?;
        let out = self.command().args(["import", "-", tag]).stdin(Stdio::from(tar.stdout.context("tar's stdout")?)).output().context("docker import")?;
        if !out.status.success() {
            bail!("docker import {tag}: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    }
}

impl Drop for PrivateDockerd {
    fn drop(&mut self) {
        // Stopped (a test that failed while it was down): started again, so that its
        // containers, which outlive it, can be removed through it.
        if self.pid.is_none() {
            let _ = self.run();
        }
        if let Ok(ids) = self.docker(&["ps", "-aq"]) {
            for id in ids.split_whitespace() {
                let _ = self.docker(&["rm", "-f", id]);
            }
        }
        let _ = self.stop();
        // Whatever of it still runs (a container's shim, its containerd), by its folder.
        let mark = self.dir.display().to_string();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmd).contains(&mark) {
                // SAFETY: kill of a process of this engine's own, found by its folder.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        // Its mounts: the data folder (dockerd makes it a mount of its own), overlay layers,
        // namespaces under the run folder.
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut under: Vec<&str> = mounts.lines().filter_map(|l| l.split(' ').nth(1)).filter(|m| m.starts_with(&format!("{mark}/"))).collect();
        // The deepest first.
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in under {
            let _ = Command::new("umount").arg("-l").arg(m).stderr(Stdio::null()).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
