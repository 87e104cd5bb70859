//! One host's processes as the scans have shown them so far, kept between rounds: a round
//! reads the cheap things (the TCP table, which processes mention a JDWP agent, their network
//! namespaces) and asks for the rest (command line, environment, sockets, threads) only where
//! something is new or changed. Pure: records in, the next requests out.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::net::{self, Socket};
use super::place::{self, HostFacts, Place, ProcFacts};
use super::wire::Record;

/// Processes one host may list at most (a host claiming more is cut there). With the bounds
/// below, what one host's view holds stays under about 100 MB, whatever the host says.
pub const MAX_PROCS: usize = 1024;
/// Socket inodes kept per process (the agent's socket is among its first descriptors).
pub const MAX_FD_SOCKETS: usize = 4096;
/// Rows kept of a process's own network namespace's TCP table.
pub const MAX_NET_SOCKETS: usize = 4096;
/// Bytes kept of each JDWP environment variable.
pub const MAX_ENV_VALUE: usize = 16 * 1024;

/// What is known of one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcView {
    pub net: Option<u64>,
    /// For a process whose namespace links cannot be read (another user's, to a user): the
    /// inode of its `/proc/PID/net/tcp`, a file each network namespace has one of, which
    /// anyone may stat. Tells namespaces apart; cannot enter one.
    pub net_seen: Option<u64>,
    /// Its pid namespace.
    pub pids: Option<u64>,
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// What its command line says; None until read.
    pub command: Option<CommandLine>,
    /// `JAVA_TOOL_OPTIONS=...` and `JDK_JAVA_OPTIONS=...` entries of its environment.
    pub env: Vec<String>,
    /// Socket inodes among its file descriptors; None until read or when unreadable.
    pub fd_sockets: Option<Vec<u64>>,
    /// Its file descriptors were asked for (and, with `fd_sockets` None, could not be read:
    /// another user's process; they are not asked for again).
    pub fd_read: bool,
    /// What its threads' names (`/proc/PID/task/*/comm`) say; None until read.
    pub threads: Option<ThreadMarks>,
    /// The TCP table of its network namespace, when that is not the scanner's.
    pub net_sockets: Option<Vec<Socket>>,
    /// That namespace's own addresses.
    pub net_addrs: Vec<IpAddr>,
    /// That table was read in this round (for this process or another of its namespace).
    pub net_read: bool,
    /// That table was read while jdwpmux's own connection held the agent (see
    /// `HostView::settled`): it shows what stays true while that connection lasts.
    pub net_settled: bool,
    /// The port its agent was last seen listening on: an agent that picked its port does
    /// not listen while a debugger (jdwpmux, say) is attached.
    pub last_port: Option<u16>,
    /// The agent's listening socket when it picked its port, and the process's other
    /// listening sockets seen meanwhile (the program's own servers): when the agent listens
    /// again on a new port, it is the listening socket that is neither.
    pub agent_inode: Option<u64>,
    pub other_listeners: Vec<u64>,
    /// What tells where it runs (its cgroup, container variables, ancestors).
    pub place: ProcFacts,
}

/// Bytes of a command line kept (`CommandLine::text`, `found::FoundJvm::command`).
pub const MAX_COMMAND: usize = 4096;

/// Threads a JVM starts once its VM is initialised: none of them exists while a
/// `suspend=y` agent waits for its first debugger (seen on HotSpot 17 and 25; others, such as
/// "VM Periodic Task Thread", already run then on 25).
pub const STARTED_THREADS: &[&str] = &["Common-Cleaner", "Notification Th"];

/// A command line, read once: only what it says is kept (class paths make them long).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    pub java: super::cmdline::JavaCommand,
    /// The arguments joined by spaces, cut at `MAX_COMMAND` bytes (for filters).
    pub text: String,
}

impl CommandLine {
    pub fn from_args(argv: &[String]) -> CommandLine {
        let mut text = String::new();
        for a in argv {
            if text.len() >= MAX_COMMAND {
                break;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(a);
        }
        CommandLine { java: super::cmdline::parse(argv), text: cut(text, MAX_COMMAND) }
    }
}

/// What a JVM's thread names tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadMarks {
    /// A JDWP agent thread ("JDWP Transport Listener", "JDWP Event Helper Thread").
    pub jdwp: bool,
    /// A thread the JVM starts once it is initialised (see `STARTED_THREADS`).
    pub started: bool,
}

impl ThreadMarks {
    pub fn from_names<'a>(names: impl Iterator<Item = &'a str>) -> ThreadMarks {
        let mut m = ThreadMarks::default();
        for n in names {
            m.jdwp |= n.starts_with("JDWP");
            m.started |= STARTED_THREADS.iter().any(|s| n.starts_with(s));
        }
        m
    }
}

