//! One JVM in a Docker container: `docker run -d --network=none` of the JDK image, its agent on
//! the container's own 127.0.0.1 (5005 by default), waited for until it listens (seen in the
//! container's /proc/PID/net/tcp); removed (`docker rm -f`) on drop.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

/// How to run one Docker container: `docker run -d --name NAME --network=none --label
/// jdwpmux.test.pid=PID [--user U:G] -v CLASSES:/app:ro IMAGE java
/// -agentlib:jdwp=...,address=127.0.0.1:PORT -cp /app CLASS ARGS`.
#[derive(Clone)]
pub struct DockerSpec {
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
    /// `--user`, e.g. `4321:4321` (a uid with no user on the host); None: root.
    pub user: Option<String>,
    /// More `docker run` options, before the image.
    pub docker_args: Vec<String>,
}

impl DockerSpec {
    /// `Main` on JDK 17, named after `tag`, as root, its agent on 127.0.0.1:5005 of its own
    /// network namespace (no network).
    pub fn new(tag: &str, classes: &Arc<AppClasses>) -> DockerSpec {
        DockerSpec {
            name: unique_name(tag),
            jdk: Jdk::J17,
            classes: classes.clone(),
            class: "Main".into(),
            args: Vec::new(),
            jvm: Vec::new(),
            port: 5005,
            suspend: false,
            user: None,
            docker_args: Vec::new(),
        }
    }

    /// As `new`, running as `uid:uid`.
    pub fn as_user(tag: &str, classes: &Arc<AppClasses>, uid: u32) -> DockerSpec {
        DockerSpec { user: Some(format!("{uid}:{uid}")), ..Self::new(tag, classes) }
    }

    /// The agent option.
    pub fn agent(&self) -> String {
        format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend={},address=127.0.0.1:{}", if self.suspend { "y" } else { "n" }, self.port)
    }

    fn run_args(&self, image: &str) -> Vec<String> {
        let mut a: Vec<String> = vec!["run".into(), "-d".into(), "--name".into(), self.name.clone(), "--network=none".into()];
        a.extend(["--label".into(), format!("{PID_LABEL}={}", std::process::id())]);
        if let Some(u) = &self.user {
            a.extend(["--user".into(), u.clone()]);
        }
        // The classes read-only. /tmp is the image's (mode 1777), in the container's own layer
        // as in images built the usual way: writable by any uid, and programs may run from it.
        a.extend(["-v".into(), format!("{}:/app:ro", self.classes.dir().display())]);
        a.extend(self.docker_args.iter().cloned());
        a.extend([image.to_string(), self.jdk.java_in_image()]);
        a.extend(["-XX:+UseSerialGC".into(), "-XX:TieredStopAtLevel=1".into(), "-Xmx64m".into()]);
        a.extend(self.jvm.iter().cloned());
        a.extend([self.agent(), "-cp".into(), "/app".into(), self.class.clone()]);
        a.extend(self.args.iter().cloned());
        a
    }
}

/// A process inside a container, seen from the host's /proc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProcess {
    /// Its pid here (the host's numbering).
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    /// /proc/PID/stat's state letter (`Z`: a zombie).
    pub state: String,
    /// Its command line (empty for a zombie).
    pub cmdline: Vec<String>,
}

/// One running Docker container with a JVM in it; removed (`docker rm -f`) on drop.
pub struct DockerContainer {
    engine: &'static DockerEngine,
    spec: DockerSpec,
    id: String,
    pid: u32,
    started_in: Duration,
}

