//! The fallback: the connecting socket's row in /proc/net/tcp or tcp6 (this network
//! namespace's), matched on its local and remote address as the kernel prints them, and
//! its uid and inode columns read. Costs a scan of every TCP socket of the namespace.

use std::io::BufRead;
use std::net::SocketAddr;

use crate::discovery::jvms::net::hex_addr;
use crate::listen::owner::Owner;

/// The owner of the socket `src` -> `dst` in a /proc/net/tcp text read line by line.
pub fn find(lines: impl Iterator<Item = std::io::Result<String>>, src: SocketAddr, dst: SocketAddr) -> std::io::Result<Owner> {
    let (src, dst) = (hex_addr(src), hex_addr(dst));
    for line in lines {
        let line = line?;
        // sl, local, remote, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode.
        let f: Vec<&str> = line.split_whitespace().take(10).collect();
        if f.len() == 10 && f[1] == src && f[2] == dst {
            return match (f[7].parse(), f[9].parse()) {
                (Ok(uid), Ok(inode)) => Ok(super::found(uid, inode)),
                _ => Err(std::io::Error::other(format!("an unreadable row: {line:?}"))),
            };
        }
    }
    Ok(Owner::NotFound)
}

pub fn lookup(src: SocketAddr, dst: SocketAddr) -> std::io::Result<Owner> {
    let table = if src.is_ipv4() { "/proc/net/tcp" } else { "/proc/net/tcp6" };
    let f = std::fs::File::open(table)?;
    find(std::io::BufReader::with_capacity(64 * 1024, f).lines(), src, dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:21FC 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11750 1 000000000c47b652 100 0 0 10 0
   1: 0100007F:9C40 0100007F:21FC 01 00000000:00000000 00:00000000 00000000  1001        0 5151 1 0000000080c387d0 20 4 30 10 -1
   2: 0100007F:9C41 0100007F:21FC 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
   3: 0100007F:9C42 0100007F:21FC 01 00000000:00000000 00:00000000 00000000  bad        0 1 1 0 0
";

    fn find_in(src: &str, dst: &str) -> std::io::Result<Owner> {
        find(TCP.lines().map(|l| Ok(l.to_string())), src.parse().unwrap(), dst.parse().unwrap())
    }

    #[test]
    fn rows_by_their_pair() {
        assert_eq!(find_in("127.0.0.1:40000", "127.0.0.1:8700").unwrap(), Owner::Uid(1001));
        // TIME_WAIT: uid 0, inode 0, held by nobody.
        assert_eq!(find_in("127.0.0.1:40001", "127.0.0.1:8700").unwrap(), Owner::Orphaned);
        // The pair the wrong way round, or a listener's half: not this connection.
        assert_eq!(find_in("127.0.0.1:8700", "127.0.0.1:40000").unwrap(), Owner::NotFound);
        assert_eq!(find_in("127.0.0.1:8700", "0.0.0.0:0").unwrap(), Owner::Uid(0));
        assert_eq!(find_in("127.0.0.1:1", "127.0.0.1:8700").unwrap(), Owner::NotFound);
        assert!(find_in("127.0.0.1:40002", "127.0.0.1:8700").is_err());
    }
}
