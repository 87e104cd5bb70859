//! The frames of a connection up: what goes out (numbered, compressed when that pays),
//! what comes in and what it means, and each channel's Data on to its user, waiting for room
//! in the user's queue when it is full (the stream is not read meanwhile).

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};
use tracing::{debug, warn};

use super::{ChannelEnds, FromStream, OpenError, ReadSide, Task, Waiter, WriteSide};
use crate::remote::protocol::frame::{Body, CloseReason, Header, Kind, OpenStatus, HEADER_LEN, MAX_DATA};
use crate::remote::protocol::{FarCodec, Frame};
use crate::remote::near::channels::{Opened, Route};
use crate::remote::near::inbound::{self, Broken, Inbound};

/// Data pieces queued for one channel's user before the link stops reading the far side.
const TO_STREAM_QUEUE: usize = 16;

/// Data for a channel's stream that waits for room in its queue.
pub(super) struct Stalled {
    sink: mpsc::Sender<Bytes>,
    bytes: Bytes,
}

impl Task {
    pub(super) fn emit(&mut self, frame: &Frame) {
        if let Some(w) = &mut self.wr {
            let wrote = if w.squeeze {
                FarCodec::encode_squeezed(frame, &mut w.out, &mut w.squeezed)
            } else {
                // Counted as `encode_squeezed` counts: a far side of protocol 4 gets every
                // Data frame plain, and `stats` says how many.
                let wrote = FarCodec.encode(frame, &mut w.out);
                if let (Ok(()), Body::Data(bytes)) = (&wrote, &frame.body) {
                    w.squeezed.data(bytes.len(), None);
                }
                wrote
            };
            if let Err(e) = wrote {
                warn!("a frame could not be encoded: {e}");
            }
        }
    }

    /// Numbers a frame for the far side and writes it when connected (else the replay will).
    fn send(&mut self, channel: u32, body: Body, beyond: bool) {
        let sent = if beyond { self.resume.send_beyond(channel, body) } else { self.resume.send(channel, body) };
        match sent {
            Ok(frame) => {
                self.ack_at = None;
                self.emit(&frame);
            }
            Err(e) => warn!(channel, "a frame was not sent: {e}"),
        }
    }

    pub(super) fn open(&mut self, vm: u32, reply: oneshot::Sender<Result<ChannelEnds, OpenError>>) {
        let channel = self.channels.begin(Waiter { vm, reply });
        debug!(channel, vm, "opening a channel");
        // Past the limit if need be: opens are few (one per VM session), and bounded by the
        // command queue.
        self.send(channel, Body::Open { vm }, true);
    }

    pub(super) fn on_stream(&mut self, ev: FromStream) {
        match ev {
            FromStream::Data(channel, bytes) => {
                if matches!(self.channels.route(channel), Route::Deliver(_)) {
                    self.send(channel, Body::Data(bytes), false);
                }
            }
            FromStream::Ended(channel) => {
                if self.channels.close(channel) {
                    debug!(channel, "the channel's stream ended; closing it");
                    self.send(channel, Body::Close { reason: CloseReason::Done, text: String::new() }, true);
                }
            }
        }
    }

