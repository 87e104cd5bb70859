//! Telling whether a TCP address is an adb forward to an Android VM (`adb forward tcp:8000
//! jdwp:PID`, the usual way to point a plain debugger at an app), before the proxy sends it
//! anything: the first non-DDM packet makes Dalvik and ART treat the connection as a
//! debugger's (ART loads its full JDWP agent; Dalvik turns its JIT off and releases an app
//! blocked in `Debug.waitForDebugger()`).
//!
//! The adb server lists its forwards on `host:list-forward`, one `SERIAL LOCAL REMOTE` line
//! each (`emulator-5554 tcp:8000 jdwp:1234`). Lookups are shared: one answer serves every
//! session and scan probe for [`FORWARD_CACHE_TTL`], so a thousand VMs cost one request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;
use tracing::debug;

use super::adb::{AdbError, AdbServer};

/// How long one forward list answers lookups.
pub const FORWARD_CACHE_TTL: Duration = Duration::from_secs(1);
/// Longest wait for the adb server's answer; without one the address is not a forward.
pub const FORWARD_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);
/// Most forward lines read from one answer.
pub const MAX_FORWARDS: usize = 1024;

/// One line of `host:list-forward`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub serial: String,
    /// `tcp:8000`, `localabstract:foo`, ...
    pub local: String,
    /// `jdwp:1234`, `tcp:9000`, ...
    pub remote: String,
}

impl Forward {
    fn local_tcp_port(&self) -> Option<u16> {
        self.local.strip_prefix("tcp:")?.parse().ok()
    }

    fn jdwp_pid(&self) -> Option<u32> {
        self.remote.strip_prefix("jdwp:")?.parse().ok()
    }
}

/// An address that leads to the VM of process `pid` on device `serial`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JdwpForward {
    pub serial: String,
    pub pid: u32,
}

impl JdwpForward {
    /// How such a VM is named: like one found through adb.
    pub fn name(&self) -> String {
        format!("{}:{}", self.serial, self.pid)
    }
}

impl std::fmt::Display for JdwpForward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "jdwp:{} on {}", self.pid, self.serial)
    }
}

/// Parses the text of a `host:list-forward` answer; lines that are not three words are
/// skipped (a newer server may add fields after them, which are ignored).
pub fn parse_forwards(text: &str) -> Vec<Forward> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (serial, local, remote) = (w.next()?, w.next()?, w.next()?);
            Some(Forward { serial: serial.into(), local: local.into(), remote: remote.into() })
        })
        .take(MAX_FORWARDS)
        .collect()
}

/// The forward `vm` is, if any. The adb server listens for its forwards on its own host
/// (loopback unless it was started with `-a`), so the address must be on that host.
pub fn jdwp_forward(forwards: &[Forward], vm: SocketAddr, server: SocketAddr) -> Option<JdwpForward> {
    let same_host = vm.ip() == server.ip() || (vm.ip().is_loopback() && server.ip().is_loopback());
    if !same_host {
        return None;
    }
    forwards
        .iter()
        .filter(|f| f.local_tcp_port() == Some(vm.port()))
        .find_map(|f| Some(JdwpForward { serial: f.serial.clone(), pid: f.jdwp_pid()? }))
}

type Cached = (Instant, Arc<Vec<Forward>>);

/// Forward lookups against one adb server, cached and shared.
#[derive(Debug)]
pub struct ForwardLookup {
    server: AdbServer,
    /// The daemon also finds this server's VMs through `track-jdwp`: a scanned forward to
    /// one of them is left alone (the VM has one JDWP connection, served through adb).
    covered_by_discovery: bool,
    cache: Mutex<Option<Cached>>,
}

impl ForwardLookup {
    pub fn new(server: AdbServer, covered_by_discovery: bool) -> ForwardLookup {
        ForwardLookup { server, covered_by_discovery, cache: Mutex::new(None) }
    }

    pub fn covered_by_discovery(&self) -> bool {
        self.covered_by_discovery
    }

