//! A process's JDWP agent as the view shows it: where its options came from, whether it
//! still waits for its first debugger, and its listening socket. Pure; read by `found`
//! (the JVMs a debugger can attach to) and `rounds` (what the next round reads).

use super::agent::{self, Agent};
use super::net::Socket;
use super::view::{HostView, ProcView};

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
