//! From what /proc showed to the JVMs a debugger can attach to: which process has a
//! listening JDWP agent, what it runs, which port its agent really listens on, whether it
//! waits for a debugger, and how to reach it from the host the scan ran on. Pure.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::agent::{self, Agent, Bind};
use super::holder::{holder, Holder};
use super::cmdline::MainName;
use super::net::{Socket, ESTABLISHED};
use super::place::{Place, Runtime};
use super::view::{DockerWay, HostView, ProcView};

/// Where a JVM's agent options came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentFrom {
    CommandLine,
    JdkJavaOptions,
    JavaToolOptions,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOf {
    pub agent: Agent,
    pub from: AgentFrom,
    pub from_command_line: bool,
}

/// How a JVM's agent is reached from the host that was scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Connect to this address.
    At(SocketAddr),
    /// Connect to `addr` inside the network namespace of process `pid`: its agent listens on
    /// that namespace's own addresses only (a container's loopback), which nothing outside
    /// reaches. `net` is that namespace's inode, so that a pid taken by another process
    /// since the scan is never entered.
    Inside { pid: u32, net: u64, addr: SocketAddr },
    /// It cannot be reached; the text says why and what to do.
    Unreachable(String),
}

/// A JVM with a listening JDWP agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundJvm {
    pub pid: u32,
    /// The owner's uid (None: its process could not be read).
    pub uid: Option<u32>,
    /// The owner's name, else `uid N`.
    pub user: Option<String>,
    pub main: Option<MainName>,
    pub agent: Agent,
    pub from: AgentFrom,
    /// The port the agent listens on now, or the one it was given.
    pub port: Option<u16>,
    /// Its agent listens now (no debugger holds it).
    pub listening: bool,
    /// A connection to the agent's port is open (a debugger, or jdwpmux itself).
    pub attached: bool,
    /// Who is on the other end of that connection, when it can be told.
    pub held_by: Option<Holder>,
    /// `suspend=y` and `main` has not started: it waits for its first debugger. None when
    /// that cannot be told.
    pub waiting: Option<bool>,
    /// It runs in another network namespace (a container) than the scan.
    pub other_net: bool,
    /// The address its agent listens on: its socket's, else the one it was given; None when
    /// neither is known (`exposed::bound`).
    pub bound: Option<IpAddr>,
    pub reach: Reach,
    /// Its command line, arguments joined by spaces (cut at `MAX_COMMAND`): for filters,
    /// never shown (it may hold secrets).
    pub command: String,
    /// Where it runs: the host, a container, a pod, a network namespace.
    pub place: Place,
}

/// Bytes of a command line kept in `FoundJvm::command`.
pub const MAX_COMMAND: usize = 4096;

impl FoundJvm {
    /// A JVM running `main` whose agent was given `agent_port` (0: it picked one), listening
    /// on `port`, reached as `reach` (for tests of what is built on found JVMs).
    #[cfg(test)]
    pub(crate) fn sample(pid: u32, main: &str, agent_port: u16, port: u16, reach: Reach) -> FoundJvm {
        FoundJvm {
            pid,
            uid: Some(1000),
            user: None,
            main: Some(MainName::Class(main.into())),
            agent: Agent { transport: "dt_socket".into(), server: true, suspend: false, bind: Bind::Default, port: agent_port },
            from: AgentFrom::CommandLine,
            port: Some(port),
            listening: true,
            attached: false,
            held_by: None,
            waiting: Some(false),
            other_net: false,
            bound: Some(Ipv4Addr::LOCALHOST.into()),
            reach,
            command: String::new(),
            place: Place::Host,
        }
    }

    /// Its agent listens on every address of its host (`exposed`).
    pub fn all_addresses(&self) -> bool {
        self.bound.is_some_and(|ip| ip.is_unspecified())
    }

    /// Its agent does not listen because a debugger holds it (jdwpmux itself, or another).
    pub fn busy(&self) -> bool {
        self.attached && !self.listening
    }

    /// Whether it runs as the scanning user (`scanner`: the scan's own uid). A process whose
    /// owner cannot be told counts as another user's.
    pub fn runs_as(&self, scanner: Option<u32>) -> bool {
        self.uid.is_some() && self.uid == scanner
    }

