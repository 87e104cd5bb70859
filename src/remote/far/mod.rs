//! `jdwpmux far`: jdwpmux on the VM's host. It finds the host's JVMs from /proc (the same
//! scan and keys as `serve`'s local discovery), holds the connections to their agents, and
//! serves them to one near side at a time over the stream of [`crate::remote::protocol`], on a Unix
//! socket in a private folder (which `serve --ssh` will reach through the user's ssh). When
//! the near side's stream is cut, the VM connections stay: the VMs see nothing, and a near
//! side that comes back within the hold resumes where it was, nothing lost or repeated. When
//! the hold runs out the far side closes them (each VM then sees its debugger leave) and
//! ends.
//!
//! - [`dir`]: the private folder, its lock and pid file.
//! - What a near side's Hello gets (new session, resumed, refused) is the link's protocol:
//!   [`crate::remote::protocol::hello`], as is the ready line ([`crate::remote::protocol::ready`]).
//! - `attach`: `far --attach`, this process's stdin and stdout bridged to the far side's
//!   socket (started first when none runs): the far side as an exec's byte pipe reaches it.
//! - `vms`: the VM list and the numbers channels are opened by. Pure.
//! - `channel`: one task per VM connection; `event`: what it tells the session.
//! - `gathering`: a channel's relay when the near side asked for stops' answers (protocol 3).
//! - `conn`: the session's connection to the near side and the waits on it.
//! - `serving`: the task owning the near side's connection, the channels and the resume
//!   state.
//!
//! One far process serves one session: it starts with a fresh session key, a near side that
//! asks for a new session closes the earlier one's channels, and the process ends with the
//! session (after the hold, or when the near side says it is leaving for good).
//!
//! Two near sides of one login (two `serve`s: two terminals, two people sharing a service
//! login) share this one far side, found by its folder. While one is connected, another's
//! new session is refused (`ByeReason::Busy`), with a line naming the one connected (its
//! Hello names its machine and pid, `remote::near::link::near_name`) and how to take over (stop
//! that `serve`, or this far side); the refused one tries again every minute at most and
//! takes the far side once the other has stopped. Before, each new session closed the
//! other's VM connections and the other took them back, five times a second, stops and
//! breakpoints lost. Refusing is the simplest rule that cannot loop: a session is taken only
//! (unless a take-over is asked for, below) from a near side that is not connected (it crashed, or is cut: then it finds its session
//! gone when back, and is refused in turn). Serving both at once would need a session per
//! near side, and a JVM's agent takes one connection, which the first near side's VM
//! sessions hold from the moment they are listed: the second would see every VM busy anyway.
//!
//! Taking over is asked for (`serve --far-take-over`: `hello::TAKE_OVER_MARK` in the
//! Hello's name): the connected near side is told (`ByeReason::Replaced`, naming the new
//! one) and let go, its VM connections closed; so is one that comes back to a session taken
//! while it was cut. A near side taken from never asks to take over again, so two started
//! with the flag cannot take the far side from each other in turn.
//!
//! A far side of another protocol found in the folder (a leftover of an older jdwpmux) is
//! reported as what it is: the pid file records each far side's protocols and version
//! (`dir::Holder`). A near side that cannot speak to it starts this one `--beside` it, in
//! a folder of this protocol's inside (`beside_dir`), and leaves it to end after its hold.
//!
//! Decisions the near side builds on:
//! - The far side is started over ssh as `jdwpmux far --detach`: it prints one line,
//!   `jdwpmux far: listening on SOCKET (pid N, protocol MIN..MAX, jdwpmux V)` (or `already
//!   running on SOCKET ...` with the running one's pid, protocols and version, `?` for what
//!   it did not record), and goes on in a session of its own; the near side forwards a Unix
//!   socket of its own to SOCKET through the ssh master.
//! - The VM list comes whole each time it changes; a VM's number names one process, so a
//!   restarted JVM is a new entry (the near side keeps its debugger port by what it runs,
//!   as `serve` does for local JVMs).
//! - A channel is a raw JDWP connection: the near side's session does the handshake and
//!   multiplexes debuggers onto it exactly as onto a VM socket; when it closes the
//!   channel, the far side closes the VM connection (the VM sees the debugger leave).
//!   Under protocol 3, for a near side that asked, the far side also reads a stop's
//!   answers and puts them in the channel's stream before the event (`gathering`).
//! - A near side that ends for good says Bye (`ShuttingDown`): the far side then closes its
//!   VM connections and ends at once instead of holding them.
//!
//! Not wired into `serve --ssh` yet: the subcommand is hidden until the near side's end is.

