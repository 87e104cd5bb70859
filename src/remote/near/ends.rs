//! An open channel as its one user holds it (`ChannelEnds`), what that user does with it
//! (`FromStream`), for the link's task, and the pump that moves its bytes between the
//! user's two halves (a socket's, or an in-process stream's) and the link's queues.

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::remote::protocol::frame::MAX_DATA;

/// Bytes buffered in a channel's stream (`ChannelEnds::into_stream`), each way.
const STREAM_BUF: usize = 256 * 1024;

/// What a channel's user did.
#[derive(Debug)]
pub(in crate::remote::near) enum FromStream {
    Data(u32, Bytes),
    Ended(u32),
}

/// An open channel as its one user holds it: the far side's bytes come in on `from_far`
/// (which ends when the channel closes), and what the user sends goes straight to the
/// link's task. No stream and no task of its own in between: the user's socket task reads
/// and writes the link's queues itself, one hop a packet each way.
#[derive(Debug)]
pub struct ChannelEnds {
    pub(super) channel: u32,
    pub from_far: mpsc::Receiver<Bytes>,
    pub(super) to_far: mpsc::Sender<FromStream>,
    pub(super) ended: bool,
}

impl ChannelEnds {
    /// The link's queue, for a piece the user sent (`data`).
    pub(in crate::remote::near) fn to_far(&self) -> mpsc::Sender<FromStream> {
        self.to_far.clone()
    }

    /// A piece of what the user sent, for `to_far`.
    pub(in crate::remote::near) fn data(&self, bytes: Bytes) -> FromStream {
        FromStream::Data(self.channel, bytes)
    }

    /// The channel as an in-process byte stream, for a user that wants one (a task moves
    /// the bytes, one hop more each way than a socket's own task).
    pub fn into_stream(self) -> tokio::io::DuplexStream {
        let (ours, theirs) = tokio::io::duplex(STREAM_BUF);
        let (r, w) = tokio::io::split(ours);
        tokio::spawn(pump(self, r, w));
        theirs
    }

    /// The user is done sending: the channel closes (the far side closes its VM connection).
    /// What the far side sent before it heard so still comes on `from_far`.
    pub(in crate::remote::near) async fn close(&mut self) {
        if !std::mem::replace(&mut self.ended, true) {
            let _ = self.to_far.send(FromStream::Ended(self.channel)).await;
        }
    }
}

impl Drop for ChannelEnds {
    /// A user that went without `end` (its task aborted, its wait given up) closes the
    /// channel too, as its stream's end did: else the far side would hold the VM connection.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let ev = FromStream::Ended(self.channel);
        if let Err(mpsc::error::TrySendError::Full(ev)) = self.to_far.try_send(ev) {
            let tx = self.to_far.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = tx.send(ev).await;
                });
            }
        }
    }
}

/// Moves a channel's bytes between its user's two halves and the link's queues until both
/// ends are done: what `relay` does with a socket, and `ChannelEnds::into_stream` with an
/// in-process stream.
pub(super) async fn pump<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(mut channel: ChannelEnds, mut read: R, mut write: W) {
    let tx = channel.to_far();
    let mut buf = vec![0u8; MAX_DATA];
    // A piece read and waiting for room in the link's queue, and one of the far side's
    // waiting for the user's socket: each direction waits on its own, as two copying tasks
    // would (a link out of room must not stop the far side's bytes, which bring its acks).
    let mut to_far: Option<Bytes> = None;
    let mut to_user: Option<Bytes> = None;
    let (mut reading, mut writing, mut far_open) = (true, true, true);
    while reading || far_open || to_user.is_some() {
        let step = tokio::select! {
            p = tx.reserve(), if to_far.is_some() => Step::Room(p.ok()),
            got = read_piece(&mut read, &mut buf), if reading && to_far.is_none() => Step::Read(got),
            wrote = write.write(to_user.as_deref().unwrap_or_default()), if to_user.is_some() => Step::Wrote(wrote),
            got = channel.from_far.recv(), if far_open && to_user.is_none() => Step::Far(got),
        };
        match step {
            Step::Room(permit) => match (permit, to_far.take()) {
                (Some(permit), Some(bytes)) => permit.send(channel.data(bytes)),
                // The link has ended.
                _ => return,
            },
            Step::Read(Some(bytes)) => to_far = Some(bytes),
            // Its user closed it: the channel closes.
            Step::Read(None) => {
                reading = false;
                channel.close().await;
            }
            Step::Wrote(Ok(n)) if n > 0 => {
                if let Some(b) = &mut to_user {
                    b.advance(n);
                    if b.is_empty() {
                        to_user = None;
                    }
                }
            }
            // The user's socket is broken: what the far side sends from now on is dropped
            // (still taken, so the link never waits on this channel).
            Step::Wrote(_) => {
                to_user = None;
                writing = false;
            }
            Step::Far(Some(bytes)) => to_user = Some(bytes).filter(|_| writing),
            // The channel closed: the user sees the end of the stream.
            Step::Far(None) => {
                far_open = false;
                if writing {
                    let _ = write.shutdown().await;
                }
            }
        }
    }
    channel.close().await;
}

/// What one wait of `relay` brought.
enum Step<'a> {
    Room(Option<tokio::sync::mpsc::Permit<'a, FromStream>>),
    Read(Option<Bytes>),
    Wrote(std::io::Result<usize>),
    Far(Option<Bytes>),
}

/// Reads what the connection's user wrote: None at its end (or an error). One buffer for
/// every read, each piece copied out at its size (a few hundred bytes): a piece split off
/// would keep the buffer shared and the next read would allocate MAX_DATA bytes anew.
async fn read_piece<R: AsyncRead + Unpin>(read: &mut R, buf: &mut [u8]) -> Option<Bytes> {
    match read.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(Bytes::copy_from_slice(&buf[..n])),
    }
}
