//! Client of the adb server (the host side of the Android Debug Bridge) for "scan device"
//! discovery: one-shot requests, switching a connection to a device, opening the JDWP stream
//! of one VM, and (in `watch`) following `host:track-devices` plus each device's `track-jdwp`
//! to report VMs as they come and go.
//!
//! Protocol, as used here: the client sends 4 hex digits (length) + the service text; the
//! server answers `OKAY`, or `FAIL` + 4 hex digits + a reason. After `host:transport:SERIAL`
//! and its OKAY, the same connection carries one device service (`track-jdwp`, `jdwp:PID`).

// Submodules live in `adb/`; explicit paths keep that true whether this file is reached as
// `discovery/adb.rs` or through a `#[path]` attribute (which would resolve them differently).
#[path = "adb/framing.rs"]
mod framing;
#[path = "adb/parse.rs"]
mod parse;
#[path = "adb/start.rs"]
mod start;
#[path = "adb/watch.rs"]
mod watch;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::transport::Stream;

pub use framing::{decode_message, encode_request, parse_hex4, MessageReader, MAX_MESSAGE_LEN, MAX_REQUEST_LEN};
pub use parse::{diff_pids, parse_devices, parse_pids, DeviceEntry, PidDiff, ONLINE_STATE};
pub use start::{server_answers, try_start_server, StartOutcome, PROBE_TIMEOUT, START_TIMEOUT};
pub use watch::{watch, AdbEvent, BACKOFF_MAX, BACKOFF_MIN, MAX_DEVICES, MAX_PIDS_PER_DEVICE};

/// How loudly an adb server's absence is reported. A server the user named (`--adb`, or `adb`
/// in the config) that fails is a warning; the usual server, looked for by default because no
/// VM source was named, is often simply not there (no Android tools on the machine): that
/// is said once, at INFO, and its retries are logged at DEBUG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    Named,
    ByDefault,
}

/// The port adb servers listen on unless told otherwise (`adb -P`, `ANDROID_ADB_SERVER_PORT`).
pub const DEFAULT_ADB_PORT: u16 = 5037;
/// Bound on establishing the TCP connection to the server (it is normally on localhost).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Bound on each request/answer exchange (sending a service, reading OKAY/FAIL, a one-shot
/// reply). Long enough for adbd to open a service on a slow USB device.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum AdbError {
    #[error("cannot connect to the adb server at {addr}: {source}")]
    Connect { addr: AdbServer, source: std::io::Error },
    #[error("adb server at {addr}: no answer to {what} within {after_ms} ms")]
    Timeout { addr: AdbServer, what: &'static str, after_ms: u128 },
    #[error("adb refused the request: {0}")]
    Failed(String),
    #[error("i/o error talking to the adb server: {0}")]
    Io(#[from] std::io::Error),
    #[error("adb server closed the connection while {0}")]
    Closed(&'static str),
    #[error("bad adb length prefix {:?} (expected 4 hex digits)", String::from_utf8_lossy(.0))]
    BadLength([u8; 4]),
    #[error("adb status {:?} is neither OKAY nor FAIL", String::from_utf8_lossy(.0))]
    BadStatus([u8; 4]),
    #[error("adb message of {len} bytes exceeds the {max}-byte cap (MAX_MESSAGE_LEN)")]
    TooLarge { len: usize, max: usize },
    #[error("adb stream ended inside a message ({have} bytes buffered)")]
    Truncated { have: usize },
    #[error("service text of {len} bytes does not fit a request (1..={max})")]
    BadService { len: usize, max: usize },
    #[error("adb message is not UTF-8 (bad byte at offset {offset})")]
    NotText { offset: usize },
    #[error("bad device line {0:?} (expected serial, tab, state)")]
    BadDeviceLine(String),
    #[error("bad pid line {0:?} (expected one decimal pid)")]
    BadPid(String),
    #[error("bad adb server version {0:?} (expected 4 hex digits)")]
    BadVersion(String),
}

/// Where the adb server listens. Cheap to clone; every call opens its own connection, as the
/// adb server expects (one service per connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdbServer {
    pub addr: SocketAddr,
    /// The server is on another host and reached through this Unix socket (its ssh link's
    /// forward); `addr` is then where it listens on that host.
    pub via: Option<Arc<(String, PathBuf)>>,
}

impl Default for AdbServer {
    fn default() -> Self {
        AdbServer::new(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_ADB_PORT)))
    }
}