pub(crate) mod channel;
mod conn;
mod event;
mod gathering;
pub mod logcap;
pub mod dir;
mod attach;
pub use attach::attach;
pub(crate) mod serving;
pub(crate) mod vms;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn, Instrument};

use crate::discovery::jvms::keys::KeyBook;
use crate::discovery::jvms::{self, HostView};
use crate::remote::protocol::{hello, ready};
use crate::remote::protocol::frame::{Body, Header, Kind, HEADER_LEN};
use crate::remote::protocol::FarCodec;
use serving::{Accepted, Config, Ended, Scan, Session};

/// How long a new connection may take to send its Hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Unacknowledged bytes the far side sends before it leaves the VMs waiting: 50 ms of a
/// 160 MB/s link, and what a long cut costs in memory at most.
pub const DEFAULT_LIMIT: usize = 8 * 1024 * 1024;
/// Connections whose Hello is being read at once (more wait in the listen backlog).
const MAX_GREETING: usize = 8;

#[derive(Debug, Clone)]
pub struct Options {
    /// The private folder (default: `dir::default_dir()`).
    pub dir: Option<PathBuf>,
    pub hold: Duration,
    pub scan_interval: Duration,
    pub limit: usize,
    /// Run in `beside_dir` of the folder: a far side of another protocol holds the folder
    /// itself (`serve` asks for this when it found one it cannot speak to).
    pub beside: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FarError {
    #[error(transparent)]
    Dir(#[from] dir::DirError),
    #[error("{path}: {source}")]
    Socket { path: PathBuf, source: std::io::Error },
    #[error("no random session key: {0}")]
    Random(getrandom::Error),
    #[error("starting the far side in the background: {0}")]
    Detach(std::io::Error),
    #[error("the far side started in the background said nothing (its log: {0})")]
    Silent(PathBuf),
    #[error("the far side's line is not understood: {0}")]
    Line(String),
    #[error("connecting to the far side at {path}: {source}")]
    Attach { path: PathBuf, source: std::io::Error },
}


/// The folder a far side started `--beside` one of another protocol uses, inside the
/// default (or named) one: one per protocol, so each near side finds the far side it
/// can speak to and neither locks the other out.
pub fn beside_dir(dir: &Path) -> PathBuf {
    dir.join(format!("protocol-{}", hello::PROTOCOL))
}

/// Prints the ready line. Not `println!`: a starter that went away before reading it must not
/// bring the far side down with a broken pipe.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Runs the far side in this process until its session ends.
pub async fn serve(opts: Options) -> Result<(), FarError> {
    let (dir, passed_over) = folder(&opts)?;
    if let Some(why) = passed_over {
        warn!("the default folder is not this user's to use ({why}); using {} instead", dir.display());
    }
    let socket = dir.join(dir::SOCKET);
    let _lock = match dir::lock(&dir)? {
        dir::Locked::Running(holder) => {
            say(&ready::running_line(&socket, holder.pid, holder.protocols.as_ref(), holder.version.as_deref()));
            return Ok(());
        }
        dir::Locked::Mine(lock) => lock,
    };
    // The lock is ours: a socket file left there is a dead far side's.
    let _ = std::fs::remove_file(&socket);
    let listener = listen(&socket).map_err(|source| FarError::Socket { path: socket.clone(), source })?;
    let key = hello::new_session().map_err(FarError::Random)?;
    say(&ready::ready_line(&socket, Some(std::process::id()), false));
    info!(socket = %socket.display(), hold_s = opts.hold.as_secs(), "far side listening");

    let stop = CancellationToken::new();
    let (accepted_tx, accepted_rx) = mpsc::channel(1);
    let (scans_tx, scans_rx) = mpsc::channel(1);
    let acceptor = tokio::spawn(accept_loop(listener, accepted_tx).instrument(tracing::info_span!("accept")));
    let scanner = tokio::spawn(scan_loop(scans_tx, opts.scan_interval));
    let signals = tokio::spawn(stop_on_signal(stop.clone()));
    let log_cap = tokio::spawn(keep_log_small(dir.clone()));
    let cfg = Config { hold: opts.hold, limit: opts.limit, binary: env!("CARGO_PKG_VERSION").to_string(), liveness: crate::remote::protocol::liveness::DEFAULT };
    // The session is a task of the runtime like its channels, not the future `block_on`
    // polls: a task waking that future wakes the runtime through its eventfd (a write, and an
    // epoll round to read it), where waking a task is a push on the runtime's own queue.
    // Every command from the near side woke it so once, one system call and one turn of the
    // runtime more per command than a relay's.
    let session = tokio::spawn(Session::new(cfg, key).run(accepted_rx, scans_rx, stop).instrument(tracing::info_span!("far")));
    let ended = match session.await {
        Ok(ended) => ended,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Ended::Stopped,
    };
    acceptor.abort();
    scanner.abort();
    signals.abort();
    log_cap.abort();
    let _ = std::fs::remove_file(&socket);
    let why = match ended {
        Ended::HoldExpired => "no near side came back within the hold",
        Ended::NearLeft => "the near side left",
        Ended::Stopped => "stopped",
    };
    info!("far side ends: {why}");
    Ok(())
}

/// The far side's socket, listening, readable and writable by its owner only (bind makes it
/// with the umask's modes, 0755 most often): the folder keeps others out already, this is
/// the second lock the docs promise.
fn listen(socket: &Path) -> std::io::Result<UnixListener> {
    let listener = UnixListener::bind(socket)?;
    crate::remote::ssh::master::owner_only(socket);
    Ok(listener)
}

/// Starts the far side as a process of its own (its own session, stdio off the caller's, its
/// log in the folder), waits for its ready line and prints it: what `ssh HOST jdwpmux far
/// --detach` runs, so the far side outlives the ssh session that started it.
pub fn detach(opts: &Options) -> Result<(), FarError> {
    // Its process is left to this machine's init, which reaps it.
    let (line, _far) = start_detached(opts)?;
    say(&line);
    Ok(())
}

/// Starts the far side in the background, or finds it running: its ready line, and the
/// process started for it (the far side, or one that found it running and ends at once).
fn start_detached(opts: &Options) -> Result<(String, std::process::Child), FarError> {
    let (dir, _) = folder(opts)?;
    let log_path = dir.join(dir::LOG_FILE);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(|source| FarError::Socket { path: log_path.clone(), source })?;
    let exe = std::env::current_exe().map_err(FarError::Detach)?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("far")
        .arg("--dir")
        .arg(&dir)
        .arg("--hold")
        .arg(opts.hold.as_secs().to_string())
        .arg("--scan-interval")
        .arg(opts.scan_interval.as_secs_f64().to_string()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(FarError::Detach)?;
    let line = child.stdout.take().and_then(|out| BufReader::new(out).lines().next()).and_then(Result::ok);
    Ok((line.ok_or(FarError::Silent(log_path))?, child))
}

/// The private folder: the one named, checked; else the default (`dir::choose_default`),
/// with why the default in /tmp was passed over, if it was; `beside_dir` of it with
/// `Options::beside`.
fn folder(opts: &Options) -> Result<(PathBuf, Option<String>), FarError> {
    let (base, passed_over) = match &opts.dir {
        Some(d) => {
            dir::prepare(d)?;
            (d.clone(), None)
        }
        None => dir::choose_default()?,
    };
    if !opts.beside {
        return Ok((base, passed_over));
    }
    let beside = beside_dir(&base);
    dir::prepare(&beside)?;
    Ok((beside, passed_over))
}

/// Keeps the detached far side's log (its stderr) to `logcap::MAX_LOG` by rotating it.
async fn keep_log_small(dir: PathBuf) {
    loop {
        tokio::time::sleep(logcap::CHECK_EVERY).await;
        match logcap::rotate_if_big(&dir, 2, logcap::MAX_LOG) {
            Ok(true) => info!("the log was rotated: the lines before are in {}.1", dir::LOG_FILE),
            Ok(false) => {}
            Err(e) => debug!("the log could not be rotated: {e}"),
        }
    }
}

async fn accept_loop(listener: UnixListener, accepted: mpsc::Sender<Accepted>) {
    let greeting = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_GREETING));
    loop {
        let Ok(permit) = greeting.clone().acquire_owned().await else { return };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                debug!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let accepted = accepted.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HELLO_TIMEOUT, read_hello(stream)).await {
                Ok(Ok(a)) => {
                    let _ = accepted.send(a).await;
                }
                Ok(Err(why)) => info!("a connection without a hello: {why}"),
                Err(_) => info!("a connection sent no hello within {} s", HELLO_TIMEOUT.as_secs()),
            }
        });
    }
}

