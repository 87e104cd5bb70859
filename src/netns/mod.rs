//! A connected TCP socket inside another process's network namespace: the one way jdwpmux
//! reaches a JVM that listens on its container's own loopback (`--network=none`), with no
//! published port. Every caller (local discovery, the far side, a session's connect step)
//! comes through [`connect`]; none enters a namespace by itself.
//!
//! A socket belongs to the namespace it was created in for its whole life and works from any
//! thread, so entering costs only the socket's creation. Two ways in, chosen by [`way`]:
//!
//! - `thread`: jdwpmux runs as root. A short-lived thread of this process joins the target's
//!   network namespace (`setns` on that thread only), connects, and ends. Root holds
//!   CAP_SYS_ADMIN over every user namespace, so the network namespace alone is enough.
//! - [`helper`] and [`child`]: jdwpmux runs as a user (the owner of a rootless container).
//!   Its namespace belongs to a user namespace of that user's, which must be joined first;
//!   `setns` into a user namespace fails (EINVAL) in a multithreaded process, and the daemon
//!   has threads. So [`helper`] starts this binary again, single-threaded, with a hidden
//!   first argument ([`HIDDEN_ARG`], caught at the top of `main` before anything starts a
//!   thread); [`child`] is what that process runs: it joins both namespaces, connects, and
//!   hands the socket back over its stdin, a Unix socket pair ([`fdpass`], SCM_RIGHTS).
//!
//! `enter` holds the steps both ways share (open a namespace, check it is still the one
//! named, join it, connect under the timeout), so they fail with the same errors.
//!
//! The one rule that keeps it honest: a target names its namespace by inode as well as by
//! pid, and the namespace opened is checked against it (`fstat` of the opened descriptor,
//! before joining), so a pid reused by another process gives [`NsError::Gone`], never a
//! socket somewhere else.

pub mod child;
mod enter;
pub mod fdpass;
pub mod helper;
mod thread;

#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// The first argument that makes this binary the single-threaded helper of [`helper`]
/// (`jdwpmux __netns-connect PID NETINODE ADDR TIMEOUT_MS`). Not in the CLI: no one types it.
pub const HIDDEN_ARG: &str = "__netns-connect";

/// A JVM's agent inside another network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NsTarget {
    /// A process living in the namespace (the JVM itself, usually).
    pub pid: u32,
    /// The inode of `/proc/PID/ns/net`, as its link `net:[N]` says: which namespace `pid`
    /// was in when it was found.
    pub net: u64,
    /// The agent's address as seen inside the namespace (often 127.0.0.1:PORT).
    pub addr: SocketAddr,
}

impl fmt::Display for NsTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in net:[{}] of pid {}", self.addr, self.net, self.pid)
    }
}

/// What the user is told when someone else's namespace is closed to jdwpmux.
pub const REMEDY_NOT_OWNER: &str =
    "only root or its owner can enter its network namespace; run jdwpmux as root (with --other-users)";
/// ... and when jdwpmux is root but may not enter (no CAP_SYS_ADMIN: root in a container).
pub const REMEDY_NO_CAP: &str =
    "entering a network namespace needs CAP_SYS_ADMIN; run jdwpmux as root on the host, not inside a container";

