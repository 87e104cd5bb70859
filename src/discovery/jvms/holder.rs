//! Who holds a JVM's agent: a HotSpot agent takes one debugger and stops listening while it
//! is attached, so a JVM found by its process whose agent does not listen is busy. Its
//! connection on the agent's port tells the debugger's address; when the debugger runs on
//! the same host (and network namespace), the other end of that connection is in the same
//! TCP table, with its owner's uid and its inode (which `/proc/PID/fd` links name, for the
//! process). Pure.

use std::net::SocketAddr;

use super::net::{Socket, ESTABLISHED};

/// The debugger end of a JVM's connection on its agent's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// The debugger's address, as the JVM sees it.
    pub addr: SocketAddr,
    /// The debugger's own socket when it is on the scanned host: its owner's uid and inode.
    pub socket: Option<(u32, u64)>,
}

/// The holder of the agent on `port`, from `table` (the JVM's network namespace) and the
/// JVM's own socket inodes when they could be read (None: any connection on the port).
pub fn holder(table: &[Socket], own_inodes: Option<&[u64]>, port: u16) -> Option<Holder> {
    let ours = |s: &&Socket| own_inodes.is_none_or(|fds| fds.contains(&s.inode));
    let conn = table.iter().filter(ours).filter(|s| s.state == ESTABLISHED && s.local.port() == port).min_by_key(|s| s.inode)?;
    // A Java debugger's socket is often IPv6 (`::ffff:127.0.0.1`) while the agent's is IPv4.
    let same = |a: SocketAddr, b: SocketAddr| a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical();
    let far = table.iter().find(|s| s.state == ESTABLISHED && same(s.local, conn.remote) && same(s.remote, conn.local));
    Some(Holder { addr: conn.remote, socket: far.map(|s| (s.uid, s.inode)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::net::LISTEN;

    fn sock(local: &str, remote: &str, state: u8, uid: u32, inode: u64) -> Socket {
        Socket { local: local.parse().unwrap(), remote: remote.parse().unwrap(), state, uid, inode }
    }

    #[test]
    fn the_other_end_of_the_agents_connection() {
        let table = [
            sock("127.0.0.1:8000", "127.0.0.1:41000", ESTABLISHED, 1000, 5),
            sock("127.0.0.1:41000", "127.0.0.1:8000", ESTABLISHED, 1001, 9),
            sock("127.0.0.1:8080", "0.0.0.0:0", LISTEN, 1000, 6),
        ];
        let h = holder(&table, Some(&[5, 6]), 8000).unwrap();
        assert_eq!((h.addr, h.socket), ("127.0.0.1:41000".parse().unwrap(), Some((1001, 9))));
        // The debugger's socket is IPv6, the agent's IPv4.
        let mixed = [table[0], sock("[::ffff:127.0.0.1]:41000", "[::ffff:127.0.0.1]:8000", ESTABLISHED, 1001, 9)];
        assert_eq!(holder(&mixed, Some(&[5]), 8000), Some(h));
        // Its fds unread (another user's process): any connection on the port.
        assert_eq!(holder(&table, None, 8000), Some(h));
        // The connection is another process's: nobody holds this JVM.
        assert_eq!(holder(&table, Some(&[6]), 8000), None);
        // A debugger on another machine: its address alone.
        let far = [sock("10.0.0.2:8000", "10.0.0.9:50000", ESTABLISHED, 1000, 5)];
        assert_eq!(holder(&far, Some(&[5]), 8000), Some(Holder { addr: "10.0.0.9:50000".parse().unwrap(), socket: None }));
        assert_eq!(holder(&[], None, 8000), None);
    }
}
