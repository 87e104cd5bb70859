//! One remote host: its ssh link (made again with back-off when lost), a scan of its JVMs
//! every interval, and a forward per JVM from a local socket to where its agent listens.
//! What it knows is published on a watch channel; the daemon turns it into VM sessions.
//! A probe run on the first link made may take the host over with that link
//! (`run_probing`: jdwpmux on the host, `remote::through_far`).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::ssh::destination::Destination;
use super::ssh::known_hosts::{self, Stamp};
use super::ssh::master::Link;
use super::naming::Names;
use super::ssh::cmd::SshOptions;
use super::ssh::errors::LinkFailure;
use super::status::{HostTable, LinkState};
use crate::discovery::jvms::shell::ShellError;
use crate::discovery::jvms::{FoundJvm, Reach};

/// First wait after a lost or failed link; it doubles up to `MAX_BACKOFF`.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Wait after a refused host key: trying again soon cannot help (it is tried again sooner,
/// as soon as a known_hosts file changes).
pub const REFUSED_RETRY: Duration = Duration::from_secs(300);
/// Wait after a refused login (a key or user the host does not accept): a key loaded into
/// ssh-agent cannot be seen from here, so within a minute; sooner when the ssh config
/// changes.
pub const AUTH_RETRY: Duration = Duration::from_secs(60);
/// How long the forward of a JVM that went away is kept, for its return (a restart keeps its
/// socket); after that it is cancelled, so JVMs that come and go leave nothing behind.
pub const GONE_FORWARD: Duration = Duration::from_secs(60);
/// The adb server's port, looked for on each host's loopback.
pub const ADB_PORT: u16 = 5037;

/// How one host is reached and scanned.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub dest: Destination,
    /// The name `list` shows.
    pub label: String,
    /// The daemon's private folder: the master's control socket and the forwards' sockets.
    pub dir: PathBuf,
    /// Prefix of this host's files in `dir` (`h0`, `h1`...): Unix socket paths must be short.
    pub prefix: String,
    pub ssh: SshOptions,
    /// Time between scans.
    pub interval: Duration,
    /// Take the JVMs of other users than the ssh login too (`--other-users`).
    pub other_users: bool,
    /// What its JVMs' keys (and so their debugger ports) are named by, when not `label`: a
    /// pod's workload slot (`kube:NS/deploy/NAME/SLOT/CONTAINER`), so that the pod taking
    /// its place takes its ports.
    pub keyed_as: Option<String>,
}

impl HostConfig {
    /// The name its JVMs' keys start with.
    pub fn key_name(&self) -> &str {
        self.keyed_as.as_deref().unwrap_or(&self.label)
    }

    fn control(&self) -> PathBuf {
        self.dir.join(format!("{}.ctl", self.prefix))
    }

    /// The local socket forwarded to the host's adb server.
    pub fn adb_socket(&self) -> PathBuf {
        self.dir.join(format!("{}.adb.sock", self.prefix))
    }

    /// The longest a scan round may take before the link counts as lost: a silent link is
    /// noticed by then even if ssh's keep-alives have not given up yet.
    fn round_timeout(&self) -> Duration {
        (self.ssh.keepalive * super::ssh::cmd::KEEPALIVE_COUNT).max(Duration::from_secs(4))
    }
}

/// A JVM found on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteVm {
    /// Keeps its debugger port across reconnects and restarts.
    pub key: String,
    /// The local socket its forward listens on.
    pub socket: PathBuf,
    pub found: FoundJvm,
    /// The uid the host's scan ran as (the ssh login's).
    pub login: Option<u32>,
    /// Its forward is in place (it is reachable while the link is up).
    pub forwarded: bool,
}

/// What a host's task knows now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostReport {
    pub link: LinkState,
    /// The JVMs of the last scan (kept while the link is down).
    pub vms: Vec<RemoteVm>,
    /// The local socket forwarded to an adb server on the host's loopback, when one listens.
    pub adb: Option<PathBuf>,
    /// Through jdwpmux on the host: the link was down past its hold, so it let the VMs go
    /// (the note their rows show until the link is back).
    pub released: Option<String>,
}

impl Default for HostReport {
    fn default() -> Self {
        HostReport { link: LinkState::Connecting, vms: Vec::new(), adb: None, released: None }
    }
}

/// Runs one host until `cancel`; its row in `rows` says how it is.
pub async fn run(cfg: HostConfig, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    run_probing::<()>(&cfg, &report, &rows, &cancel, None).await;
}