/// `s` cut at `max` bytes, on a character boundary.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// What one host's /proc showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostView {
    /// The scanner's own uid (0: it can read every process).
    pub uid: Option<u32>,
    /// The scanner's network namespace.
    pub own_net: Option<u64>,
    /// The inode of the scanner's own `/proc/self/net/tcp` (see `ProcView::net_seen`).
    pub own_net_seen: Option<u64>,
    /// The scanner's pid namespace.
    pub own_pids: Option<u64>,
    /// The TCP table of that namespace.
    pub sockets: Vec<Socket>,
    pub procs: BTreeMap<u32, ProcView>,
    /// What the host shows of its pods and named network namespaces.
    pub places: HostFacts,
    /// Processes whose agent jdwpmux's own connection holds now, as the caller says: their
    /// namespace's table cannot tell anything new while it does, and is not read again once
    /// one read meanwhile is known. Reading another namespace's table costs a walk of the kernel's whole
    /// TCP hash (every namespace's sockets), about a millisecond each.
    pub settled: BTreeSet<u32>,
    /// Container names as their runtime reported them, with their Compose service (see
    /// `place::compose`), by full id, for containers whose state files this scanner cannot
    /// read (set by the caller: `remote::runtime`).
    pub runtime_names: BTreeMap<String, (String, Option<String>)>,
    /// How a container's JVM this scanner cannot enter may be reached through Docker's CLI,
    /// as the caller found (what its rows advise).
    pub docker: DockerWay,
    /// How a JVM in root's Podman container may be reached through `sudo -n podman`, as the
    /// caller found (what its rows advise).
    pub podman_sudo: PodmanSudo,
}

/// Whether this user reaches root's Podman containers through `sudo -n podman exec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PodmanSudo {
    /// Not asked for (no `--podman-sudo`).
    #[default]
    Off,
    /// Asked for, not tried yet.
    Untried,
    /// Asked for, and sudo said no (its words).
    Refused(String),
    /// Usable; jdwpmux is copied in where the image has none (`--far-copy`).
    Copying,
    /// Usable, but nothing may be copied in (no `--far-copy`).
    NotCopying,
}

/// Whether this user may reach containers through `docker exec`, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DockerWay {
    /// Not known to be usable by this user (no CLI, no access, not asked yet).
    #[default]
    No,
    /// Usable; jdwpmux is copied in where the image has none (`--far-copy`).
    Copying,
    /// Usable, but nothing may be copied in (no `--far-copy`).
    NotCopying,
}

/// A scan command and the pids it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub command: &'static str,
    pub pids: Vec<u32>,
}

