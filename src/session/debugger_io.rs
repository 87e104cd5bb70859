//! One attached debugger's socket, served by the VM session task itself.
//!
//! Earlier the debugger had a task of its own that passed frames to the session over
//! channels. On a 2-CPU machine each hand-over woke the other task (often on the other CPU,
//! 30-40 µs), twice per round trip, and every byte was copied once more into that task's
//! buffer: the proxy cost more than socat. Now one task owns both sockets: a packet read from
//! one side is routed and written to the other in the same wake-up, and several queued
//! packets leave in one write.

use std::os::fd::AsRawFd;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use tracing::{debug, warn};

use crate::capture::tap::Tap;
use crate::capture::Direction;
use crate::jdwp::codec::{CodecError, Frame, JdwpCodec};
use crate::jdwp::handshake::HANDSHAKE;

use super::out_queue::OutQueue;
use super::wake_gate::WakeGate;

/// Largest command a debugger may send. Real commands are small; the biggest
/// (ClassesRedefine, SetValues) stay far below this. Larger ones close the connection.
pub const MAX_DEBUGGER_PACKET: u32 = 256 * 1024 * 1024;
/// Commands up to this length are passed to the VM only once they have fully arrived, so a
/// debugger that leaves halfway through one leaves the VM nothing of it (and the VM's other
/// debuggers carry on). Longer ones (a large RedefineClasses or SetValues) are passed on as
/// they arrive, so their memory stays bounded; leaving halfway through one of those makes the
/// session remake its VM connection, as the VM would read the next packet as the rest. At
/// most `MAX_MAX_DEBUGGERS` times this is held per VM for commands in flight.
pub const WHOLE_COMMAND_UP_TO: usize = 1024 * 1024;
/// Bytes queued for the debugger above which the session stops reading from the VM.
pub const DEBUGGER_HIGH_WATER: usize = 1024 * 1024;
/// Read buffer growth step for the debugger socket.
const READ_CHUNK: usize = 64 * 1024;
/// Time to flush queued bytes when the connection is being closed.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);
/// Bytes of an unfinished large packet that are worth a write. A debugger can do nothing
/// with part of a packet, so smaller pieces wait for more of it (or its end): a 130 KB
/// AllClasses reply then costs the debugger 2 or 3 wake-ups instead of one per read.
const STREAM_WRITE_FROM: usize = 64 * 1024;

/// What happened on the debugger socket.
pub(super) enum DebuggerEvent {
    /// Bytes arrived (0: the debugger closed its side).
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
}

/// A debugger connection after its handshake: the socket, what was read and not yet
/// decoded, and what is queued for it.
pub(super) struct DebuggerIo {
    pub peer: SocketAddr,
    sock: TcpStream,
    input: BytesMut,
    out: OutQueue,
    codec: JdwpCodec,
    tap: Option<Tap>,
    /// A large packet from the VM is being passed on: its head is queued, its end is not.
    streaming: bool,
    /// Packets the proxy made itself while `streaming`: they follow the streamed packet,
    /// never land inside it.
    /// Whole packets waiting for the streamed one to end, and how to capture each.
    after_stream: Vec<(Bytes, Kind)>,
    /// When the queue last reached the high-water mark or, above it, a write last made
    /// progress; a debugger that leaves a full queue unread this long is cut off.
    last_progress: Instant,
    /// The socket is read only after it said it is readable (see `wake_gate`).
    read_gate: WakeGate,
}

impl DebuggerIo {
    /// Starts serving a debugger whose handshake was read (`input` holds what followed it):
    /// the handshake echo is the first thing queued.
    pub fn new(sock: TcpStream, peer: SocketAddr, input: BytesMut, tap: Option<Tap>) -> DebuggerIo {
        let mut out = OutQueue::default();
        out.push_slice(HANDSHAKE);
        DebuggerIo {
            peer,
            sock,
            input,
            out,
            codec: JdwpCodec::new(MAX_DEBUGGER_PACKET, WHOLE_COMMAND_UP_TO).limit_named("MAX_DEBUGGER_PACKET"),
            tap,
            streaming: false,
            after_stream: Vec::new(),
            last_progress: Instant::now(),
            read_gate: WakeGate::default(),
        }
    }

