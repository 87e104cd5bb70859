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
        /// Most pieces handed to one vectored write.
        most_slices: usize,
    }

    impl AsyncWrite for Limited {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.max);
            self.got.extend_from_slice(&buf[..n]);
            self.calls += 1;
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(mut self: Pin<&mut Self>, _: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
            self.most_slices = self.most_slices.max(bufs.len());
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
        let mut w = Limited { max, got: Vec::new(), calls: 0, most_slices: 0 };
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

    /// One step: bytes queued (shared or copied), a burst of large pieces (more than one
    /// write may take), or a write that takes at most `max`.
    #[derive(Debug, Clone)]
    enum Op {
        Push { len: usize, shared: bool },
        Burst { count: usize },
        Write { max: usize },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0usize..200, any::<bool>()).prop_map(|(len, shared)| Op::Push { len, shared }),
            3 => (SHARE_FROM - 2..SHARE_FROM + 300, any::<bool>()).prop_map(|(len, shared)| Op::Push { len, shared }),
            1 => (20_000usize..70_000).prop_map(|len| Op::Push { len, shared: true }),
            1 => (MAX_IOV - 4..MAX_IOV + 20).prop_map(|count| Op::Burst { count }),
            4 => prop_oneof![1usize..16, 1usize..5000, 1usize..300_000].prop_map(|max| Op::Write { max }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 128, ..Default::default() })]

        /// Random pushes (small copied, large shared) between partial writes of random sizes:
        /// the bytes leave in the order they were queued, none lost or repeated, the length
        /// is always what was queued minus what was written, no write gets more than
        /// `MAX_IOV` pieces, and what is left at the end comes out whole.
        #[test]
        fn random_pushes_and_partial_writes_keep_order_and_length(ops in proptest::collection::vec(op(), 1..200)) {
            use proptest::{prop_assert, prop_assert_eq};
            let mut q = OutQueue::default();
            let mut w = Limited { max: 1, got: Vec::new(), calls: 0, most_slices: 0 };
            let waker = Waker::from(Arc::new(Noop));
            let mut cx = Context::from_waker(&waker);
            let mut queued: Vec<u8> = Vec::new();
            // Bytes written so far were checked against the queue as they left.
            let mut checked = 0;
            for op in ops {
                match op {
                    Op::Push { len, shared } => {
                        // A tag per piece, so bytes out of order or repeated show.
                        let piece = vec![(queued.len() as u8) ^ (len as u8) ^ 0x5A; len];
                        queued.extend_from_slice(&piece);
                        if shared {
                            q.push(Bytes::from(piece));
                        } else {
                            q.push_slice(&piece);
                        }
                    }
                    Op::Burst { count } => {
                        for i in 0..count {
                            let piece = vec![(queued.len() + i) as u8; SHARE_FROM + i % 3];
                            queued.extend_from_slice(&piece);
                            q.push(Bytes::from(piece));
                        }
                    }
                    Op::Write { max } => {
                        w.max = max;
                        let before = q.len();
                        match q.poll_write(&mut w, &mut cx) {
                            Poll::Ready(Ok(n)) => {
                                prop_assert!(n <= max && n <= before);
                                prop_assert!(n > 0 || before == 0);
                            }
                            other => prop_assert!(false, "unexpected {:?}", other),
                        }
                    }
                }
                prop_assert_eq!(q.len(), queued.len() - w.got.len());
                prop_assert_eq!(q.is_empty(), queued.len() == w.got.len());
                prop_assert!(w.got[checked..] == queued[checked..w.got.len()], "bytes left out of order");
                checked = w.got.len();
                prop_assert!(w.most_slices <= MAX_IOV);
            }
            let rest: Vec<u8> = q.into_chunks().flat_map(|b| b.to_vec()).collect();
            prop_assert!(rest[..] == queued[w.got.len()..], "what is left differs from what was not written");
        }
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