impl std::fmt::Display for AdbServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.via {
            Some(via) => write!(f, "{}:{}", via.0, self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

impl AdbServer {
    pub fn new(addr: SocketAddr) -> Self {
        AdbServer { addr, via: None }
    }

    /// The adb server listening at `addr` on ssh host `host`, reached through `socket`.
    pub fn on_host(host: &str, addr: SocketAddr, socket: PathBuf) -> Self {
        AdbServer { addr, via: Some(Arc::new((host.to_string(), socket))) }
    }

    /// Whether the server runs on this machine (and so may be started here).
    pub fn is_local(&self) -> bool {
        self.via.is_none() && self.addr.ip().is_loopback()
    }

    /// Connects, sends `service`, and returns the stream positioned just after OKAY.
    /// FAIL becomes `AdbError::Failed(reason)`.
    pub async fn request(&self, service: &str) -> Result<Stream, AdbError> {
        let mut stream = self.connect().await?;
        self.exchange(&mut stream, service).await?;
        Ok(stream)
    }

    /// Switches a new connection to device `serial` (`host:transport:SERIAL`), then asks that
    /// device for `service`; returns the stream just after the second OKAY.
    pub async fn open_transport(&self, serial: &str, service: &str) -> Result<Stream, AdbError> {
        let mut stream = self.request(&format!("host:transport:{serial}")).await?;
        self.exchange(&mut stream, service).await?;
        Ok(stream)
    }

    /// Opens the JDWP connection of VM `pid` on device `serial`. The returned stream is the
    /// raw JDWP byte stream; the caller does the `JDWP-Handshake` exchange next.
    pub async fn open_jdwp(&self, serial: &str, pid: u32) -> Result<Stream, AdbError> {
        self.open_transport(serial, &format!("jdwp:{pid}")).await
    }

    /// The server's internal protocol version (`host:version`, e.g. 41); a liveness check.
    pub async fn version(&self) -> Result<u32, AdbError> {
        let text = self.query("host:version").await?;
        let digits: [u8; 4] = text.as_ref().try_into().map_err(|_| bad_version(&text))?;
        let v = parse_hex4(digits).map_err(|_| bad_version(&text))?;
        Ok(v as u32)
    }

    /// The current device list (`host:devices`).
    pub async fn devices(&self) -> Result<Vec<DeviceEntry>, AdbError> {
        parse_devices(&self.query("host:devices").await?)
    }

    /// The server's port forwards (`host:list-forward`), every device's, as the text the
    /// server answers (`forwards::parse_forwards` reads it).
    pub async fn forward_list(&self) -> Result<String, AdbError> {
        let text = self.query("host:list-forward").await?;
        let text = std::str::from_utf8(&text).map_err(|e| AdbError::NotText { offset: e.valid_up_to() })?;
        Ok(text.to_string())
    }

    /// A one-shot request whose answer is a single length-prefixed message.
    async fn query(&self, service: &str) -> Result<bytes::Bytes, AdbError> {
        let stream = self.request(service).await?;
        let mut reader = MessageReader::new(stream);
        match self.timed("reading the reply", reader.next_message()).await? {
            Some(msg) => Ok(msg),
            None => Err(AdbError::Closed("sending the reply")),
        }
    }

    async fn connect(&self) -> Result<Stream, AdbError> {
        let connect = async {
            match &self.via {
                Some(via) => Ok(Stream::Unix(tokio::net::UnixStream::connect(&via.1).await?)),
                None => {
                    let s = TcpStream::connect(self.addr).await?;
                    // JDWP replies are small and latency-bound; do not let Nagle hold them back.
                    s.set_nodelay(true)?;
                    Ok(Stream::Tcp(s))
                }
            }
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(source)) => Err(AdbError::Connect { addr: self.clone(), source }),
            Err(_) => Err(self.timeout_error("connecting", CONNECT_TIMEOUT)),
        }
    }

    /// Sends one request on `stream` and reads its status, both under `REPLY_TIMEOUT`.
    async fn exchange(&self, stream: &mut Stream, service: &str) -> Result<(), AdbError> {
        let bytes = encode_request(service)?;
        self.timed("sending the request", async { Ok(stream.write_all(&bytes).await?) }).await?;
        self.timed("reading OKAY/FAIL", read_status(stream)).await
    }

    async fn timed<T>(
        &self,
        what: &'static str,
        fut: impl std::future::Future<Output = Result<T, AdbError>>,
    ) -> Result<T, AdbError> {
        match tokio::time::timeout(REPLY_TIMEOUT, fut).await {
            Ok(r) => r,
            Err(_) => Err(self.timeout_error(what, REPLY_TIMEOUT)),
        }
    }

    fn timeout_error(&self, what: &'static str, after: Duration) -> AdbError {
        AdbError::Timeout { addr: self.clone(), what, after_ms: after.as_millis() }
    }
}

fn bad_version(text: &[u8]) -> AdbError {
    AdbError::BadVersion(String::from_utf8_lossy(text).chars().take(16).collect())
}

/// Reads OKAY, or FAIL + reason. Reads exactly what the status takes and nothing more: after
/// OKAY the connection may already be a raw JDWP stream whose bytes belong to the caller.
async fn read_status(stream: &mut Stream) -> Result<(), AdbError> {
    let status = read4(stream, "sending OKAY/FAIL").await?;
    match &status {
        b"OKAY" => Ok(()),
        b"FAIL" => {
            let len = parse_hex4(read4(stream, "sending a FAIL reason").await?)?;
            if len > MAX_MESSAGE_LEN {
                return Err(AdbError::TooLarge { len, max: MAX_MESSAGE_LEN });
            }
            let mut reason = vec![0u8; len];
            read_exact(stream, &mut reason, "sending a FAIL reason").await?;
            Err(AdbError::Failed(String::from_utf8_lossy(&reason).into_owned()))
        }
        _ => Err(AdbError::BadStatus(status)),
    }
}

async fn read4(stream: &mut Stream, during: &'static str) -> Result<[u8; 4], AdbError> {
    let mut buf = [0u8; 4];
    read_exact(stream, &mut buf, during).await?;
    Ok(buf)
}

async fn read_exact(stream: &mut Stream, buf: &mut [u8], during: &'static str) -> Result<(), AdbError> {
    match stream.read_exact(buf).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(AdbError::Closed(during)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
#[path = "adb/tests.rs"]
mod tests;
