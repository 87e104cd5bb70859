//! What /proc says about sockets and network namespaces, as text: `/proc/net/tcp` and
//! `tcp6` rows, `/proc/PID/net/fib_trie` (a namespace's own addresses), the `socket:[INODE]`
//! and `net:[INODE]` links of `/proc/PID/fd` and `/proc/PID/ns/net`. Pure.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// TCP state LISTEN in /proc/net/tcp.
pub const LISTEN: u8 = 0x0A;
/// TCP state ESTABLISHED.
pub const ESTABLISHED: u8 = 0x01;
/// Rows read from one table at most (a host with more sockets is cut there).
pub const MAX_SOCKETS: usize = 65_536;

/// One row of /proc/net/tcp or tcp6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Socket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: u8,
    /// The uid of the process that opened it (readable by every user: who owns a port is
    /// no secret).
    pub uid: u32,
    pub inode: u64,
}

impl Socket {
    pub fn listening(&self) -> bool {
        self.state == LISTEN
    }
}

/// Every well-formed row of a /proc/net/tcp or tcp6 text (header and odd lines skipped).
pub fn parse_tcp_table(text: &str) -> Vec<Socket> {
    text.lines().filter_map(parse_tcp_row).take(MAX_SOCKETS).collect()
}

fn parse_tcp_row(line: &str) -> Option<Socket> {
    let mut f = line.split_whitespace();
    let _sl = f.next().filter(|s| s.ends_with(':'))?;
    let local = parse_hex_addr(f.next()?)?;
    let remote = parse_hex_addr(f.next()?)?;
    let state = u8::from_str_radix(f.next()?, 16).ok()?;
    // tx:rx queue, timer, retransmits, uid, timeout, then the inode.
    let uid = f.nth(3)?.parse().ok()?;
    let inode = f.nth(1)?.parse().ok()?;
    Some(Socket { local, remote, state, uid, inode })
}

/// `0100007F:1F40` -> 127.0.0.1:8000; IPv6 as four little-endian 32-bit words.
pub fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(addr, 16).ok()?.to_le_bytes())),
        32 => {
            let mut octets = [0u8; 16];
            for (i, chunk) in octets.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok()?;
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The kernel's rendering of an address in /proc/net/tcp (the inverse of `parse_hex_addr`).
pub fn hex_addr(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => format!("{:08X}:{:04X}", u32::from_le_bytes(v4.ip().octets()), a.port()),
        SocketAddr::V6(v6) => {
            let o = v6.ip().octets();
            let words: String = o.chunks(4).map(|w| format!("{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]]))).collect();
            format!("{words}:{:04X}", a.port())
        }
    }
}

/// The inode in a link target such as `socket:[12345]` (kind `socket`) or `net:[4026531833]`
/// (kind `net`), anywhere in `text` (an `ls -l` line holds it after `-> `).
pub fn link_inode(text: &str, kind: &str) -> Option<u64> {
    let start = text.rfind(&format!("{kind}:["))? + kind.len() + 2;
    let rest = &text[start..];
    rest[..rest.find(']')?].parse().ok()
}

/// Socket inodes in an `ls -l /proc/PID/fd` listing (or one link target a line).
pub fn fd_sockets(text: &str) -> Vec<u64> {
    text.lines().filter_map(|l| link_inode(l, "socket")).collect()
}

/// The IPv4 addresses a namespace calls its own (`/32 host LOCAL` in its fib_trie), loopback
/// left out, in the order found, each once.
pub fn fib_local_addrs(text: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in text.lines() {
        let t = line.trim_start_matches([' ', '|', '+', '-']).trim();
        if let Ok(ip) = t.parse::<Ipv4Addr>() {
            last = Some(ip);
        } else if t.starts_with("/32 host LOCAL") {
            if let Some(ip) = last.filter(|ip| !ip.is_loopback() && !ip.is_unspecified()) {
                if !out.contains(&IpAddr::V4(ip)) {
                    out.push(IpAddr::V4(ip));
                }
            }
        } else if !t.starts_with('/') {
            last = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9A83 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11750 1 000000000c47b652 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 624 1 0000000080c387d0 100 0 0 10 0
   2: 020200C0:A14A 507100CB:01BB 01 00000000:00000000 00:00000000 00000000     0        0 4442 1 00000000a92f2cab 20 4 1 160 -1
garbage line
   3: 0100007F:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 778 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn tcp_rows() {
        let s = parse_tcp_table(TCP);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].local, "127.0.0.1:39555".parse().unwrap());
        assert!(s[0].listening());
        assert_eq!((s[0].inode, s[0].uid), (11750, 0));
        assert_eq!(s[1].local, "0.0.0.0:2024".parse().unwrap());
        assert_eq!((s[1].inode, s[1].uid), (624, 1000));
        assert_eq!(s[2].remote, "203.0.113.80:443".parse().unwrap());
        assert_eq!(s[2].state, ESTABLISHED);
        let s6 = parse_tcp_table(TCP6);
        assert_eq!(s6[0].local, "[::1]:8080".parse().unwrap());
        assert_eq!(s6[1].local, "[::]:8081".parse().unwrap());
    }

    #[test]
    fn hex_addresses_both_ways() {
        for a in ["127.0.0.1:8000", "10.1.2.3:1", "[::1]:8000", "[fe80::1:2]:65535", "[::ffff:127.0.0.1]:9"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(parse_hex_addr(&hex_addr(a)), Some(a), "{a}");
        }
        assert_eq!(hex_addr("127.0.0.1:8000".parse().unwrap()), "0100007F:1F40");
        assert_eq!(parse_hex_addr("0100007F"), None);
        assert_eq!(parse_hex_addr("0100007F0:1F40"), None);
        assert_eq!(parse_hex_addr("é100007F:1F40"), None);
    }

    #[test]
    fn links() {
        assert_eq!(link_inode("lrwxrwxrwx 1 root root 0 Nov 26 17:43 /proc/7315/ns/net -> net:[4026531833]", "net"), Some(4026531833));
        assert_eq!(link_inode("net:[4026531833]", "net"), Some(4026531833));
        assert_eq!(link_inode("lrwx------ 1 root root 64 Nov 26 17:43 4 -> socket:[10951]", "net"), None);
        assert_eq!(link_inode("socket:[", "socket"), None);
        assert_eq!(link_inode("socket:[x]", "socket"), None);
        let fds = "total 0\nlrwx------ 1 a a 64 Nov 1 1 0 -> /dev/null\nlrwx------ 1 a a 64 Nov 1 1 4 -> socket:[10951]\nl 5 -> socket:[7]\nl 6 -> pipe:[9]\n";
        assert_eq!(fd_sockets(fds), vec![10951, 7]);
    }

    #[test]
    fn a_namespaces_own_addresses() {
        let fib = "Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 10.77.0.0/30 2 0 2
           |-- 10.77.0.0
              /30 link UNICAST
           |-- 10.77.0.2
              /32 host LOCAL
Local:
     +-- 10.77.0.0/30 2 0 2
           |-- 10.77.0.2
              /32 host LOCAL
";
        assert_eq!(fib_local_addrs(fib), vec![IpAddr::from([10, 77, 0, 2])]);
        assert!(fib_local_addrs("").is_empty());
    }
}
