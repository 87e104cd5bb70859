//! Framing of the adb server protocol: a request is 4 hex digits (the length) plus the service
//! text; list-style answers (`host:devices`, `track-devices`, `track-jdwp`, FAIL reasons) are
//! 4 hex digits plus that many bytes. Here: the encoder, the pure decoder, and a cancel-safe
//! async reader with a size cap, so a desynced or hostile stream is an error, never a panic.

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::AdbError;

/// Largest message we accept. Four hex digits allow 65535; real device and pid lists are a few
/// KiB, so anything near the top is a desynced stream rather than data worth buffering.
pub const MAX_MESSAGE_LEN: usize = 32 * 1024;

/// The most a 4-hex-digit length can express: the limit for a request's service text.
pub const MAX_REQUEST_LEN: usize = 0xFFFF;

/// How much room to make in the buffer before each socket read.
const READ_CHUNK: usize = 4096;

/// Parses exactly four ASCII hex digits (either case). Signs, spaces and anything else are
/// rejected, unlike `from_str_radix`, which would accept a leading `+`.
pub fn parse_hex4(digits: [u8; 4]) -> Result<usize, AdbError> {
    let mut value = 0usize;
    for b in digits {
        let nibble = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(AdbError::BadLength(digits)),
        };
        value = (value << 4) | usize::from(nibble);
    }
    Ok(value)
}

/// Encodes one request: lowercase 4-hex-digit length, then the service text.
pub fn encode_request(service: &str) -> Result<Vec<u8>, AdbError> {
    let len = service.len();
    if len == 0 || len > MAX_REQUEST_LEN {
        return Err(AdbError::BadService { len, max: MAX_REQUEST_LEN });
    }
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(format!("{len:04x}").as_bytes());
    out.extend_from_slice(service.as_bytes());
    Ok(out)
}

/// Takes one complete message off the front of `buf`, if there is one. The length is checked
/// against `max` as soon as the 4 digits are in, so an oversize claim never gets buffered.
pub fn decode_message(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, AdbError> {
    let Some(head) = buf.get(..4) else { return Ok(None) };
    let mut digits = [0u8; 4];
    digits.copy_from_slice(head);
    let len = parse_hex4(digits)?;
    if len > max {
        return Err(AdbError::TooLarge { len, max });
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Reads length-prefixed messages from a stream (after its OKAY). `next_message` is cancel-safe:
/// partial data stays in the reader's buffer, so it can sit in a `select!` beside other work.
#[derive(Debug)]
pub struct MessageReader<R> {
    inner: R,
    buf: BytesMut,
    max: usize,
}

impl<R: AsyncRead + Unpin> MessageReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_MESSAGE_LEN)
    }

    pub fn with_max(inner: R, max: usize) -> Self {
        MessageReader { inner, buf: BytesMut::new(), max }
    }

    /// The next message; `Ok(None)` when the peer closed cleanly between messages.
    pub async fn next_message(&mut self) -> Result<Option<Bytes>, AdbError> {
        loop {
            if let Some(msg) = decode_message(&mut self.buf, self.max)? {
                return Ok(Some(msg));
            }
            self.buf.reserve(READ_CHUNK);
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                return if self.buf.is_empty() { Ok(None) } else { Err(AdbError::Truncated { have: self.buf.len() }) };
            }
        }
    }

    /// The stream and any bytes already read past the last message.
    pub fn into_parts(self) -> (R, BytesMut) {
        (self.inner, self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::ReadBuf;

    /// Hands out its data in the given fragments, one per read, to exercise reassembly.
    struct Fragments(Vec<Vec<u8>>);

    impl AsyncRead for Fragments {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if !self.0.is_empty() {
                let mut frag = self.0.remove(0);
                let take = frag.len().min(out.remaining());
                out.put_slice(&frag[..take]);
                if take < frag.len() {
                    self.0.insert(0, frag.split_off(take));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    fn frags(parts: &[&[u8]]) -> Fragments {
        Fragments(parts.iter().map(|p| p.to_vec()).collect())
    }

    #[test]
    fn hex4_table() {
        let cases: &[(&[u8; 4], Option<usize>)] = &[
            (b"0000", Some(0)),
            (b"000c", Some(12)),
            (b"00FF", Some(255)),
            (b"ffff", Some(65535)),
            (b"+00c", None),
            (b" 00c", None),
            (b"00g0", None),
            (b"OKAY", None),
        ];
        for (digits, want) in cases {
            assert_eq!(parse_hex4(**digits).ok(), *want, "{:?}", String::from_utf8_lossy(*digits));
        }
    }

    #[test]
    fn encode_table() {
        assert_eq!(encode_request("host:version").ok(), Some(b"000chost:version".to_vec()));
        assert_eq!(encode_request("jdwp:1234").ok(), Some(b"0009jdwp:1234".to_vec()));
        assert!(matches!(encode_request(""), Err(AdbError::BadService { len: 0, .. })));
        let long = "x".repeat(MAX_REQUEST_LEN + 1);
        assert!(matches!(encode_request(&long), Err(AdbError::BadService { len: 65536, .. })));
    }

    #[test]
    fn decode_byte_by_byte_then_two_at_once() {
        let wire = b"0005hello0000000bworld\nagain";
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for b in wire.iter() {
            buf.extend_from_slice(&[*b]);
            while let Some(m) = decode_message(&mut buf, 64).expect("valid stream") {
                got.push(m);
            }
        }
        assert_eq!(got, vec![Bytes::from_static(b"hello"), Bytes::new(), Bytes::from_static(b"world\nagain")]);
        assert!(buf.is_empty());
    }

    #[test]
    fn decode_errors() {
        let mut bad = BytesMut::from(&b"00x1abc"[..]);
        assert!(matches!(decode_message(&mut bad, 64), Err(AdbError::BadLength(d)) if &d == b"00x1"));
        // The cap is enforced on the header alone: no payload has to arrive first.
        let mut big = BytesMut::from(&b"0041"[..]);
        assert!(matches!(decode_message(&mut big, 64), Err(AdbError::TooLarge { len: 65, max: 64 })));
        let mut short = BytesMut::from(&b"00"[..]);
        assert!(matches!(decode_message(&mut short, 64), Ok(None)));
    }

    #[tokio::test]
    async fn reader_reassembles_fragments() {
        let src = frags(&[b"00", b"0", b"cemu-1\td", b"evice00", b"00", b"0003a\nb"]);
        let mut r = MessageReader::new(src);
        let mut got = Vec::new();
        while let Some(m) = r.next_message().await.expect("valid stream") {
            got.push(m);
        }
        assert_eq!(got, vec![Bytes::from_static(b"emu-1\tdevice"), Bytes::new(), Bytes::from_static(b"a\nb")]);
    }

    #[tokio::test]
    async fn reader_reports_truncation_bad_hex_and_oversize() {
        let mut r = MessageReader::new(frags(&[b"0009abc"]));
        assert!(matches!(r.next_message().await, Err(AdbError::Truncated { have: 7 })));
        let mut r = MessageReader::new(frags(&[b"zz", b"zz"]));
        assert!(matches!(r.next_message().await, Err(AdbError::BadLength(_))));
        let mut r = MessageReader::with_max(frags(&[b"0", b"fff", b"x"]), 1024);
        assert!(matches!(r.next_message().await, Err(AdbError::TooLarge { len: 4095, max: 1024 })));
    }
}
