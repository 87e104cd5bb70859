//! From what /proc showed to the JVMs a debugger can attach to: which process has a
//! listening JDWP agent, what it runs, which port its agent really listens on, whether it
//! waits for a debugger, and how to reach it from the host the scan ran on. Pure.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::agent::{Agent, Bind};
use super::holder::{holder, Holder};
use super::cmdline::MainName;
use super::net::{Socket, ESTABLISHED};
use super::place::{Place, Runtime};
use super::view::{DockerWay, HostView, PodmanSudo, ProcView};

pub use super::agents::{agent_of, agent_socket_of, waiting, AgentFrom, AgentOf};
pub use super::view::{MAX_COMMAND, STARTED_THREADS};

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
        // Root's Podman container, to a user who asked for sudo's podman (--podman-sudo).
        (me, Some(0), _) if me != Some(0) && !matches!(view.podman_sudo, PodmanSudo::Off | PodmanSudo::Untried) && matches!(view.place_of(p), Place::Container { runtime: Runtime::Podman, ref name, .. } if !name.is_empty()) => {
            let place = view.place_of(p);
            let name = match &place {
                Place::Container { name, .. } => name.clone(),
                _ => String::new(),
            };
            let head = format!("it runs in {place} of root's and its agent listens on that container's own {addr} only; only root can enter its network namespace");
            Reach::Unreachable(match &view.podman_sudo {
                PodmanSudo::Copying => format!("{head}: reaching it through `sudo -n podman exec -i {name}`"),
                PodmanSudo::Refused(said) => format!(
                    "{head}, and `sudo -n podman` (--podman-sudo) was refused: {said}: let this user run podman through sudo without a password (NOPASSWD), or run jdwpmux as root"
                ),
                _ => format!(
                    "{head}; jdwpmux reaches it through `sudo -n podman exec` (--podman-sudo) when it may copy itself into the container: \
                     serve --far-copy (or use an image with jdwpmux in it)"
                ),
            })
        }
        // Readable or not (another user's namespace links are not), who may enter says.
        (me, Some(0), _) if me != Some(0) => {
            // Root's Podman containers are root's Podman's: a user reaches them through sudo,
            // by hand or by jdwpmux (--podman-sudo).
            let place = view.place_of(p);
            let hint = place.exec_hint().map(|e| match &place {
                Place::Container { runtime: Runtime::Podman, .. } => {
                    format!("{}` (if sudo lets you run podman), or let jdwpmux do that: `serve --podman-sudo --far-copy`", e.replacen("'podman exec", "'sudo -n podman exec", 1))
                }
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
#[path = "found_tests.rs"]
mod tests;
