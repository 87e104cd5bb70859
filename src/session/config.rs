//! What a session is told about its VM when it is spawned (`SessionConfig`), and how a VM
//! behind an adb server is reached (`AdbTarget`). Plain data that discovery, the registry
//! and the daemon's wiring fill in; it imports nothing of the session.

use std::net::SocketAddr;
use std::time::Duration;

use crate::session::modes::{DdmMode, Timeouts};

/// Everything a session needs to know about its VM.
#[derive(Clone)]
pub struct SessionConfig {
    /// How the VM is named in logs and `list` (its address).
    pub name: String,
    pub addr: SocketAddr,
    pub ddm: DdmMode,
    /// The VM is known to be Android (reached through adb): probe DDM without asking Version.
    pub android: bool,
    pub timeouts: Timeouts,
    /// Longest wait between reconnect attempts (the scan interval for discovered VMs).
    pub max_backoff: Duration,
    /// Where packets are captured, if anywhere.
    pub capture: Option<crate::capture::CaptureHandle>,
    /// Reached through an adb server (`jdwp:PID` on a device) instead of TCP to `addr`.
    pub adb: Option<AdbTarget>,
    /// Most debuggers attached at once (`--max-debuggers`; 1: a second one is refused).
    pub max_debuggers: usize,
    /// When answers that never change are given near (`--near-cache`).
    pub near_cache: crate::session::modes::NearCacheMode,
    /// Asked before each TCP connection whether `addr` is an adb forward to an Android VM.
    pub forwards: Option<std::sync::Arc<crate::discovery::forwards::ForwardLookup>>,
    /// Where its discovery says the VM is now, read at every connection: a VM found by its
    /// process (its agent may move to another port), or behind an ssh link. None: TCP to
    /// `addr`.
    pub located: Option<tokio::sync::watch::Receiver<Located>>,
}

/// Where a VM is, and who it is, as the discovery that found it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub endpoint: crate::transport::Endpoint,
    pub pid: Option<u32>,
    /// Its main class, jar or module (or app name).
    pub app: Option<String>,
    /// Another debugger holds its agent (who, as far as its discovery can tell): until it
    /// leaves, a refused connection is what is expected, not a fault.
    pub busy: Option<String>,
}

/// A VM behind an adb server: `addr` in the config is then the adb server's address.
#[derive(Clone, Debug)]
pub struct AdbTarget {
    pub server: crate::discovery::adb::AdbServer,
    pub serial: String,
    pub pid: u32,
}
