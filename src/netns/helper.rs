//! The parent's side of the rootless way: start the helper ([`super::child`]) with one end
//! of a Unix socket pair as its stdin, receive the connected socket from it, and read what it
//! said if it failed. Everything waits under one deadline; a helper past it is killed and
//! reaped. Nothing listens anywhere: the pair is private to the two processes.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::child::{self, Exit};
use super::{fdpass, parse_ns_link, NsError, NsTarget, HIDDEN_ARG, REMEDY_NOT_OWNER};

/// Time the helper may take beyond the connect's own timeout: starting a process of this
/// binary and joining two namespaces (measured 10-14 ms; generous for a loaded machine).
pub const START_GRACE: Duration = Duration::from_secs(2);
/// At most this much of the helper's stderr is read: it writes one line.
const STDERR_MAX: u64 = 4096;
/// At most this many characters of that line are kept in an error.
const LINE_MAX: usize = 300;

/// The words that start this binary again. `/proc/self/exe`, not the path it was started
/// by: that is the very binary running even if its file was replaced or removed since (an
/// upgrade), where `current_exe()` would name the new file, or a deleted one.
pub fn own_program() -> Vec<OsString> {
    vec!["/proc/self/exe".into()]
}

/// A socket connected inside `t`'s network namespace by a helper started as `program`
/// followed by the hidden arguments.
pub(super) async fn connect(t: &NsTarget, timeout: Duration, program: &[OsString]) -> Result<std::net::TcpStream, NsError> {
    let system = |what| move |source| NsError::System { what, source };
    let (first, rest) = program.split_first().ok_or_else(|| system("start the helper")(io::Error::other("no program given")))?;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(system("make a socket pair"))?;
    ours.set_nonblocking(true).map_err(system("make a socket pair"))?;
    let ours = tokio::net::UnixStream::from_std(ours).map_err(system("make a socket pair"))?;
    let mut cmd = tokio::process::Command::new(first);
    cmd.args(rest)
        .arg(HIDDEN_ARG)
        .args(child::args(t, timeout))
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // If the caller gives up (drops this future), the helper is killed; tokio reaps it.
        .kill_on_drop(true);
    let mut proc = cmd.spawn().map_err(system("start the helper process"))?;
    // The command holds our copy of the helper's end: it must be closed now, or a helper
    // that dies without sending leaves the pair open and the wait lasts the whole deadline.
    drop(cmd);
    let mut stderr = proc.stderr.take();
    let answer = async {
        let fd = fdpass::recv_fd(&ours).await;
        let mut text = Vec::new();
        if let Some(err) = stderr.as_mut() {
            // A helper that writes more than this blocks, and is killed at the deadline.
            let _ = err.take(STDERR_MAX).read_to_end(&mut text).await;
        }
        (fd, text, proc.wait().await)
    };
    let (fd, text, status) = match tokio::time::timeout(timeout + START_GRACE, answer).await {
        Ok(got) => got,
        Err(_) => {
            let _ = proc.start_kill();
            let _ = proc.wait().await;
            return Err(NsError::Timeout { pid: t.pid, addr: t.addr, after: timeout });
        }
    };
    let status = status.map_err(system("wait for the helper process"))?;
    let line = first_line(&text);
    match fd {
        Ok(Some(fd)) if status.success() => checked(t, fd),
        Ok(_) => Err(from_exit(t, timeout, status.code(), &status.to_string(), &line)),
        Err(e) => Err(NsError::Helper { pid: t.pid, detail: format!("receiving its socket: {e} ({status}: {line})") }),
    }
}

/// The received descriptor as a TCP stream, if it is a socket connected to the target's
/// address (a descriptor of anything else is closed).
fn checked(t: &NsTarget, fd: OwnedFd) -> Result<std::net::TcpStream, NsError> {
    let s = std::net::TcpStream::from(fd);
    match s.peer_addr() {
        Ok(peer) if peer == t.addr => Ok(s),
        Ok(peer) => Err(NsError::Helper { pid: t.pid, detail: format!("it sent a socket connected to {peer}, not {}", t.addr) }),
        Err(e) => Err(NsError::Helper { pid: t.pid, detail: format!("it sent a descriptor that is no connected socket: {e}") }),
    }
}

/// The error a helper meant by its exit code (None: killed by a signal) and its line.
pub fn from_exit(t: &NsTarget, timeout: Duration, code: Option<i32>, status: &str, line: &str) -> NsError {
    let (pid, addr) = (t.pid, t.addr);
    match code.map(Exit::from_code) {
        Some(Exit::Gone) => NsError::Gone { pid, net: t.net, now: parse_ns_link(line, "net") },
        Some(Exit::Denied) => NsError::Denied { pid, reason: line.to_string(), remedy: REMEDY_NOT_OWNER },
        Some(Exit::Connect) => NsError::Connect { pid, addr, source: os_error(line).map_or_else(|| io::Error::other(line.to_string()), io::Error::from_raw_os_error) },
        Some(Exit::Timeout) => NsError::Timeout { pid, addr, after: timeout },
        _ if code == Some(0) => NsError::Helper { pid, detail: "it ended without sending a socket".into() },
        _ if line.is_empty() => NsError::Helper { pid, detail: status.to_string() },
        _ => NsError::Helper { pid, detail: format!("{status}: {line}") },
    }
}

/// The errno in an io::Error's text: "Connection refused (os error 111)" gives 111.
pub fn os_error(line: &str) -> Option<i32> {
    let start = line.rfind("(os error ")? + "(os error ".len();
    let rest = &line[start..];
    rest[..rest.find(')')?].parse().ok()
}

/// The first non-empty line of a helper's stderr, trimmed, at most `LINE_MAX` characters.
pub fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    match line.char_indices().nth(LINE_MAX) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}
