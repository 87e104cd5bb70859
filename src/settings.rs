//! Validated settings for `serve`, with every default and limit as a named constant.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

pub const DEFAULT_LISTEN: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
pub const DEFAULT_BASE_PORT: u16 = 8600;
pub const DEFAULT_CURRENT_PORT: u16 = 8700;
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// HotSpot gives up on a handshake after 2 s; a VM that takes longer than this is not well.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a new debugger waits for its VM to (re)connect before it is turned away.
pub const DEFAULT_ATTACH_WAIT: Duration = Duration::from_secs(10);
/// How often port ranges are scanned (and how fast a vanished VM is noticed).
pub const DEFAULT_SCAN_INTERVAL: Duration = Duration::from_secs(2);
/// Scanned when no VM source is given, like the Dalvik Debug Monitor's "scan workstation".
pub const DEFAULT_SCAN: &str = "127.0.0.1:8000-8040";
/// Debuggers that may share one VM at once (`--max-debuggers`; 1 refuses a second one).
pub const DEFAULT_MAX_DEBUGGERS: usize = 8;
/// Most debuggers one VM may be given: past a few, nobody is debugging anything.
pub const MAX_MAX_DEBUGGERS: usize = 64;
/// How often each ssh host is scanned for JVMs.
pub const DEFAULT_SSH_INTERVAL: Duration = Duration::from_secs(2);
/// Silence on an ssh link before ssh checks it (ServerAliveInterval).
pub const DEFAULT_SSH_KEEPALIVE: Duration = Duration::from_secs(2);
/// Bounds of `--ssh-interval`.
pub const SSH_INTERVAL_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_millis(200)..=Duration::from_secs(3600);
/// Bounds of `--ssh-keepalive`.
pub const SSH_KEEPALIVE_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_secs(1)..=Duration::from_secs(300);

/// Where `--web` without an address serves the monitor page.
pub const DEFAULT_WEB: &str = "127.0.0.1:8699";
/// How long a debugger has to send its handshake.
pub const DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a debugger may leave a full queue unread (or stop halfway through a large
/// command) before it is cut off (`--stall-timeout`). Until then the VM's packets wait for
/// it, and with them the VM's other debuggers.
pub const DEFAULT_DEBUGGER_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds of `--stall-timeout`: below a second a busy IDE is cut for a GC pause; above ten
/// minutes one stuck debugger holds every other debugger of its VM for that long.
pub const STALL_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_secs(1)..=Duration::from_secs(600);

/// Most `--spin-us`: past a millisecond a spin costs more than any wake-up it saves.
pub const MAX_SPIN_US: u64 = 1000;

// The session's modes are the session's; settings builds them (and gives their defaults).
pub use crate::session::modes::{DdmMode, NearCacheMode, Timeouts};

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            handshake: DEFAULT_HANDSHAKE_TIMEOUT,
            attach_wait: DEFAULT_ATTACH_WAIT,
            debugger_handshake: DEFAULT_DEBUGGER_HANDSHAKE_TIMEOUT,
            debugger_stall: DEFAULT_DEBUGGER_STALL_TIMEOUT,
        }
    }
}

