//! An adb server at start-up. Asked for (`--adb`): if nothing answers on the server address,
//! run `adb -P PORT start-server` once when `adb` is on PATH. On the defaults a server is only
//! followed if one runs, never started: adb's server daemonizes and outlives jdwpmux, and a
//! first start makes keys in ~/.android, neither of which the user asked for. Every outcome
//! is reported in one line, none is fatal: device scanning still works if a server appears
//! later. No server is a warning only for a server the user named.
//!
//! Blocking (std::net, std::process): call it before the runtime starts or through
//! `tokio::task::spawn_blocking`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::{AdbServer, Wanted};

/// Bound on the liveness probe (connect, send `host:version`, read the status).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Bound on `adb start-server`; a server that needs longer is treated as a failure (and the
/// client process killed), though the server may still come up and be found by `watch`.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the child is polled while waiting for it.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    /// Something already answered `host:version` with OKAY.
    AlreadyRunning,
    /// `adb start-server` succeeded and the server now answers.
    Started,
    /// The address is not on this machine; starting a server there is not ours to do.
    NotLocal,
    /// No `adb` executable on PATH.
    NoAdbOnPath,
    /// Nothing answers, and no server was asked for: none is started.
    NotAsked,
    /// `adb start-server` ran but did not leave a working server.
    Failed(String),
}

/// Checks the server and, when it was asked for (`Wanted::Named`), starts it if needed;
/// logs one line with the outcome (none for a server that runs on the defaults: following
/// it says so).
pub fn try_start_server(server: &AdbServer, wanted: Wanted) -> StartOutcome {
    let outcome = match wanted {
        Wanted::Named => start_with(server.addr, find_on_path("adb").as_deref()),
        Wanted::ByDefault => probe_only(server.addr),
    };
    let addr = server.addr;
    match &outcome {
        StartOutcome::AlreadyRunning if wanted == Wanted::ByDefault => {}
        StartOutcome::AlreadyRunning => info!(%addr, "adb server already running"),
        StartOutcome::Started => info!(%addr, "started the adb server (`adb kill-server` stops it; it outlives jdwpmux as adb's server does)"),
        StartOutcome::NotLocal => info!(%addr, "adb server address is not local; not starting one"),
        StartOutcome::NoAdbOnPath => warn!(%addr, "no adb server answers and adb is not on PATH; device scanning waits for a server"),
        StartOutcome::NotAsked => info!(%addr, "no adb server answers at {addr}: Android devices are looked for once one runs (`--adb` starts one)"),
        // An `adb` that is there but cannot start its server is broken.
        StartOutcome::Failed(why) => warn!(%addr, "could not start the adb server: {why}"),
    }
    outcome
}

/// What is there without starting anything: a server that answers, or none.
fn probe_only(addr: SocketAddr) -> StartOutcome {
    if !addr.ip().is_loopback() {
        StartOutcome::NotLocal
    } else if server_answers(addr, PROBE_TIMEOUT) {
        StartOutcome::AlreadyRunning
    } else {
        StartOutcome::NotAsked
    }
}

/// True when something at `addr` answers `host:version` with OKAY within `timeout` per step.
pub fn server_answers(addr: SocketAddr, timeout: Duration) -> bool {
    let probe = || -> std::io::Result<bool> {
        let mut s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        s.write_all(b"000chost:version")?;
        let mut status = [0u8; 4];
        s.read_exact(&mut status)?;
        Ok(&status == b"OKAY")
    };
    probe().unwrap_or(false)
}

