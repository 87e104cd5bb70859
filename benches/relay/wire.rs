//! A raw, blocking JDWP client for the benchmark: handshake, packet framing and a buffered
//! reader that can stream a 200 MiB body without holding it. Blocking sockets on a plain
//! thread keep the client's own cost small and identical for every path.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub const HANDSHAKE: &[u8; 14] = b"JDWP-Handshake";
pub const HEADER_LEN: usize = 11;
pub const REPLY_FLAG: u8 = 0x80;
/// Largest packet the client accepts (a 200 MiB reply plus headroom).
pub const MAX_PACKET: u32 = 512 * 1024 * 1024;
/// Client read buffer; also the piece size when a body is streamed.
const READ_BUF: usize = 256 * 1024;
/// No single read may take longer than this: a hung path fails instead of hanging the run.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad handshake echo: {0:?}")]
    Handshake(String),
    #[error("packet length {0} is shorter than the 11-byte header")]
    TooShort(u32),
    #[error("packet length {len} exceeds the client limit of {max}")]
    TooLong { len: u32, max: u32 },
    #[error("reply id {got} does not answer request {want}")]
    WrongId { got: u32, want: u32 },
    #[error("expected a reply to {want}, got a command (set {set} cmd {cmd})")]
    NotReply { want: u32, set: u8, cmd: u8 },
    #[error("JDWP error {code} for command ({set},{cmd})")]
    Jdwp { code: u16, set: u8, cmd: u8 },
    #[error("reply too short: {want} bytes wanted at offset {at}, {have} present")]
    Short { at: usize, want: usize, have: usize },
    #[error("unexpected reply content: {0}")]
    Content(String),
}

pub type Result<T> = std::result::Result<T, WireError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub len: u32,
    pub id: u32,
    pub flags: u8,
    /// Command set, or the high byte of the error code in a reply.
    pub a: u8,
    /// Command, or the low byte of the error code in a reply.
    pub b: u8,
}

impl Header {
    pub fn parse(b: &[u8; HEADER_LEN]) -> Result<Header> {
        let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if (len as usize) < HEADER_LEN {
            return Err(WireError::TooShort(len));
        }
        if len > MAX_PACKET {
            return Err(WireError::TooLong { len, max: MAX_PACKET });
        }
        Ok(Header { len, id: u32::from_be_bytes([b[4], b[5], b[6], b[7]]), flags: b[8], a: b[9], b: b[10] })
    }

    pub fn is_reply(&self) -> bool {
        self.flags & REPLY_FLAG != 0
    }

    pub fn error(&self) -> u16 {
        u16::from_be_bytes([self.a, self.b])
    }

    pub fn body_len(&self) -> usize {
        self.len as usize - HEADER_LEN
    }
}

/// A command packet.
pub fn command(id: u32, set: u8, cmd: u8, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(HEADER_LEN + data.len());
    p.extend_from_slice(&((HEADER_LEN + data.len()) as u32).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0, set, cmd]);
    p.extend_from_slice(data);
    p
}

/// A reply packet.
pub fn reply(id: u32, error: u16, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(HEADER_LEN + data.len());
    p.extend_from_slice(&((HEADER_LEN + data.len()) as u32).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.push(REPLY_FLAG);
    p.extend_from_slice(&error.to_be_bytes());
    p.extend_from_slice(data);
    p
}

/// A connected, handshaken debugger socket with its own read buffer.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    next_id: u32,
}

impl Client {
    /// Connects (retrying "refused" until `deadline`), sets TCP_NODELAY and does the
    /// handshake. A path that closes without an echo is an error.
    pub fn connect(addr: SocketAddr, wait: Duration) -> Result<Client> {
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
        Client::over(stream)
    }

    /// The handshake on a stream that is already connected (e.g. one end of a pair whose
    /// other end is a relay process's standard input and output).
    pub fn over(stream: TcpStream) -> Result<Client> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut c = Client { stream, buf: vec![0; READ_BUF], lo: 0, hi: 0, next_id: 1 };
        c.stream.write_all(HANDSHAKE)?;
        let mut echo = [0u8; 14];
        c.read_exact(&mut echo).map_err(|e| WireError::Handshake(format!("no echo: {e}")))?;
        if &echo != HANDSHAKE {
            return Err(WireError::Handshake(String::from_utf8_lossy(&echo).into_owned()));
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

    pub fn next_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        Ok(self.stream.write_all(bytes)?)
    }