    /// Queues a whole packet for the debugger (after the streamed packet in progress, if any).
    pub fn queue(&mut self, bytes: Bytes) {
        if self.streaming {
            self.after_stream.push((bytes, Kind::Packet));
        } else {
            self.push(bytes, Kind::Packet);
        }
    }

    /// Queues a reply the proxy made from the near cache (marked so in the capture).
    pub fn queue_near(&mut self, bytes: Bytes) {
        if self.streaming {
            self.after_stream.push((bytes, Kind::Near));
        } else {
            self.push(bytes, Kind::Near);
        }
    }

    /// Queues the head of a large packet whose body follows in pieces.
    pub fn queue_head(&mut self, bytes: Bytes) {
        self.push(bytes, Kind::Packet);
        self.streaming = true;
    }

    /// Queues a piece of the streamed packet's body; `last` ends the packet.
    pub fn queue_body(&mut self, bytes: Bytes, last: bool) {
        self.push(bytes, Kind::Body);
        if last {
            self.streaming = false;
            for (p, kind) in std::mem::take(&mut self.after_stream) {
                self.push(p, kind);
            }
        }
    }

    fn push(&mut self, bytes: Bytes, kind: Kind) {
        let was_below = self.out.len() < DEBUGGER_HIGH_WATER;
        if let Some(t) = self.tap.as_mut() {
            match kind {
                Kind::Body => t.body(Direction::ToClient, &bytes),
                Kind::Packet => t.packet(Direction::ToClient, &bytes, None),
                Kind::Near => t.near_reply(Direction::ToClient, &bytes),
            }
        }
        self.out.push(bytes);
        if was_below && self.out.len() >= DEBUGGER_HIGH_WATER {
            self.last_progress = Instant::now();
        }
    }

    /// A write moved bytes: the stall clock restarts if the queue is still full. Below the
    /// high-water mark nothing is timed, so a packet costs no clock read here.
    fn progressed(&mut self) {
        if self.out.len() >= DEBUGGER_HIGH_WATER {
            self.last_progress = Instant::now();
        }
        crate::park::wrote_to(self.sock.as_raw_fd());
    }

    /// Whether a write is worth it now: something is queued, and it is not just a small
    /// part of an unfinished packet.
    fn worth_writing(&self) -> bool {
        !self.out.is_empty() && (!self.streaming || self.out.len() >= STREAM_WRITE_FROM)
    }

    pub fn queued(&self) -> usize {
        self.out.len()
    }

    /// Whether the debugger left a full queue unread for longer than `limit`.
    pub fn stalled(&self, limit: Duration) -> bool {
        self.out.len() >= DEBUGGER_HIGH_WATER && self.last_progress.elapsed() >= limit
    }