    /// A JVM in another network namespace (a container) that the scan's user may not enter:
    /// listed with why, never connected to (what its owner's own debugger uses stays free).
    pub fn cannot_enter(&self) -> bool {
        self.other_net && matches!(self.reach, Reach::Unreachable(_))
    }

    /// `com.example.Billing`, else `pid 4242`.
    pub fn name(&self) -> String {
        self.main.as_ref().map_or_else(|| format!("pid {}", self.pid), |m| m.to_string())
    }
}

/// Threads a JVM starts once its VM is initialised: none of them exists while a
/// `suspend=y` agent waits for its first debugger (seen on HotSpot 17 and 25; others, such as
/// "VM Periodic Task Thread", already run then on 25).
pub const STARTED_THREADS: &[&str] = &["Common-Cleaner", "Notification Th"];

/// The process's listening JDWP agent: from its command line, else `JDK_JAVA_OPTIONS`, else
/// `JAVA_TOOL_OPTIONS` (the JVM reads that one first, but the command line is what people
/// look at).
pub fn agent_of(p: &ProcView) -> Option<AgentOf> {
    let cmd = &p.command.as_ref()?.java;
    if let Some(agent) = cmd.agents.iter().flatten().find(|a| a.listens()).cloned() {
        return Some(AgentOf { agent, from: AgentFrom::CommandLine, from_command_line: true });
    }
    for (var, from) in [("JDK_JAVA_OPTIONS=", AgentFrom::JdkJavaOptions), ("JAVA_TOOL_OPTIONS=", AgentFrom::JavaToolOptions)] {
        let Some(value) = p.env.iter().find_map(|e| e.strip_prefix(var)) else { continue };
        let found = agent::split_env_options(value).iter().filter_map(|o| agent::parse_arg(o)).flatten().find(Agent::listens);
        if let Some(agent) = found {
            return Some(AgentOf { agent, from, from_command_line: false });
        }
    }
    None
}

/// Whether a `suspend=y` JVM still waits for its first debugger (None: not known yet).
pub fn waiting(p: &ProcView) -> Option<bool> {
    let a = agent_of(p)?;
    if !a.agent.suspend {
        return Some(false);
    }
    Some(!p.threads?.started)
}

/// Every process of `view` with a listening JDWP agent. One whose agent came from the
/// environment counts only once its threads show the agent loaded.
///
/// A JVM restarted on its port is often seen while the old process is still exiting: the
/// old one's agent no longer listens and no debugger holds it, while the new one's agent
/// listens on that port in the same network namespace. Only the new one is left, so that it
/// takes the old one's key (and debugger port) rather than one of its own.
pub fn found(view: &HostView) -> Vec<FoundJvm> {
    let all: Vec<(Option<u64>, FoundJvm)> =
        view.procs.iter().filter_map(|(&pid, p)| Some((p.net, found_one(view, pid, p)?))).collect();
    let listened: Vec<(Option<u64>, u16)> = all.iter().filter(|(_, f)| f.listening).filter_map(|(net, f)| Some((*net, f.port?))).collect();
    let superseded = |net: Option<u64>, f: &FoundJvm| !f.listening && !f.attached && f.port.is_some_and(|port| listened.contains(&(net, port)));
    all.into_iter().filter(|(net, f)| !superseded(*net, f)).map(|(_, f)| f).collect()
}

