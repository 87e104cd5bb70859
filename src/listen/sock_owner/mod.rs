//! Finds who owns the other end of an accepted loopback connection: the connecting socket
//! is on this machine, in the same network namespace, and the kernel knows its uid. Asked
//! by the address pair, first of sock_diag (one exact lookup in the kernel's socket hash,
//! whatever the number of sockets), else read from /proc/net/tcp or tcp6 (a scan of every
//! socket, for kernels without sock_diag). sock_diag answers ENOENT both for no such socket
//! and when the kernel has no inet_diag handler (a module not loaded), so a socket it does
//! not find is looked for in /proc too; that costs only peers that are not on this machine
//! (a non-loopback listener's) or that are gone.

mod diag;
mod proc;

use std::net::{IpAddr, SocketAddr};

use crate::listen::owner::Owner;

pub use diag::DiagError;

/// The connecting socket's owner: `peer` is its address (the accepted connection's peer),
/// `local` the address it connected to (the accepted connection's own address).
pub fn lookup(peer: SocketAddr, local: SocketAddr) -> Owner {
    let (peer, local) = (unmapped(peer), unmapped(local));
    match diag::lookup(peer, local) {
        Ok(Owner::NotFound) => proc::lookup(peer, local).unwrap_or(Owner::NotFound),
        Ok(owner) => owner,
        Err(d) => match proc::lookup(peer, local) {
            Ok(owner) => owner,
            Err(p) => Owner::Unknown(format!("sock_diag: {d}; /proc/net: {p}")),
        },
    }
}

/// `lookup` for an accept loop: sock_diag never blocks and is asked in place; the /proc
/// fallback reads a file as long as the machine has sockets, so it runs on a blocking thread.
pub async fn lookup_async(peer: SocketAddr, local: SocketAddr) -> Owner {
    let (peer, local) = (unmapped(peer), unmapped(local));
    match diag::lookup(peer, local) {
        Ok(Owner::NotFound) => match tokio::task::spawn_blocking(move || proc::lookup(peer, local)).await {
            Ok(Ok(owner)) => owner,
            _ => Owner::NotFound,
        },
        Ok(owner) => owner,
        Err(d) => match tokio::task::spawn_blocking(move || proc::lookup(peer, local)).await {
            Ok(Ok(owner)) => owner,
            Ok(Err(p)) => Owner::Unknown(format!("sock_diag: {d}; /proc/net: {p}")),
            Err(e) => Owner::Unknown(format!("sock_diag: {d}; /proc/net: {e}")),
        },
    }
}

/// Only sock_diag (for the benchmark and tests).
pub fn lookup_diag(peer: SocketAddr, local: SocketAddr) -> Result<Owner, DiagError> {
    diag::lookup(unmapped(peer), unmapped(local))
}

/// Only /proc/net/tcp{,6} (for the benchmark and tests).
pub fn lookup_proc(peer: SocketAddr, local: SocketAddr) -> std::io::Result<Owner> {
    proc::lookup(unmapped(peer), unmapped(local))
}

/// An IPv4 peer on an IPv6 listener shows as ::ffff:a.b.c.d; its own socket is an IPv4 one.
fn unmapped(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, |v4| SocketAddr::new(IpAddr::V4(v4), a.port())),
        IpAddr::V4(_) => a,
    }
}

/// What a found socket says: open in some process (it has an inode) with its uid, or held
/// by none (closed; as a TIME_WAIT entry the kernel reports uid 0, whoever made it).
fn found(uid: u32, inode: u64) -> Owner {
    if inode == 0 {
        Owner::Orphaned
    } else {
        Owner::Uid(uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    /// A real connection on `ip`: (the accepted end's peer, its local address, both ends).
    fn pair(ip: &str) -> Option<(SocketAddr, SocketAddr, TcpStream, TcpStream)> {
        let l = TcpListener::bind((ip, 0)).ok()?;
        let c = TcpStream::connect(l.local_addr().ok()?).ok()?;
        let (s, peer) = l.accept().ok()?;
        let local = s.local_addr().ok()?;
        Some((peer, local, c, s))
    }

    #[test]
    fn our_own_connection_is_ours_by_either_way_on_ipv4_and_ipv6() {
        let mut done = 0;
        for ip in ["127.0.0.1", "::1"] {
            let Some((peer, local, c, s)) = pair(ip) else {
                assert_ne!(ip, "127.0.0.1", "IPv4 loopback must work");
                // IPv6 comes last: the IPv4 half ran, this half did not.
                testkit::not_run!("no IPv6 loopback (::1) here: the IPv6 half of the test cannot run");
            };
            assert_eq!(lookup_diag(peer, local).unwrap(), Owner::Uid(me()), "{ip} sock_diag");
            assert_eq!(lookup_proc(peer, local).unwrap(), Owner::Uid(me()), "{ip} /proc");
            assert_eq!(lookup(peer, local), Owner::Uid(me()), "{ip}");
            // The pair the other way round is the accepted socket: ours too, but a port
            // nobody uses is nobody's.
            let nobody = SocketAddr::new(peer.ip(), 1);
            assert_eq!(lookup_diag(nobody, local).unwrap(), Owner::NotFound);
            assert_eq!(lookup_proc(nobody, local).unwrap(), Owner::NotFound);
            assert_eq!(lookup(nobody, local), Owner::NotFound);
            drop((c, s));
            done += 1;
        }
        assert_eq!(done, 2);
    }

    #[tokio::test]
    async fn the_accept_loops_lookup_agrees() {
        let (peer, local, _c, _s) = pair("127.0.0.1").unwrap();
        assert_eq!(lookup_async(peer, local).await, Owner::Uid(me()));
        assert_eq!(lookup_async(SocketAddr::new(peer.ip(), 1), local).await, Owner::NotFound);
    }

    #[test]
    fn a_mapped_ipv4_peer_is_looked_up_as_ipv4() {
        let (peer, local, _c, _s) = pair("127.0.0.1").unwrap();
        let map = |a: SocketAddr| match a.ip() {
            IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
            IpAddr::V6(_) => a,
        };
        assert_eq!(lookup(map(peer), map(local)), Owner::Uid(me()));
    }

    #[test]
    fn a_socket_closed_by_its_process_is_nobodys() {
        let (peer, local, c, s) = pair("127.0.0.1").unwrap();
        drop(c);
        // The client's socket lingers in FIN_WAIT2 with no process: found, but orphaned.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut last = lookup_diag(peer, local).unwrap();
        while last != Owner::Orphaned && std::time::Instant::now() < deadline {
            std::thread::yield_now();
            last = lookup_diag(peer, local).unwrap();
        }
        assert_eq!(last, Owner::Orphaned);
        assert_eq!(lookup_proc(peer, local).unwrap(), Owner::Orphaned);
        drop(s);
    }
}