#[derive(Debug, thiserror::Error)]
pub enum NsError {
    /// The process is gone, or lives in another namespace than the one named (its pid was
    /// reused): the target no longer exists; find the JVM again.
    #[error("{}", gone_text(*pid, *net, *now))]
    Gone { pid: u32, net: u64, now: Option<u64> },
    /// This user may not enter that namespace.
    #[error("cannot enter the network namespace of process {pid}: {reason}; {remedy}")]
    Denied { pid: u32, reason: String, remedy: &'static str },
    /// Inside the namespace, the connect failed (refused: nothing listens there; unreachable:
    /// its loopback is down, or no route).
    #[error("connect to {addr} in the network namespace of process {pid}: {source}")]
    Connect { pid: u32, addr: SocketAddr, source: io::Error },
    #[error("no connection to {addr} in the network namespace of process {pid} within {} ms", after.as_millis())]
    Timeout { pid: u32, addr: SocketAddr, after: Duration },
    /// The helper process failed in a way that says nothing of the target: `detail` is its
    /// exit status and its one line of stderr (bounded).
    #[error("the helper that enters process {pid}'s namespaces failed: {detail}")]
    Helper { pid: u32, detail: String },
    /// This process could not do its own part (start a thread or a process, make a socket).
    #[error("cannot {what}: {source}")]
    System { what: &'static str, source: io::Error },
}

fn gone_text(pid: u32, net: u64, now: Option<u64>) -> String {
    match now {
        None => format!("process {pid} is gone"),
        Some(now) => format!("process {pid} is in net:[{now}] now, not net:[{net}]: its pid was reused"),
    }
}

/// A connected socket to `t.addr` inside `t`'s network namespace, with TCP_NODELAY, for the
/// tokio runtime this is called on. The connect is bounded by `timeout`; starting the helper
/// process (non-root) may add up to [`helper::START_GRACE`]. Never blocks the runtime.
pub async fn connect(t: &NsTarget, timeout: Duration) -> Result<tokio::net::TcpStream, NsError> {
    let own = inode("/proc/self/ns/net").map_err(|source| NsError::System { what: "read this process's network namespace", source })?;
    let std = match way(rustix::process::geteuid().is_root(), own, t.net) {
        Way::Here => return here(t, timeout).await,
        Way::Thread => thread::connect(t, timeout).await?,
        Way::Child => helper::connect(t, timeout, &helper::own_program()).await?,
    };
    into_tokio(std)
}

/// The child way with a program of the caller's choosing in front of the hidden arguments
/// (the words that run this binary, e.g. `setpriv ... -- /path/to/jdwpmux`): what
/// [`connect`] does as a non-root user, for tests that run the helper as another user.
pub async fn connect_through_helper(t: &NsTarget, timeout: Duration, program: &[std::ffi::OsString]) -> Result<tokio::net::TcpStream, NsError> {
    into_tokio(helper::connect(t, timeout, program).await?)
}

/// How [`connect`] gets into the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The target is in this process's own namespace: an ordinary connect.
    Here,
    /// Root: a thread of this process joins the namespace.
    Thread,
    /// A user: a single-threaded helper process joins the user namespace, then the network one.
    Child,
}

/// The way in, from whether jdwpmux is root and the two network namespaces' inodes.
pub fn way(root: bool, own_net: u64, target_net: u64) -> Way {
    match (own_net == target_net, root) {
        (true, _) => Way::Here,
        (false, true) => Way::Thread,
        (false, false) => Way::Child,
    }
}

/// The inode a namespace link names: `net:[4026531840]` gives 4026531840 (strict: the
/// whole text, the kind given).
pub fn parse_ns_link(text: &str, kind: &str) -> Option<u64> {
    let digits = text.strip_prefix(kind)?.strip_prefix(":[")?.strip_suffix(']')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The inode of the namespace a `/proc/.../ns/...` path names (stat follows the link to
/// the namespace itself, whose inode is the number in `net:[N]`).
fn inode(path: &str) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| m.ino())
}

/// The target shares our namespace: check it is still the process named (when /proc lets
/// us look: another user's process may not), then connect as anyone would.
async fn here(t: &NsTarget, timeout: Duration) -> Result<tokio::net::TcpStream, NsError> {
    match inode(&format!("/proc/{}/ns/net", t.pid)) {
        Ok(now) if now != t.net => return Err(NsError::Gone { pid: t.pid, net: t.net, now: Some(now) }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(NsError::Gone { pid: t.pid, net: t.net, now: None }),
        _ => {}
    }
    let s = match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(t.addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(source)) => return Err(NsError::Connect { pid: t.pid, addr: t.addr, source }),
        Err(_) => return Err(NsError::Timeout { pid: t.pid, addr: t.addr, after: timeout }),
    };
    // A relay writes small packets: Nagle would hold each behind the last one's ack.
    s.set_nodelay(true).map_err(|source| NsError::System { what: "set TCP_NODELAY", source })?;
    Ok(s)
}

fn into_tokio(s: std::net::TcpStream) -> Result<tokio::net::TcpStream, NsError> {
    s.set_nonblocking(true).map_err(|source| NsError::System { what: "make the socket non-blocking", source })?;
    let s = tokio::net::TcpStream::from_std(s).map_err(|source| NsError::System { what: "register the socket with the runtime", source })?;
    s.set_nodelay(true).map_err(|source| NsError::System { what: "set TCP_NODELAY", source })?;
    Ok(s)
}