/// Everything `serve` runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub vms: Vec<SocketAddr>,
    /// Those of `vms` said to be Android (`--vm android:HOST:PORT`): spoken to with DDM
    /// only until a debugger attaches.
    pub android_vms: Vec<SocketAddr>,
    /// The adb server asked whether a VM reached over TCP is an adb forward to an Android
    /// VM; None never asks.
    pub adb_forwards: Option<SocketAddr>,
    pub listen: IpAddr,
    pub allow_remote: bool,
    /// First per-VM debugger port; 0 gives every VM an ephemeral port.
    pub base_port: u16,
    /// The current-VM port; 0 for an ephemeral one.
    pub current_port: u16,
    pub select: Option<String>,
    pub ddm: DdmMode,
    /// Debuggers that may share one VM at once.
    pub max_debuggers: usize,
    /// When unchanging answers are given near (`--near-cache`).
    pub near_cache: NearCacheMode,
    /// How long the daemon polls for an answer after a write before it sleeps
    /// (`--spin-us`; zero: it sleeps at once). See `park`.
    pub spin: Duration,
    /// Keep the runtime's thread on one CPU while that CPU is not contended (`--cpu-pin`;
    /// off by default). See `park::pin`.
    pub cpu_pin: bool,
    pub timeouts: Timeouts,
    /// The adb server whose devices' debuggable processes are VMs.
    pub adb: Option<SocketAddr>,
    /// `adb` is only the usual server, looked for because no VM source was named (no `--adb`,
    /// `--vm` or `--scan`): finding none there is normal and said in one line. A server that
    /// was asked for (`--adb`, or `adb` in the config) and fails is a warning.
    pub adb_by_default: bool,
    /// Peers allowed on debugger ports; empty: anyone who can reach them.
    pub allow: Vec<crate::listen::allow::Cidr>,
    /// Local users besides the daemon's own whose debuggers may connect (`--allow-user`).
    pub allow_users: crate::listen::owner::AllowedUsers,
    /// Port ranges scanned for VMs.
    pub scans: Vec<crate::discovery::scan::ScanRange>,
    /// Local JVMs are found in /proc.
    pub proc_scan: bool,
    /// Only /proc-found JVMs whose command line contains one of these (empty: all).
    pub proc_match: Vec<String>,
    /// Other users' JVMs and listening ports are taken too (`--other-users`); by default
    /// only those of jdwpmux's own user (on an ssh host: of the ssh login).
    pub other_users: bool,
    /// Root's Podman containers, to a user, are reached through `sudo -n podman exec`
    /// (`--podman-sudo`).
    pub podman_sudo: bool,
    /// Hosts whose JVMs are found and served through ssh.
    pub ssh: Vec<crate::remote::Destination>,
    /// How ssh is run for them, and how often they are scanned.
    pub ssh_options: crate::remote::SshOptions,
    pub ssh_interval: Duration,
    /// When and which jdwpmux is used on --ssh hosts (`--far`, `--far-path`).
    pub far: crate::remote::far_choice::FarChoice,
    /// Containers and pods reached through their runtime's exec (`--exec NAME=COMMAND`).
    pub exec: Vec<crate::remote::exec::ExecSpec>,
    /// Namespaces whose pods are followed through kubectl (`--kube NAMESPACE[:SELECTOR]`).
    pub kube: Vec<crate::remote::kube::KubeSpec>,
    /// kubectl's `--context` for them (`--kube-context`).
    pub kube_context: Option<String>,
    pub scan_interval: Duration,
    /// Capture every packet to a file.
    pub capture: Option<CaptureSettings>,
    /// The control socket; None runs without one.
    pub control: Option<std::path::PathBuf>,
    /// Where the monitor page is served; None: not at all.
    pub web: Option<SocketAddr>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            vms: Vec::new(),
            android_vms: Vec::new(),
            adb_forwards: None,
            listen: DEFAULT_LISTEN,
            allow_remote: false,
            base_port: DEFAULT_BASE_PORT,
            current_port: DEFAULT_CURRENT_PORT,
            select: None,
            ddm: DdmMode::Auto,
            max_debuggers: DEFAULT_MAX_DEBUGGERS,
            near_cache: NearCacheMode::Auto,
            spin: Duration::ZERO,
            cpu_pin: false,
            timeouts: Timeouts::default(),
            control: None,
            capture: None,
            adb: None,
            adb_by_default: false,
            allow: Vec::new(),
            allow_users: crate::listen::owner::AllowedUsers::default(),
            scans: Vec::new(),
            proc_scan: false,
            proc_match: Vec::new(),
            other_users: false,
            podman_sudo: false,
            ssh: Vec::new(),
            ssh_options: crate::remote::SshOptions::default(),
            ssh_interval: DEFAULT_SSH_INTERVAL,
            far: crate::remote::far_choice::FarChoice::default(),
            exec: Vec::new(),
            kube: Vec::new(),
            kube_context: None,
            scan_interval: DEFAULT_SCAN_INTERVAL,
            web: None,
        }
    }
}