fn found_one(view: &HostView, pid: u32, p: &ProcView) -> Option<FoundJvm> {
    let AgentOf { agent, from, from_command_line } = agent_of(p)?;
    if !from_command_line && !p.threads?.jdwp {
        return None;
    }
    let command = p.command.clone().unwrap_or_default();
    let other_net = view.in_other_net(p);
    let table = view.table_of(p).unwrap_or_default();
    let own: Vec<&Socket> = match &p.fd_sockets {
        Some(fds) => table.iter().filter(|s| fds.contains(&s.inode)).collect(),
        None => Vec::new(),
    };
    let listen = agent_socket_of(view, p);
    let port = listen.map(|s| s.local.port()).or((!agent.ephemeral()).then_some(agent.port)).or(p.last_port);
    let attached = port.is_some_and(|port| {
        let conns = if p.fd_sockets.is_some() { own.clone() } else { table.iter().collect() };
        conns.iter().any(|s| s.state == ESTABLISHED && s.local.port() == port)
    });
    let held_by = match (listen, port) {
        (None, Some(port)) => holder(table, p.fd_sockets.as_deref(), port),
        _ => None,
    };
    let user = p.user.clone().filter(|u| !u.is_empty()).or_else(|| p.uid.map(|u| format!("uid {u}")));
    let reach = reach(view, pid, p, &agent, listen, port, other_net);
    let bound = super::exposed::bound(listen.map(|s| s.local.ip()), &agent);
    Some(FoundJvm {
        pid,
        uid: p.uid,
        user,
        main: command.java.main,
        waiting: waiting(p),
        agent,
        from,
        port,
        listening: listen.is_some(),
        attached,
        held_by,
        other_net,
        bound,
        reach,
        command: command.text,
        place: view.place_of(p),
    })
}

/// The agent's listening socket now, if it can be told: for a given port, the process's
/// socket on it (any socket on it when the process's own cannot be read); for a port the
/// agent picked, the one it was seen on, else a listening socket of the process that is not
/// one of the program's own servers (the first one opened, at first sight: the agent listens
/// before the program starts).
pub fn agent_socket_of<'a>(view: &'a HostView, p: &'a ProcView) -> Option<&'a Socket> {
    let a = agent_of(p)?;
    let table = view.table_of(p)?;
    let own = |s: &&Socket| p.fd_sockets.as_ref().is_some_and(|fds| fds.contains(&s.inode));
    if !a.agent.ephemeral() {
        let on_port = |s: &&Socket| s.listening() && s.local.port() == a.agent.port;
        return match p.fd_sockets {
            Some(_) => table.iter().filter(own).filter(on_port).min_by_key(|s| s.inode),
            None => table.iter().filter(on_port).min_by_key(|s| s.inode),
        };
    }
    let listening: Vec<&Socket> = table.iter().filter(own).filter(|s| s.listening()).collect();
    if let Some(s) = p.agent_inode.and_then(|i| listening.iter().copied().find(|s| s.inode == i)) {
        return Some(s);
    }
    listening.into_iter().filter(|s| !p.other_listeners.contains(&s.inode)).min_by_key(|s| s.inode)
}

fn reach(view: &HostView, pid: u32, p: &ProcView, agent: &Agent, listen: Option<&Socket>, port: Option<u16>, other_net: bool) -> Reach {
    let Some(port) = port else {
        let why = if p.fd_sockets.is_none() && view.uid != Some(0) {
            let owner = p.user.clone().or(p.uid.map(|u| format!("uid {u}"))).unwrap_or_else(|| "another user".into());
            format!("its agent picked a port that only {owner} or root can see; run jdwpmux as that user, or give the agent a fixed address=PORT")
        } else {
            "its agent picked a port and does not listen now (a debugger is attached to it directly?)".to_string()
        };
        return Reach::Unreachable(why);
    };
    let bound: IpAddr = match (listen, &agent.bind) {
        (Some(s), _) => s.local.ip(),
        (None, Bind::Host(h)) => match h.parse() {
            Ok(ip) => ip,
            Err(_) if h == "localhost" => Ipv4Addr::LOCALHOST.into(),
            Err(_) => return Reach::Unreachable(format!("its agent listens on {h}:{port}, a name jdwpmux does not resolve; use an address")),
        },
        (None, Bind::Any) => Ipv4Addr::UNSPECIFIED.into(),
        (None, Bind::Default) => Ipv4Addr::LOCALHOST.into(),
    };
    if !other_net {
        let ip = if bound.is_unspecified() { Ipv4Addr::LOCALHOST.into() } else { bound };
        return Reach::At(SocketAddr::new(ip, port));
    }
    if !bound.is_loopback() && !bound.is_unspecified() {
        return Reach::At(SocketAddr::new(bound, port));
    }
    if bound.is_unspecified() {
        // On every address of its namespace: its own address, where it has one that is
        // routed from here (a bridge network), costs nothing to reach.
        if let Some(ip) = p.net_addrs.first() {
            return Reach::At(SocketAddr::new(*ip, port));
        }
    }
    let addr = SocketAddr::new(if bound.is_unspecified() { Ipv4Addr::LOCALHOST.into() } else { bound }, port);
    inside(view, pid, p, addr)
}

