//! One channel: the far side's TCP connection to one VM's agent, owned by one task. It
//! connects, then relays bytes both ways until either end closes: what the VM sends goes to
//! the session as `Event::Data` pieces of at most `MAX_DATA` bytes, over a bounded channel
//! the session stops taking from when its unacknowledged bytes reach their limit (so a VM's
//! output waits in its own socket, not in memory here); what the near side sends comes in
//! over a bounded channel of its own. A channel whose near side asked for stops' answers
//! relays through `super::gathering` instead.

use std::os::fd::AsRawFd;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, Instrument};

use crate::remote::protocol::frame::{CloseReason, OpenStatus, MAX_DATA};
use crate::remote::stop_answers::plan::Limits;
use crate::transport::open::ConnectError;
use crate::transport::Endpoint;

/// How long connecting to a VM's agent may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Pieces of the near side's data queued for one VM before the session stops reading the
/// stream (each at most `MAX_DATA` bytes).
pub const TO_VM_QUEUE: usize = 64;

pub use super::event::Event;

/// How long a channel the near side closed may take to write what the near side sent
/// before the close: then its VM connection is closed regardless.
pub const LET_GO: Duration = Duration::from_secs(2);

/// The session's end of a channel. Dropping it closes the VM connection once what the near
/// side sent before it is written (at most [`LET_GO`] later): the near side's last commands
/// are what leaves the VM as a debugger would want it (the resumes of what it held
/// suspended; see `Session::settle_then_reset` on the near side), and a VM connection
/// closed before them would leave the VM suspended or its objects pinned.
#[derive(Debug)]
pub struct Channel {
    pub to_vm: mpsc::Sender<Bytes>,
    /// None once given to [`Channel::into_task`].
    task: Option<JoinHandle<()>>,
}

impl Channel {
    /// Closes the channel and gives its task, which ends once it has written what the near
    /// side sent (for the far side to wait on before it exits).
    pub fn into_task(mut self) -> Option<JoinHandle<()>> {
        self.task.take()
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else { return };
        // The task ends by itself once it has written what `to_vm` holds (dropped with this);
        // a VM that does not read is given up on after LET_GO.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let task = task.abort_handle();
                rt.spawn(async move {
                    tokio::time::sleep(LET_GO).await;
                    task.abort();
                });
            }
            Err(_) => task.abort(),
        }
    }
}

/// Starts channel `channel` to the VM at `addr`; `gather`: the near side asked for stops'
/// answers, gathered within these limits (see `super::gathering`), else the bytes are
/// relayed unchanged.
pub fn open(channel: u32, endpoint: Endpoint, gather: Option<Limits>, events: mpsc::Sender<Event>) -> Channel {
    let (to_vm, from_near) = mpsc::channel(TO_VM_QUEUE);
    let span = tracing::info_span!("channel", channel, vm = %endpoint, gather = gather.is_some());
    let task = tokio::spawn(run(channel, endpoint, gather, events, from_near).instrument(span));
    Channel { to_vm, task: Some(task) }
}

async fn run(channel: u32, endpoint: Endpoint, gather: Option<Limits>, events: mpsc::Sender<Event>, mut from_near: mpsc::Receiver<Bytes>) {
    // The sessions' own connect step: a container's JVM is entered the same way here.
    let stream = match crate::transport::open::connect_agent(&endpoint, CONNECT_TIMEOUT).await {
        Ok(s) => s,
        Err(ConnectError::ConnectTimeout(_)) => {
            let text = format!("{endpoint}: no answer within {} s", CONNECT_TIMEOUT.as_secs());
            let _ = events.send(Event::Opened { channel, result: Err((OpenStatus::ConnectFailed, text)) }).await;
            return;
        }
        Err(e) => {
            let _ = events.send(Event::Opened { channel, result: Err((OpenStatus::ConnectFailed, format!("{endpoint}: {e}"))) }).await;
            return;
        }
    };
    if events.send(Event::Opened { channel, result: Ok(()) }).await.is_err() {
        return;
    }
    debug!("connected");
    let (read, write) = stream.into_split();
    let (reason, text) = if let Some(limits) = gather {
        super::gathering::run(channel, limits, read, write, &events, &mut from_near).await
    } else {
        plain(channel, read, write, &events, &mut from_near).await
    };
    debug!(?reason, text, "closed");
    if reason != CloseReason::Done {
        let _ = events.send(Event::Closed { channel, reason, text }).await;
    }
}

/// Relays bytes both ways unchanged until either end closes; returns why.
async fn plain(
    channel: u32,
    mut read: OwnedReadHalf,
    mut write: OwnedWriteHalf,
    events: &mpsc::Sender<Event>,
    from_near: &mut mpsc::Receiver<Bytes>,
) -> (CloseReason, String) {
    let from_vm = async {
        // One buffer for every read, each piece copied out at its size: a piece split off
        // would keep the buffer shared while it waits for an ack, and the next read would
        // then allocate a new MAX_DATA buffer, a large allocation per packet.
        let mut buf = vec![0u8; MAX_DATA];
        loop {
            match read.read(&mut buf).await {
                Ok(0) => return (CloseReason::VmClosed, "the VM closed the connection".to_string()),
                Ok(n) => {
                    let bytes = Bytes::copy_from_slice(&buf[..n]);
                    if events.send(Event::Data { channel, bytes }).await.is_err() {
                        return (CloseReason::Done, String::new());
                    }
                }
                Err(e) => return (CloseReason::Error, format!("reading from the VM: {e}")),
            }
        }
    };
    let vm_fd = write.as_ref().as_raw_fd();
    let to_vm = async {
        while let Some(bytes) = from_near.recv().await {
            if let Err(e) = write.write_all(&bytes).await {
                return (CloseReason::Error, format!("writing to the VM: {e}"));
            }
            // The VM's agent was woken: before this thread sleeps it lets the agent run, so
            // its answer is often there by the next poll (`crate::park`), as in `serve`.
            crate::park::wrote_to(vm_fd);
        }
        // The session dropped its end: the near side closed the channel.
        (CloseReason::Done, String::new())
    };
    tokio::select! {
        r = from_vm => r,
        r = to_vm => r,
    }
}
