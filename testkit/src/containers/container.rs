//! One JVM in a Podman container, started and waited for until its agent listens (seen in the
//! container's /proc/PID/net/tcp); removed on drop.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

/// A loopback port no one listens on here: a container's agent listens on it inside its own
/// namespace, so that a connect to it from the host's namespace proves nothing is published
/// (refused) rather than finding some other listener.
pub fn free_port() -> u16 {
    crate::ports::try_free_port().unwrap_or(8000)
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
    /// More `podman run` options, before the image (a `--tmpfs /tmp:OPTIONS` here replaces
    /// the plain /tmp tmpfs every container gets).
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
            "-v".into(),
            format!("{}:/app:ro", self.classes.dir().display()),
        ]);
        // A /tmp of its own: the image folder is shared, and every JVM writes
        // /tmp/hsperfdata_root/<its pid>, which is 1 in every container. Unless the spec
        // mounts one of its own (podman refuses two at one place).
        if !self.podman_args.windows(2).any(|w| w[0] == "--tmpfs" && (w[1] == "/tmp" || w[1].starts_with("/tmp:"))) {
            a.extend(["--tmpfs".into(), "/tmp".into()]);
        }
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
pub(super) fn here_pid_of(ns: u64, inner: u32) -> Option<u32> {
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
