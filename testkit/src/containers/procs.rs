//! Processes seen from here: a container's JVM by its process tree, its listening sockets, its
//! network namespace, and this process's own.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

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

pub(super) fn comm(pid: u32) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_string())
}

/// The parent pid (from /proc/PID/stat, after the name's last ')').
pub fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::process::parse_stat_fields(&stat)?.get(1)?.parse().ok()
}

/// Whether a socket of `pid`'s network namespace listens on 127.0.0.1:`port`
/// (/proc/PID/net/tcp: local address `0100007F:PORT` in hex, state 0A).
pub fn listens(pid: u32, port: u16) -> bool {
    local_socket_in(pid, port, &["0A"])
}

/// Whether `pid`'s JDWP agent on 127.0.0.1:`port` is up: listening, or already past it with
/// a connection accepted (state 01). HotSpot's agent stops listening once it accepts one,
/// and a daemon that finds the JVM by its process may connect before a poll sees LISTEN.
pub fn agent_up(pid: u32, port: u16) -> bool {
    local_socket_in(pid, port, &["0A", "01"])
}

/// Whether `pid`'s network namespace has a socket at local address 127.0.0.1:`port` in one
/// of `states` (/proc/PID/net/tcp's hex state column).
fn local_socket_in(pid: u32, port: u16, states: &[&str]) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
        .map(|t| {
            t.lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.get(1) == Some(&want.as_str()) && f.get(3).is_some_and(|s| states.contains(s))
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
