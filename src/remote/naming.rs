//! Stable names for the JVMs of one host: the registry key that keeps a VM's debugger port
//! across reconnects and restarts (host and main class, or jar), and the number of the local
//! socket its forward listens on. Pure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::discovery::jvms::FoundJvm;

/// Sockets numbered for one host at most (old numbers are never reused).
pub const MAX_SOCKETS: u32 = 65_536;

/// Keys and socket numbers given out on one host, kept for the daemon's lifetime.
#[derive(Debug, Default)]
pub struct Names {
    numbers: HashMap<String, u32>,
    next: u32,
}

/// A found JVM's key and local socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub key: String,
    pub socket: PathBuf,
}

impl Names {
    /// Names every JVM of `found` (same order). A main class that only one JVM of the host
    /// runs is the key alone; several JVMs of one main class are told apart by the port their
    /// agent was given, else by pid.
    pub fn name(&mut self, host: &str, dir: &Path, prefix: &str, found: &[FoundJvm]) -> Vec<Option<Named>> {
        found
            .iter()
            .map(|f| {
                let base = f.name();
                let shared = found.iter().filter(|o| o.name() == base).count() > 1;
                let key = match (shared, f.agent.ephemeral()) {
                    (false, _) => format!("ssh:{host}/{base}"),
                    (true, false) => format!("ssh:{host}/{base}@{}", f.agent.port),
                    (true, true) => format!("ssh:{host}/{base}#{}", f.pid),
                };
                let n = match self.numbers.get(&key) {
                    Some(n) => *n,
                    None if self.next < MAX_SOCKETS => {
                        let n = self.next;
                        self.next += 1;
                        self.numbers.insert(key.clone(), n);
                        n
                    }
                    None => return None,
                };
                Some(Named { socket: dir.join(format!("{prefix}.{n}.sock")), key })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::agent::{Agent, Bind};
    use crate::discovery::jvms::cmdline::MainName;
    use crate::discovery::jvms::found::AgentFrom;
    use crate::discovery::jvms::Reach;

    fn jvm(pid: u32, main: &str, port: u16) -> FoundJvm {
        FoundJvm {
            pid,
            user: None,
            main: Some(MainName::Class(main.into())),
            agent: Agent { transport: "dt_socket".into(), server: true, suspend: false, bind: Bind::Default, port },
            from: AgentFrom::CommandLine,
            port: Some(port),
            listening: true,
            attached: false,
            waiting: Some(false),
            other_net: false,
            reach: Reach::At(([127, 0, 0, 1], port).into()),
            command: String::new(),
        }
    }

    #[test]
    fn keys_follow_main_classes_and_sockets_stay() {
        let mut n = Names::default();
        let dir = Path::new("/run/j");
        let first = n.name("box", dir, "h0", &[jvm(10, "Billing", 8000), jvm(11, "Worker", 8001), jvm(12, "Worker", 0)]);
        let keys: Vec<String> = first.iter().map(|x| x.clone().unwrap().key).collect();
        assert_eq!(keys, ["ssh:box/Billing", "ssh:box/Worker@8001", "ssh:box/Worker#12"]);
        assert_eq!(first[0].as_ref().unwrap().socket, Path::new("/run/j/h0.0.sock"));
        // Billing restarted with a new pid and port: same key, same socket.
        let again = n.name("box", dir, "h0", &[jvm(99, "Billing", 8005)]);
        assert_eq!(again[0], first[0]);
    }
}
