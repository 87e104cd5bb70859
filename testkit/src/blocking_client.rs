//! A raw, blocking JDWP client: handshake, packet framing and a buffered reader that can
//! stream a 200 MiB body without holding it. The benchmark measures every relay with it:
//! blocking sockets on a plain thread keep the client's own cost small and identical for
//! every path. Its framing is [`crate::wire`]'s; [`crate::client::RawClient`] is the async
//! one the tests use.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::wire::{command_frame, Header, WireError, BULK_MAX_PACKET_LEN, HANDSHAKE, HEADER_LEN};

/// Largest packet the client accepts (a 200 MiB reply plus headroom).
pub const MAX_PACKET_LEN: usize = BULK_MAX_PACKET_LEN;
/// Client read buffer; also the piece size when a body is streamed.
const READ_BUF: usize = 256 * 1024;
/// No single read may take longer than this: a hung path fails instead of hanging the run.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub enum ClientError {
    Io(std::io::Error),
    /// The handshake's echo was missing or wrong.
    Handshake(String),
    /// Bytes that are not what the wire allows: a packet length out of bounds, a reply body
    /// shorter than its fields.
    Frame(WireError),
    WrongId { got: u32, want: u32 },
    /// A command came where the reply to `want` was due.
    NotReply { want: u32, set: u8, cmd: u8 },
    /// The reply carried a JDWP error code.
    Jdwp { code: u16, set: u8, cmd: u8 },
    /// A reply well formed but not what was expected.
    Content(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "i/o: {e}"),
            Self::Handshake(s) => write!(f, "bad handshake echo: {s:?}"),
            Self::Frame(e) => write!(f, "{e}"),
            Self::WrongId { got, want } => write!(f, "reply id {got} does not answer request {want}"),
            Self::NotReply { want, set, cmd } => write!(f, "expected a reply to {want}, got a command (set {set} cmd {cmd})"),
            Self::Jdwp { code, set, cmd } => write!(f, "JDWP error {code} for command ({set},{cmd})"),
            Self::Content(s) => write!(f, "unexpected reply content: {s}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Frame(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<WireError> for ClientError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Io(e) => Self::Io(e),
            e => Self::Frame(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// A connected, handshaken debugger socket with its own read buffer.
pub struct BlockingClient {
    stream: TcpStream,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    next_id: u32,
}

impl BlockingClient {
    /// Connects (retrying "refused" until `wait` has passed), sets TCP_NODELAY and does the
    /// handshake. A path that closes without an echo is an error.
    pub fn connect(addr: SocketAddr, wait: Duration) -> Result<BlockingClient> {
        let deadline = Instant::now() + wait;
        let stream = loop {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                Ok(s) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e.into()),
            }
        };
        BlockingClient::over(stream)
    }

    /// The handshake on a stream that is already connected (e.g. one end of a pair whose
    /// other end is a relay process's standard input and output).
    pub fn over(stream: TcpStream) -> Result<BlockingClient> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut c = BlockingClient { stream, buf: vec![0; READ_BUF], lo: 0, hi: 0, next_id: 1 };
        c.stream.write_all(HANDSHAKE)?;
        let mut echo = [0u8; HANDSHAKE.len()];
        c.read_exact(&mut echo).map_err(|e| ClientError::Handshake(format!("no echo: {e}")))?;
        if &echo != HANDSHAKE {
            return Err(ClientError::Handshake(String::from_utf8_lossy(&echo).into_owned()));
        }
        Ok(c)
    }

    /// How long one read may block (IO_TIMEOUT after `connect`).
    pub fn set_read_timeout(&self, limit: Duration) -> std::io::Result<()> {
        self.stream.set_read_timeout(Some(limit))
    }

    /// Turns Nagle's algorithm off (`true`, the default after `connect`) or on.
    pub fn set_nodelay(&self, on: bool) -> std::io::Result<()> {
        self.stream.set_nodelay(on)
    }

    // The methods a timed loop calls are inlined into the benchmark, which they were part of.

    #[inline]
    pub fn next_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    #[inline]
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        Ok(self.stream.write_all(bytes)?)
    }

    /// Sends a command and returns its id.
    #[inline]
    pub fn send(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<u32> {
        let id = self.next_id();
        self.write_all(&command_frame(id, set, cmd, data))?;
        Ok(id)
    }

    #[inline]
    fn fill(&mut self) -> Result<()> {
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        }
        let n = self.stream.read(&mut self.buf[self.hi..])?;
        if n == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
        self.hi += n;
        Ok(())
    }

    #[inline]
    pub fn read_exact(&mut self, out: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < out.len() {
            if self.lo == self.hi {
                self.fill()?;
            }
            let n = (self.hi - self.lo).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.buf[self.lo..self.lo + n]);
            self.lo += n;
            done += n;
        }
        Ok(())
    }

    #[inline]
    pub fn read_header(&mut self) -> Result<Header> {
        // Keep room for a whole header so the common case is one copy out of the buffer.
        if self.buf.len() - self.lo < HEADER_LEN {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        let mut h = [0u8; HEADER_LEN];
        self.read_exact(&mut h)?;
        Ok(Header::parse(&h, MAX_PACKET_LEN)?)
    }

    /// Reads a (small) body into `out`, replacing its contents.
    #[inline]
    pub fn read_body(&mut self, h: &Header, out: &mut Vec<u8>) -> Result<()> {
        out.resize(h.body_len(), 0);
        self.read_exact(out)
    }

    /// Passes `len` body bytes to `sink` piece by piece, never holding more than the buffer.
    #[inline]
    pub fn stream_body(&mut self, len: usize, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut left = len;
        while left > 0 {
            if self.lo == self.hi {
                self.fill()?;
            }
            let n = (self.hi - self.lo).min(left);
            sink(&self.buf[self.lo..self.lo + n])?;
            self.lo += n;
            left -= n;
        }
        Ok(())
    }

    /// Reads the reply to `id` into `out`; it must be the next packet and carry no error.
    #[inline]
    pub fn read_reply(&mut self, id: u32, set: u8, cmd: u8, out: &mut Vec<u8>) -> Result<Header> {
        let h = self.read_header()?;
        check_reply(&h, id, set, cmd)?;
        self.read_body(&h, out)?;
        Ok(h)
    }

    /// One command, one reply.
    pub fn request(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<Vec<u8>> {
        let id = self.send(set, cmd, data)?;
        let mut out = Vec::new();
        self.read_reply(id, set, cmd, &mut out)?;
        Ok(out)
    }
}

/// Checks that `h` is an error-free reply to request `id`.
#[inline]
pub fn check_reply(h: &Header, id: u32, set: u8, cmd: u8) -> Result<()> {
    if !h.is_reply() {
        return Err(ClientError::NotReply { want: id, set: h.a, cmd: h.b });
    }
    if h.id != id {
        return Err(ClientError::WrongId { got: h.id, want: id });
    }
    if h.error() != 0 {
        return Err(ClientError::Jdwp { code: h.error(), set, cmd });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;
    use crate::reader::Reader;
    use crate::wire::{reply_frame, FLAG_REPLY};

    #[test]
    fn check_reply_cases() {
        let ok = Header { len: 11, id: 5, flags: FLAG_REPLY, a: 0, b: 0 };
        assert!(check_reply(&ok, 5, 1, 1).is_ok());
        assert!(matches!(check_reply(&ok, 6, 1, 1), Err(ClientError::WrongId { got: 5, want: 6 })));
        let cmd = Header { flags: 0, ..ok };
        assert!(matches!(check_reply(&cmd, 5, 1, 1), Err(ClientError::NotReply { .. })));
        let err = Header { a: 0, b: 99, ..ok };
        assert!(matches!(check_reply(&err, 5, 1, 1), Err(ClientError::Jdwp { code: 99, .. })));
    }

    #[test]
    fn kit_errors_keep_their_kind() {
        let short: ClientError = Reader::new(&[1, 2]).u4().unwrap_err().into();
        assert!(matches!(short, ClientError::Frame(WireError::Truncated { wanted: 4, left: 2, .. })), "{short}");
        let io: ClientError = WireError::Io(std::io::ErrorKind::TimedOut.into()).into();
        assert!(matches!(io, ClientError::Io(ref e) if e.kind() == std::io::ErrorKind::TimedOut));
    }

    /// A peer on a plain thread that echoes the handshake and writes `script` after it.
    fn peer(script: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut hs = [0u8; HANDSHAKE.len()];
            s.read_exact(&mut hs).unwrap();
            s.write_all(&hs).unwrap();
            let mut req = [0u8; HEADER_LEN];
            s.read_exact(&mut req).unwrap();
            s.write_all(&script).unwrap();
            req.to_vec()
        });
        (addr, t)
    }

    #[test]
    fn reads_replies_streams_bodies_and_refuses_bad_lengths() {
        // A reply larger than the read buffer, so both reading ways cross refills.
        let big: Vec<u8> = (0..READ_BUF * 2 + 5).map(|i| i as u8).collect();
        let mut script = reply_frame(1, 0, &big);
        script.extend(reply_frame(1, 0, &big));
        script.extend([0u8; HEADER_LEN]);
        let (addr, peer) = peer(script);
        let mut c = BlockingClient::connect(addr, Duration::from_secs(5)).unwrap();
        let id = c.send(1, 1, &[]).unwrap();
        assert_eq!(id, 1);
        let mut body = Vec::new();
        let h = c.read_reply(id, 1, 1, &mut body).unwrap();
        assert_eq!((h.len as usize, body.len()), (HEADER_LEN + big.len(), big.len()));
        assert!(body == big);
        let h = c.read_header().unwrap();
        let mut streamed = Vec::new();
        let mut pieces = 0;
        c.stream_body(h.body_len(), &mut |p| {
            assert!(p.len() <= READ_BUF);
            pieces += 1;
            streamed.extend_from_slice(p);
            Ok(())
        })
        .unwrap();
        assert!(streamed == big && pieces >= 3, "{pieces} pieces");
        // A length field of 0 is not a packet.
        let e = c.read_header().unwrap_err();
        assert!(matches!(e, ClientError::Frame(WireError::TooShort { len: 0 })), "{e}");
        assert_eq!(peer.join().unwrap(), command_frame(1, 1, 1, &[]));
    }
}