/// A look at the host through the first link made (jdwpmux there, say): what it gives takes
/// the host over, the link handed with it; None leaves the host to this task's forwards.
pub type Probe<T> = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Option<T>> + Send>> + Send>;

/// `run`, with `probe` run once on the first link made: when it gives something, this task
/// ends and hands it over with that link (the master stays up, nothing was forwarded yet).
/// None when the daemon stops, or after serving the host to the end with forwards.
pub async fn run_probing<T>(
    cfg: &HostConfig,
    report: &watch::Sender<HostReport>,
    rows: &HostTable,
    cancel: &CancellationToken,
    mut probe: Option<Probe<T>>,
) -> Option<(Link, T)> {
    let mut backoff = FIRST_BACKOFF;
    let mut names = Names::default();
    let mut last_failure: Option<String> = None;
    // The known_hosts files ssh reads for this host, once a key was refused.
    let mut known: Option<Vec<PathBuf>> = None;
    let link_is = |state: LinkState| {
        rows.update(&cfg.label, |r| r.with_link(&state));
        report.send_modify(|r| r.link = state);
    };
    loop {
        link_is(LinkState::Connecting);
        let limit = cfg.ssh.connect_timeout + Duration::from_secs(20);
        let control = cfg.control();
        // Looked at before ssh reads them: a fix made while it runs counts as a change.
        let before = known.as_deref().map(Stamp::of);
        let opened = tokio::select! {
            l = Link::open(&cfg.ssh, &cfg.dest, &control, limit) => l,
            _ = cancel.cancelled() => return None,
        };
        let wait = match opened {
            Ok(mut link) => {
                // The look runs beside the first scan round, which the host needs anyway: a
                // host it finds nothing on starts no later than without it.
                let mut first = None;
                if let Some(look) = probe.take() {
                    let both = tokio::select! {
                        both = async { tokio::join!(look(), link.scan.round(cfg.round_timeout())) } => Some(both),
                        _ = cancel.cancelled() => None,
                    };
                    let Some((found, round)) = both else {
                        link.close().await;
                        return None;
                    };
                    if let Some(found) = found {
                        return Some((link, found));
                    }
                    first = Some(round);
                }
                info!(host = %cfg.label, dest = %cfg.dest, "the ssh link is up");
                backoff = FIRST_BACKOFF;
                last_failure = None;
                link_is(LinkState::Up);
                let why = serve(cfg, link, first, &mut names, report, rows, cancel).await?;
                let names: Vec<String> = report.borrow().vms.iter().map(|v| v.found.name()).collect();
                warn!(host = %cfg.label, reason = %why, "{}", link_lost(&cfg.label, &names));
                rows.update(&cfg.label, |r| r.with_link(&LinkState::Down { reason: why.clone(), refused: false }));
                report.send_modify(|r| {
                    r.link = LinkState::Down { reason: why, refused: false };
                    r.adb = None;
                    for vm in &mut r.vms {
                        vm.forwarded = false;
                    }
                });
                Wait::For(FIRST_BACKOFF)
            }
            Err(failure) => {
                let text = failure.to_string();
                let refused = !failure.transient();
                let wait = match failure {
                    LinkFailure::HostKey(_) => REFUSED_RETRY,
                    LinkFailure::Auth(_) => AUTH_RETRY,
                    LinkFailure::Other(_) => backoff,
                };
                // A refused key's text says when it is tried again.
                let said = if matches!(failure, LinkFailure::HostKey(_) | LinkFailure::Auth(_)) { text.clone() } else { format!("{text}; trying again in {wait:?}") };
                if last_failure.as_deref() != Some(text.as_str()) {
                    warn!(host = %cfg.label, "{said}");
                } else {
                    debug!(host = %cfg.label, "{said}");
                }
                last_failure = Some(text.clone());
                link_is(LinkState::Down { reason: text, refused });
                if !refused {
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                match failure {
                    LinkFailure::HostKey(_) => {
                        let files = match known.take() {
                            Some(f) => f,
                            None => known_hosts::files(&cfg.ssh, &cfg.dest).await,
                        };
                        let stamp = before.unwrap_or_else(|| Stamp::of(&files));
                        known = Some(files.clone());
                        Wait::OrChanged(wait, files, stamp, "known_hosts")
                    }
                    LinkFailure::Auth(_) => {
                        let files = ssh_config_file(&cfg.ssh).into_iter().collect::<Vec<_>>();
                        let stamp = Stamp::of(&files);
                        Wait::OrChanged(wait, files, stamp, "the ssh config")
                    }
                    LinkFailure::Other(_) => Wait::For(wait),
                }
            }
        };
        tokio::select! {
            _ = wait.elapse(cfg) => {}
            _ = cancel.cancelled() => return None,
        }
    }
}

/// How long a host waits before its link is tried again.
enum Wait {
    For(Duration),
    /// At most this long, and no longer than until one of these files (what they are, for
    /// the line) changes.
    OrChanged(Duration, Vec<PathBuf>, Stamp, &'static str),
}

/// The ssh config a host's ssh reads: `--ssh-config`, else `~/.ssh/config`.
fn ssh_config_file(ssh: &SshOptions) -> Option<PathBuf> {
    ssh.config.clone().or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".ssh").join("config")))
}

