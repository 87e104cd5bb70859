//! Where a VM (or an adb server) is reached, and the byte stream to it: TCP for VMs on this
//! machine, a Unix socket for those behind an ssh link (the link's master forwards each one
//! from a socket in the daemon's private folder, so no TCP port is opened for them).
//!
//! - [`open`]: opening a VM connection: connect under a timeout, then the JDWP handshake
//!   (used by the VM session, the port scan's probe and the far side alike).


pub mod open;

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{tcp, unix, TcpStream, UnixStream};

/// How to open a stream to a peer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Tcp(SocketAddr),
    /// A Unix socket, forwarded by an ssh link to an address on another host.
    Unix(PathBuf),
    /// A TCP address inside another process's network namespace (a container's own
    /// loopback), entered by `netns::connect`.
    Netns(crate::netns::NsTarget),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
            Endpoint::Netns(t) => write!(f, "{} in the network namespace of pid {}", t.addr, t.pid),
        }
    }
}

/// How long `Stream::connect` gives entering a namespace and connecting there.
const NETNS_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connected stream of either kind.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl From<TcpStream> for Stream {
    fn from(s: TcpStream) -> Self {
        Stream::Tcp(s)
    }
}

impl From<UnixStream> for Stream {
    fn from(s: UnixStream) -> Self {
        Stream::Unix(s)
    }
}

impl Stream {
    /// Connects to `endpoint`; TCP streams get TCP_NODELAY (JDWP is request and reply).
    pub async fn connect(endpoint: &Endpoint) -> io::Result<Stream> {
        match endpoint {
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect(a).await?;
                let _ = s.set_nodelay(true);
                Ok(Stream::Tcp(s))
            }
            Endpoint::Unix(p) => Ok(Stream::Unix(UnixStream::connect(p).await?)),
            Endpoint::Netns(t) => {
                let s = crate::netns::connect(t, NETNS_CONNECT_TIMEOUT).await.map_err(io::Error::other)?;
                Ok(Stream::Tcp(s))
            }
        }
    }

    /// The TCP stream, for what only TCP has (addresses for captures and pid lookups).
    pub fn as_tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Tcp(s) => Some(s),
            Stream::Unix(_) => None,
        }
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.as_tcp().and_then(|s| s.local_addr().ok())
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.as_tcp().and_then(|s| s.peer_addr().ok())
    }

    /// Borrowed halves, to read and write from one task without locks.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// The read half of a borrowed `Stream`.
#[derive(Debug)]
pub enum ReadHalf<'a> {
    Tcp(tcp::ReadHalf<'a>),
    Unix(unix::ReadHalf<'a>),
}

/// The write half of a borrowed `Stream`.
#[derive(Debug)]
pub enum WriteHalf<'a> {
    Tcp(tcp::WriteHalf<'a>),
    Unix(unix::WriteHalf<'a>),
}

impl WriteHalf<'_> {
    /// Writes what the socket takes now, without waiting.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.as_ref().try_write(buf),
            WriteHalf::Unix(w) => w.as_ref().try_write(buf),
        }
    }
}

macro_rules! delegate_read {
    ($t:ty) => {
        impl AsyncRead for $t {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_read(cx, buf),
                    Self::Unix(s) => Pin::new(s).poll_read(cx, buf),
                }
            }
        }
    };
}

macro_rules! delegate_write {
    ($t:ty) => {
        impl AsyncWrite for $t {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_write(cx, buf),
                    Self::Unix(s) => Pin::new(s).poll_write(cx, buf),
                }
            }

            fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
                    Self::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
                }
            }

            fn is_write_vectored(&self) -> bool {
                match self {
                    Self::Tcp(s) => s.is_write_vectored(),
                    Self::Unix(s) => s.is_write_vectored(),
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_flush(cx),
                    Self::Unix(s) => Pin::new(s).poll_flush(cx),
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_shutdown(cx),
                    Self::Unix(s) => Pin::new(s).poll_shutdown(cx),
                }
            }
        }
    };
}

delegate_read!(Stream);
delegate_write!(Stream);
delegate_read!(ReadHalf<'_>);
delegate_write!(WriteHalf<'_>);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn echo_both_ways(endpoint: Endpoint) {
        let mut s = Stream::connect(&endpoint).await.unwrap();
        {
            let (mut r, w) = s.split();
            assert_eq!(w.try_write(b"ping").unwrap(), 4);
            let mut got = [0u8; 4];
            r.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"ping");
        }
        s.write_all(b"pong").await.unwrap();
        let mut got = [0u8; 4];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"pong");
        assert!(s.as_raw_fd() >= 0);
    }

    #[tokio::test]
    async fn tcp_and_unix_streams_read_and_write_alike() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let (mut r, mut w) = s.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
        echo_both_ways(Endpoint::Tcp(addr)).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vm.sock");
        let l = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let (mut r, mut w) = s.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
        echo_both_ways(Endpoint::Unix(path.clone())).await;
        assert_eq!(Endpoint::Unix(path.clone()).to_string(), path.display().to_string());
    }
}
