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

/// A command line, read once: only what it says is kept (class paths make them long).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    pub java: super::cmdline::JavaCommand,
    /// The arguments joined by spaces, cut at `found::MAX_COMMAND` bytes (for filters).
    pub text: String,
}

impl CommandLine {
    pub fn from_args(argv: &[String]) -> CommandLine {
        let mut text = String::new();
        for a in argv {
            if text.len() >= super::found::MAX_COMMAND {
                break;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(a);
        }
        CommandLine { java: super::cmdline::parse(argv), text: cut(text, super::found::MAX_COMMAND) }
    }
}

/// What a JVM's thread names tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadMarks {
    /// A JDWP agent thread ("JDWP Transport Listener", "JDWP Event Helper Thread").
    pub jdwp: bool,
    /// A thread the JVM starts once it is initialised (see `found::STARTED_THREADS`).
    pub started: bool,
}

impl ThreadMarks {
    pub fn from_names<'a>(names: impl Iterator<Item = &'a str>) -> ThreadMarks {
        let mut m = ThreadMarks::default();
        for n in names {
            m.jdwp |= n.starts_with("JDWP");
            m.started |= super::found::STARTED_THREADS.iter().any(|s| n.starts_with(s));
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

    /// Notes each agent's listening socket, and for an agent that picked its port, which
    /// other sockets of the process listen (see `ProcView::agent_inode`). Done once a round's
    /// records are all in: what a round shows is then one moment's, however its records were
    /// read.
    pub fn remember_agent_sockets(&mut self) {
        let mut seen = Vec::new();
        for (&pid, p) in &self.procs {
            let Some(s) = super::found::agent_socket_of(self, p) else { continue };
            let others: Vec<u64> = match (&p.fd_sockets, self.table_of(p)) {
                (Some(fds), Some(t)) => t.iter().filter(|o| o.listening() && fds.contains(&o.inode) && o.inode != s.inode).map(|o| o.inode).collect(),
                _ => Vec::new(),
            };
            seen.push((pid, s.local.port(), s.inode, others));
        }
        for (pid, port, inode, others) in seen {
            if let Some(p) = self.procs.get_mut(&pid) {
                p.last_port = Some(port);
                p.agent_inode = Some(inode);
                for o in others {
                    if !p.other_listeners.contains(&o) && p.other_listeners.len() < 64 {
                        p.other_listeners.push(o);
                    }
                }
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
        place::place_of(&p.place, &self.places, p.net.filter(|_| self.in_other_net(p)))
    }

    /// What to read next, after a round's `ns` and `tcp` records: new processes' command
    /// lines, and for JVMs with a listening agent their sockets (when the ones known are gone
    /// from the table), threads (while they may wait for a debugger) and, in another network
    /// namespace, that namespace's table and addresses.
    pub fn requests(&self) -> Vec<Request> {
        let mut proc_ = Vec::new();
        let (mut fd, mut threads, mut net_) = (Vec::new(), Vec::new(), Vec::new());
        // Namespaces whose table this round asks for already (through one of their processes).
        let mut nets_asked = BTreeSet::new();
        // Every process, whatever its network namespace: one that shares our process list
        // (a bare `ip netns exec` namespace, a `--pid=host` container) is on this machine all
        // the same, and is reached inside its namespace.
        for (&pid, p) in &self.procs {
            if p.command.is_none() {
                proc_.push(pid);
                continue;
            }
            let Some(agent) = super::found::agent_of(p) else { continue };
            let other_net = self.in_other_net(p);
            // Its namespace's table: once a round, through one of its processes; not at all
            // while jdwpmux's own connection holds the agent and the table read since says so.
            let settled = self.settled.contains(&pid) && p.net_settled;
            if other_net && !p.net_read && !settled && net_of(p).is_some_and(|n| nets_asked.insert(n)) {
                net_.push(pid);
            }
            if !agent.from_command_line && p.threads.is_none() {
                // Only the agent's threads tell a JVM from a process that merely inherited
                // JAVA_TOOL_OPTIONS.
                threads.push(pid);
            } else if agent.agent.suspend && super::found::waiting(p) != Some(false) {
                threads.push(pid);
            }
            let known_gone = match (&p.fd_sockets, self.table_of(p)) {
                (None, _) => !p.fd_read,
                (Some(fds), Some(table)) => !table.iter().any(|s| fds.contains(&s.inode) && s.local.port() != 0),
                (Some(_), None) => other_net,
            };
            if known_gone || (other_net && p.net_sockets.is_none()) {
                fd.push(pid);
            }
        }
        [("jdwpmux_proc", proc_), ("jdwpmux_fd", fd), ("jdwpmux_threads", threads), ("jdwpmux_net", net_)]
            .into_iter()
            .filter(|(_, pids)| !pids.is_empty())
            .map(|(command, pids)| Request { command, pids })
            .collect()
    }
}

/// What tells a process's network namespace apart: its inode, else (not readable) the
/// inode of its namespace's TCP table file. Both come from one kernel numbering.
fn net_of(p: &ProcView) -> Option<u64> {
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
mod tests {
    use super::super::wire::write_record;
    use super::*;

    fn records(list: &[(&str, &str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (tag, arg, body) in list {
            write_record(&mut out, tag, arg, body, "n");
        }
        out
    }

    fn apply(view: &mut HostView, bytes: &[u8]) {
        let mut buf = bytes;
        let mut recs = Vec::new();
        while let Some((r, n)) = super::super::wire::next_record(buf, "n").expect("well-formed") {
            recs.push(r);
            buf = &buf[n..];
        }
        view.apply(&recs);
    }

    const NS: &[u8] = b"lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/self/ns/net -> net:[100]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/self/ns/pid -> pid:[300]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/42/ns/net -> net:[100]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/42/ns/pid -> pid:[300]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/43/ns/net -> net:[200]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/43/ns/pid -> pid:[400]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/44/ns/net -> net:[500]
lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/44/ns/pid -> pid:[300]
";

    #[test]
    fn a_round_asks_only_for_what_is_new() {
        let mut v = HostView::default();
        apply(&mut v, &records(&[("id", "-", b"0"), ("tcp", "-", b""), ("ns", "-", NS)]));
        assert_eq!((v.uid, v.own_net, v.own_pids, v.procs.len()), (Some(0), Some(100), Some(300), 3));
        // 44 is in another network namespace that shares our process list (`ip netns exec`,
        // a `--pid=host` container): on this machine all the same, and looked at.
        assert!(v.in_other_net(&v.procs[&44]) && v.in_other_net(&v.procs[&43]));
        assert_eq!(v.requests(), vec![Request { command: "jdwpmux_proc", pids: vec![42, 43, 44] }]);
        let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000\0Main\0";
        apply(&mut v, &records(&[("proc", "42", b"0 root"), ("cmdline", "42", cmd), ("proc", "43", b"1000 ann"), ("cmdline", "43", b"bash\0"), ("proc", "44", b"0 root"), ("cmdline", "44", b"sleep\0")]));
        assert_eq!(v.procs[&42].user.as_deref(), Some("root"));
        // 42 is a JVM with an agent: its sockets are wanted; 43 is not a JVM.
        assert_eq!(v.requests(), vec![Request { command: "jdwpmux_fd", pids: vec![42] }]);
        let tcp = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5001 1 0 100 0 0 10 0";
        apply(&mut v, &records(&[("tcp", "-", tcp), ("fd", "42", b"l 3 -> socket:[5001]\n")]));
        assert!(v.requests().is_empty(), "nothing changed");
        // The listening socket is gone (a debugger came): its sockets are read again.
        apply(&mut v, &records(&[("tcp", "-", b"")]));
        assert_eq!(v.requests(), vec![Request { command: "jdwpmux_fd", pids: vec![42] }]);
        // 43 left; 42 is still there.
        apply(&mut v, &records(&[("ns", "-", b"/proc/self/ns/net -> net:[100]\n/proc/42/ns/net -> net:[100]\n/proc/42/ns/pid -> pid:[300]\n")]));
        assert_eq!(v.procs.keys().copied().collect::<Vec<_>>(), vec![42]);
    }

    #[test]
    fn environment_only_agents_need_their_threads_and_waiting_ones_are_watched() {
        let mut v = HostView::default();
        apply(&mut v, &records(&[("ns", "-", NS)]));
        let env = b"JAVA_TOOL_OPTIONS=-agentlib:jdwp=transport=dt_socket,server=y,address=8000\nPATH=/bin\n";
        apply(&mut v, &records(&[("cmdline", "42", b"java\0Main\0"), ("environ", "42", env), ("fd", "42", b"x")]));
        assert_eq!(v.procs[&42].env.len(), 1, "only the JDWP variables are kept");
        let r = v.requests();
        assert!(r.contains(&Request { command: "jdwpmux_threads", pids: vec![42] }), "{r:?}");
        apply(&mut v, &records(&[("threads", "42", b"java\nJDWP Transport \nJDWP Event Help\n")]));
        // suspend defaults to y and the VM has not started: still watched.
        assert!(v.requests().iter().any(|r| r.command == "jdwpmux_threads"));
        apply(&mut v, &records(&[("threads", "42", b"java\nJDWP Event Help\nCommon-Cleaner\n")]));
        assert!(!v.requests().iter().any(|r| r.command == "jdwpmux_threads"));
    }

    #[test]
    fn another_namespace_gets_its_own_table() {
        let mut v = HostView::default();
        apply(&mut v, &records(&[("ns", "-", NS)]));
        let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000\0Main\0";
        apply(&mut v, &records(&[("cmdline", "43", cmd)]));
        let r = v.requests();
        assert!(r.contains(&Request { command: "jdwpmux_net", pids: vec![43] }), "{r:?}");
        assert_eq!(request_line(&r, "n"), "jdwpmux_proc n 42 44; jdwpmux_fd n 43; jdwpmux_net n 43; jdwpmux_done n\n");
    }

    #[test]
    fn a_namespaces_table_is_read_once_a_round_and_not_while_jdwpmux_holds_its_agent() {
        // 43 and 46 share a namespace (a pod's two containers); 44 has its own.
        let ns = format!("{}/proc/46/ns/net -> net:[200]\n/proc/46/ns/pid -> pid:[400]\n", std::str::from_utf8(NS).unwrap());
        let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000\0Main\0";
        let listening = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7001 1 0";
        let held = b"   0: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000 0 0 7002 1 0";
        let mut v = HostView::default();
        let round = |v: &mut HostView| apply(v, &records(&[("ns", "-", ns.as_bytes())]));
        let asked = |v: &HostView| v.requests().into_iter().find(|r| r.command == "jdwpmux_net").map(|r| r.pids).unwrap_or_default();
        round(&mut v);
        for pid in ["43", "44", "46"] {
            apply(&mut v, &records(&[("proc", pid, b"0 root"), ("cmdline", pid, cmd), ("fd", pid, b"l 3 -> socket:[7001]\n")]));
        }
        // One process per namespace is asked; its table is every process's of that namespace.
        assert_eq!(asked(&v), [43, 44]);
        apply(&mut v, &records(&[("nettcp", "43", listening), ("nettcp", "44", listening)]));
        assert_eq!(v.procs[&46].net_sockets.as_ref().map(Vec::len), Some(1));
        assert!(asked(&v).is_empty(), "read once a round");
        // The next round reads them again.
        round(&mut v);
        assert_eq!(asked(&v), [43, 44]);
        // jdwpmux's own sessions hold 43 and 44 now: read once more (the table shows it held),
        // then not again while they do; 46, not held, still has its namespace read.
        v.settled = [43, 44].into();
        apply(&mut v, &records(&[("nettcp", "43", held), ("nettcp", "44", held)]));
        round(&mut v);
        assert_eq!(asked(&v), [46]);
        apply(&mut v, &records(&[("nettcp", "46", held)]));
        round(&mut v);
        v.settled = [43, 44, 46].into();
        assert_eq!(asked(&v), [46], "46's table was read before it was held (43's namespace)");
        apply(&mut v, &records(&[("nettcp", "46", held)]));
        round(&mut v);
        assert!(asked(&v).is_empty(), "nothing to read while jdwpmux holds them");
        // A session ends: its namespace is read again at once.
        v.settled = [43, 46].into();
        assert_eq!(asked(&v), [44]);
    }

    #[test]
    fn another_users_namespace_is_told_apart_by_its_tcp_tables_inode() {
        // To a user, root's container process shows no namespace links; its net/tcp's inode
        // (stat-able by anyone) differs from ours, and its table is still read.
        let ns = "/proc/self/ns/net -> net:[100]\n/proc/self/ns/pid -> pid:[300]\n/proc/self/ns/nettcp -> nettcp:[900]\n\
                  /proc/42/ns/nettcp -> nettcp:[901]\n/proc/43/ns/nettcp -> nettcp:[900]\n";
        let mut v = HostView { uid: Some(1000), ..HostView::default() };
        apply(&mut v, &records(&[("id", "-", b"1000"), ("ns", "-", ns.as_bytes())]));
        assert_eq!((v.procs[&42].net, v.procs[&42].net_seen), (None, Some(901)));
        assert!(v.in_other_net(&v.procs[&42]) && !v.in_other_net(&v.procs[&43]));
        let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000\0Main\0";
        for pid in ["42", "43"] {
            apply(&mut v, &records(&[("proc", pid, b"0 root"), ("cmdline", pid, cmd), ("fd", pid, b"")]));
        }
        assert_eq!(v.requests().into_iter().find(|r| r.command == "jdwpmux_net").map(|r| r.pids), Some(vec![42]));
        let listening = b"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7001 1 0";
        apply(&mut v, &records(&[("nettcp", "42", listening)]));
        let found = super::super::found::found(&v);
        let boxed = found.iter().find(|f| f.pid == 42).expect("root's container JVM is found");
        assert!(boxed.cannot_enter(), "{boxed:?}");
        assert!(matches!(&boxed.reach, super::super::Reach::Unreachable(w) if w.contains("only root can enter")), "{:?}", boxed.reach);
    }

    #[test]
    fn a_round_read_in_any_batches_leaves_the_same_view() {
        // A JVM whose agent picked its port, and a server socket of its own: which socket is
        // the agent's is decided when the round is whole, not on whatever part came first.
        let cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=0\0Main\0";
        let tcp = b"   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7 1 0\n   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 9 1 0";
        let round = records(&[("ns", "-", NS), ("cmdline", "42", cmd), ("fd", "42", b"l 3 -> socket:[9]\nl 4 -> socket:[7]\n"), ("tcp", "-", tcp), ("done", "-", b"")]);
        let whole = {
            let mut v = HostView::default();
            let mut buf = round.clone();
            assert_eq!(crate::discovery::jvms::take_records(&mut v, &mut buf, "n"), Ok(true));
            v
        };
        for cut in 1..round.len() {
            let mut v = HostView::default();
            let mut buf = round[..cut].to_vec();
            let _ = crate::discovery::jvms::take_records(&mut v, &mut buf, "n");
            buf.extend_from_slice(&round[cut..]);
            let _ = crate::discovery::jvms::take_records(&mut v, &mut buf, "n");
            assert_eq!(v, whole, "cut at {cut}");
        }
        assert_eq!(whole.procs[&42].agent_inode, Some(7), "the first socket it opened");
    }

    #[test]
    fn records_before_bad_output_are_taken() {
        let mut round = records(&[("id", "-", b"1000")]);
        round.extend_from_slice("junk\n".repeat(super::super::wire::MAX_JUNK_LINES + 1).as_bytes());
        round.extend_from_slice(&records(&[("done", "-", b"")]));
        let mut v = HostView::default();
        let mut buf = round.clone();
        assert!(crate::discovery::jvms::take_records(&mut v, &mut buf, "n").is_err());
        assert_eq!(v.uid, Some(1000), "what came before the bad output is kept");
    }

    const CMD: &[u8] = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000\0Main\0";
    const ID: &str = "3f1c9e0b7d2a4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";

    /// The records a `jdwpmux_proc` request gives, in the order it gives them.
    fn proc_records(pid: &str, cgroup: &str, env: &[u8], parents: &[&[u8]]) -> Vec<u8> {
        let mut out = records(&[("proc", pid, b"0 root"), ("cmdline", pid, CMD), ("environ", pid, env), ("cgroup", pid, cgroup.as_bytes())]);
        for p in parents {
            out.extend(records(&[("parent", pid, p)]));
        }
        out
    }

    #[test]
    fn places_from_records() {
        let mut v = HostView::default();
        apply(&mut v, &records(&[("ns", "-", NS)]));
        let conmon = format!("/usr/bin/conmon\0--api-version\x001\0-c\0{ID}\0-u\0{ID}\0-n\0billing-api\0--exit-dir\0/run/libpod/exits\0");
        let mut round = records(&[("pods", "-", b"pods/*\ncontainers/*\n"), ("netns", "-", b"4026532388 /run/netns/jmh1\n500 /run/netns/other\n")]);
        // 42: on the host. 43: rootful Podman under a shell (own pid namespace). 44: a
        // `--pid=host` rootless Podman container, known by its environment and conmon.
        round.extend(proc_records("42", "0::/user.slice/session-2.scope\n", b"HOSTNAME=build1", &[b"bash\0", b"sshd: root@pts/0\0"]));
        round.extend(proc_records("43", &format!("1:name=systemd:/libpod_parent/libpod-{ID}\n0::/\n"), b"container=podman\nHOSTNAME=3f1c9e0b7d2a", &[b"/bin/sh\0-c\0java Main\0", conmon.as_bytes()]));
        round.extend(proc_records("44", "0::/\n", b"container=podman\nHOSTNAME=3f1c9e0b7d2a", &[conmon.as_bytes()]));
        apply(&mut v, &round);
        let shown = |v: &HostView, pid: u32| v.place_of(&v.procs[&pid]).to_string();
        assert_eq!(shown(&v, 42), "-");
        assert_eq!(shown(&v, 43), "container billing-api (podman)");
        assert_eq!(shown(&v, 44), "container billing-api (podman)");
        assert_eq!(v.places.netns.len(), 2);
        // Its records read again (its pid came back): the ancestors are the new ones only.
        apply(&mut v, &proc_records("43", "0::/\n", b"", &[b"bash\0"]));
        assert_eq!((v.procs[&43].place.ancestors.clone(), v.procs[&43].place.conmon.clone()), (vec!["bash".to_string()], None));
        // A bare network namespace named by `ip netns`, then one that is not.
        let ns = b"/proc/self/ns/net -> net:[100]\n/proc/self/ns/pid -> pid:[300]\n/proc/45/ns/net -> net:[4026532388]\n/proc/45/ns/pid -> pid:[301]\n";
        apply(&mut v, &records(&[("ns", "-", ns)]));
        apply(&mut v, &proc_records("45", "0::/\n", b"", &[]));
        assert_eq!(shown(&v, 45), "netns jmh1");
        apply(&mut v, &records(&[("netns", "-", b"")]));
        assert_eq!(shown(&v, 45), "network namespace");
        let f = super::super::found::found(&v);
        assert_eq!(f.iter().map(|j| (j.pid, j.place.to_string())).collect::<Vec<_>>(), [(45, "network namespace".to_string())]);
    }

    #[test]
    fn pods_and_docker_from_records() {
        let uid = "0f5a2c1e-7b3d-4e9a-8c6f-1d2e3f4a5b6c";
        let mut v = HostView::default();
        apply(&mut v, &records(&[("ns", "-", NS)]));
        let pods = format!("pods/shop_orders-7d9f8b6c4-x2z9q_{uid}\ncontainers/orders-7d9f8b6c4-x2z9q_shop_app-{ID}.log\n");
        let cg = format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope\n", uid.replace('-', "_"));
        let mut round = records(&[("pods", "-", pods.as_bytes())]);
        round.extend(proc_records("43", &cg, b"HOSTNAME=orders-7d9f8b6c4-x2z9q", &[b"/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0"]));
        round.extend(proc_records("42", &format!("0::/system.slice/docker-{ID}.scope\n"), b"", &[]));
        round.extend(records(&[("docker", "42", format!(r#"{{"ID":"{ID}","Name":"/billing"}}"#).as_bytes())]));
        apply(&mut v, &round);
        let p = v.place_of(&v.procs[&43]);
        assert_eq!((p.to_string(), p.workload()), ("pod shop/orders-7d9f8b6c4-x2z9q".into(), Some("shop/orders".into())));
        assert!(matches!(&p, Place::Pod { container: Some(c), .. } if c == "app"), "{p:?}");
        assert_eq!(v.place_of(&v.procs[&42]).to_string(), "container billing (docker)");
    }

    #[test]
    fn hostile_records_are_bounded() {
        let mut v = HostView::default();
        let mut ns = String::new();
        for pid in 0..(MAX_PROCS as u32 + 100) {
            ns.push_str(&format!("/proc/{pid}/ns/net -> net:[1]\n"));
        }
        apply(&mut v, &records(&[("ns", "-", ns.as_bytes()), ("proc", "7", "1 ".repeat(10_000).as_bytes())]));
        assert_eq!(v.procs.len(), MAX_PROCS);
        assert!(v.procs[&7].user.as_ref().is_some_and(|u| u.len() <= 64));
        let huge = format!("java\0-cp\0{}\0Main\0", "a:".repeat(1 << 20));
        let env = format!("JAVA_TOOL_OPTIONS={}", "x".repeat(1 << 20));
        apply(&mut v, &records(&[("cmdline", "7", huge.as_bytes()), ("environ", "7", env.as_bytes())]));
        let p = &v.procs[&7];
        let c = p.command.as_ref().unwrap();
        assert_eq!(c.java.main.as_ref().map(|m| m.to_string()).as_deref(), Some("Main"), "read whole, kept short");
        assert!(c.text.len() <= super::super::found::MAX_COMMAND && p.env[0].len() <= MAX_ENV_VALUE);
        apply(&mut v, &records(&[("cmdline", "99999999", b"x"), ("zzz", "1", b"")]));
        // Where it runs: every list bounded, every name short.
        let many = |line: &str| line.repeat(100_000);
        let mut flood = records(&[("cgroup", "7", many("1:x:/libpod_parent/zzzz\n").as_bytes()), ("pods", "-", many("pods/a_b_c\n").as_bytes()), ("netns", "-", many("1 /run/netns/n\n").as_bytes())]);
        for _ in 0..1000 {
            flood.extend(records(&[("parent", "7", format!("conmon\0-n\0{}\0", "n".repeat(1 << 16)).as_bytes())]));
        }
        flood.extend(records(&[("docker", "7", format!("{{\"Name\":\"/{}\"}}", "d".repeat(1 << 20)).as_bytes())]));
        apply(&mut v, &flood);
        let f = &v.procs[&7].place;
        assert!(f.cgroups.len() <= place::MAX_CGROUPS && f.ancestors.len() <= place::MAX_ANCESTORS);
        assert!(f.ancestors.iter().all(|a| a.chars().count() <= place::MAX_NAME), "names cut");
        assert!(v.places.pods.len() <= place::MAX_HOST_ENTRIES && v.places.netns.len() <= place::MAX_HOST_ENTRIES);
        assert!(v.place_of(&v.procs[&7]).to_string().len() < place::MAX_NAME * 4 + 32);
    }
}
