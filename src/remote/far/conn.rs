//! The far session's connection to its near side, as the session task drives it: its read
//! and write halves with their buffers, and the waits the task's `select!` is made of (each
//! pending forever when there is nothing to wait on).
//!
//! The connection is watched for input only. Its peer is sshd on this host, and a Unix
//! socket tells its writer "writable" every time the reader takes bytes: watched for both,
//! every frame written here woke the thread once more when sshd read it (an `epoll_wait`
//! and a sleep per command, for nothing to do). Writes go straight to the socket; only one
//! that finds it full waits, on a watch for writability made for that wait.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::Encoder;

use crate::remote::protocol::frame::{Body, ByeReason, Frame};
use crate::remote::protocol::FarCodec;

type Sock = Arc<AsyncFd<std::os::unix::net::UnixStream>>;

pub(super) struct ConnReader {
    sock: Sock,
    pub(super) buf: BytesMut,
}

pub(super) struct ConnWriter {
    sock: Sock,
    pub(super) buf: BytesMut,
}

/// The connection's halves, `rest` the bytes already read from it.
pub(super) fn split(stream: UnixStream, rest: BytesMut) -> std::io::Result<(ConnReader, ConnWriter)> {
    let sock = Arc::new(watch(stream.into_std()?, Interest::READABLE)?);
    Ok((ConnReader { sock: sock.clone(), buf: rest }, ConnWriter { sock, buf: BytesMut::new() }))
}

/// Writes a Bye on a connection that is refused, and closes it, without holding the session.
pub(super) fn refuse(stream: UnixStream, reason: ByeReason, text: String) {
    let mut buf = BytesMut::new();
    let bye = Frame { channel: 0, seq: 0, ack: 0, body: Body::Bye { reason, text } };
    if FarCodec.encode(&bye, &mut buf).is_ok() {
        if let Ok((_, mut w)) = split(stream, BytesMut::new()) {
            w.buf = buf;
            tokio::spawn(flush_and_close(w));
        }
    }
}

/// Sends what is left of a closing connection's output, within a second.
pub(super) async fn flush_and_close(w: ConnWriter) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let mut w = Some(w);
        while w.as_ref().is_some_and(|w| !w.buf.is_empty()) {
            if !matches!(write_some(&mut w).await, Ok(n) if n > 0) {
                break;
            }
        }
        if let Some(w) = &w {
            let _ = w.sock.get_ref().shutdown(std::net::Shutdown::Write);
        }
    })
    .await;
}

pub(super) async fn read_some(reader: &mut Option<ConnReader>) -> std::io::Result<usize> {
    let Some(r) = reader else { return std::future::pending().await };
    // Reads into spare capacity only: without any a read would say "end of stream".
    r.buf.reserve(16 * 1024);
    loop {
        let mut ready = r.sock.readable().await?;
        let buf = &mut r.buf;
        match ready.try_io(|s| {
            let spare = buf.spare_capacity_mut();
            // SAFETY: `spare` is `spare.len()` writable bytes owned by `buf`; read(2) writes at
            // most that many, and only what it reports written is counted in below.
            let n = unsafe { libc::read(s.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(n as usize)
        }) {
            Ok(Ok(n)) => {
                // SAFETY: read(2) initialised the first `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
                // A read that did not fill the room took all there was: the next waits for
                // the socket's word instead of trying a read that finds nothing (as tokio's
                // own streams do).
                if n > 0 && buf.capacity() > buf.len() {
                    ready.clear_ready();
                }
                return Ok(n);
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
}

pub(super) async fn write_some(writer: &mut Option<ConnWriter>) -> std::io::Result<usize> {
    let Some(w) = writer.as_mut().filter(|w| !w.buf.is_empty()) else { return std::future::pending().await };
    loop {
        match w.sock.get_ref().write(&w.buf) {
            Ok(n) => {
                w.buf.advance(n);
                // sshd was woken to carry it: let it run before this thread sleeps (`crate::park`).
                if n > 0 {
                    crate::park::wrote();
                }
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => writable(&w.sock).await?,
            Err(e) => return Err(e),
        }
    }
}

/// Waits until the full socket takes bytes again, on a watch of its own (a second
/// descriptor of the same socket) that goes when the wait ends.
async fn writable(sock: &Sock) -> std::io::Result<()> {
    let watch = watch(sock.get_ref().try_clone()?, Interest::WRITABLE)?;
    let _ready = watch.writable().await?;
    Ok(())
}

fn watch(s: std::os::unix::net::UnixStream, interest: Interest) -> std::io::Result<AsyncFd<std::os::unix::net::UnixStream>> {
    // SAFETY: the stream owns its descriptor, keeps it open until it is dropped with the
    // `AsyncFd`, and `as_raw_fd` always names that one.
    unsafe { AsyncFd::register_with_interest(s, interest) }.map_err(|e| std::io::Error::other(e.to_string()))
}

pub(super) async fn reserve(tx: Option<mpsc::Sender<Bytes>>) -> Result<mpsc::OwnedPermit<Bytes>, mpsc::error::SendError<()>> {
    match tx {
        Some(tx) => tx.reserve_owned().await,
        None => std::future::pending().await,
    }
}

pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
