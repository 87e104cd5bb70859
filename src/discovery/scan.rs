//! Scanning port ranges for JDWP VMs, politely.
//!
//! A JDWP port has one slot and a completed handshake IS the debugger session: a
//! connect-and-drop makes the app print "Debugger failed to attach". So a probe that
//! succeeds is kept and becomes the VM's connection; ports that belong to a known VM are
//! left to that VM's session; a port that answers something else is remembered as "not JDWP"
//! and re-probed rarely.
//!
//! Android VMs are not sent VirtualMachine.Version (their first non-DDM packet makes them
//! think a debugger came): a port the adb server lists as a forward to `jdwp:PID` gets the
//! handshake alone, and a VM whose Version reply says Android anyway is let go, to be
//! reconnected by a session that speaks only DDM to it.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::forwards::{ForwardLookup, JdwpForward};
use super::port_owner::LocalPorts;
use crate::jdwp::codec::{Frame, JdwpCodec};
use crate::jdwp::version::VmVersion;
use crate::jdwp::Packet;
use crate::transport::open::{self as connect, ConnectError, Connected};

/// How long a port that answered something other than JDWP is left alone.
pub const NOT_JDWP_RECHECK: Duration = Duration::from_secs(60);
/// Connect timeout of a probe (loopback answers at once).
pub const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Handshake plus one VirtualMachine.Version round trip.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// The id of the probe's own Version request (the session starts its ids afresh).
const PROBE_ID: u32 = 0x7FFF_FF01;
/// Ports in one range at most (the default range has 41).
pub const MAX_RANGE: u32 = 4096;
/// Longest packet a probed port may send before its Version reply (the reply itself is
/// under 200 bytes; ART's early DDM pushes are small): a port claiming more is not a VM
/// worth buffering for.
pub const MAX_PROBE_PACKET: u32 = 1 << 20;

/// `HOST:FIRST-LAST`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanRange {
    pub host: IpAddr,
    pub first: u16,
    pub last: u16,
}

impl FromStr for ScanRange {
    type Err = String;
    fn from_str(s: &str) -> Result<ScanRange, String> {
        let bad = || format!("{s:?}: expected HOST:FIRST-LAST, for example 127.0.0.1:8000-8040");
        let (host, ports) = s.rsplit_once(':').ok_or_else(bad)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host: IpAddr = if host == "localhost" { IpAddr::from([127, 0, 0, 1]) } else { host.parse().map_err(|_| bad())? };
        let (first, last) = match ports.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let p: u16 = ports.parse().map_err(|_| bad())?;
                (p, p)
            }
        };
        if first == 0 || last < first {
            return Err(bad());
        }
        if u32::from(last - first) + 1 > MAX_RANGE {
            return Err(format!("{s:?}: at most {MAX_RANGE} ports in one range"));
        }
        Ok(ScanRange { host, first, last })
    }
}

impl std::fmt::Display for ScanRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}-{}", self.host, self.first, self.last)
    }
}

/// How a scanned VM is known to be Android.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AndroidVia {
    /// The port is an adb forward to it.
    Forward(JdwpForward),
    /// Its Version reply said so (this ident).
    Version(String),
}

/// A VM a scan found.
pub struct Found {
    /// The probe's connection, to keep; None when the session must connect afresh.
    pub conn: Option<Connected>,
    /// Known to be Android: DDM only until a debugger attaches.
    pub android: Option<AndroidVia>,
}

/// What a probe found.
pub enum Probe {
    /// Nothing listens (or the VM's single slot is taken).
    Closed,
    /// A JDWP VM.
    Vm(Box<Found>),
    /// An adb forward to a VM the daemon reaches through that adb server itself: left alone.
    LeftToAdb(JdwpForward),
    /// Something that is not a JDWP VM.
    NotJdwp(String),
}

/// Probes one address: handshake in one write, then one Version round trip (an echo server
/// passes the handshake but sends our command back instead of a reply). An adb forward to a
/// VM (asked of `forwards` first) gets the handshake alone.
pub async fn probe(addr: SocketAddr, forwards: Option<&ForwardLookup>) -> Probe {
    let forward = match forwards {
        Some(l) => l.find(addr).await,
        None => None,
    };
    if let Some(f) = forward.clone().filter(|_| forwards.is_some_and(ForwardLookup::covered_by_discovery)) {
        return Probe::LeftToAdb(f);
    }
    let stream = match connect::connect_tcp(addr, PROBE_CONNECT_TIMEOUT).await {
        Ok(s) => s,
        Err(ConnectError::Refused | ConnectError::SelfConnected(_) | ConnectError::ConnectTimeout(_)) => return Probe::Closed,
        Err(e) => return Probe::NotJdwp(e.to_string()),
    };
    if let Some(f) = forward {
        // A forward to jdwp:PID leads to a VM by construction: no Version needed.
        return match connect::handshake(stream, PROBE_TIMEOUT).await {
            Ok(c) => Probe::Vm(Box::new(Found { conn: Some(c), android: Some(AndroidVia::Forward(f)) })),
            Err(e) => Probe::NotJdwp(e.to_string()),
        };
    }
    let checked = tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut c = connect::handshake(stream, PROBE_TIMEOUT).await.map_err(|e| e.to_string())?;
        let version = Packet::command(PROBE_ID, 1, 1, &[]);
        c.stream.write_all(version.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut codec = JdwpCodec::new(MAX_PROBE_PACKET, MAX_PROBE_PACKET as usize).limit_named("MAX_PROBE_PACKET");
        let mut buf = std::mem::take(&mut c.inbuf);
        loop {
            while let Some(frame) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
                let Frame::Packet(p) = frame else { return Err("an oversized packet".to_string()) };
                let h = p.header();
                if h.is_reply() && h.id == PROBE_ID {
                    c.inbuf = buf;
                    let android = VmVersion::parse(p.data()).ok().filter(VmVersion::is_android);
                    return Ok((c, android));
                }
                if !h.is_reply() && (h.cmd_set(), h.cmd()) == (1, 1) {
                    return Err("our own command back (an echo server)".to_string());
                }
                // A VM's own packet (ART's early DDM push): keep it for the session.
                c.early.push(p);
            }
            if c.stream.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                return Err("it closed the connection".to_string());
            }
        }
    })
    .await;
    match checked {
        Ok(Ok((_, Some(v)))) => {
            // The Version already made it think a debugger came: let it go.
            info!(%addr, vm = %v.ident(), "an Android VM answered VirtualMachine.Version; reconnecting to speak only DDM to it");
            Probe::Vm(Box::new(Found { conn: None, android: Some(AndroidVia::Version(v.ident())) }))
        }
        Ok(Ok((c, None))) => Probe::Vm(Box::new(Found { conn: Some(c), android: None })),
        Ok(Err(why)) => Probe::NotJdwp(why),
        Err(_) => Probe::NotJdwp(format!("no answer within {PROBE_TIMEOUT:?}")),
    }
}