impl HostView {
    /// Takes one round's or one request's records.
    pub fn apply(&mut self, records: &[Record<'_>]) {
        for r in records {
            match r.tag {
                "id" => self.uid = r.text().trim().parse().ok(),
                "tcp" => self.sockets = net::parse_tcp_table(&r.text()),
                "ns" => {
                    self.apply_namespaces(&r.text());
                    for p in self.procs.values_mut() {
                        p.net_read = false;
                    }
                }
                "nettcp" | "fib" => self.apply_net_record(r),
                "pods" => self.places.set_pods(&r.text()),
                "netns" => self.places.set_netns(&r.text()),
                _ => self.apply_proc_record(r),
            }
        }
    }

    /// The `ns` record: the scanner's network and pid namespaces (`/proc/self/ns/...`) and
    /// each candidate's. Its candidates are this round's: a process no longer among them is
    /// forgotten.
    fn apply_namespaces(&mut self, text: &str) {
        // (net, pid, net_seen) of each candidate.
        type Nss = (Option<u64>, Option<u64>, Option<u64>);
        let mut seen: BTreeMap<u32, Nss> = BTreeMap::new();
        for line in text.lines() {
            let Some(path) = line.split_whitespace().find(|w| w.starts_with("/proc/")) else { continue };
            let mut parts = path.trim_start_matches("/proc/").split('/');
            let (Some(who), Some("ns"), Some(kind)) = (parts.next(), parts.next(), parts.next()) else { continue };
            if kind != "net" && kind != "pid" && kind != "nettcp" {
                continue;
            }
            let ns = net::link_inode(line, kind);
            let slot = |t: &mut Nss| match kind {
                "net" => t.0 = ns,
                "pid" => t.1 = ns,
                _ => t.2 = ns,
            };
            if who == "self" {
                let mut own = (self.own_net, self.own_pids, self.own_net_seen);
                slot(&mut own);
                (self.own_net, self.own_pids, self.own_net_seen) = own;
            } else if let Ok(pid) = who.parse::<u32>() {
                if seen.len() < MAX_PROCS || seen.contains_key(&pid) {
                    slot(seen.entry(pid).or_default());
                }
            }
        }
        self.procs.retain(|pid, p| match seen.get(pid) {
            // The same pid in another namespace is another process.
            Some((net, pids, net_seen)) => p.net == *net && p.pids == *pids && p.net_seen == *net_seen,
            None => false,
        });
        for (pid, (net, pids, net_seen)) in seen {
            self.procs.entry(pid).or_insert_with(|| ProcView { net, pids, net_seen, ..Default::default() });
        }
    }

    fn apply_proc_record(&mut self, r: &Record<'_>) {
        let Some(p) = r.pid().and_then(|pid| self.procs.get_mut(&pid)) else { return };
        let text = || r.text();
        match r.tag {
            "proc" => {
                let t = text();
                let mut w = t.split_whitespace();
                p.uid = w.next().and_then(|u| u.parse().ok());
                p.user = w.next().map(|u| super::cmdline::printable(&u.chars().take(64).collect::<String>()));
                // Read once: an empty command line is a process that went away (or a
                // kernel thread).
                p.command = Some(CommandLine::default());
                // The records of its place follow; `parent` ones add up.
                p.place = ProcFacts::default();
            }
            "cmdline" => p.command = Some(CommandLine::from_args(&super::cmdline::split_cmdline(r.body))),
            "environ" => {
                p.place.set_env(r.body.split(|b| *b == 0 || *b == b'\n'));
                p.env = r
                    .body
                    .split(|b| *b == 0 || *b == b'\n')
                    .filter(|e| e.starts_with(b"JAVA_TOOL_OPTIONS=") || e.starts_with(b"JDK_JAVA_OPTIONS="))
                    .take(2)
                    .map(|e| cut(String::from_utf8_lossy(&e[..e.len().min(MAX_ENV_VALUE + 32)]).into_owned(), MAX_ENV_VALUE))
                    .collect();
            }
            "fd" => {
                let t = text();
                // An unreadable folder lists nothing (ls prints its error to stderr).
                p.fd_sockets = if t.trim().is_empty() { None } else { Some(net::fd_sockets(&t).into_iter().take(MAX_FD_SOCKETS).collect()) };
                p.fd_read = true;
            }
            "threads" => p.threads = Some(ThreadMarks::from_names(text().lines())),
            "cgroup" => p.place.set_cgroups(&text()),
            "parent" => p.place.add_ancestor(r.body),
            "docker" => p.place.set_docker_config(r.body),
            _ => {}
        }
    }

    /// A network namespace's table or addresses, read through one of its processes: every
    /// process of that namespace has them (a pod's containers share one).
    fn apply_net_record(&mut self, r: &Record<'_>) {
        let Some(net) = r.pid().and_then(|pid| self.procs.get(&pid)).and_then(net_of) else { return };
        let (table, addrs) = match r.tag {
            "nettcp" => (Some(net::parse_tcp_table(&r.text()).into_iter().take(MAX_NET_SOCKETS).collect::<Vec<_>>()), None),
            _ => (None, Some(net::fib_local_addrs(&r.text()))),
        };
        for (pid, p) in self.procs.iter_mut().filter(|(_, p)| net_of(p) == Some(net)) {
            if let Some(t) = &table {
                p.net_sockets = Some(t.clone());
                p.net_read = true;
                p.net_settled = self.settled.contains(pid);
            }
            if let Some(a) = &addrs {
                p.net_addrs = a.clone();
            }
        }
    }

    /// The table a process's sockets are in: the scanner's, or its own namespace's.
    pub fn table_of<'a>(&'a self, p: &'a ProcView) -> Option<&'a [Socket]> {
        if self.in_other_net(p) {
            p.net_sockets.as_deref()
        } else {
            Some(&self.sockets)
        }
    }

    pub fn in_other_net(&self, p: &ProcView) -> bool {
        match (p.net, self.own_net) {
            (Some(a), Some(b)) => a != b,
            _ => matches!((p.net_seen, self.own_net_seen), (Some(a), Some(b)) if a != b),
        }
    }

    /// Where a process runs, from what its records and the host's showed.
    pub fn place_of(&self, p: &ProcView) -> Place {
        let mut place = place::place_of(&p.place, &self.places, p.net.filter(|_| self.in_other_net(p)));
        // A Docker container whose own state this scanner cannot read: named by its runtime.
        if let Place::Container { runtime: place::Runtime::Docker, name, id: Some(id), compose } = &mut place {
            if p.place.docker_name.is_none() {
                if let Some((n, c)) = self.runtime_names.get(id.as_str()) {
                    *name = n.clone();
                    *compose = c.clone();
                }
            }
        }
        place
    }

}

/// What tells a process's network namespace apart: its inode, else (not readable) the
/// inode of its namespace's TCP table file. Both come from one kernel numbering.
pub(super) fn net_of(p: &ProcView) -> Option<u64> {
    p.net.or(p.net_seen)
}

/// The shell line that asks for `requests`, closed by the round's end marker.
pub fn request_line(requests: &[Request], nonce: &str) -> String {
    let mut line = String::new();
    for r in requests {
        line.push_str(r.command);
        line.push(' ');
        line.push_str(nonce);
        for pid in &r.pids {
            line.push_str(&format!(" {pid}"));
        }
        line.push_str("; ");
    }
    line.push_str(&format!("jdwpmux_done {nonce}\n"));
    line
}

/// The shell line of a round's first step.
pub fn scan_line(nonce: &str) -> String {
    format!("jdwpmux_scan {nonce}; jdwpmux_done {nonce}\n")
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
