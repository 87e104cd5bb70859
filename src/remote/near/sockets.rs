//! A local Unix socket per far-side VM, in the daemon's private folder, where ssh forwards'
//! sockets are today: a VM session connects to it as to a forward, and each connection is
//! one channel of the near link to that VM. So the sessions need nothing new, and a link cut
//! leaves their sockets open: the link holds the channel and replays.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, warn, Instrument};

use super::api::NearLink;
use super::ends::pump;

/// How long a connection waits for its channel (through a cut, a new connection waits).
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

struct Listening {
    vm: watch::Sender<u32>,
    task: JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listeners of one host's VMs, by socket.
pub struct Sockets {
    link: NearLink,
    by_socket: HashMap<PathBuf, Listening>,
}

impl Sockets {
    pub fn new(link: NearLink) -> Sockets {
        Sockets { link, by_socket: HashMap::new() }
    }

    /// Connections to `socket` go to the far side's VM `vm` (a VM that restarted keeps its
    /// socket and gets a new key). True when it listens.
    pub fn set(&mut self, socket: &Path, vm: u32) -> bool {
        if let Some(l) = self.by_socket.get(socket) {
            l.vm.send_if_modified(|k| std::mem::replace(k, vm) != vm);
            return true;
        }
        let _ = std::fs::remove_file(socket);
        let listener = match UnixListener::bind(socket) {
            Ok(l) => {
                crate::remote::ssh::master::owner_only(socket);
                l
            }
            Err(e) => {
                warn!(socket = %socket.display(), "cannot listen for a far-side VM: {e}");
                return false;
            }
        };
        let (tx, rx) = watch::channel(vm);
        let span = tracing::debug_span!("far_vm", socket = %socket.display());
        let task = tokio::spawn(accept(listener, rx, self.link.clone()).instrument(span));
        self.by_socket.insert(socket.to_path_buf(), Listening { vm: tx, task });
        true
    }

    /// Stops listening on every socket but `keep`'s.
    pub fn retain(&mut self, keep: &[PathBuf]) {
        let gone: Vec<PathBuf> = self.by_socket.keys().filter(|s| !keep.contains(s)).cloned().collect();
        for s in gone {
            self.by_socket.remove(&s);
            let _ = std::fs::remove_file(&s);
        }
    }
}

impl Drop for Sockets {
    fn drop(&mut self) {
        for s in self.by_socket.keys() {
            let _ = std::fs::remove_file(s);
        }
    }
}

async fn accept(listener: UnixListener, vm: watch::Receiver<u32>, link: NearLink) {
    loop {
        let conn = match listener.accept().await {
            Ok((c, _)) => c,
            Err(e) => {
                warn!("accepting on a far-side VM's socket: {e}");
                return;
            }
        };
        let key = *vm.borrow();
        tokio::spawn(relay(conn, key, link.clone()));
    }
}

/// One connection: a channel to the VM, the bytes relayed both ways until either ends. A VM
/// that cannot be opened closes the connection, as a forward to a port nothing listens on.
///
/// This task owns the connection and moves its bytes to and from the link's queues itself:
/// a packet takes one hop between tasks each way (no stream or copying task in between).
async fn relay(conn: UnixStream, vm: u32, link: NearLink) {
    let channel = match tokio::time::timeout(OPEN_TIMEOUT, link.open_channel(vm)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return debug!(vm, "no channel: {e}"),
        Err(_) => return debug!(vm, "no channel within {OPEN_TIMEOUT:?}"),
    };
    let (read, write) = conn.into_split();
    pump(channel, read, write).await;
}