/// `--capture FILE` and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSettings {
    pub path: std::path::PathBuf,
    /// None: from the file's extension (.pcapng, .jsonl).
    pub format: Option<crate::capture::Format>,
    pub max_bytes: Option<u64>,
    pub snaplen: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    #[error("--listen {0} is not a loopback address: JDWP gives whoever connects full control of the VM; add --allow-remote if you mean it")]
    RemoteNotAllowed(IpAddr),
    #[error("--vm {0}: expected HOST:PORT or android:HOST:PORT (for example 127.0.0.1:8000)")]
    BadVm(String),
    #[error("{0}")]
    BadScan(String),
    #[error("--web {0} is not a loopback address: the monitor page can make VMs exit or GC; add --allow-remote if you mean it")]
    WebRemoteNotAllowed(SocketAddr),
    #[error("--max-debuggers {0}: expected 1 to {MAX_MAX_DEBUGGERS}")]
    BadMaxDebuggers(usize),
    #[error("--stall-timeout {0}: expected 1 to 600 seconds")]
    BadStallTimeout(String),
    #[error("--spin-us {0}: expected 0 to {MAX_SPIN_US}")]
    BadSpin(u128),
    #[error("--ssh-interval {0}: expected 0.2 to 3600 seconds")]
    BadSshInterval(String),
    #[error("--ssh-keepalive {0}: expected 1 to 300 seconds")]
    BadSshKeepalive(u64),
    #[error("--far-hold {0}: expected 1 to {max} seconds", max = crate::remote::protocol::hello::MAX_HOLD.as_secs())]
    BadFarHold(u32),
    #[error("--allow-user {0}: no such user")]
    UnknownUser(String),
    #[error("--ssh {0} is given twice")]
    SshTwice(String),
    #[error("--exec {0}: the name is given twice (or names an --ssh host too)")]
    ExecTwice(String),
    #[error("--kube {0} is given twice")]
    KubeTwice(String),
    /// ssh would fail on every try with it (`Can't open user config file`), forever.
    #[error("--ssh-config {path}: {why}")]
    SshConfig { path: String, why: String },
}

/// Checks at start that the `--ssh-config` file can be read: ssh refuses to run without
/// it, so a mistyped path would leave every host down, retried forever.
pub fn check_ssh_config(path: &std::path::Path) -> Result<(), SettingsError> {
    let bad = |why: String| SettingsError::SshConfig { path: path.display().to_string(), why };
    let meta = std::fs::metadata(path).map_err(|e| bad(match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        _ => e.to_string(),
    }))?;
    if meta.is_dir() {
        return Err(bad("a folder, not an ssh config file".into()));
    }
    std::fs::File::open(path).map(drop).map_err(|e| bad(format!("cannot read it: {e}")))
}

impl Settings {
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !self.listen.is_loopback() && !self.allow_remote {
            return Err(SettingsError::RemoteNotAllowed(self.listen));
        }
        if let Some(web) = self.web.filter(|w| !w.ip().is_loopback() && !self.allow_remote) {
            return Err(SettingsError::WebRemoteNotAllowed(web));
        }
        if !(1..=MAX_MAX_DEBUGGERS).contains(&self.max_debuggers) {
            return Err(SettingsError::BadMaxDebuggers(self.max_debuggers));
        }
        if !STALL_TIMEOUT_RANGE.contains(&self.timeouts.debugger_stall) {
            return Err(SettingsError::BadStallTimeout(self.timeouts.debugger_stall.as_secs_f64().to_string()));
        }
        if self.spin > Duration::from_micros(MAX_SPIN_US) {
            return Err(SettingsError::BadSpin(self.spin.as_micros()));
        }
        if !SSH_INTERVAL_RANGE.contains(&self.ssh_interval) {
            return Err(SettingsError::BadSshInterval(self.ssh_interval.as_secs_f64().to_string()));
        }
        if !SSH_KEEPALIVE_RANGE.contains(&self.ssh_options.keepalive) {
            return Err(SettingsError::BadSshKeepalive(self.ssh_options.keepalive.as_secs()));
        }
        if !(1..=crate::remote::protocol::hello::MAX_HOLD.as_secs()).contains(&u64::from(self.far.hold_secs)) {
            return Err(SettingsError::BadFarHold(self.far.hold_secs));
        }
        if let Some(d) = self.ssh.iter().enumerate().find(|(i, d)| self.ssh[..*i].contains(d)).map(|(_, d)| d) {
            return Err(SettingsError::SshTwice(d.to_string()));
        }
        // An --exec name is a host's name: one of each, and none an --ssh host's.
        let ssh_labels = crate::remote::ssh::destination::labels(&self.ssh);
        if let Some(e) = self.exec.iter().enumerate().find(|(i, e)| self.exec[..*i].iter().any(|o| o.name == e.name) || ssh_labels.contains(&e.name)).map(|(_, e)| e) {
            return Err(SettingsError::ExecTwice(e.name.clone()));
        }
        if let Some(k) = self.kube.iter().enumerate().find(|(i, k)| self.kube[..*i].contains(k)).map(|(_, k)| k) {
            return Err(SettingsError::KubeTwice(k.to_string()));
        }
        Ok(())
    }
}

/// The prefix of `--vm android:HOST:PORT`.
pub const ANDROID_VM_PREFIX: &str = "android:";

/// Parses `[android:]HOST:PORT`: the address, and whether it was said to be Android.
pub fn parse_vm_spec(s: &str) -> Result<(SocketAddr, bool), SettingsError> {
    match s.strip_prefix(ANDROID_VM_PREFIX) {
        Some(rest) => parse_vm_addr(rest).map(|a| (a, true)).map_err(|_| SettingsError::BadVm(s.to_string())),
        None => parse_vm_addr(s).map(|a| (a, false)),
    }
}

