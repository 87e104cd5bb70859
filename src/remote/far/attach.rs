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

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;

use super::{say, start_detached, FarError, Options};

/// Bytes moved at once each way.
const CHUNK: usize = 64 * 1024;
/// How long the bridge waits, once closed, for the far side it started to end.
const REAP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Starts (or finds) the far side, prints its ready line and bridges stdin and stdout to its
/// socket. Returns when either side has closed.
pub fn attach(opts: &Options) -> Result<(), FarError> {
    let (line, reaper) = start_detached(opts)?;
    let ready = crate::remote::protocol::ready::parse(&line).map_err(|e| FarError::Line(e.to_string()))?;
    let sock = UnixStream::connect(&ready.socket).map_err(|source| FarError::Attach { path: ready.socket.clone(), source })?;
    say(&line);
    let mut from_far = sock.try_clone().map_err(|source| FarError::Attach { path: ready.socket.clone(), source })?;
    let mut to_far = sock;
    // The near side's bytes to the far side. Its end (the exec closed our stdin) is passed
    // on as the end of what the far side reads: a cut, which it holds through.
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        let mut buf = vec![0u8; CHUNK];
        loop {
            match input.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_far.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to_far.shutdown(Shutdown::Both);
    });
    // The far side's bytes to the near side, until the far side closes (it took another
    // connection, or ended) or stdout is gone (the exec ended).
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from_far.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if out.write_all(&buf[..n]).and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from_far.shutdown(Shutdown::Both);
    // A far side this process started and that is ending (its near side said it leaves for
    // good) is waited for a moment, so that it is reaped here: once this process is gone it
    // belongs to the container's first process, often the JVM, which reaps nothing, and it
    // would stay a zombie. One holding a cut session goes on; this process ends anyway.
    let deadline = std::time::Instant::now() + REAP_GRACE;
    while !reaper.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}