fn start_with(addr: SocketAddr, adb: Option<&Path>) -> StartOutcome {
    // Another machine's server is not ours to start: whether it answers is for the watch to
    // find out, not for a probe here.
    if !addr.ip().is_loopback() {
        return StartOutcome::NotLocal;
    }
    if server_answers(addr, PROBE_TIMEOUT) {
        return StartOutcome::AlreadyRunning;
    }
    let Some(adb) = adb else { return StartOutcome::NoAdbOnPath };
    // No pipes: the server that `start-server` forks inherits them and would keep them open
    // for its lifetime, so reading them to the end would never finish.
    let spawned = Command::new(adb)
        .args(["-P", &addr.port().to_string(), "start-server"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return StartOutcome::Failed(format!("cannot run {}: {e}", adb.display())),
    };
    let deadline = Instant::now() + START_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL_INTERVAL),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return StartOutcome::Failed(format!("adb start-server took over {} s", START_TIMEOUT.as_secs()));
            }
            Err(e) => return StartOutcome::Failed(format!("waiting for adb start-server: {e}")),
        }
    };
    if !status.success() {
        return StartOutcome::Failed(format!("adb start-server exited with {status}"));
    }
    if server_answers(addr, PROBE_TIMEOUT) {
        StartOutcome::Started
    } else {
        StartOutcome::Failed(format!("adb start-server exited with {status} but nothing answers at {addr}"))
    }
}

/// The first executable file called `name` in a PATH directory.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn closed_addr() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let addr = l.local_addr().expect("local addr");
        drop(l);
        addr
    }

    /// Answers one connection with `reply` after reading its request.
    fn one_shot_server(reply: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let addr = l.local_addr().expect("local addr");
        let t = std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut req = [0u8; 16];
                let _ = s.read_exact(&mut req);
                let _ = s.write_all(reply);
            }
        });
        (addr, t)
    }

    #[test]
    fn running_server_is_left_alone() {
        let (addr, t) = one_shot_server(b"OKAY00040029");
        assert_eq!(start_with(addr, Some(Path::new("/nonexistent/adb"))), StartOutcome::AlreadyRunning);
        t.join().expect("server thread");
    }

    #[test]
    fn non_adb_answer_is_not_a_server() {
        let (addr, t) = one_shot_server(b"HTTP/1.1 400");
        assert!(!server_answers(addr, PROBE_TIMEOUT));
        t.join().expect("server thread");
    }

    #[test]
    fn outcomes_without_a_server() {
        let addr = closed_addr();
        assert_eq!(start_with(addr, None), StartOutcome::NoAdbOnPath);
        let missing = start_with(addr, Some(Path::new("/nonexistent/adb")));
        assert!(matches!(&missing, StartOutcome::Failed(m) if m.contains("cannot run")), "{missing:?}");
        // Exits non-zero: reported with the status.
        let failing = start_with(addr, Some(Path::new("/bin/false")));
        assert!(matches!(&failing, StartOutcome::Failed(m) if m.contains("exited")), "{failing:?}");
        // Exits zero but starts nothing: still a failure.
        let useless = start_with(addr, Some(Path::new("/bin/true")));
        assert!(matches!(&useless, StartOutcome::Failed(m) if m.contains("nothing answers")), "{useless:?}");
    }

    #[test]
    fn on_the_defaults_nothing_is_started() {
        let addr = closed_addr();
        let server = AdbServer::new(addr);
        assert_eq!(try_start_server(&server, Wanted::ByDefault), StartOutcome::NotAsked);
        let (addr, t) = one_shot_server(b"OKAY00040029");
        assert_eq!(try_start_server(&AdbServer::new(addr), Wanted::ByDefault), StartOutcome::AlreadyRunning);
        t.join().expect("server thread");
    }

    #[test]
    fn remote_addresses_are_not_started() {
        // TEST-NET-1 (RFC 5737): not ours to start, even with an adb at hand, and not even
        // probed (no packet leaves this machine).
        let addr: SocketAddr = "192.0.2.1:5037".parse().expect("literal address");
        assert_eq!(start_with(addr, Some(Path::new("/bin/true"))), StartOutcome::NotLocal);
    }

    #[test]
    fn path_lookup_finds_sh() {
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("surely-no-such-tool-here").is_none());
    }
}
