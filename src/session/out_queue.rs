//! Bytes queued for a socket, written with as few copies and system calls as possible.
//!
//! Large pieces (a HotSpot reply streamed through the codec) are queued as they are, shared
//! with the read buffer they came from, and leave in one `writev` with their neighbours:
//! copying them once more cost the proxy more CPU per MB than socat. Small packets are
//! copied into a contiguous tail, which is cheaper than one iovec and one buffer each.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::AsyncWrite;

/// Pieces at least this large are queued without a copy.
const SHARE_FROM: usize = 4096;
/// Most pieces handed to one `writev`.
const MAX_IOV: usize = 64;

#[derive(Default)]
pub(super) struct OutQueue {
    /// Shared pieces, in order, all before `tail`.
    chunks: VecDeque<Bytes>,
    tail: BytesMut,
    len: usize,
}

impl OutQueue {
    pub fn push(&mut self, bytes: Bytes) {
        self.len += bytes.len();
        if bytes.len() < SHARE_FROM {
            self.tail.extend_from_slice(&bytes);
            return;
        }
        if !self.tail.is_empty() {
            self.chunks.push_back(self.tail.split().freeze());
        }
        self.chunks.push_back(bytes);
    }

    pub fn push_slice(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        self.tail.extend_from_slice(bytes);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes as much as the socket takes in one call.
    pub fn poll_write<W: AsyncWrite + Unpin>(&mut self, w: &mut W, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let r = if self.chunks.is_empty() {
            Pin::new(w).poll_write(cx, &self.tail)
        } else {
            let iov = self.slices();
            Pin::new(w).poll_write_vectored(cx, &iov)
        };
        if let Poll::Ready(Ok(n)) = r {
            self.advance(n);
            crate::park::wrote();
        }
        r
    }

    /// Writes what the socket takes now, without waiting; stops at the first error (the
    /// next `poll_write` reports it). Writing right after routing frees the pieces shared
    /// with the read buffer before the next read, which can then reuse that buffer.
    pub fn try_write(&mut self, sock: &tokio::net::TcpStream) {
        while !self.is_empty() {
            let r = if self.chunks.is_empty() {
                sock.try_write(&self.tail)
            } else {
                let iov = self.slices();
                sock.try_write_vectored(&iov)
            };
            match r {
                Ok(n) if n > 0 => {
                    self.advance(n);
                    crate::park::wrote();
                }
                _ => return,
            }
        }
    }

    fn slices(&self) -> Vec<IoSlice<'_>> {
        let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(MAX_IOV.min(self.chunks.len() + 1));
        iov.extend(self.chunks.iter().take(MAX_IOV).map(|c| IoSlice::new(c)));
        if iov.len() < MAX_IOV && !self.tail.is_empty() {
            iov.push(IoSlice::new(&self.tail));
        }
        iov
    }

    /// Drops `n` written bytes from the front.
    fn advance(&mut self, mut n: usize) {
        self.len -= n.min(self.len);
        while n > 0 {
            match self.chunks.front_mut() {
                Some(c) if c.len() <= n => {
                    n -= c.len();
                    self.chunks.pop_front();
                }
                Some(c) => {
                    c.advance(n);
                    return;
                }
                None => {
                    self.tail.advance(n.min(self.tail.len()));
                    return;
                }
            }
        }
    }

    /// Everything left, in order (for a last flush).
    pub fn into_chunks(self) -> impl Iterator<Item = Bytes> {
        self.chunks.into_iter().chain(std::iter::once(self.tail.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    /// A writer that takes at most `max` bytes per call and records them.
    struct Limited {
        max: usize,
        got: Vec<u8>,
        calls: usize,
    }

    impl AsyncWrite for Limited {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.max);
            self.got.extend_from_slice(&buf[..n]);
            self.calls += 1;
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(mut self: Pin<&mut Self>, _: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
            let mut left = self.max;
            let mut n = 0;
            for b in bufs {
                let k = b.len().min(left);
                self.got.extend_from_slice(&b[..k]);
                left -= k;
                n += k;
            }
            self.calls += 1;
            Poll::Ready(Ok(n))
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn drain(q: &mut OutQueue, max: usize) -> Limited {
        let mut w = Limited { max, got: Vec::new(), calls: 0 };
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        for _ in 0..1_000_000 {
            if q.is_empty() {
                break;
            }
            let before = q.len();
            match q.poll_write(&mut w, &mut cx) {
                Poll::Ready(Ok(n)) => assert_eq!(q.len(), before - n),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(q.is_empty());
        w
    }

    #[test]
    fn mixed_pieces_leave_in_order_whatever_the_write_size() {
        let pieces: Vec<Vec<u8>> = [10usize, 5000, 20, 30, 9000, 4096, 1, 70_000, 3]
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|k| (i * 31 + k) as u8).collect())
            .collect();
        let want: Vec<u8> = pieces.concat();
        for max in [1, 7, 100, 4096, 65_536, 1 << 20] {
            let mut q = OutQueue::default();
            for (i, p) in pieces.iter().enumerate() {
                if i % 3 == 2 {
                    q.push_slice(p);
                } else {
                    q.push(Bytes::copy_from_slice(p));
                }
            }
            assert_eq!(q.len(), want.len());
            let w = drain(&mut q, max);
            assert_eq!(w.got, want, "write size {max}");
        }
    }

    #[test]
    fn small_packets_share_one_buffer_and_one_write() {
        let mut q = OutQueue::default();
        for i in 0..16u8 {
            q.push(Bytes::from(vec![i; 11]));
        }
        assert!(q.chunks.is_empty());
        let w = drain(&mut q, 1 << 20);
        assert_eq!(w.calls, 1);
        assert_eq!(w.got.len(), 16 * 11);
    }

    #[test]
    fn large_pieces_are_not_copied() {
        let big = Bytes::from(vec![7u8; 64 * 1024]);
        let ptr = big.as_ptr();
        let mut q = OutQueue::default();
        q.push_slice(b"head");
        q.push(big);
        assert_eq!(q.chunks.len(), 2);
        assert_eq!(q.chunks[1].as_ptr(), ptr);
        let all: Vec<u8> = q.into_chunks().flat_map(|b| b.to_vec()).collect();
        assert_eq!(all.len(), 4 + 64 * 1024);
        assert_eq!(&all[..4], b"head");
    }
}
