//! Who owns a listening port of this machine: the port scan leaves other users' ports
//! alone (a JDWP agent takes one debugger; holding another user's JVM locks its owner's own
//! debugger out). The uid of every socket is in /proc/net/tcp and tcp6, readable by all;
//! which addresses are this machine's is in /proc/net/fib_trie and if_inet6. `owner` is pure,
//! `LocalPorts::read` reads those files.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use crate::discovery::jvms::net::{self, Socket};

/// The listening sockets of this machine's network namespace and the addresses it calls its
/// own, read at one moment.
#[derive(Debug, Clone, Default)]
pub struct LocalPorts {
    pub listening: Vec<Socket>,
    pub addrs: Vec<IpAddr>,
}

impl LocalPorts {
    /// Reads /proc (empty tables where a file cannot be read: every port then counts as
    /// nobody's, as before).
    pub fn read() -> LocalPorts {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let mut sockets = net::parse_tcp_table(&read("/proc/net/tcp"));
        sockets.extend(net::parse_tcp_table(&read("/proc/net/tcp6")));
        sockets.retain(Socket::listening);
        let mut addrs = net::fib_local_addrs(&read("/proc/net/fib_trie"));
        addrs.extend(inet6_addrs(&read("/proc/net/if_inet6")));
        LocalPorts { listening: sockets, addrs }
    }

    /// The uid of the socket a connection to `addr` would reach, when `addr` is this
    /// machine's and something listens there; None: not this machine's, or nothing listens.
    pub fn owner(&self, addr: SocketAddr) -> Option<u32> {
        owner(&self.listening, &self.addrs, addr)
    }

    /// Whether the table was read and `addr` is this machine's, yet nothing listened there
    /// when it was: a listener that came since is judged by its owner in the next round,
    /// not probed unjudged now.
    pub fn nobody_listened(&self, addr: SocketAddr) -> bool {
        !self.listening.is_empty() && is_here(&self.addrs, addr) && self.owner(addr).is_none()
    }
}

/// The owner of the listener that takes connections to `addr`: one bound to that very address
/// first (the kernel prefers it), else one bound to every address. Only for addresses of this
/// machine (loopback, or one of `own`): on another machine the table says nothing.
pub fn owner(listening: &[Socket], own: &[IpAddr], addr: SocketAddr) -> Option<u32> {
    let ip = canonical(addr.ip());
    if !is_here(own, addr) {
        return None;
    }
    let on_port = || listening.iter().filter(|s| s.listening() && s.local.port() == addr.port());
    let exact = on_port().find(|s| canonical(s.local.ip()) == ip);
    // `[::]` takes IPv4 connections too (unless the socket is v6-only, which the table does
    // not say: counted as taking them, so a port is never wrongly thought free).
    let wildcard = || on_port().find(|s| s.local.ip().is_unspecified() && (s.local.is_ipv6() || ip.is_ipv4()));
    exact.or_else(wildcard).map(|s| s.uid)
}

