//! The far session's connection to its near side, as the session task drives it: its read
//! and write halves with their buffers, and the waits the task's `select!` is made of (each
//! pending forever when there is nothing to wait on).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::Encoder;

use crate::remote::protocol::frame::{Body, ByeReason, Frame};
use crate::remote::protocol::FarCodec;

pub(super) struct ConnReader {
    pub(super) half: OwnedReadHalf,
    pub(super) buf: BytesMut,
}

pub(super) struct ConnWriter {
    pub(super) half: OwnedWriteHalf,
    pub(super) buf: BytesMut,
}

/// Writes a Bye on a connection that is refused, and closes it, without holding the session.
pub(super) fn refuse(stream: UnixStream, reason: ByeReason, text: String) {
    let (_, half) = stream.into_split();
    let mut buf = BytesMut::new();
    let bye = Frame { channel: 0, seq: 0, ack: 0, body: Body::Bye { reason, text } };
    if FarCodec.encode(&bye, &mut buf).is_ok() {
        tokio::spawn(flush_and_close(ConnWriter { half, buf }));
    }
}

/// Sends what is left of a closing connection's output, within a second.
pub(super) async fn flush_and_close(mut w: ConnWriter) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = w.half.write_all(&w.buf).await;
        let _ = w.half.shutdown().await;
    })
    .await;
}

pub(super) async fn read_some(reader: &mut Option<ConnReader>) -> std::io::Result<usize> {
    match reader {
        Some(r) => {
            // read_buf reads into spare capacity only: without any it would say "end of stream".
            r.buf.reserve(16 * 1024);
            r.half.read_buf(&mut r.buf).await
        }
        None => std::future::pending().await,
    }
}

pub(super) async fn write_some(writer: &mut Option<ConnWriter>) -> std::io::Result<usize> {
    match writer {
        Some(w) if !w.buf.is_empty() => {
            let wrote = w.half.write_buf(&mut w.buf).await;
            // sshd was woken to carry it: let it run before this thread sleeps (`crate::park`).
            if matches!(wrote, Ok(n) if n > 0) {
                crate::park::wrote();
            }
            wrote
        }
        _ => std::future::pending().await,
    }
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