    /// Decodes and handles whole frames read, until a channel's queue is full.
    pub(super) fn take_input(&mut self) {
        while self.stalled.is_none() {
            let Some(rd) = &mut self.rd else { return };
            // A compressed frame is counted by its header: it decodes to the Data it was.
            let squeezed = match Header::parse(&rd.buf) {
                Some(Ok(h)) if h.kind == Kind::DataZ && rd.buf.len() >= HEADER_LEN + h.len as usize => Some(h.len as usize),
                _ => None,
            };
            match FarCodec.decode(&mut rd.buf) {
                Ok(Some(frame)) => {
                    if let Body::Data(bytes) = &frame.body {
                        rd.squeezed.data(bytes.len(), squeezed);
                    }
                    self.heard = Instant::now();
                    self.on_frame(frame);
                }
                Ok(None) => return,
                Err(e) => return self.lose(&format!("bad stream: {e}")),
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        let what = inbound::judge(&mut self.resume, frame);
        if what.delivered() {
            if let Some(ack) = self.resume.after_delivery(&mut self.ack_at, Instant::now()) {
                self.emit(&ack);
            }
        }
        match what {
            Inbound::Pong(stamp) => {
                let pong = self.resume.link(Body::Pong(stamp));
                self.emit(&pong);
            }
            Inbound::Nothing => {}
            Inbound::Lose(why) => self.lose(&why.to_string()),
            Inbound::TakenOver(text) => {
                if let Some(rd) = self.rd.take() {
                    let wr = self.wr.take();
                    self.retire(&rd, wr.as_ref());
                }
                self.wr = None;
                self.up_since = None;
                self.taken_over(text);
            }
            Inbound::VmList(vms) => {
                self.vms_tx.send_replace(vms);
            }
            Inbound::Opened { channel, status, text } => self.opened(channel, status, text),
            Inbound::Closed { channel, reason, text } => {
                if self.channels.close(channel) {
                    debug!(channel, ?reason, "the far side closed the channel: {text}");
                }
            }
            Inbound::Data { channel, bytes } => self.deliver(channel, bytes),
        }
    }

    fn opened(&mut self, channel: u32, status: OpenStatus, text: String) {
        match self.channels.opened(channel, status == OpenStatus::Ok) {
            Opened::Ok(w) => {
                let (to_stream, queue) = mpsc::channel(TO_STREAM_QUEUE);
                self.channels.set_open(channel, to_stream);
                debug!(channel, vm = w.vm, "channel open");
                let ends = ChannelEnds { channel, from_far: queue, to_far: self.from_streams_tx.clone(), ended: false };
                // A waiter that gave up: the channel closes at once.
                if let Err(Ok(mut ends)) = w.reply.send(Ok(ends)) {
                    ends.ended = true;
                    self.on_stream(FromStream::Ended(channel));
                }
            }
            Opened::Failed(w) => {
                let vm = w.vm;
                let err = match status {
                    OpenStatus::NoSuchVm => OpenError::NoSuchVm { vm, text },
                    OpenStatus::ConnectFailed => OpenError::ConnectFailed { vm, text },
                    OpenStatus::Ok => OpenError::Other { vm, status: 0, text },
                    OpenStatus::Other(status) => OpenError::Other { vm, status, text },
                };
                let _ = w.reply.send(Err(err));
            }
            Opened::Stray => debug!(channel, "an open result for a channel closed meanwhile"),
        }
    }

    fn deliver(&mut self, channel: u32, bytes: Bytes) {
        match self.channels.route(channel) {
            Route::Deliver(sink) => match sink.try_send(bytes) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(bytes)) => self.stalled = Some(Stalled { sink: sink.clone(), bytes }),
                // The stream's writer ended (its user went): its reader closes the channel.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            },
            Route::Drop => {}
            Route::Protocol(what) => self.lose(&Broken::Channel { what, channel }.to_string()),
        }
    }

    /// The stalled channel has room again (or is gone): hand its piece on and read again.
    pub(super) fn unstall(&mut self, ok: bool) {
        let Some(s) = self.stalled.take() else { return };
        if ok {
            if let Err(mpsc::error::TrySendError::Full(bytes)) = s.sink.try_send(s.bytes) {
                self.stalled = Some(Stalled { sink: s.sink, bytes });
                return;
            }
        }
        // Time spent waiting on this side's own stream is not the far side's silence.
        self.heard = Instant::now();
        self.take_input();
    }
}

pub(super) async fn read_some(rd: Option<&mut ReadSide>) -> std::io::Result<usize> {
    match rd {
        Some(r) => {
            r.buf.reserve(MAX_DATA);
            r.half.read_buf(&mut r.buf).await
        }
        None => std::future::pending().await,
    }
}

pub(super) async fn write_some(wr: Option<&mut WriteSide>) -> std::io::Result<usize> {
    match wr {
        Some(w) if !w.out.is_empty() => w.half.write(&w.out).await,
        _ => std::future::pending().await,
    }
}

/// Waits until the stalled channel's queue has room: true, or false when it closed.
pub(super) async fn has_room(stalled: Option<&Stalled>) -> bool {
    match stalled {
        Some(s) => s.sink.reserve().await.is_ok(),
        None => std::future::pending().await,
    }
}