/// Reads a connection's first frame, which must be a Hello (refused on its header otherwise,
/// before anything more is read).
async fn read_hello(mut stream: UnixStream) -> Result<Accepted, String> {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        if let Some(h) = Header::parse(&buf) {
            match h {
                Ok(h) if h.kind == Kind::Hello => {}
                Ok(h) => return Err(format!("its first frame is {:?}", h.kind)),
                Err(e) => return Err(e.to_string()),
            }
        }
        match FarCodec.decode(&mut buf) {
            Ok(Some(frame)) => {
                let Body::Hello(hello) = frame.body else { return Err("its first frame is no hello".into()) };
                return Ok(Accepted { stream, hello, ack: frame.ack, rest: buf });
            }
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        buf.reserve(HEADER_LEN + Kind::Hello.max_payload());
        match stream.read_buf(&mut buf).await {
            Ok(0) => return Err("it closed".into()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Scans /proc now and every `interval`, handing each round to the session.
async fn scan_loop(scans: mpsc::Sender<Scan>, interval: Duration) {
    let mut view = Some(HostView::default());
    let mut book = KeyBook::default();
    loop {
        let Some(mut v) = view.take() else { return };
        let Ok((v, found)) = tokio::task::spawn_blocking(move || {
            let found = jvms::scan_local(&mut v);
            (v, found)
        })
        .await
        else {
            return;
        };
        let scanner = v.uid;
        view = Some(v);
        let found = match found {
            // Other users' JVMs are left alone here as by `serve`: their owners' own
            // debuggers must still be able to attach. Those in containers this login cannot
            // enter (root's, say) are listed, never connected to, with why: the near side
            // says what to do (log in as root) rather than show nothing.
            Ok(found) => found.into_iter().filter(|f| f.runs_as(scanner) || f.cannot_enter()).collect::<Vec<_>>(),
            Err(e) => {
                warn!("the /proc scan is skipped this round: no random marker for its records: {e}");
                tokio::time::sleep(interval).await;
                continue;
            }
        };
        let decisions = crate::discovery::jvms::decide::decide(&found, scanner, &mut book);
        if scans.send((found, decisions)).await.is_err() {
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

async fn stop_on_signal(stop: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else { return };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    stop.cancel();
}

#[cfg(test)]
mod listen_tests {
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn the_far_sides_socket_is_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join(super::dir::SOCKET);
        let _listener = super::listen(&socket).unwrap();
        assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
