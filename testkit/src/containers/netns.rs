//! One JVM in a bare network namespace (no container), loopback up.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

/// The command prefix that runs a program in a network namespace of its own, loopback up:
/// `unshare --net` execs sh, which brings lo up and execs the program ($0) with its
/// arguments, so the program keeps the pid its starter saw. Used by the tests and the
/// benchmark alike.
pub fn unshare_net() -> Vec<String> {
    ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""].map(String::from).to_vec()
}

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
            unshare_net()
        };
        let mut spec = JvmSpec { prefix, ..JvmSpec::main_at(&java, false, &format!("127.0.0.1:{port}")) };
        if class != "Main" {
            spec.sources = vec![(format!("{class}.java"), MAIN_JAVA.replace("Main", class))];
            spec.class = class.into();
        }
        if !marker.is_empty() {
            spec.jvm.push(format!("-D{marker}"));
        }
        me.app = Some(JavaApp::spawn(spec).await?);
        let pid = me.pid();
        let deadline = Instant::now() + START_TIMEOUT;
        while !agent_up(pid, port) {
            if Instant::now() >= deadline {
                bail!("the JVM in a bare namespace said it listens, /proc/{pid}/net/tcp shows neither a LISTEN nor an accepted connection");
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

pub(super) fn run_tool(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().with_context(|| format!("run {args:?}"))?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