impl Wait {
    async fn elapse(self, cfg: &HostConfig) {
        match self {
            Wait::For(d) => tokio::time::sleep(d).await,
            Wait::OrChanged(d, files, stamp, what) => {
                let until = tokio::time::Instant::now() + d;
                // Looked at every scan interval: a stat of a file or two.
                let look = cfg.interval.clamp(Duration::from_millis(100), Duration::from_secs(5));
                while tokio::time::Instant::now() < until {
                    tokio::time::sleep(look.min(until - tokio::time::Instant::now())).await;
                    if Stamp::of(&files) != stamp {
                        info!(host = %cfg.label, "{what} changed; trying {} again now", cfg.label);
                        return;
                    }
                }
            }
        }
    }
}

/// Scans and forwards while the link lasts, starting with `first` when a round was made
/// already. None when the daemon stops, else why it ended.
async fn serve(
    cfg: &HostConfig,
    mut link: Link,
    mut first: Option<Result<Vec<FoundJvm>, ShellError>>,
    names: &mut Names,
    report: &watch::Sender<HostReport>,
    rows: &HostTable,
    cancel: &CancellationToken,
) -> Option<String> {
    // Forwards in place on this link: local socket -> target on the host.
    let mut forwards: HashMap<PathBuf, SocketAddr> = HashMap::new();
    // When each forward's JVM was last found.
    let mut seen: HashMap<PathBuf, tokio::time::Instant> = HashMap::new();
    // Other users' JVMs seen and left alone, by pid (each said once in the log).
    let mut left_alone: HashSet<u32> = HashSet::new();
    let why = loop {
        let found = match first.take() {
            Some(round) => round,
            None => tokio::select! {
                r = link.scan.round(cfg.round_timeout()) => r,
                _ = cancel.cancelled() => {
                    link.close().await;
                    return None;
                }
            },
        };
        let found = match found {
            Ok(f) => f,
            Err(e) => break link.last_words().filter(|_| !link.alive()).unwrap_or_else(|| e.to_string()),
        };
        let login = link.scan.view().uid;
        let (found, theirs): (Vec<FoundJvm>, Vec<FoundJvm>) = found.into_iter().partition(|f| cfg.other_users || f.runs_as(login));
        left_alone.retain(|pid| theirs.iter().any(|f| f.pid == *pid));
        for f in &theirs {
            if left_alone.insert(f.pid) {
                let user = f.user.as_deref().unwrap_or("unknown");
                debug!(host = %cfg.label, pid = f.pid, user, app = %f.name(), "leaving a JVM of another user than the ssh login alone (--other-users takes it)");
            }
        }
        let vms = update_forwards(cfg, &link, names, &mut forwards, login, found).await;
        let adb = adb_forward(cfg, &link, &mut forwards).await;
        let now = tokio::time::Instant::now();
        for vm in &vms {
            seen.insert(vm.socket.clone(), now);
        }
        if let Some(a) = &adb {
            seen.insert(a.clone(), now);
        }
        let stale: Vec<PathBuf> = forwards.keys().filter(|s| seen.get(*s).is_none_or(|t| now.duration_since(*t) > GONE_FORWARD)).cloned().collect();
        for socket in stale {
            if let Some(target) = forwards.remove(&socket) {
                debug!(host = %cfg.label, socket = %socket.display(), "cancelling the forward of a JVM gone for {GONE_FORWARD:?}");
                let _ = link.forward(&socket, target, true).await;
                let _ = std::fs::remove_file(&socket);
            }
            seen.remove(&socket);
        }
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        rows.update(&cfg.label, |r| r.scanned(vms.len(), now_ms));
        report.send_if_modified(|r| {
            let new = HostReport { link: LinkState::Up, vms, adb, released: None };
            let changed = *r != new;
            *r = new;
            changed
        });
        tokio::select! {
            _ = tokio::time::sleep(cfg.interval) => {}
            _ = link.ended() => break link.last_words().unwrap_or_else(|| "ssh exited".into()),
            _ = cancel.cancelled() => {
                link.close().await;
                return None;
            }
        }
    };
    link.close().await;
    Some(why)
}

