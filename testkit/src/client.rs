//! A raw JDWP debugger client for tests: handshake, send commands or raw bytes, read packets
//! with deadlines, match replies by id while keeping whatever else arrives.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::time::{timeout_at, Instant};

use super::wire::{try_decode, Packet, DEFAULT_MAX_PACKET_LEN, HANDSHAKE};

/// How long `connect` waits for the TCP connect plus the handshake echo.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct RawClient {
    stream: TcpStream,
    buf: BytesMut,
    others: Vec<Packet>,
    max_len: usize,
    eof: bool,
}

impl RawClient {
    /// Connects, sends `JDWP-Handshake` in one write and waits for the echo. Packets that
    /// arrive before the echo (ART's early APNM) are kept for `take_other_packets`.
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<RawClient> {
        let mut c = Self::connect_no_handshake(addr).await?;
        c.handshake(CONNECT_TIMEOUT).await?;
        Ok(c)
    }

    /// Drops the connection with a TCP reset (SO_LINGER 0) instead of a clean close.
    pub fn reset(self) -> Result<()> {
        // A zero linger never blocks on drop, which is what the deprecation warns about.
        #[allow(deprecated)]
        self.stream.set_linger(Some(Duration::ZERO))?;
        drop(self);
        Ok(())
    }

    /// TCP connect only (TCP_NODELAY set), for tests that misbehave during the handshake.
    pub async fn connect_no_handshake(addr: impl ToSocketAddrs) -> Result<RawClient> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .context("tcp connect timed out")?
            .context("tcp connect")?;
        stream.set_nodelay(true)?;
        Ok(RawClient { stream, buf: BytesMut::new(), others: Vec::new(), max_len: DEFAULT_MAX_PACKET_LEN, eof: false })
    }

    /// The handshake on a stream connected some other way (e.g. inside a network namespace).
    pub async fn over(stream: TcpStream) -> Result<RawClient> {
        stream.set_nodelay(true)?;
        let mut c = RawClient { stream, buf: BytesMut::new(), others: Vec::new(), max_len: DEFAULT_MAX_PACKET_LEN, eof: false };
        c.handshake(CONNECT_TIMEOUT).await?;
        Ok(c)
    }

    /// Sends the handshake and waits for the echo, tolerating whole packets before it.
    pub async fn handshake(&mut self, timeout: Duration) -> Result<()> {
        self.send_raw(HANDSHAKE).await?;
        let deadline = Instant::now() + timeout;
        // Bounded: at most this many early packets before we call the peer broken.
        for _ in 0..64 {
            self.fill_to(4, deadline).await.context("waiting for handshake echo")?;
            if self.buf[..4] == HANDSHAKE[..4] {
                self.fill_to(HANDSHAKE.len(), deadline).await.context("waiting for handshake echo")?;
                if self.buf[..HANDSHAKE.len()] != HANDSHAKE[..] {
                    bail!("bad handshake echo: {:?}", String::from_utf8_lossy(&self.buf[..HANDSHAKE.len()]));
                }
                self.buf.advance(HANDSHAKE.len());
                return Ok(());
            }
            let pkt = self.next_packet(deadline).await.context("reading a packet before the handshake echo")?;
            self.others.push(pkt);
        }
        bail!("more than 64 packets before the handshake echo")
    }

    pub fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.stream.local_addr()?)
    }

    pub fn set_max_packet_len(&mut self, max_len: usize) {
        self.max_len = max_len;
    }

    pub async fn send_packet(&mut self, p: &Packet) -> Result<()> {
        self.send_raw(&p.encode()).await
    }

    pub async fn send_command(&mut self, id: u32, set: u8, cmd: u8, data: &[u8]) -> Result<()> {
        self.send_packet(&Packet::command(id, set, cmd, data.to_vec())).await
    }

    /// Writes bytes as they are (malformed input tests).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).await.context("write to peer")?;
        self.stream.flush().await.context("flush to peer")?;
        Ok(())
    }

    /// Half-closes our side (the peer sees EOF) while we can still read.
    pub async fn shutdown_write(&mut self) -> Result<()> {
        self.stream.shutdown().await.context("shutdown")
    }

    /// The next packet from the wire; error on timeout, EOF or a malformed packet.
    pub async fn read_packet(&mut self, timeout: Duration) -> Result<Packet> {
        self.next_packet(Instant::now() + timeout).await
    }

    /// Sends a command and waits for the reply with `id`; every other packet seen meanwhile
    /// is kept for `take_other_packets`.
    pub async fn request(&mut self, id: u32, set: u8, cmd: u8, data: &[u8], timeout: Duration) -> Result<Packet> {
        self.send_command(id, set, cmd, data).await?;
        self.wait_reply(id, timeout).await
    }

    /// Waits for the reply with `id` (the command was sent some other way).
    pub async fn wait_reply(&mut self, id: u32, timeout: Duration) -> Result<Packet> {
        let deadline = Instant::now() + timeout;
        loop {
            let p = self.next_packet(deadline).await.with_context(|| format!("waiting for reply to id {id}"))?;
            if p.is_reply() && p.id == id {
                return Ok(p);
            }
            self.others.push(p);
        }
    }

    /// Waits until at least `n` bytes arrived that are not yet read as packets (part of a
    /// large packet, say).
    pub async fn wait_for_bytes(&mut self, n: usize, timeout: Duration) -> Result<()> {
        self.fill_to(n, Instant::now() + timeout).await
    }

    /// The next Event.Composite: one that arrived while waiting for something else, else the
    /// next one from the wire (other packets read meanwhile are kept).
    pub async fn next_event(&mut self, timeout: Duration) -> Result<Packet> {
        if let Some(i) = self.others.iter().position(Packet::is_event) {
            return Ok(self.others.remove(i));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let p = self.next_packet(deadline).await.context("waiting for an event")?;
            if p.is_event() {
                return Ok(p);
            }
            self.others.push(p);
        }
    }

    /// Sends a command that needs no answer beyond success; fails on an error reply.
    pub async fn ok(&mut self, id: u32, set: u8, cmd: u8, data: &[u8]) -> Result<Packet> {
        let r = self.request(id, set, cmd, data, CONNECT_TIMEOUT).await?;
        match r.error_code() {
            Some(0) => Ok(r),
            e => bail!("command {set}/{cmd} (id {id}) answered with error {e:?}"),
        }
    }

    /// Packets that arrived while waiting for something else (and before the handshake echo).
    pub fn take_other_packets(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.others)
    }

    /// Waits until the peer closes (EOF or reset). Packets read meanwhile go to the others.
    pub async fn expect_closed(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_packet(deadline).await {
                Ok(p) => self.others.push(p),
                Err(e) if self.eof => {
                    let _ = e;
                    return Ok(());
                }
                Err(e) => return Err(e.context("expected the peer to close")),
            }
        }
    }

    async fn next_packet(&mut self, deadline: Instant) -> Result<Packet> {
        loop {
            match try_decode(&self.buf, self.max_len) {
                Ok(Some((p, used))) => {
                    self.buf.advance(used);
                    return Ok(p);
                }
                Ok(None) => {}
                Err(e) => return Err(anyhow!(e).context("malformed packet from peer")),
            }
            let want = self.buf.len() + 1;
            self.fill_to(want, deadline).await?;
        }
    }

    /// Reads until `buf` holds `n` bytes; `read_buf` is cancel-safe, so a timeout loses nothing.
    async fn fill_to(&mut self, n: usize, deadline: Instant) -> Result<()> {
        while self.buf.len() < n {
            if self.eof {
                bail!("peer closed the connection ({} bytes pending)", self.buf.len());
            }
            self.buf.reserve(8192);
            match timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => bail!("timed out ({} bytes pending)", self.buf.len()),
                Ok(Ok(0)) => self.eof = true,
                Ok(Ok(_)) => {}
                Ok(Err(e)) if is_reset(&e) => self.eof = true,
                Ok(Err(e)) => return Err(anyhow!(e).context("read from peer")),
            }
        }
        Ok(())
    }
}

fn is_reset(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe)
}
