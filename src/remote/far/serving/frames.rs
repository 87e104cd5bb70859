//! The frames on the near side's connection: those it sends (each handled as it comes, Data
//! passed to its channel's VM, waiting when that queue is full), the channels' events sent
//! back numbered, the VM list when it changed, and every frame encoded into the
//! connection's buffer (compressed when that pays).

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};
use tracing::{debug, info, warn};

use super::{Ended, Session};
use crate::remote::far::channel::{self, Event};
use crate::remote::protocol::codec::wire_len;
use crate::remote::protocol::frame::{Body, ByeReason, Frame, OpenStatus, VmInfo};
use crate::remote::protocol::resume::Received;
use crate::remote::protocol::FarCodec;

impl Session {
    /// Decodes and handles whole frames read, until a channel's queue is full.
    pub(super) fn take_input(&mut self) {
        while self.stalled.is_none() && self.ended.is_none() {
            let Some(reader) = &mut self.reader else { return };
            match FarCodec.decode(&mut reader.buf) {
                Ok(Some(frame)) => {
                    self.last_heard = Instant::now();
                    self.on_frame(frame);
                }
                Ok(None) => return,
                Err(e) => return self.lose_connection(&format!("bad stream: {e}"), Some((ByeReason::Protocol, e.to_string()))),
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        match self.resume.receive(&frame) {
            Err(e) => self.lose_connection(&format!("bad stream: {e}"), Some((ByeReason::Protocol, e.to_string()))),
            Ok(Received::Link) => match frame.body {
                Body::Ping(stamp) => {
                    let pong = self.resume.link(Body::Pong(stamp));
                    self.emit(&pong);
                }
                Body::Ack | Body::Pong(_) => {}
                Body::Bye { reason, text } => {
                    info!(?reason, "the near side said goodbye: {text}");
                    if reason == ByeReason::ShuttingDown {
                        self.ended = Some(Ended::NearLeft);
                    }
                    self.lose_connection("the near side said goodbye", None);
                }
                other => self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("a {:?} frame in the middle of a connection", other.kind())))),
            },
            Ok(Received::Deliver) => {
                if let Some(ack) = self.resume.after_delivery(&mut self.ack_at, Instant::now()) {
                    self.emit(&ack);
                }
                let channel = frame.channel;
                match frame.body {
                    Body::Open { vm } => self.open(channel, vm),
                    Body::Close { .. } => {
                        debug!(channel, "the near side closed a channel");
                        self.channels.remove(&channel);
                    }
                    Body::Data(bytes) => self.pass_to_vm(channel, bytes),
                    other => self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("a near side does not send {:?} frames", other.kind())))),
                }
            }
        }
    }

    fn open(&mut self, channel: u32, vm: u32) {
        if self.channels.contains_key(&channel) {
            return self.lose_connection("bad stream", Some((ByeReason::Protocol, format!("channel {channel} is open already"))));
        }
        match self.vms.endpoint(vm) {
            Some(endpoint) => {
                debug!(channel, vm, %endpoint, "opening a channel");
                self.channels.insert(channel, channel::open(channel, endpoint, self.gather, self.events_tx.clone()));
            }
            None => {
                // Past the limit if need be: this answers a frame already taken, and there is
                // one per channel.
                let text = format!("no VM {vm} here (it exited, or it cannot be reached)");
                match self.resume.send_beyond(channel, Body::Opened { status: OpenStatus::NoSuchVm, text }) {
                    Ok(frame) => self.emit(&frame),
                    Err(e) => warn!(channel, "an open result was not sent: {e}"),
                }
            }
        }
    }

    fn pass_to_vm(&mut self, channel: u32, bytes: Bytes) {
        // A channel closed here already: its Close is on the way to the near side.
        let Some(c) = self.channels.get(&channel) else { return };
        match c.to_vm.try_send(bytes) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(bytes)) => self.stalled = Some((channel, bytes)),
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    pub(super) fn on_event(&mut self, e: Event) {
        match e {
            Event::Opened { channel, result } if self.channels.contains_key(&channel) => match result {
                Ok(()) => self.send(channel, Body::Opened { status: OpenStatus::Ok, text: String::new() }),
                Err((status, text)) => {
                    self.channels.remove(&channel);
                    self.send(channel, Body::Opened { status, text });
                }
            },
            Event::Data { channel, bytes } if self.channels.contains_key(&channel) => self.send(channel, Body::Data(bytes)),
            Event::Closed { channel, reason, text } => {
                if self.channels.remove(&channel).is_some() {
                    self.send(channel, Body::Close { reason, text });
                }
            }
            // Events of a channel the near side closed meanwhile.
            Event::Opened { .. } | Event::Data { .. } => {}
        }
    }

    /// Numbers a frame and writes it when a near side is connected (else the replay will).
    fn send(&mut self, channel: u32, body: Body) {
        match self.resume.send(channel, body) {
            Ok(frame) => {
                self.ack_at = None;
                self.emit(&frame);
            }
            Err(e) => warn!(channel, "a frame was not sent: {e}"),
        }
    }

    pub(super) fn send_list(&mut self) {
        if !self.list_due {
            return;
        }
        let body = if self.placed {
            Body::VmListPlaced(self.vms.list().to_vec())
        } else {
            // A near side of protocol 3 has no place in its list.
            Body::VmList(self.vms.list().iter().map(|v| VmInfo { place: String::new(), ..v.clone() }).collect())
        };
        match wire_len(&body) {
            Ok(cost) if self.resume.out.has_room(cost) => {
                self.list_due = false;
                self.send(0, body);
            }
            Ok(_) => {}
            Err(e) => {
                warn!("the VM list cannot be sent: {e}");
                self.list_due = false;
            }
        }
    }

    pub(super) fn emit(&mut self, frame: &Frame) {
        if let Some(w) = &mut self.writer {
            let wrote = if self.squeeze { FarCodec::encode_squeezed(frame, &mut w.buf, &mut self.squeezed) } else { FarCodec.encode(frame, &mut w.buf) };
            if let Err(e) = wrote {
                warn!("a frame could not be encoded: {e}");
            }
        }
    }
}
