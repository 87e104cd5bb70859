//! A stop's answers for a VM this session reaches itself (a local JVM, one in a container's
//! namespace): the relay the far side runs on a VM's host (`remote::stop_answers::relay`),
//! run here between the session and its own VM socket. One layer serves both places: the
//! same plan, the same holds, the same answers, judged by the same store (`near_layer`).
//!
//! Everything the session writes to the VM goes through [`LocalStops::session_wrote`]; everything
//! read from the VM through [`LocalStops::vm_sent`] before the session's decoder sees it.
//! The relay's own commands go to the VM between the session's packets, under ids the
//! session never hands out (`remote::stop_answers::FAR_IDS`), and their replies never reach
//! the session. A stop's answers come to the session as the far side sends them, their
//! in-band packet (`remote::stop_answers::inband`) before the held event, so they take
//! their place in the VM's stream exactly as on the remote path (the store knows which
//! replies and events came before them): a few kilobytes encoded and read once a stop,
//! against a copy of the code that orders them.
//!
//! Bytes that are not a stop pass through with one copy each way; the relay reads only
//! packet headers of them.

use std::time::Instant;

use bytes::BytesMut;
use tracing::{debug, warn};

use crate::remote::stop_answers::inband;
use crate::remote::stop_answers::plan::Limits;
use crate::remote::stop_answers::relay::{Out, Relay};

/// What is read at a local stop: the stopped thread's name, status, frame count and
/// frames, and the top frame's visible locals, what every IDE asks at every stop. Locally
/// every command the plan sends costs the debuggee's agent CPU and saves the debugger only
/// the proxy's hop, so the objects (`this`, fields, statics, strings, arrays) and the
/// threads view, asked by some IDEs only and tens of commands, go to the VM when asked.
pub const LOCAL_LIMITS: Limits = Limits { commands: 48, bytes: 256 * 1024, top_frames: 1, threads: 0, absent: true, objects: false };

/// The relay of one VM connection the session reaches itself.
pub(super) struct LocalStops {
    relay: Relay,
    /// Bytes for the session's decoder the relay gave while the session was writing (a hold
    /// whose plan a command of the session's completed): taken before the next decode.
    pending: BytesMut,
}

impl LocalStops {
    /// A new connection past its handshake: what the relay asks the VM first goes into
    /// `vm_out`.
    pub fn start(limits: Limits, vm_out: &mut BytesMut) -> LocalStops {
        let (mut relay, outs) = Relay::handshaken(true, limits);
        let mut pending = BytesMut::new();
        apply(&mut relay, outs, vm_out, &mut pending);
        LocalStops { relay, pending }
    }

    /// Bytes the session writes to the VM (whole packets or a streamed one's pieces).
    pub fn session_wrote(&mut self, bytes: &[u8], vm_out: &mut BytesMut) {
        let outs = self.relay.from_near(bytes, Instant::now());
        apply(&mut self.relay, outs, vm_out, &mut self.pending);
    }

    /// Bytes read from the VM: what the session's decoder is to read goes into `input`.
    pub fn vm_sent(&mut self, bytes: &[u8], vm_out: &mut BytesMut, input: &mut BytesMut) {
        input.extend_from_slice(&self.pending.split());
        let outs = self.relay.from_vm(bytes, Instant::now());
        apply(&mut self.relay, outs, vm_out, input);
    }

    /// Moves what the relay gave while the session wrote into `input`; false when nothing.
    pub fn take_pending(&mut self, input: &mut BytesMut) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        input.extend_from_slice(&self.pending.split());
        true
    }

    /// Whether a stop is held (the session's timers must run to end it at its deadline).
    pub fn holding(&self) -> bool {
        self.relay.deadline().is_some()
    }

    /// A hold past its deadline lets its bytes go without answers.
    pub fn tick(&mut self, now: Instant, vm_out: &mut BytesMut) {
        if self.relay.deadline().is_some_and(|d| now >= d) {
            debug!("a local stop's reading took too long: its event goes on without answers");
            let outs = self.relay.tick(now);
            apply(&mut self.relay, outs, vm_out, &mut self.pending);
        }
    }
}

/// Does what the relay said, in order: bytes to the VM, bytes and answers to the session.
fn apply(relay: &mut Relay, outs: Vec<Out>, vm_out: &mut BytesMut, to_session: &mut BytesMut) {
    for out in outs {
        match out {
            Out::ToVm(b) => vm_out.extend_from_slice(&b),
            Out::ToNear(b) => to_session.extend_from_slice(&b),
            Out::Gathered(answers) => match inband::packet(relay.own_id(), &answers) {
                Ok(p) => to_session.extend_from_slice(p.as_bytes()),
                Err(e) => warn!("a local stop's answers are not kept: {e}"),
            },
        }
    }
}

#[cfg(test)]
#[path = "local_stops_tests.rs"]
mod tests;