/// Names the JVMs found and puts each reachable one's forward in place (moving it when its
/// agent moved to another port).
async fn update_forwards(
    cfg: &HostConfig,
    link: &Link,
    names: &mut Names,
    forwards: &mut HashMap<PathBuf, SocketAddr>,
    login: Option<u32>,
    found: Vec<FoundJvm>,
) -> Vec<RemoteVm> {
    let named = names.name(cfg.key_name(), &cfg.dir, &cfg.prefix, login, &found);
    let mut vms = Vec::new();
    for (mut f, n) in found.into_iter().zip(named) {
        let Some(n) = n else { continue };
        if let Reach::Inside { addr, .. } = f.reach {
            // ssh forwards to the host's own network namespace: a container's loopback is
            // reached only from on the host, by jdwpmux there.
            f.reach = Reach::Unreachable(format!(
                "it runs in a container on {} and its agent listens on that container's own {addr} only; \
                 jdwpmux on that host reaches it: serve --ssh {} --far always",
                cfg.label, cfg.label
            ));
        }
        let forwarded = match &f.reach {
            Reach::At(target) => ensure_forward(cfg, link, forwards, &n.socket, *target).await,
            Reach::Unreachable(_) | Reach::Inside { .. } => false,
        };
        vms.push(RemoteVm { key: n.key, socket: n.socket, found: f, login, forwarded });
    }
    // Forwards of JVMs that went away stay for `GONE_FORWARD`: a JVM restarting keeps its
    // socket, and its forward is moved when it is found again.
    vms
}

async fn ensure_forward(cfg: &HostConfig, link: &Link, forwards: &mut HashMap<PathBuf, SocketAddr>, socket: &PathBuf, target: SocketAddr) -> bool {
    match forwards.get(socket) {
        Some(t) if *t == target => return true,
        Some(old) => {
            if let Err(e) = link.forward(socket, *old, true).await {
                debug!(host = %cfg.label, socket = %socket.display(), error = %e, "cancelling a forward");
            }
            forwards.remove(socket);
        }
        None => {}
    }
    match link.forward(socket, target, false).await {
        Ok(()) => {
            debug!(host = %cfg.label, socket = %socket.display(), %target, "forwarding");
            forwards.insert(socket.clone(), target);
            true
        }
        Err(e) => {
            warn!(host = %cfg.label, %target, error = %e, "cannot forward to a JVM on {}", cfg.label);
            false
        }
    }
}

/// A forward to the host's adb server, while one listens on its loopback.
async fn adb_forward(cfg: &HostConfig, link: &Link, forwards: &mut HashMap<PathBuf, SocketAddr>) -> Option<PathBuf> {
    let listens = link.scan.view().sockets.iter().any(|s| s.listening() && s.local.port() == ADB_PORT && (s.local.ip().is_loopback() || s.local.ip().is_unspecified()));
    if !listens {
        return None;
    }
    let socket = cfg.adb_socket();
    let target = SocketAddr::from(([127, 0, 0, 1], ADB_PORT));
    ensure_forward(cfg, link, forwards, &socket, target).await.then_some(socket)
}

/// The one line a lost link is said in: its VMs' sessions say nothing more of it (they
/// retry quietly while the link is down).
fn link_lost(label: &str, vms: &[String]) -> String {
    let what = match vms {
        [] => String::new(),
        [one] => format!(": its VM ({one}) is unreachable and its debuggers are closed"),
        many => format!(": its {} VMs ({}) are unreachable and their debuggers are closed", many.len(), many.join(", ")),
    };
    format!("lost the ssh link to {label}{what}; reconnecting")
}

#[cfg(test)]
mod link_lost_tests {
    use super::link_lost;

    #[test]
    fn a_lost_link_is_one_line_naming_its_vms() {
        assert_eq!(link_lost("far", &[]), "lost the ssh link to far; reconnecting");
        assert_eq!(link_lost("far", &["Billing".into()]), "lost the ssh link to far: its VM (Billing) is unreachable and its debuggers are closed; reconnecting");
        assert_eq!(
            link_lost("far", &["Billing".into(), "pid 7".into()]),
            "lost the ssh link to far: its 2 VMs (Billing, pid 7) are unreachable and their debuggers are closed; reconnecting"
        );
    }
}
