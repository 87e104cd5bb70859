//! An open channel as its one user holds it (`ChannelEnds`), and what that user does with
//! it (`FromStream`), for the link's task.

use bytes::Bytes;
use tokio::sync::mpsc;

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
        tokio::spawn(crate::remote::near::sockets::pump(self, r, w));
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