impl DockerContainer {
    /// Runs the container and waits until its JVM's agent listens on 127.0.0.1:PORT inside
    /// it. The image is imported first if this process has none yet.
    pub async fn run(engine: &'static DockerEngine, spec: DockerSpec) -> Result<DockerContainer> {
        let image = engine.image().await?;
        let t0 = Instant::now();
        let args = spec.run_args(&image);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = engine.docker(&args).await;
        // From here on the container may exist, even if run failed: drop removes it.
        let mut c = DockerContainer { engine, spec, id: String::new(), pid: 0, started_in: Duration::ZERO };
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
                if agent_up(jvm, self.spec.port) {
                    self.pid = jvm;
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                let logs = self.logs().await;
                bail!("container {}: no agent listening on 127.0.0.1:{} (pid {pid}); its output:\n{logs}", self.spec.name, self.spec.port);
            }
            if !Path::new(&format!("/proc/{pid}")).exists() {
                pid = self.host_pid().await?;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The container's first process (`.State.Pid`); an error when it is not running.
    pub async fn host_pid(&self) -> Result<u32> {
        let out = self.engine.docker(&["inspect", "--format", "{{.State.Pid}}", &self.spec.name]).await?;
        let pid: u32 = out.trim().parse().with_context(|| format!("inspect gave pid {out:?}"))?;
        if pid == 0 {
            bail!("container {} is not running; its output:\n{}", self.spec.name, self.logs().await);
        }
        Ok(pid)
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The full (64 hex) container id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn spec(&self) -> &DockerSpec {
        &self.spec
    }

    pub fn engine(&self) -> &'static DockerEngine {
        self.engine
    }

    pub fn port(&self) -> u16 {
        self.spec.port
    }

    /// The JVM's pid here, as of its last start.
    pub fn jvm_pid(&self) -> u32 {
        self.pid
    }

    /// From `docker run` (or the last restart or start) to the agent listening.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// What the JVM printed (`docker logs`), or why it cannot be had.
    pub async fn logs(&self) -> String {
        let mut cmd = tokio::process::Command::from(self.engine.command());
        cmd.args(["logs", &self.spec.name]).kill_on_drop(true);
        match tokio::time::timeout(DOCKER_TIMEOUT, cmd.output()).await {
            Ok(Ok(o)) => format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
            Ok(Err(e)) => format!("(no logs: {e})"),
            Err(_) => "(no logs: docker logs timed out)".into(),
        }
    }

    /// Restarts it: same name and id, a new JVM process (new pid); waits for its listen.
    pub async fn restart(&mut self) -> Result<()> {
        let t0 = Instant::now();
        self.engine.docker(&["restart", "--time", "0", &self.spec.name]).await?;
        self.wait_listening().await?;
        self.started_in = t0.elapsed();
        Ok(())
    }

    /// Stops it (the JVM is killed); the container stays, stopped, until `start` or drop.
    pub async fn stop(&mut self) -> Result<()> {
        self.engine.docker(&["stop", "--time", "0", &self.spec.name]).await.map(drop)
    }

    /// Starts it again after `stop`; waits for its listen.
    pub async fn start(&mut self) -> Result<()> {
        let t0 = Instant::now();
        self.engine.docker(&["start", &self.spec.name]).await?;
        self.wait_listening().await?;
        self.started_in = t0.elapsed();
        Ok(())
    }

    /// `docker exec NAME ARGS` (no stdin): its whole output, whatever its exit.
    pub async fn exec(&self, args: &[&str]) -> Result<std::process::Output> {
        let mut cmd = tokio::process::Command::from(self.engine.command());
        cmd.args(["exec", &self.spec.name]).args(args).kill_on_drop(true);
        Ok(tokio::time::timeout(DOCKER_TIMEOUT, cmd.output()).await.with_context(|| format!("docker exec {} {args:?} timed out", self.spec.name))??)
    }

    /// The `docker exec` clients on this machine that run into this container.
    pub fn exec_clients(&self) -> Vec<u32> {
        docker_exec_clients(&self.spec.name)
    }

    /// SIGKILLs every `docker exec` client into this container (as a dropped `docker exec`
    /// would end); how many there were.
    pub fn kill_exec_clients(&self) -> usize {
        let pids = self.exec_clients();
        for &pid in &pids {
            // SAFETY: kill(2) with plain integers.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        pids.len()
    }

    /// Every process in the container now (zombies too), from the host's /proc: those in
    /// the pid namespace of its first process. Empty when it is not running.
    pub async fn processes(&self) -> Result<Vec<InProcess>> {
        let init = self.host_pid().await?;
        let ns = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
        let want = ns(init).context("the container's pid namespace")?;
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc")?.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            if ns(pid).as_ref() != Some(&want) {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let fields = crate::process::parse_stat_fields(&stat).unwrap_or_default();
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            out.push(InProcess {
                pid,
                ppid: fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0),
                comm: comm(pid).unwrap_or_default(),
                state: fields.first().map(|s| s.to_string()).unwrap_or_default(),
                cmdline: raw.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect(),
            });
        }
        Ok(out)
    }

    /// Files under `dir` in the container (`docker exec NAME find DIR`), sorted.
    pub async fn files(&self, dir: &str) -> Result<Vec<String>> {
        let out = self.exec(&["find", dir]).await?;
        if !out.status.success() {
            bail!("find {dir} in {}: {} {}", self.spec.name, String::from_utf8_lossy(&out.stderr).trim(), String::from_utf8_lossy(&out.stdout).trim());
        }
        let mut files: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        files.sort();
        Ok(files)
    }

    /// What changed in the container's own layer since it was made (`docker diff`: `A
    /// /path`, `C /path`, `D /path`); tmpfs mounts such as /tmp are not in it.
    pub async fn diff(&self) -> Result<Vec<String>> {
        let out = self.engine.docker(&["diff", &self.spec.name]).await?;
        Ok(out.lines().map(str::to_string).collect())
    }
}

impl Drop for DockerContainer {
    fn drop(&mut self) {
        if let Err(e) = self.engine.docker_blocking(&["rm", "--force", &self.spec.name]) {
            eprintln!("could not remove container {}: {e:#}", self.spec.name);
        }
    }
}
