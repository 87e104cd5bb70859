//! The steps both ways take, blocking, on the thread or in the process that enters: open a
//! namespace of the target, check it is still the one named, join it, connect. One place,
//! so that the root thread and the rootless helper fail alike for the same cause.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::{NsError, NsTarget};

/// Opens `/proc/PID/ns/KIND`. Opening pins the namespace: what is checked and joined later
/// is this one, whatever the pid becomes meanwhile.
pub(super) fn open(t: &NsTarget, kind: &str, remedy: &'static str) -> Result<File, NsError> {
    let path = format!("/proc/{}/ns/{kind}", t.pid);
    File::open(&path).map_err(|e| match e.raw_os_error() {
        // ESRCH: a process that is exiting still has its /proc folder, no namespaces.
        Some(libc::ENOENT | libc::ESRCH) => NsError::Gone { pid: t.pid, net: t.net, now: None },
        // Another user's process: /proc lets only its owner and root open its namespaces.
        Some(libc::EACCES | libc::EPERM) => NsError::Denied { pid: t.pid, reason: format!("open {path}: {e}"), remedy },
        _ => NsError::System { what: "open a process's namespace", source: e },
    })
}

/// The inode of an opened namespace (fstat), which is the N of its `net:[N]`.
pub(super) fn inode_of(f: &File) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    f.metadata().map(|m| m.ino())
}

/// `Gone` unless the opened network namespace is the one the target names.
pub(super) fn check_net(t: &NsTarget, net: &File) -> Result<(), NsError> {
    let now = inode_of(net).map_err(|source| NsError::System { what: "fstat a namespace", source })?;
    if now == t.net {
        Ok(())
    } else {
        Err(NsError::Gone { pid: t.pid, net: t.net, now: Some(now) })
    }
}

/// Joins the namespace `ns` (of type `nstype`, a CLONE_NEW* flag) with the calling thread.
pub(super) fn join(t: &NsTarget, ns: &File, nstype: libc::c_int, remedy: &'static str) -> Result<(), NsError> {
    // SAFETY: setns(2) takes a descriptor, valid while `ns` lives, and a flag; it changes
    // only the calling thread's namespace, which the callers own (a thread of their own, or
    // the helper process's only thread).
    if unsafe { libc::setns(ns.as_raw_fd(), nstype) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    let what = if nstype == libc::CLONE_NEWUSER { "user" } else { "network" };
    Err(match e.raw_os_error() {
        Some(libc::EPERM) => NsError::Denied { pid: t.pid, reason: format!("joining its {what} namespace: {e}"), remedy },
        _ => NsError::System { what: "join a namespace (setns)", source: e },
    })
}

/// A TCP connection to `t.addr` from the calling thread's network namespace, under
/// `timeout` (a non-blocking connect and a poll, in socket2).
pub(super) fn connect_here(t: &NsTarget, timeout: Duration) -> Result<std::net::TcpStream, NsError> {
    use socket2::{Domain, Protocol, Socket, Type};
    // socket2 makes it close-on-exec, so no process started later inherits it.
    let sock = Socket::new(Domain::for_address(t.addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|source| NsError::System { what: "make a socket", source })?;
    match sock.connect_timeout(&t.addr.into(), timeout) {
        Ok(()) => Ok(sock.into()),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(NsError::Timeout { pid: t.pid, addr: t.addr, after: timeout }),
        Err(source) => Err(NsError::Connect { pid: t.pid, addr: t.addr, source }),
    }
}
