//! What a round of the /proc scan decides about each JVM found: its key, its name, and how
//! it is reached (or why not). Used by `serve`'s local discovery and by the far side, which
//! scan the same way. Pure.

use std::net::SocketAddr;

use super::keys::KeyBook;
use super::{FoundJvm, Reach};
use crate::transport::Endpoint;

/// What one round decided about one JVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub key: String,
    pub name: String,
    /// Where its agent listens: on this machine, or inside its network namespace (see
    /// `endpoint`).
    pub addr: SocketAddr,
    /// How it is reached.
    pub endpoint: Endpoint,
    /// None: reachable at `addr`; Some: why not.
    pub unreachable: Option<String>,
    /// Something worth a note while it is reachable (a container's own address).
    pub note: Option<String>,
}

/// Keys and names for a round's JVMs. A JVM whose agent has a port of its own is keyed by
/// its address (as the port scan and `--vm` key it, so that nothing is listed twice); one
/// whose agent picked its port, by what it runs (`jvms::keys`: it keeps its key while it
/// runs, and a restarted one takes it again).
pub fn decide(found: &[FoundJvm], scanner: Option<u32>, book: &mut KeyBook) -> Vec<Decision> {
    // Keyed by what they run, in one call: the book forgets whatever a call does not list.
    let by_run = |f: &FoundJvm| matches!(f.reach, Reach::Inside { .. }) || (f.agent.ephemeral() && matches!(f.reach, Reach::At(_)));
    let keyed: Vec<FoundJvm> = found.iter().filter(|f| by_run(f)).cloned().collect();
    let mut keys = book.keys("proc:", scanner, &keyed).into_iter();
    found
        .iter()
        .map(|f| {
            let name = f.name();
            match &f.reach {
                Reach::At(addr) => {
                    let key = if f.agent.ephemeral() { keys.next().unwrap_or_default() } else { addr.to_string() };
                    let note = f.other_net.then(|| format!("runs in another network namespace (a container); reached at {addr}"));
                    Decision { key, name: addr.to_string(), addr: *addr, endpoint: Endpoint::Tcp(*addr), unreachable: None, note }
                }
                // Keyed by what it runs and where, never by its address: every container's
                // loopback is 127.0.0.1, and this machine's own 127.0.0.1:PORT is another VM.
                &Reach::Inside { pid, net, addr } => Decision {
                    key: keys.next().unwrap_or_default(),
                    name: format!("{addr} in pid {pid}'s network namespace"),
                    addr,
                    endpoint: Endpoint::Netns(crate::netns::NsTarget { pid, net, addr }),
                    unreachable: None,
                    note: None,
                },
                Reach::Unreachable(why) => Decision {
                    key: format!("proc:{name}#{}!", f.pid),
                    name: format!("pid {}", f.pid),
                    addr: SocketAddr::from(([0, 0, 0, 0], f.port.unwrap_or(0))),
                    endpoint: Endpoint::Tcp(SocketAddr::from(([0, 0, 0, 0], f.port.unwrap_or(0)))),
                    unreachable: Some(why.clone()),
                    note: None,
                },
            }
        })
        .collect()
}