    /// The forward `vm` is, if an adb server answers and lists it.
    pub async fn find(&self, vm: SocketAddr) -> Option<JdwpForward> {
        let forwards = self.forwards().await;
        jdwp_forward(&forwards, vm, self.server.addr)
    }

    /// The current forward list (empty when no adb server answers). Concurrent callers
    /// wait for one request instead of each sending their own.
    async fn forwards(&self) -> Arc<Vec<Forward>> {
        let mut cache = self.cache.lock().await;
        if let Some((at, list)) = cache.as_ref() {
            if at.elapsed() < FORWARD_CACHE_TTL {
                return list.clone();
            }
        }
        let list = match tokio::time::timeout(FORWARD_LOOKUP_TIMEOUT, async { self.server.forward_list().await.map(|t| parse_forwards(&t)) }).await {
            Ok(Ok(list)) => list,
            Ok(Err(e)) => {
                log_unanswered(&self.server, &e);
                Vec::new()
            }
            Err(_) => {
                debug!(adb = %self.server.addr, timeout = ?FORWARD_LOOKUP_TIMEOUT, "no forward list from the adb server");
                Vec::new()
            }
        };
        let list = Arc::new(list);
        *cache = Some((Instant::now(), list.clone()));
        list
    }
}

fn log_unanswered(server: &AdbServer, e: &AdbError) {
    // No adb server is the usual case on a workstation without Android tools.
    debug!(adb = %server.addr, error = %e, "no forward list from the adb server");
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "emulator-5554 tcp:8000 jdwp:1234\n\
                        emulator-5554 tcp:8001 tcp:9000\n\
                        R58M1234 tcp:8002 jdwp:77 extra-field\n\
                        R58M1234 localabstract:x jdwp:5\n\
                        garbage\n\
                        emulator-5554 tcp:8003 jdwp:notapid\n";

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forward_lines_parse() {
        let f = parse_forwards(LIST);
        assert_eq!(f.len(), 5, "{f:?}");
        assert_eq!(f[0], Forward { serial: "emulator-5554".into(), local: "tcp:8000".into(), remote: "jdwp:1234".into() });
        assert_eq!(f[2].remote, "jdwp:77");
        assert!(parse_forwards("").is_empty());
    }

    #[test]
    fn which_addresses_are_jdwp_forwards() {
        let f = parse_forwards(LIST);
        let local_adb = addr("127.0.0.1:5037");
        let remote_adb = addr("10.0.0.5:5037");
        let found = |vm: &str, server| jdwp_forward(&f, addr(vm), server);
        let cases = [
            ("127.0.0.1:8000", local_adb, Some(("emulator-5554", 1234))),
            ("[::1]:8000", local_adb, Some(("emulator-5554", 1234))),
            ("127.0.0.1:8002", local_adb, Some(("R58M1234", 77))),
            // Forwarded, but to a TCP port, not a VM.
            ("127.0.0.1:8001", local_adb, None),
            ("127.0.0.1:8003", local_adb, None),
            ("127.0.0.1:8999", local_adb, None),
            // The forward listens on the adb server's host.
            ("192.168.1.9:8000", local_adb, None),
            ("10.0.0.5:8000", remote_adb, Some(("emulator-5554", 1234))),
            ("127.0.0.1:8000", remote_adb, None),
        ];
        for (vm, server, want) in cases {
            let want = want.map(|(s, pid)| JdwpForward { serial: s.into(), pid });
            assert_eq!(found(vm, server), want, "{vm} via {server}");
        }
        assert_eq!(JdwpForward { serial: "emulator-5554".into(), pid: 1234 }.name(), "emulator-5554:1234");
    }

    #[tokio::test]
    async fn no_adb_server_means_no_forward() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = l.local_addr().unwrap();
        drop(l);
        let lookup = ForwardLookup::new(AdbServer::new(dead), false);
        assert_eq!(lookup.find(addr("127.0.0.1:8000")).await, None);
    }
}