/// Whose ports a scan probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owners {
    /// Every port (`--other-users`).
    Anyone,
    /// Ports of this machine only where they listen as this uid (jdwpmux's effective uid);
    /// another machine's ports are probed as before.
    Only(u32),
}

/// Scans `ranges` every `interval` until cancelled. `known(addr)` says whether a session
/// already owns a VM address; `found` takes a new VM and its connection. `forwards` tells
/// adb forwards to Android VMs apart before anything is sent; `owners` says whose ports of
/// this machine are probed.
pub async fn run<K, F>(
    ranges: Vec<ScanRange>,
    interval: Duration,
    forwards: Option<Arc<ForwardLookup>>,
    owners: Owners,
    known: K,
    found: F,
    cancel: CancellationToken,
) where
    K: Fn(SocketAddr) -> bool,
    F: Fn(SocketAddr, Found),
{
    let mut not_jdwp: HashMap<SocketAddr, Instant> = HashMap::new();
    let mut left_to_adb: HashSet<SocketAddr> = HashSet::new();
    // Other users' ports seen and left alone (each said once in the log).
    let mut left_alone: HashSet<SocketAddr> = HashSet::new();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    info!(ranges = %ranges.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" "), ?interval, "scanning for VMs");
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let now = Instant::now();
        let ports = match owners {
            Owners::Anyone => None,
            Owners::Only(uid) => tokio::task::spawn_blocking(LocalPorts::read).await.ok().map(|p| (uid, p)),
        };
        let mut probes = JoinSet::new();
        for r in &ranges {
            for port in r.first..=r.last {
                let addr = SocketAddr::new(r.host, port);
                if known(addr) || not_jdwp.get(&addr).is_some_and(|t| *t > now) {
                    continue;
                }
                // A port nobody listens on now (its agent held by a debugger) is still theirs
                // for the log: said again only once another user's listener follows ours.
                match ports.as_ref().and_then(|(me, p)| p.owner(addr).map(|o| (o, *me))) {
                    Some((theirs, me)) if theirs != me => {
                        if left_alone.insert(addr) {
                            debug!(%addr, uid = theirs, "leaving a port of another user alone (--other-users takes it)");
                        }
                        continue;
                    }
                    Some(_) => {
                        left_alone.remove(&addr);
                    }
                    // Between reading the table and probing, another user's JVM may have
                    // started listening there: probe it once the table shows whose it is.
                    None if ports.as_ref().is_some_and(|(_, p)| p.nobody_listened(addr)) => continue,
                    None => {}
                }
                let forwards = forwards.clone();
                probes.spawn(async move { (addr, probe(addr, forwards.as_deref()).await) });
            }
        }
        while let Some(res) = tokio::select! {
            r = probes.join_next() => r,
            _ = cancel.cancelled() => return,
        } {
            let Ok((addr, result)) = res else { continue };
            match result {
                Probe::Closed => {}
                Probe::Vm(f) => {
                    not_jdwp.remove(&addr);
                    left_to_adb.remove(&addr);
                    info!(%addr, "found a VM");
                    found(addr, *f);
                }
                Probe::LeftToAdb(f) => {
                    if left_to_adb.insert(addr) {
                        info!(%addr, forward = %f, "an adb forward to a VM that is reached through adb itself; leaving it alone");
                    }
                }
                Probe::NotJdwp(why) => {
                    if not_jdwp.insert(addr, now + NOT_JDWP_RECHECK).is_none() {
                        info!(%addr, reason = %why, "not a JDWP VM; ignoring it");
                    } else {
                        debug!(%addr, reason = %why, "still not a JDWP VM");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn ranges_parse() {
        let r: ScanRange = "127.0.0.1:8000-8040".parse().unwrap();
        assert_eq!((r.first, r.last), (8000, 8040));
        assert_eq!(r.to_string(), "127.0.0.1:8000-8040");
        let one: ScanRange = "localhost:8000".parse().unwrap();
        assert_eq!((one.first, one.last), (8000, 8000));
        for bad in ["8000-8040", "127.0.0.1:8040-8000", "127.0.0.1:0-5", "x:1-2", "127.0.0.1:1-60000"] {
            assert!(bad.parse::<ScanRange>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn an_echo_server_is_not_jdwp() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let (mut r, mut w) = s.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
        match probe(addr, None).await {
            Probe::NotJdwp(why) => assert!(why.contains("echo"), "{why}"),
            _ => panic!("an echo server passed the probe"),
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_closed() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        assert!(matches!(probe(addr, None).await, Probe::Closed));
    }
}