/// A JVM of another network namespace whose agent only that namespace reaches: entered, when
/// the scanner may (root enters any namespace; a user, the namespaces of their own rootless
/// containers), else why not and what to do.
fn inside(view: &HostView, pid: u32, p: &ProcView, addr: SocketAddr) -> Reach {
    let owner = p.user.clone().filter(|u| !u.is_empty()).or(p.uid.map(|u| format!("uid {u}")));
    match (view.uid, p.uid, p.net) {
        (Some(0), _, Some(net)) => Reach::Inside { pid, net, addr },
        (Some(me), Some(them), Some(net)) if me == them => Reach::Inside { pid, net, addr },
        // A Docker container this user may reach through `docker exec` (the docker group).
        _ if view.docker != DockerWay::No && matches!(view.place_of(p), Place::Container { runtime: Runtime::Docker, .. }) => {
            let place = view.place_of(p);
            let name = match &place {
                Place::Container { name, .. } => name.clone(),
                _ => String::new(),
            };
            Reach::Unreachable(match view.docker {
                DockerWay::Copying => format!(
                    "its agent listens on {place}'s own {addr} only and its network namespace is not this user's to enter; \
                     reaching it through `docker exec -i {name}`"
                ),
                _ => format!(
                    "its agent listens on {place}'s own {addr} only and its network namespace is not this user's to enter; \
                     jdwpmux reaches it through docker (this user may use it) when it may copy itself into the container: \
                     serve --far-copy (or use an image with jdwpmux in it)"
                ),
            })
        }
        // Readable or not (another user's namespace links are not), who may enter says.
        (me, Some(0), _) if me != Some(0) => {
            // Root's Podman containers are root's Podman's: a user reaches them through sudo.
            let place = view.place_of(p);
            let hint = place.exec_hint().map(|e| match &place {
                Place::Container { runtime: Runtime::Podman, .. } => format!("{}` (if sudo lets you run podman)", e.replacen("'podman exec", "'sudo -n podman exec", 1)),
                _ => format!("{e}`"),
            });
            let exec = hint.map_or_else(|| "its container runtime's exec (serve --exec)".to_string(), |e| format!("`{e}"));
            Reach::Unreachable(format!(
                "it runs in a container of root's and its agent listens on that container's own {addr} only; \
                 only root can enter its network namespace: run jdwpmux as root, or reach it through {exec}"
            ))
        }
        // A uid with no user here (a container's `--user 4321`): nobody logs in as it.
        (_, Some(_), _) if p.user.as_deref().is_none_or(str::is_empty) => {
            let exec = view.place_of(p).exec_hint().map_or_else(|| "its container runtime's exec (serve --exec)".to_string(), |e| format!("`{e}`"));
            let who = owner.unwrap_or_else(|| "a uid with no user here".into());
            Reach::Unreachable(format!(
                "it runs as {who} (no user of this machine) and its agent listens on its container's own {addr} only; \
                 only root can enter its network namespace: run jdwpmux as root with --other-users, or reach it through {exec}"
            ))
        }
        (_, Some(them), _) if view.uid != Some(them) => {
            let owner = owner.unwrap_or_else(|| "its owner".into());
            Reach::Unreachable(format!(
                "it runs in a container of {owner}'s and its agent listens on that container's own {addr} only; \
                 only root or {owner} can enter its network namespace: run jdwpmux as {owner}, or as root with --other-users"
            ))
        }
        _ => Reach::Unreachable("it runs in another network namespace that cannot be read".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::net::{LISTEN, ESTABLISHED};
    use crate::discovery::jvms::view::{CommandLine, ThreadMarks};

    fn marks(names: &[&str]) -> ThreadMarks {
        ThreadMarks::from_names(names.iter().copied())
    }

    fn sock(local: &str, state: u8, inode: u64) -> Socket {
        Socket { local: local.parse().unwrap(), remote: "0.0.0.0:0".parse().unwrap(), state, uid: 0, inode }
    }

    fn proc_(args: &str, fds: Option<Vec<u64>>) -> ProcView {
        ProcView {
            net: Some(1),
            pids: Some(7),
            uid: Some(1000),
            user: Some("ann".into()),
            command: Some(CommandLine::from_args(&args.split(' ').map(String::from).collect::<Vec<_>>())),
            fd_sockets: fds,
            threads: Some(marks(&["java", "JDWP Event Help", "Common-Cleaner"])),
            ..Default::default()
        }
    }

    fn view(procs: Vec<(u32, ProcView)>, sockets: Vec<Socket>) -> HostView {
        HostView { uid: Some(1000), own_net: Some(1), own_pids: Some(7), sockets, procs: procs.into_iter().collect(), ..Default::default() }
    }

    #[test]
    fn a_fixed_port_on_loopback() {
        let v = view(
            vec![(10, proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000 -cp . com.example.Billing", Some(vec![5])))],
            vec![sock("127.0.0.1:8000", LISTEN, 5)],
        );
        let f = found(&v);
        assert_eq!(f.len(), 1);
        let j = &f[0];
        assert_eq!((j.pid, j.name(), j.port, j.listening, j.attached), (10, "com.example.Billing".to_string(), Some(8000), true, false));
        assert_eq!(j.reach, Reach::At("127.0.0.1:8000".parse().unwrap()));
        assert_eq!((j.waiting, j.from, j.user.as_deref()), (Some(false), AgentFrom::CommandLine, Some("ann")));
    }

    #[test]
    fn a_picked_port_is_read_from_the_process_sockets() {
        let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=127.0.0.1:0 -jar /srv/app.jar";
        let mut v = view(
            vec![(10, proc_(args, Some(vec![7, 9, 11])))],
            vec![sock("0.0.0.0:8080", LISTEN, 9), sock("127.0.0.1:40411", LISTEN, 7), sock("127.0.0.1:40411", ESTABLISHED, 11)],
        );
        v.remember_agent_sockets();
        let j = &found(&v)[0];
        assert_eq!((j.port, j.attached, j.name()), (Some(40411), true, "app.jar".to_string()));
        assert_eq!(j.reach, Reach::At("127.0.0.1:40411".parse().unwrap()));
        // While a debugger is attached it does not listen: the port it last listened on, not
        // the program's own server.
        let mut later = v.clone();
        later.sockets.retain(|s| s.state != LISTEN || s.local.port() == 8080);
        let j = &found(&later)[0];
        assert_eq!((j.port, j.listening, j.reach.clone()), (Some(40411), false, Reach::At("127.0.0.1:40411".parse().unwrap())));
        // A debugger holds it: busy, and the other end of its connection is named.
        assert!(j.busy() && j.held_by.is_some_and(|h| h.socket.is_none()), "{j:?}");
        assert!(j.runs_as(Some(1000)) && !j.runs_as(Some(0)) && !j.runs_as(None));
        // After the debugger, the agent listens on a new port: that one.
        later.sockets.push(sock("127.0.0.1:45000", LISTEN, 20));
        later.procs.get_mut(&10).unwrap().fd_sockets = Some(vec![9, 20]);
        later.remember_agent_sockets();
        assert_eq!(found(&later)[0].port, Some(45000));
        // Never readable (another user's process): the port is unknown, and the hint says why.
        let mut v = view(vec![(10, proc_(args, None))], v.sockets.clone());
        v.remember_agent_sockets();
        let j = &found(&v)[0];
        assert!(matches!(&j.reach, Reach::Unreachable(why) if why.contains("only ann or root")), "{:?}", j.reach);
    }

    #[test]
    fn a_fixed_port_of_another_user_is_found_in_the_table() {
        let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=*:8001 Main";
        let v = view(vec![(10, proc_(args, None))], vec![sock("[::]:8001", LISTEN, 3)]);
        let j = &found(&v)[0];
        assert_eq!((j.port, j.listening), (Some(8001), true));
        assert_eq!(j.reach, Reach::At("127.0.0.1:8001".parse().unwrap()));
        // Not listening now: still found, reached where it will listen again.
        let v = view(vec![(10, proc_(args, None))], vec![]);
        let j = &found(&v)[0];
        assert_eq!((j.listening, j.reach.clone()), (false, Reach::At("127.0.0.1:8001".parse().unwrap())));
    }

    #[test]
    fn a_jvm_restarted_on_its_port_leaves_its_exiting_predecessor_out() {
        let args = "java -agentlib:jdwp=transport=dt_socket,server=y,address=8000 Billing";
        let old = proc_(args, Some(vec![]));
        let new = proc_(args, Some(vec![6]));
        let v = view(vec![(10, old.clone()), (11, new.clone())], vec![sock("127.0.0.1:8000", LISTEN, 6)]);
        let f = found(&v);
        assert_eq!(f.iter().map(|j| (j.pid, j.listening)).collect::<Vec<_>>(), [(11, true)]);
        // One that a debugger holds directly is another JVM, and stays.
        let attached = proc_(args, Some(vec![8]));
        let v = view(vec![(10, attached), (11, new.clone())], vec![sock("127.0.0.1:8000", LISTEN, 6), sock("127.0.0.1:8000", ESTABLISHED, 8)]);
        assert_eq!(found(&v).len(), 2);
        // Nobody listens on the port: the old one is still found, reached where it will listen.
        let v = view(vec![(10, old.clone())], vec![]);
        assert_eq!(found(&v).iter().map(|j| (j.pid, j.listening)).collect::<Vec<_>>(), [(10, false)]);
        // The same port in another network namespace is another JVM's.
        let mut boxed = old;
        boxed.net = Some(2);
        boxed.pids = Some(8);
        boxed.net_sockets = Some(vec![]);
        let v = view(vec![(10, boxed), (11, new)], vec![sock("127.0.0.1:8000", LISTEN, 6)]);
        assert_eq!(found(&v).len(), 2);
    }

    #[test]
    fn environment_agents_count_once_their_threads_show_it() {
        let mut p = proc_("java -cp . Main", Some(vec![5]));
        p.env = vec!["JAVA_TOOL_OPTIONS=-Xmx1g -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=8002".into()];
        p.threads = Some(marks(&["java", "JDWP Transport ", "JDWP Event Help"]));
        let v = view(vec![(10, p.clone())], vec![sock("127.0.0.1:8002", LISTEN, 5)]);
        let j = &found(&v)[0];
        assert_eq!((j.from, j.waiting, j.port), (AgentFrom::JavaToolOptions, Some(true), Some(8002)));
        // The same variable in a shell's environment: no agent threads, no JVM.
        p.threads = Some(marks(&["bash"]));
        assert!(found(&view(vec![(10, p.clone())], vec![])).is_empty());
        p.threads = None;
        assert!(found(&view(vec![(10, p)], vec![])).is_empty());
    }

    #[test]
    fn containers_are_reached_at_their_own_address_or_inside_their_namespace() {
        let mut p = proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:8000 Main", Some(vec![5]));
        p.net = Some(2);
        p.pids = Some(8);
        p.net_sockets = Some(vec![sock("0.0.0.0:8000", LISTEN, 5)]);
        p.net_addrs = vec![IpAddr::from([172, 17, 0, 2])];
        let j = &found(&view(vec![(10, p.clone())], vec![]))[0];
        assert!(j.other_net);
        assert_eq!(j.reach, Reach::At("172.17.0.2:8000".parse().unwrap()));
        // No address of its own (--network=none): its loopback, inside its namespace, by its
        // owner (the scanner here: a rootless container).
        p.net_addrs.clear();
        let inside = Reach::Inside { pid: 10, net: 2, addr: "127.0.0.1:8000".parse().unwrap() };
        assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
        // On its loopback only: the same, whatever addresses it has.
        p.net_sockets = Some(vec![sock("127.0.0.1:8000", LISTEN, 5)]);
        p.net_addrs = vec![IpAddr::from([172, 17, 0, 2])];
        assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
        // Sharing our process list (`ip netns exec`, `--pid=host`): on this machine all the same.
        p.pids = Some(7);
        assert_eq!(found(&view(vec![(10, p.clone())], vec![]))[0].reach, inside);
        // Root enters anyone's; another user cannot, and is told who can.
        let mut root = view(vec![(10, p.clone())], vec![]);
        root.uid = Some(0);
        assert_eq!(found(&root)[0].reach, inside);
        let mut theirs = view(vec![(10, p.clone())], vec![]);
        theirs.uid = Some(1001);
        assert!(matches!(&found(&theirs)[0].reach, Reach::Unreachable(w) if w.contains("only root or ann") && w.contains("--other-users")), "{:?}", found(&theirs)[0].reach);
        p.uid = Some(0);
        let rootful = view(vec![(10, p)], vec![]);
        assert!(matches!(&found(&rootful)[0].reach, Reach::Unreachable(w) if w.contains("run jdwpmux as root")), "{:?}", found(&rootful)[0].reach);
    }

    #[test]
    fn advice_fits_the_case_at_hand() {
        let id = "2d9d171a7943".to_string() + &"0".repeat(52);
        let mut p = proc_("java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:5005 Main", None);
        p.net = Some(2);
        p.pids = Some(8);
        p.net_sockets = Some(vec![sock("127.0.0.1:5005", LISTEN, 5)]);
        p.place.set_cgroups(&format!("0::/docker/{id}\n"));
        // A uid with no user here (`docker run --user 4321`): no "run jdwpmux as uid 4321".
        p.uid = Some(4321);
        p.user = None;
        let mut v = view(vec![(10, p.clone())], vec![]);
        v.uid = Some(1000);
        let why = |v: &HostView| match &found(v)[0].reach {
            Reach::Unreachable(w) => w.clone(),
            other => panic!("{other:?}"),
        };
        let w = why(&v);
        assert!(w.contains("no user of this machine") && w.contains("run jdwpmux as root with --other-users") && !w.contains("run jdwpmux as uid"), "{w}");
        assert!(w.contains("serve --exec 2d9d171a7943='docker exec -i 2d9d171a7943' --far-copy"), "{w}");
        // This user may use docker: reached through it, named by it; copying allowed or not.
        v.runtime_names.insert(id.clone(), "orders-api".into());
        v.docker = DockerWay::NotCopying;
        let w = why(&v);
        assert!(w.contains("container orders-api (docker)'s own 127.0.0.1:5005") && w.contains("serve --far-copy") && !w.contains("--other-users"), "{w}");
        assert_eq!(found(&v)[0].place, Place::Container { runtime: Runtime::Docker, name: "orders-api".into(), id: Some(id.clone()) });
        v.docker = DockerWay::Copying;
        assert!(why(&v).ends_with("reaching it through `docker exec -i orders-api`"), "{}", why(&v));
        // A root container: the same.
        let mut rootful = view(vec![(10, p.clone())], vec![]);
        rootful.procs.get_mut(&10).unwrap().uid = Some(0);
        rootful.uid = Some(1000);
        assert!(why(&rootful).contains("run jdwpmux as root"), "{}", why(&rootful));
        rootful.docker = DockerWay::Copying;
        assert!(why(&rootful).contains("through `docker exec -i 2d9d171a7943`"), "{}", why(&rootful));
        // Root enters it whatever docker says.
        rootful.uid = Some(0);
        assert!(matches!(found(&rootful)[0].reach, Reach::Inside { .. }));
        // A rootful Podman's container, to a user: through sudo's podman.
        let mut podman = p.clone();
        podman.uid = Some(0);
        podman.place = Default::default();
        podman.place.set_cgroups(&format!("0::/machine.slice/libpod-{id}.scope\n"));
        let mut v = view(vec![(10, podman)], vec![]);
        v.uid = Some(1000);
        let w = why(&v);
        assert!(w.contains("`serve --exec 2d9d171a7943='sudo -n podman exec -i 2d9d171a7943' --far-copy` (if sudo lets you run podman)"), "{w}");
    }

    #[test]
    fn not_jvms_with_agents() {
        let v = view(
            vec![
                (1, proc_("java -agentlib:jdwp=transport=dt_socket,server=n,address=host:8000 Main", None)),
                (2, proc_("grep -l -e jdw[p] /proc/1/cmdline", None)),
                (3, proc_("java Main -agentlib:jdwp=transport=dt_socket,server=y,address=8000", None)),
            ],
            vec![],
        );
        assert!(found(&v).is_empty());
    }
}
