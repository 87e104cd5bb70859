//! Stable names for the JVMs of one host: the registry key that keeps a VM's debugger port
//! across reconnects and restarts (host and main class, or jar: see `jvms::keys`), and the
//! number of the local socket its forward listens on. Pure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::FoundJvm;

/// Sockets numbered for one host at most (old numbers are never reused).
pub const MAX_SOCKETS: u32 = 65_536;

/// Keys and socket numbers given out on one host, kept for the daemon's lifetime.
#[derive(Debug, Default)]
pub struct Names {
    keys: KeyBook,
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
    /// Names every JVM of `found` (same order): `ssh:HOST/MAIN`, told apart as `jvms::keys`
    /// says when several run the same.
    /// `login` is the uid of the ssh login the scan ran as: other users' JVMs are keyed apart.
    pub fn name(&mut self, host: &str, dir: &Path, prefix: &str, login: Option<u32>, found: &[FoundJvm]) -> Vec<Option<Named>> {
        let keys = self.keys.keys(&format!("ssh:{host}/"), login, found);
        keys.into_iter()
            .map(|key| {
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
    use crate::discovery::jvms::Reach;

    fn jvm(pid: u32, main: &str, port: u16) -> FoundJvm {
        FoundJvm::sample(pid, main, port, port, Reach::At(([127, 0, 0, 1], port).into()))
    }

    #[test]
    fn keys_follow_main_classes_and_sockets_stay() {
        let mut n = Names::default();
        let dir = Path::new("/run/j");
        let first = n.name("box", dir, "h0", Some(1000), &[jvm(10, "Billing", 8000), jvm(11, "Worker", 8001), jvm(12, "Worker", 0)]);
        let keys: Vec<String> = first.iter().map(|x| x.clone().unwrap().key).collect();
        assert_eq!(keys, ["ssh:box/Billing", "ssh:box/Worker", "ssh:box/Worker#12"]);
        assert_eq!(first[0].as_ref().unwrap().socket, Path::new("/run/j/h0.0.sock"));
        // Billing restarted with a new pid and port: same key, same socket.
        let again = n.name("box", dir, "h0", Some(1000), &[jvm(99, "Billing", 8005)]);
        assert_eq!(again[0], first[0]);
    }
}