    /// The next complete frame the debugger sent, if one is buffered.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, CodecError> {
        let frame = self.codec.decode(&mut self.input)?;
        if let (Some(t), Some(f)) = (self.tap.as_mut(), frame.as_ref()) {
            match f {
                Frame::Packet(p) => t.packet(Direction::ToServer, p.as_bytes(), None),
                Frame::Head(_, b) => t.packet(Direction::ToServer, b, None),
                Frame::Body { bytes, .. } => t.body(Direction::ToServer, bytes),
            }
        }
        Ok(frame)
    }

    /// What the debugger's end of stream left undecoded, as a reason to log.
    pub fn eof_reason(&mut self) -> String {
        match self.codec.decode_eof(&mut self.input) {
            Err(e) => format!("the debugger closed the connection: {e}"),
            Ok(_) => "the debugger closed the connection".into(),
        }
    }

    /// Writes what the socket takes now (see `OutQueue::try_write`).
    pub fn flush_now(&mut self) {
        if !self.worth_writing() {
            return;
        }
        let before = self.out.len();
        self.out.try_write(&self.sock);
        if self.out.len() < before {
            self.progressed();
        }
    }

    /// Writes what is queued, and reads when `take_input`. Cancel-safe: each attempt either
    /// completes (and is reported) or leaves everything as it was.
    pub fn poll_event(&mut self, cx: &mut Context<'_>, take_input: bool) -> Poll<DebuggerEvent> {
        if self.worth_writing() {
            if let Poll::Ready(r) = self.out.poll_write(&mut self.sock, cx) {
                if r.is_ok() {
                    self.progressed();
                }
                return Poll::Ready(DebuggerEvent::Wrote(r));
            }
        }
        if take_input {
            // Through `AsyncRead`, not `try_read_buf`: a read that does not fill the buffer
            // clears the readiness, so no second read is tried just to see EAGAIN.
            let (sock, input) = (&mut self.sock, &mut self.input);
            let read = self.read_gate.poll(cx, |cx| {
                input.reserve(READ_CHUNK);
                tokio_util::io::poll_read_buf(std::pin::Pin::new(sock), cx, input)
            });
            if let Poll::Ready(r) = read {
                return Poll::Ready(DebuggerEvent::Read(r));
            }
        }
        Poll::Pending
    }

    /// Closes the connection after flushing what is queued (bounded by `CLOSE_FLUSH`, in a
    /// task of its own so the session never waits on a departing debugger).
    pub fn close(self, reason: &str, tracker: &tokio_util::task::TaskTracker) {
        if reason.contains("failed") || reason.starts_with("bad") {
            warn!(peer = %self.peer, reason, "debugger connection closed");
        } else {
            debug!(peer = %self.peer, reason, "debugger connection closed");
        }
        // What the proxy queued behind an unfinished packet is dropped with it: the debugger
        // could not read past the missing bytes anyway.
        let DebuggerIo { mut sock, out, tap, .. } = self;
        drop(tap);
        if out.is_empty() {
            return;
        }
        tracker.spawn(async move {
            let _ = tokio::time::timeout(CLOSE_FLUSH, async {
                for chunk in out.into_chunks() {
                    sock.write_all(&chunk).await?;
                }
                sock.shutdown().await
            })
            .await;
        });
    }
}

/// What queued bytes are, for the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A whole packet, or the head of a streamed one.
    Packet,
    /// A piece of a streamed packet's body.
    Body,
    /// A reply made from the near cache.
    Near,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    async fn pair() -> (DebuggerIo, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (sock, addr) = l.accept().await.unwrap();
        (DebuggerIo::new(sock, addr, BytesMut::new(), None), peer)
    }

    /// Reads until `want` bytes arrived, or until 10 s pass without any.
    async fn drain(peer: &mut TcpStream, want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = vec![0; 256 * 1024];
        while got.len() < want {
            match tokio::time::timeout(Duration::from_secs(10), peer.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        got
    }

    #[tokio::test]
    async fn a_streamed_packet_goes_out_in_large_pieces_and_keeps_others_behind_it() {
        let (mut io, mut peer) = pair().await;
        io.flush_now();
        assert_eq!(drain(&mut peer, HANDSHAKE.len()).await, HANDSHAKE);
        let head = Bytes::from_static(&[0, 0, 0, 0, 1, 2, 3, 4, 0, 1, 1]);
        io.queue_head(head.clone());
        io.queue_body(Bytes::from(vec![7u8; 1000]), false);
        // A packet the proxy makes meanwhile must not land inside the streamed one.
        io.queue(Bytes::from_static(b"LOCAL"));
        io.flush_now();
        assert_eq!(io.queued(), head.len() + 1000, "a small part of an unfinished packet is held");
        io.queue_body(Bytes::from(vec![8u8; STREAM_WRITE_FROM]), false);
        io.flush_now();
        assert_eq!(io.queued(), 0, "a large part is written");
        io.queue_body(Bytes::from(vec![9u8; 10]), true);
        assert_eq!(io.queued(), 10 + 5, "the held packet follows the end");
        io.flush_now();
        let want = head.len() + 1000 + STREAM_WRITE_FROM + 10 + 5;
        let got = drain(&mut peer, want).await;
        assert_eq!(got.len(), want);
        assert_eq!(&got[..head.len()], &head[..]);
        assert!(got[head.len()..head.len() + 1000].iter().all(|&b| b == 7));
        assert_eq!(&got[want - 15..want - 5], &[9u8; 10]);
        assert_eq!(&got[want - 5..], b"LOCAL");
    }
}
