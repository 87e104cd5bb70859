//! Holding a port for a server a test starts later.
//!
//! A port learned from a listener that is then closed is free for anyone: while the test runs,
//! another test's outgoing connection may be given it as its own port, and the late server's
//! bind fails with "address in use". A [`PortHold`] keeps the port bound (with SO_REUSEADDR,
//! never listening): the kernel gives a bound port to no outgoing connection, a connection to
//! it is refused as to a free port, and a listener with SO_REUSEADDR (tokio's always sets it)
//! can still bind it. Drop the hold once the server listens.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::TcpSocket;

/// A port of 127.0.0.1 that was free a moment ago (bound to port 0, read, closed), for a
/// peer that binds it itself; see [`PortHold`] when another test could take it meanwhile.
pub fn free_port() -> u16 {
    try_free_port().expect("bind 127.0.0.1:0")
}

/// [`free_port`], or why no port could be bound (for the benchmark, which reports errors).
pub fn try_free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub struct PortHold {
    socket: TcpSocket,
    port: u16,
}

impl PortHold {
    /// Holds a fresh port on 127.0.0.1.
    pub fn new() -> PortHold {
        Self::try_hold(0).expect("hold a fresh port")
    }

    /// Holds `port`, for example a server's port the moment it stops, so that it can start
    /// there again. Tries for up to 10 s while the old listener is still closing.
    pub async fn hold(port: u16) -> PortHold {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::try_hold(port) {
                Ok(h) => return h,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("hold port {port}: {e}"),
            }
        }
    }

    fn try_hold(port: u16) -> std::io::Result<PortHold> {
        let socket = TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
        let port = socket.local_addr()?.port();
        Ok(PortHold { socket, port })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Default for PortHold {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_port_refuses_connections_and_lets_a_listener_in() {
        let hold = PortHold::new();
        let addr = SocketAddr::from(([127, 0, 0, 1], hold.port()));
        let refused = tokio::net::TcpStream::connect(addr).await.expect_err("nothing listens yet");
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        let l = tokio::net::TcpListener::bind(addr).await.expect("a listener binds a held port");
        let (c, a) = tokio::join!(tokio::net::TcpStream::connect(addr), l.accept());
        assert!(c.is_ok() && a.is_ok());
        drop(hold);
        // And a closed listener's port can be held again at once.
        drop(l);
        let again = PortHold::hold(addr.port()).await;
        assert_eq!(again.port(), addr.port());
        let _ = &again.socket;
    }
}
