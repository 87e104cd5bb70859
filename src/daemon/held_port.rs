//! Who holds a port `serve` could not bind, when it is this user's own process: a second
//! `serve` (another shell, a control socket elsewhere) is told that its own jdwpmux runs,
//! with its pid, not just "address in use". Reads /proc: the listening socket's owner and
//! inode from /proc/net/tcp{,6}, then which of this user's processes has that socket open.

use std::net::SocketAddr;

use crate::discovery::jvms::net::{parse_tcp_table, Socket};

/// Processes looked at, at most (a machine's process count, bounded).
const MAX_PROCS: usize = 65536;

/// This user's process listening on `addr`'s port (bound to that address or to every
/// address): its pid and command name. None when the port is another user's, or the
/// process cannot be told.
pub(super) fn own_holder(addr: SocketAddr, own_uid: u32) -> Option<(u32, String)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut table = parse_tcp_table(&read("/proc/net/tcp"));
    table.extend(parse_tcp_table(&read("/proc/net/tcp6")));
    let inode = listener(&table, addr, own_uid)?;
    let link = format!("socket:[{inode}]");
    let holds = |pid: &str| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| d.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == link.as_str())))
    };
    let pids = std::fs::read_dir("/proc").into_iter().flatten().flatten().take(MAX_PROCS).filter_map(|e| e.file_name().into_string().ok());
    let pid = pids.filter(|p| p.bytes().all(|b| b.is_ascii_digit())).find(|p| holds(p))?;
    let comm = read(&format!("/proc/{pid}/comm"));
    Some((pid.parse().ok()?, crate::discovery::jvms::cmdline::printable(comm.trim_end_matches('\n'))))
}

/// The inode of `uid`'s socket listening where a connection to `addr` would go.
fn listener(table: &[Socket], addr: SocketAddr, uid: u32) -> Option<u64> {
    let ip = addr.ip().to_canonical();
    let on_port = || table.iter().filter(|s| s.listening() && s.local.port() == addr.port() && s.uid == uid);
    let exact = on_port().find(|s| s.local.ip().to_canonical() == ip);
    exact.or_else(|| on_port().find(|s| s.local.ip().is_unspecified())).map(|s| s.inode)
}

/// What the error says of the holder: `your own jdwpmux (pid 4242)`.
pub(super) fn describe(pid: u32, comm: &str) -> String {
    if comm.starts_with("jdwpmux") {
        format!("your own jdwpmux (pid {pid})")
    } else {
        format!("your own process {comm} (pid {pid})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_listener_is_found_with_its_pid() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let own = rustix::process::geteuid().as_raw();
        let (pid, comm) = own_holder(addr, own).expect("this process listens there");
        assert_eq!(pid, std::process::id());
        assert!(!comm.is_empty());
        // Another user's port, and a port nobody listens on: nothing to say.
        assert_eq!(own_holder(addr, own.wrapping_add(1)), None);
        drop(l);
        assert_eq!(own_holder(addr, own), None);
        assert_eq!(describe(7, "jdwpmux"), "your own jdwpmux (pid 7)");
        assert_eq!(describe(7, "python3"), "your own process python3 (pid 7)");
    }
}
