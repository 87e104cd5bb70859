//! Opening a VM connection: TCP connect under a timeout, then the JDWP handshake.
//!
//! The handshake goes out in ONE write: HotSpot fails a handshake that arrives split. Packets
//! that arrive before the echo (ART may push APNM first) are kept, as are bytes after it.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

use crate::jdwp::codec::{Frame, JdwpCodec};
use crate::jdwp::handshake::{scan_vm, Scan, HANDSHAKE};
use crate::jdwp::Packet;
use crate::transport::{Endpoint, Stream};
use tokio_util::codec::Decoder;

/// Largest packet accepted before the handshake echo (an APNM is a few hundred bytes).
pub const MAX_EARLY_PACKET: usize = 64 * 1024;
/// Packets accepted before the echo; more means the peer is not a JDWP VM.
pub const MAX_EARLY_PACKETS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("connection refused")]
    Refused,
    /// Nothing listened, and the kernel gave the connection the very port it called: TCP's
    /// simultaneous open joined the socket to itself. It would echo the handshake like a VM.
    #[error("the connection to {0} met itself (nothing listens there)")]
    SelfConnected(SocketAddr),
    #[error("connect timed out after {0:?}")]
    ConnectTimeout(Duration),
    #[error("connect failed: {0}")]
    Io(std::io::Error),
    #[error("no handshake echo within {0:?}")]
    HandshakeTimeout(Duration),
    #[error("the peer closed the connection during the handshake")]
    Closed,
    #[error("the peer is not a JDWP VM: it answered {0}")]
    NotJdwp(String),
    #[error("adb: {0}")]
    Adb(String),
    /// Entering a container's network namespace failed (connection refused there is
    /// `Refused`).
    #[error("{0}")]
    Netns(crate::netns::NsError),
}

/// Connects to a VM's agent over TCP: at an address of this machine, or inside another
/// network namespace (a container's own loopback). Sessions and the far side's channels
/// both connect through here, so a container's JVM is reached the same way by both.
pub async fn connect_agent(endpoint: &Endpoint, connect_timeout: Duration) -> Result<TcpStream, ConnectError> {
    match endpoint {
        Endpoint::Tcp(addr) => connect_tcp(*addr, connect_timeout).await,
        Endpoint::Netns(target) => match crate::netns::connect(target, connect_timeout).await {
            Ok(s) if is_self_connected(&s) => Err(ConnectError::SelfConnected(target.addr)),
            Ok(s) => {
                let _ = s.set_nodelay(true);
                Ok(s)
            }
            // Nothing listens there yet: as a refused connect here, retried quietly.
            Err(crate::netns::NsError::Connect { source, .. }) if source.kind() == std::io::ErrorKind::ConnectionRefused => Err(ConnectError::Refused),
            Err(e) => Err(ConnectError::Netns(e)),
        },
        Endpoint::Unix(path) => Err(ConnectError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is a Unix socket, not a TCP agent", path.display()),
        ))),
    }
}

pub struct Connected {
    pub stream: Stream,
    /// Bytes received after the handshake echo.
    pub inbuf: BytesMut,
    /// Whole packets received before the echo.
    pub early: Vec<Packet>,
}

pub async fn connect_tcp(addr: SocketAddr, connect_timeout: Duration) -> Result<TcpStream, ConnectError> {
    match timeout(connect_timeout, TcpStream::connect(addr)).await {
        Err(_) => Err(ConnectError::ConnectTimeout(connect_timeout)),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(ConnectError::Refused),
        Ok(Err(e)) => Err(ConnectError::Io(e)),
        Ok(Ok(s)) if is_self_connected(&s) => Err(ConnectError::SelfConnected(addr)),
        Ok(Ok(s)) => {
            // Latency matters more than segment count for a request/reply protocol.
            let _ = s.set_nodelay(true);
            Ok(s)
        }
    }
}

