//! One task per debugger connection: it owns the socket, answers the debugger's handshake
//! itself, attaches to a VM session, then shuttles frames both ways over bounded channels.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::capture::tap::Tap;
use crate::capture::{CaptureHandle, Direction, Leg};
use crate::jdwp::codec::{Frame, JdwpCodec, DEFAULT_STREAM_OVER};
use crate::jdwp::handshake::{scan_debugger, Scan, HANDSHAKE};
use crate::registry::Registry;
use crate::session::connect::describe;
use crate::session::{DebuggerLink, FromDebugger, ToDebugger, DEBUGGER_CHANNEL};

/// Largest command a debugger may send. Real commands are small; the biggest
/// (ClassesRedefine, SetValues) stay far below this. Larger ones close the connection.
pub const MAX_DEBUGGER_PACKET: u32 = 256 * 1024 * 1024;
/// Bytes queued for the debugger above which no more are taken from the session.
const OUT_HIGH_WATER: usize = 1024 * 1024;
const READ_CHUNK: usize = 64 * 1024;
/// Time to flush queued bytes when the connection is being closed.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);

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

    // 2. Attach to the VM; a refusal closes the socket without an echo, so the debugger
    //    reports a failed handshake at once instead of hanging.
    let (vm_name, handle) = match target {
        Target::Vm { registry, id } => match registry.get(id) {
            Some(e) => (e.name, e.handle),
            None => return info!("closing: the VM is gone"),
        },
        Target::Current(reg) => match reg.current() {
            Some(e) => (e.name, e.handle),
            None => return info!("closing: no current VM (none found yet, or the selection matches none)"),
        },
    };
    let (to_session, from_dbg) = mpsc::channel(DEBUGGER_CHANNEL);
    let (to_dbg, mut from_session) = mpsc::channel(DEBUGGER_CHANNEL);
    let link = DebuggerLink { conn, peer, rx: from_dbg, tx: to_dbg };
    if let Err(e) = handle.attach(link).await {
        return info!(vm = %vm_name, reason = %e, "closing: cannot attach the debugger");
    }
    if let Err(e) = sock.write_all(HANDSHAKE).await {
        return debug!("debugger left during the handshake: {e}");
    }
    info!(vm = %vm_name, "debugger connected");
    let mut tap = capture.as_ref().map(|c| {
        let local = sock.local_addr().unwrap_or(peer);
        let mut t = Tap::open(c, conn, &vm_name, Leg::Debugger, peer, local);
        t.handshakes();
        t
    });

    // 3. Relay. Only cancel-safe calls in the select; a frame the session cannot take yet
    //    waits in `pending` while replies keep flowing the other way.
    let mut codec = JdwpCodec::new(MAX_DEBUGGER_PACKET, DEFAULT_STREAM_OVER);
    let mut out = BytesMut::new();
    let mut pending: Option<FromDebugger> = None;
    let mut closing: Option<String> = None;
    let (mut rd, mut wr) = sock.split();
    let why: String = 'relay: loop {
        while pending.is_none() {
            match codec.decode(&mut input) {
                Ok(Some(f)) => match to_session.try_send(to_msg(f, &mut tap)) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(m)) => pending = Some(m),
                    Err(mpsc::error::TrySendError::Closed(_)) => break 'relay "the VM session ended".into(),
                },
                Ok(None) => break,
                Err(e) => break 'relay format!("bad packet from the debugger: {e}"),
            }
        }
        if let Some(reason) = closing.take() {
            break reason;
        }
        input.reserve(READ_CHUNK);
        tokio::select! {
            permit = to_session.reserve(), if pending.is_some() => match (permit, pending.take()) {
                (Ok(p), Some(m)) => p.send(m),
                _ => break "the VM session ended".into(),
            },
            r = rd.read_buf(&mut input), if pending.is_none() => match r {
                Ok(0) => break match codec.decode_eof(&mut input) {
                    Err(e) => format!("the debugger closed the connection: {e}"),
                    Ok(_) => "the debugger closed the connection".into(),
                },
                Ok(_) => {}
                Err(e) => break format!("read from the debugger failed: {e}"),
            },
            r = wr.write_buf(&mut out), if !out.is_empty() => if let Err(e) = r {
                break format!("write to the debugger failed: {e}");
            },
            m = from_session.recv(), if out.len() < OUT_HIGH_WATER => match m {
                Some(ToDebugger::Data { bytes, body }) => {
                    record_out(&mut tap, &bytes, body);
                    out.extend_from_slice(&bytes);
                    // Batch whatever else is queued into the same write.
                    while out.len() < OUT_HIGH_WATER {
                        match from_session.try_recv() {
                            Ok(ToDebugger::Data { bytes, body }) => {
                                record_out(&mut tap, &bytes, body);
                                out.extend_from_slice(&bytes);
                            }
                            Ok(ToDebugger::Close(reason)) => { closing = Some(reason); break; }
                            Err(_) => break,
                        }
                    }
                }
                Some(ToDebugger::Close(reason)) => closing = Some(reason),
                None => break "the VM session ended".into(),
            },
            _ = cancel.cancelled() => break "the proxy is shutting down".into(),
        }
    };
    // Dropping both ends tells the session this debugger is gone, before the socket closes,
    // so a debugger that reconnects at once is not mistaken for a second one.
    drop(to_session);
    drop(from_session);
    let _ = tokio::time::timeout(CLOSE_FLUSH, async {
        sock.write_all(&out).await?;
        sock.shutdown().await
    })
    .await;
    drop(tap);
    if why.contains("failed") || why.starts_with("bad") {
        warn!(vm = %vm_name, reason = %why, "debugger connection closed");
    } else {
        info!(vm = %vm_name, reason = %why, "debugger connection closed");
    }
}

fn to_msg(f: Frame, tap: &mut Option<Tap>) -> FromDebugger {
    if let Some(t) = tap.as_mut() {
        match &f {
            Frame::Packet(p) => t.packet(Direction::ToServer, p.as_bytes(), None),
            Frame::Head(_, b) => t.packet(Direction::ToServer, b, None),
            Frame::Body { bytes, .. } => t.body(Direction::ToServer, bytes),
        }
    }
    match f {
        Frame::Packet(p) => FromDebugger::Packet(p),
        Frame::Head(h, b) => FromDebugger::Head(h, b),
        Frame::Body { bytes, last } => FromDebugger::Body { bytes, last },
    }
}

fn record_out(tap: &mut Option<Tap>, bytes: &[u8], body: bool) {
    if let Some(t) = tap.as_mut() {
        if body {
            t.body(Direction::ToClient, bytes);
        } else {
            t.packet(Direction::ToClient, bytes, None);
        }
    }
}
