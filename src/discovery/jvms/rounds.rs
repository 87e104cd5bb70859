//! What a round's records lead to on the view: each agent's listening socket remembered,
//! and what the next step of the round reads. Pure.

use std::collections::BTreeSet;

use super::agents::{agent_of, agent_socket_of, waiting};
use super::view::{net_of, HostView, Request};

impl HostView {
    /// Notes each agent's listening socket, and for an agent that picked its port, which
    /// other sockets of the process listen (see `ProcView::agent_inode`). Done once a round's
    /// records are all in: what a round shows is then one moment's, however its records were
    /// read.
    pub fn remember_agent_sockets(&mut self) {
        let mut seen = Vec::new();
        for (&pid, p) in &self.procs {
            let Some(s) = agent_socket_of(self, p) else { continue };
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
            let Some(agent) = agent_of(p) else { continue };
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
            } else if agent.agent.suspend && waiting(p) != Some(false) {
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