/// The adb server adb's own tools use when not told otherwise: 127.0.0.1 on
/// `ANDROID_ADB_SERVER_PORT`, else port 5037.
pub fn default_adb_server() -> SocketAddr {
    let port = std::env::var("ANDROID_ADB_SERVER_PORT").ok().and_then(|p| p.trim().parse().ok());
    SocketAddr::from((Ipv4Addr::LOCALHOST, port.unwrap_or(crate::discovery::adb::DEFAULT_ADB_PORT)))
}

/// Parses `HOST:PORT`, resolving a host name (`localhost:8000`) to its first address.
pub fn parse_vm_addr(s: &str) -> Result<SocketAddr, SettingsError> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| SettingsError::BadVm(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_by_default_and_remote_needs_consent() {
        let mut s = Settings::default();
        assert!(s.validate().is_ok());
        s.listen = "0.0.0.0".parse().unwrap();
        assert_eq!(s.validate(), Err(SettingsError::RemoteNotAllowed(s.listen)));
        s.allow_remote = true;
        assert!(s.validate().is_ok());
    }

    #[test]
    fn a_remote_monitor_page_needs_consent_too() {
        let mut s = Settings { web: Some(DEFAULT_WEB.parse().unwrap()), ..Settings::default() };
        assert!(s.validate().is_ok());
        let remote: SocketAddr = "0.0.0.0:8699".parse().unwrap();
        s.web = Some(remote);
        assert_eq!(s.validate(), Err(SettingsError::WebRemoteNotAllowed(remote)));
        s.allow_remote = true;
        assert!(s.validate().is_ok());
    }

    #[test]
    fn max_debuggers_is_bounded() {
        let mut s = Settings::default();
        for bad in [0, MAX_MAX_DEBUGGERS + 1] {
            s.max_debuggers = bad;
            assert_eq!(s.validate(), Err(SettingsError::BadMaxDebuggers(bad)));
        }
        s.max_debuggers = 1;
        assert!(s.validate().is_ok());
    }

    #[test]
    fn the_far_hold_is_bounded_by_what_a_far_side_grants() {
        let mut s = Settings::default();
        assert_eq!(s.far.hold_secs, 300);
        for bad in [0, 86_401, u32::MAX] {
            s.far.hold_secs = bad;
            assert_eq!(s.validate(), Err(SettingsError::BadFarHold(bad)));
        }
        for good in [1, 86_400] {
            s.far.hold_secs = good;
            assert!(s.validate().is_ok());
            assert_eq!(crate::remote::protocol::hello::grant_hold(good, Duration::from_secs(300)).as_secs(), u64::from(good), "granted as asked");
        }
        assert_eq!(SettingsError::BadFarHold(0).to_string(), "--far-hold 0: expected 1 to 86400 seconds");
    }

    #[test]
    fn a_kube_is_given_once() {
        // Two selectors in one namespace are two --kube (a pod both match is entered once:
        // its host is named by the pod).
        let mut s = Settings { kube: vec!["shop:app=orders".parse().unwrap(), "shop:app=cart".parse().unwrap(), "billing".parse().unwrap()], ..Settings::default() };
        assert!(s.validate().is_ok());
        s.kube.push("shop:app=orders".parse().unwrap());
        assert_eq!(s.validate(), Err(SettingsError::KubeTwice("shop:app=orders".into())));
    }

    #[test]
    fn vm_addresses() {
        assert_eq!(parse_vm_addr("127.0.0.1:8000").unwrap().port(), 8000);
        assert_eq!(parse_vm_addr("localhost:8001").unwrap().port(), 8001);
        assert!(parse_vm_addr("8000").is_err());
        assert!(parse_vm_addr("host:notaport").is_err());
        let cases = [
            ("127.0.0.1:8000", Some(("127.0.0.1:8000", false))),
            ("android:127.0.0.1:8000", Some(("127.0.0.1:8000", true))),
            ("android:[::1]:8001", Some(("[::1]:8001", true))),
            ("android:8000", None),
            ("android:", None),
            ("ios:127.0.0.1:8000", None),
        ];
        for (text, want) in cases {
            let got = parse_vm_spec(text).ok();
            let want = want.map(|(a, android)| (a.parse::<SocketAddr>().unwrap(), android));
            assert_eq!(got, want, "{text}");
        }
        assert_eq!(parse_vm_spec("android:x").unwrap_err(), SettingsError::BadVm("android:x".into()));
    }
}