/// Whether `addr` is this machine's: loopback, unspecified, or one of `own`.
pub fn is_here(own: &[IpAddr], addr: SocketAddr) -> bool {
    let ip = canonical(addr.ip());
    ip.is_loopback() || ip.is_unspecified() || own.iter().any(|o| canonical(*o) == ip)
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// The addresses in /proc/net/if_inet6 (`fe800000000000000000000000000001 02 40 20 80 eth0`).
pub fn inet6_addrs(text: &str) -> Vec<IpAddr> {
    text.lines()
        .filter_map(|l| {
            let hex = l.split_whitespace().next()?;
            let v = u128::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 32)?;
            Some(IpAddr::V6(Ipv6Addr::from(v)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::jvms::net::{ESTABLISHED, LISTEN};

    fn sock(local: &str, state: u8, uid: u32) -> Socket {
        Socket { local: local.parse().unwrap(), remote: "0.0.0.0:0".parse().unwrap(), state, uid, inode: 1 }
    }

    #[test]
    fn the_listener_a_connection_reaches() {
        let own: Vec<IpAddr> = vec!["192.168.1.5".parse().unwrap(), "fd00::5".parse().unwrap()];
        let t = [
            sock("127.0.0.1:8000", LISTEN, 1001),
            sock("0.0.0.0:8001", LISTEN, 1002),
            sock("[::]:8002", LISTEN, 1003),
            sock("[::1]:8003", LISTEN, 1004),
            sock("127.0.0.1:8004", ESTABLISHED, 1005),
            sock("0.0.0.0:8005", LISTEN, 1006),
            sock("127.0.0.1:8005", LISTEN, 1007),
            sock("[::ffff:127.0.0.1]:8006", LISTEN, 1008),
        ];
        let at = |a: &str| owner(&t, &own, a.parse().unwrap());
        assert_eq!(at("127.0.0.1:8000"), Some(1001));
        assert_eq!(at("127.0.0.2:8000"), None, "bound to another loopback address");
        assert_eq!(at("127.0.0.1:8001"), Some(1002));
        assert_eq!(at("192.168.1.5:8001"), Some(1002));
        assert_eq!(at("127.0.0.1:8002"), Some(1003), "[::] takes IPv4 too");
        assert_eq!(at("[::1]:8002"), Some(1003));
        assert_eq!(at("[::1]:8003"), Some(1004));
        assert_eq!(at("127.0.0.1:8004"), None, "a connection is no listener");
        assert_eq!(at("127.0.0.1:8005"), Some(1007), "the exact address wins");
        assert_eq!(at("192.168.1.5:8005"), Some(1006));
        assert_eq!(at("127.0.0.1:8006"), Some(1008));
        assert_eq!(at("[fd00::5]:8002"), Some(1003));
        // Another machine's address: this machine's table says nothing of it.
        assert_eq!(at("10.0.0.9:8001"), None);
        assert_eq!(at("[fd00::9]:8002"), None);

        // What the scan probes: a port of this machine only once the table shows a listener.
        let ports = LocalPorts { listening: t.to_vec(), addrs: own.clone() };
        let quiet = |a: &str| ports.nobody_listened(a.parse().unwrap());
        assert!(quiet("127.0.0.1:8009"), "nothing listened here when the table was read");
        assert!(quiet("127.0.0.1:8004"), "a connection is no listener");
        assert!(!quiet("127.0.0.1:8000"), "a listener: judged by its owner");
        assert!(!quiet("10.0.0.9:8009"), "another machine: probed, its owner unknown here");
        assert!(!LocalPorts::default().nobody_listened("127.0.0.1:8009".parse().unwrap()), "no table read: probed as before");
    }

    /// A small world of addresses, so that tables and asked addresses meet often.
    fn ip(i: u8) -> IpAddr {
        ["127.0.0.1", "0.0.0.0", "::", "::1", "192.168.1.5", "10.0.0.9", "::ffff:127.0.0.1"][usize::from(i) % 7].parse().unwrap()
    }

    proptest::proptest! {
        /// Whatever the table, an owner is the uid of a listener on that very port that a
        /// connection to the address reaches (its own address, or every address), one bound
        /// to the address itself wins, and another machine's address has none.
        #[test]
        fn an_owner_is_a_listener_a_connection_reaches(
            rows in proptest::collection::vec((0u8..7, 1u16..4, proptest::bool::ANY, 0u32..4), 0..12),
            asked in (0u8..7, 1u16..4),
        ) {
            let table: Vec<Socket> = rows.iter().map(|(i, port, listens, uid)| Socket {
                local: SocketAddr::new(ip(*i), *port),
                remote: "0.0.0.0:0".parse().unwrap(),
                state: if *listens { LISTEN } else { ESTABLISHED },
                uid: *uid,
                inode: 1,
            }).collect();
            let own = [ip(4)];
            let addr = SocketAddr::new(ip(asked.0), asked.1);
            let got = owner(&table, &own, addr);
            let reaches = |s: &Socket| s.listening() && s.local.port() == addr.port() && (s.local.ip().to_canonical() == addr.ip().to_canonical() || s.local.ip().is_unspecified());
            match got {
                Some(uid) => proptest::prop_assert!(table.iter().any(|s| reaches(s) && s.uid == uid)),
                None => proptest::prop_assert!(addr.ip() == ip(5) || !table.iter().any(|s| reaches(s) && (s.local.is_ipv6() || addr.is_ipv4()))),
            }
            if let Some(exact) = table.iter().find(|s| s.listening() && s.local.port() == addr.port() && s.local.ip().to_canonical() == addr.ip().to_canonical()) {
                if addr.ip() != ip(5) {
                    proptest::prop_assert_eq!(got, Some(exact.uid));
                }
            }
            if addr.ip() == ip(5) {
                proptest::prop_assert_eq!(got, None);
            }
        }
    }

    #[test]
    fn ipv6_addresses_of_this_machine() {
        let text = "00000000000000000000000000000001 01 80 10 80       lo\nfe800000000000000000000000000001 02 40 20 80 eth0\nbad\n";
        assert_eq!(inet6_addrs(text), vec!["::1".parse::<IpAddr>().unwrap(), "fe80::1".parse().unwrap()]);
    }
}