/// True when both ends of `s` are the same address and port: a connection to an unused port
/// in the ephemeral range can be given that port as its own.
fn is_self_connected(s: &TcpStream) -> bool {
    matches!((s.local_addr(), s.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

/// Connects to a Unix socket (an ssh link's forward to a VM on another host). The link
/// accepts at once and closes the connection when nothing listens at the far end, so a VM
/// that is not there shows as a connection closed before the handshake.
pub async fn connect_unix(path: &std::path::Path, connect_timeout: Duration) -> Result<Stream, ConnectError> {
    match timeout(connect_timeout, tokio::net::UnixStream::connect(path)).await {
        Err(_) => Err(ConnectError::ConnectTimeout(connect_timeout)),
        Ok(Err(e)) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => Err(ConnectError::Refused),
        Ok(Err(e)) => Err(ConnectError::Io(e)),
        Ok(Ok(s)) => Ok(Stream::Unix(s)),
    }
}

/// Performs the VM side of the handshake on a fresh stream.
pub async fn handshake(stream: impl Into<Stream>, limit: Duration) -> Result<Connected, ConnectError> {
    let mut stream: Stream = stream.into();
    stream.write_all(HANDSHAKE).await.map_err(ConnectError::Io)?;
    let deadline = Instant::now() + limit;
    let mut buf = BytesMut::with_capacity(4096);
    let mut early = Vec::new();
    loop {
        match scan_vm(&buf, MAX_EARLY_PACKET) {
            Scan::Handshake => {
                let _ = buf.split_to(HANDSHAKE.len());
                return Ok(Connected { stream, inbuf: buf, early });
            }
            Scan::EarlyPacket(_) => {
                let mut codec = JdwpCodec::new(MAX_EARLY_PACKET as u32, MAX_EARLY_PACKET);
                if let Ok(Some(Frame::Packet(p))) = codec.decode(&mut buf) {
                    early.push(p);
                }
                if early.len() > MAX_EARLY_PACKETS {
                    return Err(ConnectError::NotJdwp(format!(
                        "{} packets and no handshake (MAX_EARLY_PACKETS is {MAX_EARLY_PACKETS})",
                        early.len()
                    )));
                }
                continue;
            }
            Scan::Garbage => return Err(ConnectError::NotJdwp(garbage(&buf))),
            Scan::Incomplete => {}
        }
        let read = tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)).await;
        match read {
            Err(_) => return Err(ConnectError::HandshakeTimeout(limit)),
            Ok(Ok(0)) => return Err(ConnectError::Closed),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(ConnectError::Io(e)),
        }
    }
}

/// Why the bytes before the handshake echo are refused: a packet longer than
/// `MAX_EARLY_PACKET` says so, anything else is shown.
fn garbage(buf: &[u8]) -> String {
    match crate::jdwp::packet::Header::parse(buf) {
        Some(h) if h.length as usize > MAX_EARLY_PACKET && (h.flags & !crate::jdwp::packet::FLAG_REPLY) == 0 => {
            format!("a {}-byte packet before the handshake exceeds MAX_EARLY_PACKET ({MAX_EARLY_PACKET} bytes)", h.length)
        }
        _ => describe(buf),
    }
}

/// A short printable rendering of unexpected bytes for a log line.
pub fn describe(buf: &[u8]) -> String {
    let head = &buf[..buf.len().min(24)];
    if head.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("{:?}", String::from_utf8_lossy(head))
    } else {
        head.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn vm_that_sends(bytes: Vec<u8>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut hs = [0u8; 14];
            s.read_exact(&mut hs).await.unwrap();
            assert_eq!(&hs, HANDSHAKE);
            s.write_all(&bytes).await.unwrap();
            // Keep the socket open until the client is done.
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink).await;
        });
        addr
    }

    #[tokio::test]
    async fn early_packet_and_trailing_bytes_are_kept() {
        let apnm = Packet::command(0x8000_0001, 0xC7, 1, b"APNM\0\0\0\0").as_bytes().to_vec();
        let mut bytes = apnm.clone();
        bytes.extend_from_slice(HANDSHAKE);
        bytes.extend_from_slice(&[0, 0, 0, 11]);
        let addr = vm_that_sends(bytes).await;
        let s = connect_tcp(addr, Duration::from_secs(5)).await.unwrap();
        let c = handshake(s, Duration::from_secs(5)).await.unwrap();
        assert_eq!(c.early.len(), 1);
        assert_eq!(c.early[0].as_bytes(), &apnm[..]);
        assert_eq!(&c.inbuf[..], &[0, 0, 0, 11]);
    }

    #[tokio::test]
    async fn garbage_is_not_jdwp() {
        let addr = vm_that_sends(b"SSH-2.0-OpenSSH_9\r\n".to_vec()).await;
        let s = connect_tcp(addr, Duration::from_secs(5)).await.unwrap();
        let err = handshake(s, Duration::from_secs(5)).await.err().unwrap();
        assert!(matches!(err, ConnectError::NotJdwp(_)), "{err}");
    }

    #[tokio::test]
    async fn early_packet_limits_are_named_when_hit() {
        // One packet before the echo longer than MAX_EARLY_PACKET: refused before it is read.
        let big = (MAX_EARLY_PACKET as u32 + 1).to_be_bytes();
        let addr = vm_that_sends([&big[..], &[0, 0, 0, 1, 0, 0xC7, 1]].concat()).await;
        let err = handshake(connect_tcp(addr, Duration::from_secs(5)).await.unwrap(), Duration::from_secs(5)).await.err().unwrap();
        assert!(err.to_string().contains("exceeds MAX_EARLY_PACKET"), "{err}");
        // More small packets than MAX_EARLY_PACKETS and no echo.
        let one = Packet::command(0x8000_0001, 0xC7, 1, b"APNM\0\0\0\0").as_bytes().to_vec();
        let addr = vm_that_sends(one.repeat(MAX_EARLY_PACKETS + 1)).await;
        let err = handshake(connect_tcp(addr, Duration::from_secs(5)).await.unwrap(), Duration::from_secs(5)).await.err().unwrap();
        assert!(err.to_string().contains("MAX_EARLY_PACKETS"), "{err}");
    }

    #[tokio::test]
    async fn silence_times_out() {
        let addr = vm_that_sends(Vec::new()).await;
        let s = connect_tcp(addr, Duration::from_secs(5)).await.unwrap();
        let err = handshake(s, Duration::from_millis(200)).await.err().unwrap();
        assert!(matches!(err, ConnectError::HandshakeTimeout(_)), "{err}");
    }

    #[tokio::test]
    async fn refused_is_reported_as_such() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let err = connect_tcp(addr, Duration::from_secs(5)).await.err().unwrap();
        assert!(matches!(err, ConnectError::Refused), "{err}");
    }

    #[tokio::test]
    async fn a_socket_connected_to_itself_is_no_vm() {
        // Bound to a port and connected to that same port: simultaneous open joins it to itself.
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = sock.local_addr().unwrap();
        let s = sock.connect(addr).await.unwrap();
        assert!(is_self_connected(&s));
        // It echoes the handshake as a VM would: this is what the check keeps out.
        let c = handshake(s, Duration::from_secs(5)).await.unwrap();
        assert!(c.stream.as_tcp().is_some_and(is_self_connected));
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (other, _) = tokio::join!(TcpStream::connect(l.local_addr().unwrap()), l.accept());
        assert!(!is_self_connected(&other.unwrap()));
    }
}
