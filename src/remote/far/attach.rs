//! `jdwpmux far --attach`: what `serve --exec` runs in a container through its runtime's
//! exec (`kubectl exec -i`, `podman exec -i`), where no ssh forwards a socket. It starts the
//! far side in the background as `--detach` does (or finds it running, by its folder), prints
//! the same ready line on stdout, then carries bytes between its own stdin and stdout and the
//! far side's socket until either end closes. The far side itself never depends on this
//! process: an exec that drops (an API server restart, a laptop asleep) ends only the bridge,
//! the far side holds the session, and the next exec's bridge resumes it.
//!
//! Plain threads and blocking reads: two copies, nothing to schedule, and the process has no
//! runtime to keep (it is started once a connection).
//!
//! **Nothing left behind**: a container's PID 1 is often the app itself (a JVM), which never
//! reaps the orphans it adopts: a far side that outlived the process that started it would
//! stay a zombie under it when it ends. So the bridge, once its exec has closed, closes its
//! ends and waits for the process it started (the far side, or the one that found it running
//! and ended at once) before it ends itself, reaped by the runtime outside the container.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;

use super::{say, start_detached, FarError, Options};

/// Bytes moved at once each way.
const CHUNK: usize = 64 * 1024;

/// Starts (or finds) the far side, prints its ready line and bridges stdin and stdout to its
/// socket. Returns when either side has closed.
pub fn attach(opts: &Options) -> Result<(), FarError> {
    let (line, mut started) = start_detached(opts)?;
    let ready = crate::remote::protocol::ready::parse(&line).map_err(|e| FarError::Line(e.to_string()))?;
    let sock = UnixStream::connect(&ready.socket).map_err(|source| FarError::Attach { path: ready.socket.clone(), source })?;
    say(&line);
    let mut from_far = sock.try_clone().map_err(|source| FarError::Attach { path: ready.socket.clone(), source })?;
    let mut to_far = sock;
    // The near side's bytes to the far side. Its end (the exec closed our stdin) is passed
    // on as the end of what the far side reads: a cut, which it holds through.
    std::thread::spawn(move || {
        pump(&mut std::io::stdin().lock(), &mut to_far);
        let _ = to_far.shutdown(Shutdown::Both);
    });
    // The far side's bytes to the near side, until the far side closes (it took another
    // connection, or ended) or stdout is gone (the exec ended).
    let mut out = std::io::stdout().lock();
    pump(&mut from_far, &mut out);
    let _ = from_far.shutdown(Shutdown::Both);
    drop(out);
    // The exec sees its streams end now; the far side holds its session on (or ends) as it
    // would without this process, which only waits to reap it.
    close_stdio();
    let _ = started.wait();
    Ok(())
}

/// Copies `from` to `to` (each write flushed) until either ends or fails.
fn pump(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|_| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}

/// Closes stdin and stdout (to /dev/null: nothing is written after this), so that the exec
/// is not held open by this process while it waits.
fn close_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto this process's own standard descriptors; `null` outlives the calls.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
}
