//! One ssh link: the master process (`ssh -M`), whose own session is a shell running the JVM
//! scan, and the `ssh -O` requests that add and remove its forwards. The master is the
//! daemon's child: it ends with the link, and the daemon ends it on shutdown.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;
use tracing::debug;

use super::destination::Destination;
use super::cmd::SshOptions;
use super::errors::{self, LinkFailure};
use crate::discovery::jvms::shell::{ShellError, ShellScan};

/// Lines of the master's stderr kept to say why it failed.
const STDERR_LINES: usize = 32;
/// How long an `ssh -O` request may take.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a master that was asked to exit has before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// After the shell answered, how long the master has to open its control socket.
const CONTROL_SOCKET_WAIT: Duration = Duration::from_secs(5);

pub struct Link {
    child: Child,
    pub scan: ShellScan<ChildStdin, ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    control: PathBuf,
    dest: Destination,
    ssh: SshOptions,
}

impl Link {
    /// Starts the master and loads the scan into its shell. `limit` bounds the whole start
    /// (connect, authenticate, the shell's first answer).
    pub async fn open(ssh: &SshOptions, dest: &Destination, control: &Path, limit: Duration) -> Result<Link, LinkFailure> {
        // A control socket left by a master that was killed would make ssh refuse to start.
        let _ = std::fs::remove_file(control);
        let args = ssh.master(control, dest).map_err(|e| LinkFailure::Other(format!("cannot give ssh the control socket: {e}")))?;
        let mut child = Command::new(&ssh.program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| LinkFailure::Other(format!("cannot run {}: {e}", ssh.program.display())))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            tokio::spawn(keep_stderr(err, stderr.clone(), dest.host.clone()));
        }
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LinkFailure::Other("ssh started without its pipes".into()));
        };
        let scan = match ShellScan::start(stdin, stdout, limit).await {
            Ok(s) => s,
            Err(e) => return Err(failed(&mut child, &stderr, dest, ssh, e).await),
        };
        let deadline = Instant::now() + CONTROL_SOCKET_WAIT;
        while !control.exists() {
            if Instant::now() >= deadline || !matches!(child.try_wait(), Ok(None)) {
                let _ = child.start_kill();
                return Err(LinkFailure::Other(format!("ssh to {dest}: the master did not open its control socket {}", control.display())));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Link { child, scan, stderr, control: control.to_path_buf(), dest: dest.clone(), ssh: ssh.clone() })
    }

    /// Adds (or with `cancel`, removes) a forward from the local socket `socket` to `target`
    /// on the host.
    pub async fn forward(&self, socket: &Path, target: std::net::SocketAddr, cancel: bool) -> Result<(), String> {
        if !cancel {
            let _ = std::fs::remove_file(socket);
        }
        let args = self.ssh.forward(&self.control, &self.dest, socket, target, cancel).map_err(|e| e.to_string())?;
        let out = Command::new(&self.ssh.program).args(args).stdin(Stdio::null()).kill_on_drop(true).output();
        match tokio::time::timeout(CONTROL_TIMEOUT, out).await {
            Err(_) => Err(format!("ssh -O did not answer within {CONTROL_TIMEOUT:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(o)) if o.status.success() => {
                if !cancel {
                    owner_only(socket);
                }
                Ok(())
            }
            Ok(Ok(o)) => Err(String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("failed").to_string()),
        }
    }

    /// Whether the master still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the master to end by itself.
    pub async fn ended(&mut self) {
        let _ = self.child.wait().await;
    }

    /// What the master said last (for a lost link's log line).
    pub fn last_words(&self) -> Option<String> {
        let lines = self.stderr.lock().ok()?;
        lines.iter().rev().find(|l| !errors::is_channel_noise(l)).cloned()
    }

    /// Ends the master (and every forward with it).
    pub async fn close(mut self) {
        // The same control path was given to the master, so it can be given here.
        if let Ok(args) = self.ssh.exit(&self.control, &self.dest) {
            let exit = Command::new(&self.ssh.program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true).status();
            let _ = tokio::time::timeout(EXIT_GRACE, exit).await;
        }
        if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
        let _ = std::fs::remove_file(&self.control);
    }
}

/// Why a master did not come up: what ssh said, once it has exited.
async fn failed(child: &mut Child, stderr: &Arc<Mutex<VecDeque<String>>>, dest: &Destination, ssh: &SshOptions, e: ShellError) -> LinkFailure {
    if let ShellError::Timeout(t) = e {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
        return LinkFailure::Other(format!("ssh to {dest}: no answer within {t:?}"));
    }
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
        let _ = child.start_kill();
    }
    // The stderr reader may still hold ssh's last lines: let it finish.
    for _ in 0..50 {
        if stderr.lock().is_ok_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let text = stderr.lock().map(|l| l.iter().cloned().collect::<Vec<_>>().join("\n")).unwrap_or_default();
    let seen = config_seen(ssh, dest, &text).await;
    match (errors::classify(&dest.dest, &text, &seen), e) {
        (LinkFailure::Other(_), ShellError::Wire(w)) => LinkFailure::Other(format!("ssh to {dest}: the remote shell answered oddly: {w}")),
        (f, _) => f,
    }
}

/// What a hint needs of the ssh config: the file given, and (when ssh could not resolve the
/// name) whether that file, else `~/.ssh/config`, has a `Host` entry for the host.
async fn config_seen(ssh: &SshOptions, dest: &Destination, said: &str) -> errors::ConfigSeen {
    let file = ssh.config.as_ref().map(|p| p.display().to_string());
    let host_entry = if said.contains("Could not resolve hostname") {
        let path = ssh.config.clone().or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".ssh/config")));
        match path {
            Some(p) => match tokio::fs::read_to_string(&p).await {
                Ok(text) => super::config::host_entry(&text, &dest.host),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
                Err(_) => None,
            },
            None => None,
        }
    } else {
        None
    };
    errors::ConfigSeen { file, host_entry }
}

/// Keeps the master's last lines (each cut at 512 bytes: the remote side can write to it).
async fn keep_stderr(mut err: tokio::process::ChildStderr, keep: Arc<Mutex<VecDeque<String>>>, host: String) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match err.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for b in &chunk[..n] {
            if *b == b'\n' {
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                buf.clear();
                debug!(host = %host, "ssh: {line}");
                if let Ok(mut k) = keep.lock() {
                    if k.len() == STDERR_LINES {
                        k.pop_front();
                    }
                    k.push_back(line);
                }
            } else if buf.len() < 512 {
                buf.push(*b);
            }
        }
    }
}

/// Makes a forward's local socket (made by the master with its umask, 0755 here) readable
/// and writable by its owner only, as the docs say: its folder is the owner's only already,
/// so this is a second lock, not the first.
pub fn owner_only(socket: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
}
