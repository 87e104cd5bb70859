//! A channel that gathers: its VM connection relayed through [`remote::stop_answers::relay::Relay`], which
//! reads the VM's stream for stops, sends jdwpmux's own commands between the near side's
//! packets, and says where a stop's answers go. This file does what the relay says, in
//! order: the near side's bytes and the relay's commands to the VM, the VM's bytes and each
//! stop's answers (as their in-band packet, `remote::stop_answers::inband`) to the session as
//! `Event::Data` pieces of at most `MAX_DATA`.
//!
//! One loop owns both halves, as the relay is one state: so that the VM is always read
//! (a VM blocked writing to jdwpmux stops reading its socket), writes to the VM go from a
//! queue the loop drains when the socket takes them, and the near side's data is taken only
//! while that queue is short. The session's backpressure works as on the plain path: while
//! it takes no data, the VM is not read.

use bytes::Bytes;
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::event::Event;
use crate::remote::protocol::frame::{CloseReason, MAX_DATA};
use crate::remote::stop_answers::inband;
use crate::remote::stop_answers::plan::Limits;
use crate::remote::stop_answers::relay::{Out, Relay};

/// Bytes queued for the VM past which the near side's data waits (the relay's own commands
/// are never held back: a stop's plan is bounded).
const TO_VM_HIGH: usize = 4 * MAX_DATA;

enum Wake {
    Vm(std::io::Result<usize>),
    Near(Option<Bytes>),
    Wrote(std::io::Result<usize>),
    Deadline,
}

/// Relays until either end closes; returns why.
pub async fn run(
    channel: u32,
    limits: Limits,
    mut read: OwnedReadHalf,
    mut write: OwnedWriteHalf,
    events: &mpsc::Sender<Event>,
    from_near: &mut mpsc::Receiver<Bytes>,
) -> (CloseReason, String) {
    let mut relay = Relay::new(true, limits);
    let mut buf = vec![0u8; MAX_DATA];
    let mut to_vm: VecDeque<u8> = VecDeque::new();
    let vm_fd = write.as_ref().as_raw_fd();
    loop {
        let deadline = relay.deadline().map(Instant::from_std);
        let wake = {
            let (head, _) = to_vm.as_slices();
            tokio::select! {
                r = read.read(&mut buf) => Wake::Vm(r),
                r = write.write(head), if !head.is_empty() => Wake::Wrote(r),
                b = from_near.recv(), if to_vm.len() < TO_VM_HIGH => Wake::Near(b),
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => Wake::Deadline,
            }
        };
        let outs = match wake {
            Wake::Vm(Ok(0)) => return (CloseReason::VmClosed, "the VM closed the connection".to_string()),
            Wake::Vm(Ok(n)) => relay.from_vm(&buf[..n], std::time::Instant::now()),
            Wake::Vm(Err(e)) => return (CloseReason::Error, format!("reading from the VM: {e}")),
            Wake::Near(Some(bytes)) => relay.from_near(&bytes, std::time::Instant::now()),
            // The session dropped its end: the near side closed the channel. What it sent
            // before goes to the VM first, then the resumes of what the VM still holds
            // suspended VM-wide (the task is aborted if the VM does not take them).
            Wake::Near(None) => {
                let resumes = relay.let_go();
                if !resumes.is_empty() {
                    debug!(bytes = resumes.len(), "resuming the VM's VM-wide suspensions before its connection closes");
                }
                to_vm.extend(resumes);
                let (head, tail) = to_vm.as_slices();
                let _ = write.write_all(head).await;
                let _ = write.write_all(tail).await;
                return (CloseReason::Done, String::new());
            }
            Wake::Wrote(Ok(n)) => {
                to_vm.drain(..n);
                if to_vm.is_empty() {
                    crate::park::wrote_to(vm_fd);
                }
                continue;
            }
            Wake::Wrote(Err(e)) => return (CloseReason::Error, format!("writing to the VM: {e}")),
            Wake::Deadline => relay.tick(std::time::Instant::now()),
        };
        let had = to_vm.len();
        for out in outs {
            let bytes = match out {
                Out::ToVm(b) => {
                    to_vm.extend(b);
                    continue;
                }
                Out::ToNear(b) => Bytes::from(b),
                Out::Gathered(answers) => match inband::packet(relay.own_id(), &answers) {
                    Ok(p) => {
                        debug!(event = answers.event_id, answers = answers.answers.len(), "a stop's answers go before its event");
                        Bytes::copy_from_slice(p.as_bytes())
                    }
                    Err(e) => {
                        warn!("a stop's answers are not sent: {e}");
                        continue;
                    }
                },
            };
            if !to_near(channel, bytes, events).await {
                return (CloseReason::Done, String::new());
            }
        }
        if had == 0 && !to_vm.is_empty() {
            // Written at once when the socket takes it (nearly always): a command costs no
            // extra turn of the loop. What it does not take waits for the `write` above.
            if let Err(e) = write_now(&write, &mut to_vm) {
                return (CloseReason::Error, format!("writing to the VM: {e}"));
            }
            if to_vm.is_empty() {
                // The VM's agent was woken: let it run before this thread sleeps, as the
                // plain path does (`crate::park`).
                crate::park::wrote_to(vm_fd);
            }
        }
    }
}

/// Writes what the VM's socket takes without waiting.
fn write_now(write: &OwnedWriteHalf, to_vm: &mut VecDeque<u8>) -> std::io::Result<()> {
    while !to_vm.is_empty() {
        let (head, _) = to_vm.as_slices();
        match write.try_write(head) {
            Ok(n) => drop(to_vm.drain(..n)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends `bytes` to the session in pieces of at most `MAX_DATA`; false when it is gone.
async fn to_near(channel: u32, mut bytes: Bytes, events: &mpsc::Sender<Event>) -> bool {
    while !bytes.is_empty() {
        let piece = bytes.split_to(bytes.len().min(MAX_DATA));
        if events.send(Event::Data { channel, bytes: piece }).await.is_err() {
            return false;
        }
    }
    true
}

#[cfg(test)]
#[path = "gathering_tests.rs"]
mod tests;
