//! One short task per debugger connection: it reads the debugger's handshake (under a
//! timeout), then hands the socket to the VM session, which relays from then on.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use crate::capture::CaptureHandle;
use crate::jdwp::handshake::{scan_debugger, Scan, HANDSHAKE};
use crate::registry::Registry;
use crate::transport::open::describe;
use crate::session::{DebuggerLink, VmState};

/// First read size for a debugger connection (the handshake and its first commands).
const READ_CHUNK: usize = 64 * 1024;

/// Which VM a debugger port leads to.
#[derive(Clone)]
pub enum Target {
    /// A VM's own port. Looked up at accept time: the session behind a VM may change.
    Vm { registry: std::sync::Arc<Registry>, id: crate::registry::VmId },
    Current(std::sync::Arc<Registry>),
}

pub async fn serve(
    mut sock: TcpStream,
    peer: SocketAddr,
    conn: u64,
    target: Target,
    handshake_timeout: Duration,
    capture: Option<CaptureHandle>,
    cancel: CancellationToken,
) {
    let _ = sock.set_nodelay(true);
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    // 1. The debugger's handshake, answered by the proxy itself.
    let read = tokio::time::timeout(handshake_timeout, async {
        loop {
            match scan_debugger(&input) {
                Scan::Handshake => return Ok(true),
                Scan::Garbage | Scan::EarlyPacket(_) => return Ok(false),
                Scan::Incomplete => {}
            }
            if sock.read_buf(&mut input).await? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
    });
    match read.await {
        Err(_) => return info!("closing: no handshake from the debugger within {handshake_timeout:?}"),
        Ok(Err(e)) => return debug!("debugger left before its handshake: {e}"),
        Ok(Ok(false)) => return info!(got = %describe(&input), "closing: bad handshake from the debugger"),
        Ok(Ok(true)) => {}
    }
    let _ = input.split_to(HANDSHAKE.len());

    // 2. Hand the connection to the VM's session, which serves it from then on (one task
    //    per VM owns both sockets). A refusal closes it without the handshake echo.
    let (vm_name, handle, which) = match target {
        Target::Vm { registry, id } => match registry.get(id) {
            Some(e) => (e.name, e.handle, "the VM"),
            None => return info!("closing: the VM is gone"),
        },
        Target::Current(reg) => match reg.current_or_why() {
            Ok(e) => (e.name, e.handle, "the current VM"),
            Err(why) => return info!("closing: no current VM: {why}"),
        },
    };
    // A VM its session cannot reach now: waiting for the attach deadline would only leave
    // the debugger with a bare "handshake failed" seconds later. Closed at once, with why.
    match handle.status().state {
        VmState::Unreachable => {
            return info!(vm = %vm_name, "closing: {which} cannot be reached now (`jdwpmux list` says why; `jdwpmux select` picks another)")
        }
        VmState::Busy => return info!(vm = %vm_name, "closing: another debugger holds {which}'s agent (`jdwpmux list` names it)"),
        _ => {}
    }
    let capture = capture.map(|c| (c, vm_name.clone()));
    let link = DebuggerLink { conn, peer, sock, input, capture };
    let attached = tokio::select! {
        r = handle.attach(link) => r,
        _ = cancel.cancelled() => return,
    };
    match attached {
        Ok(()) => debug!(vm = %vm_name, "debugger connected"),
        Err(e) => info!(vm = %vm_name, reason = %e, "closing: cannot attach the debugger"),
    }
}