    /// Sends a command and returns its id.
    pub fn send(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<u32> {
        let id = self.next_id();
        self.write_all(&command(id, set, cmd, data))?;
        Ok(id)
    }

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

    pub fn read_header(&mut self) -> Result<Header> {
        // Keep room for a whole header so the common case is one copy out of the buffer.
        if self.buf.len() - self.lo < HEADER_LEN {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        let mut h = [0u8; HEADER_LEN];
        self.read_exact(&mut h)?;
        Header::parse(&h)
    }

    /// Reads a (small) body into `out`, replacing its contents.
    pub fn read_body(&mut self, h: &Header, out: &mut Vec<u8>) -> Result<()> {
        out.resize(h.body_len(), 0);
        self.read_exact(out)
    }

    /// Passes `len` body bytes to `sink` piece by piece, never holding more than the buffer.
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
pub fn check_reply(h: &Header, id: u32, set: u8, cmd: u8) -> Result<()> {
    if !h.is_reply() {
        return Err(WireError::NotReply { want: id, set: h.a, cmd: h.b });
    }
    if h.id != id {
        return Err(WireError::WrongId { got: h.id, want: id });
    }
    if h.error() != 0 {
        return Err(WireError::Jdwp { code: h.error(), set, cmd });
    }
    Ok(())
}

/// Reads big-endian JDWP values out of a reply body.
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data, pos: 0 }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let have = self.data.len() - self.pos;
        if have < n {
            return Err(WireError::Short { at: self.pos, want: n, have });
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An object/type/field id of `size` bytes (1..=8).
    pub fn id(&mut self, size: usize) -> Result<u64> {
        if !(1..=8).contains(&size) {
            return Err(WireError::Content(format!("id size {size}")));
        }
        Ok(self.take(size)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    pub fn string(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
}

/// Appends an id of `size` bytes (big-endian, low bytes of `v`).
pub fn put_id(out: &mut Vec<u8>, v: u64, size: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - size.min(8)..]);
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_limits() {
        let p = command(7, 1, 3, &[9, 9]);
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&p[..HEADER_LEN]);
        let h = Header::parse(&h).unwrap();
        assert_eq!((h.len, h.id, h.is_reply(), h.a, h.b, h.body_len()), (13, 7, false, 1, 3, 2));
        let r = reply(7, 99, &[]);
        let mut rh = [0u8; HEADER_LEN];
        rh.copy_from_slice(&r);
        let rh = Header::parse(&rh).unwrap();
        assert!(rh.is_reply());
        assert_eq!(rh.error(), 99);
        let cases: [([u8; 4], bool); 3] = [([0, 0, 0, 10], false), ([0, 0, 0, 11], true), ([0x7f, 0, 0, 0], false)];
        for (len, ok) in cases {
            let mut b = [0u8; HEADER_LEN];
            b[..4].copy_from_slice(&len);
            assert_eq!(Header::parse(&b).is_ok(), ok, "{len:?}");
        }
    }

    #[test]
    fn check_reply_cases() {
        let ok = Header { len: 11, id: 5, flags: REPLY_FLAG, a: 0, b: 0 };
        assert!(check_reply(&ok, 5, 1, 1).is_ok());
        assert!(matches!(check_reply(&ok, 6, 1, 1), Err(WireError::WrongId { got: 5, want: 6 })));
        let cmd = Header { flags: 0, ..ok };
        assert!(matches!(check_reply(&cmd, 5, 1, 1), Err(WireError::NotReply { .. })));
        let err = Header { a: 0, b: 99, ..ok };
        assert!(matches!(check_reply(&err, 5, 1, 1), Err(WireError::Jdwp { code: 99, .. })));
    }

    #[test]
    fn cursor_reads_and_reports_short_input() {
        let mut d = vec![0xAB];
        d.extend_from_slice(&7u32.to_be_bytes());
        put_id(&mut d, 0x0102_0304_0506_0708, 8);
        put_str(&mut d, "LBig;");
        let mut c = Cursor::new(&d);
        assert_eq!(c.u8().unwrap(), 0xAB);
        assert_eq!(c.u32().unwrap(), 7);
        assert_eq!(c.id(8).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(c.string().unwrap(), "LBig;");
        assert_eq!(c.remaining(), 0);
        assert!(matches!(c.u32(), Err(WireError::Short { want: 4, have: 0, .. })));
        assert!(Cursor::new(&[1, 2]).id(9).is_err());
        let mut small = Vec::new();
        put_id(&mut small, 0x1234, 2);
        assert_eq!(small, vec![0x12, 0x34]);
    }
}
