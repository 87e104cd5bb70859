//! The fake VM's sockets: one debugger at a time (others are accepted and closed at once, the
//! way HotSpot refuses), the handshake, a cancel-safe read loop and a writer task per connection.

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::oneshot;
use tokio::time::{timeout_at, Instant};

use super::super::ddm::apnm_payload;
use super::super::wire::*;
use super::jdwp::{handle_packet, Action};
use super::state::{Conn, Out, Shared};

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            // Transient accept errors (e.g. EMFILE): back off briefly rather than spin.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (tx, rx) = unbounded_channel();
        // Claim the slot under the lock so two quick connects cannot both be served.
        let conn = shared.with(|s| {
            if s.current.is_some() || s.stopped {
                s.connections_refused += 1;
                return None;
            }
            s.next_conn_id += 1;
            s.connections_accepted += 1;
            let conn = Arc::new(Conn::new(s.next_conn_id, tx));
            s.current = Some(conn.clone());
            s.tasks.retain(|t| !t.is_finished());
            Some(conn)
        });
        let Some(conn) = conn else {
            drop(stream);
            continue;
        };
        let (rd, wr) = stream.into_split();
        let (closed_tx, closed_rx) = oneshot::channel();
        let w = tokio::spawn(writer(wr, rx, shared.clone(), conn.id, closed_tx));
        let r = tokio::spawn(serve(rd, shared.clone(), conn, closed_rx));
        shared.with(|s| s.tasks.extend([w.abort_handle(), r.abort_handle()]));
    }
}

async fn writer(
    mut wr: OwnedWriteHalf,
    mut rx: UnboundedReceiver<Out>,
    shared: Arc<Shared>,
    conn_id: u64,
    closed: oneshot::Sender<()>,
) {
    while let Some(out) = rx.recv().await {
        match out {
            Out::Bytes(b) => {
                if wr.write_all(&b).await.is_err() {
                    break;
                }
            }
            Out::Close => break,
        }
    }
    shared.end_conn(conn_id);
    let _ = wr.shutdown().await;
    let _ = closed.send(());
}

async fn serve(mut rd: OwnedReadHalf, shared: Arc<Shared>, conn: Arc<Conn>, mut closed: oneshot::Receiver<()>) {
    let cfg = &shared.cfg;
    let mut buf = BytesMut::new();
    let deadline = Instant::now() + cfg.handshake_timeout;
    while buf.len() < HANDSHAKE.len() {
        match timeout_at(deadline, rd.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => {
                // A connect-and-close with no bytes is a liveness probe, not a protocol error.
                if !buf.is_empty() {
                    let msg = format!("no complete handshake: got {:?}", String::from_utf8_lossy(&buf));
                    shared.with(|s| s.protocol_errors.push(msg));
                }
                conn.close();
                return;
            }
        }
    }
    if buf[..HANDSHAKE.len()] != HANDSHAKE[..] {
        let msg = format!("bad handshake: {:?}", String::from_utf8_lossy(&buf[..HANDSHAKE.len()]));
        shared.with(|s| s.protocol_errors.push(msg));
        conn.close();
        return;
    }
    buf.advance(HANDSHAKE.len());
    if cfg.early_apnm {
        let apnm = apnm_payload(&cfg.app_name, 0, &cfg.app_name);
        conn.send(conn.ddm_packet(&[Chunk::new(b"APNM", apnm)]).encode());
    }
    conn.send(HANDSHAKE.to_vec());
    if let Some(policy) = cfg.startup_event {
        let first = shared.with(|s| !std::mem::replace(&mut s.startup_event_sent, true));
        if first {
            let thread = cfg.threads.first().map(|t| t.id).unwrap_or(1);
            let _ = send_event(&shared, &conn, policy, KIND_VM_START, 0, thread);
        }
    }
    loop {
        loop {
            match try_decode(&buf, cfg.max_packet_len) {
                Ok(Some((pkt, used))) => {
                    buf.advance(used);
                    let cmd = pkt.command_of();
                    if !run_actions(&shared, &conn, cmd, handle_packet(&shared, &conn, pkt)) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // HotSpot drops the connection on a bad length.
                    shared.with(|s| s.protocol_errors.push(format!("malformed packet: {e}")));
                    conn.close();
                    return;
                }
            }
        }
        buf.reserve(8192);
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(n) if n > 0 => {}
                _ => {
                    shared.end_conn(conn.id);
                    conn.close();
                    return;
                }
            },
            _ = &mut closed => return,
        }
    }
}

/// Carries out a handler's actions; false once the connection is to close.
fn run_actions(shared: &Shared, conn: &Conn, cmd: Option<(u8, u8)>, actions: Vec<Action>) -> bool {
    for a in actions {
        match a {
            Action::Reply(p) => match cmd.and_then(|c| shared.cfg.reply_delay.get(&c).copied()) {
                Some(delay) => {
                    let tx = conn.tx.clone();
                    let bytes = p.encode();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = tx.send(Out::Bytes(bytes));
                    });
                }
                None => {
                    conn.send(p.encode());
                    if shared.cfg.duplicate_replies {
                        conn.send(p.encode());
                    }
                }
            },
            Action::Send(p) => {
                conn.send(p.encode());
            }
            Action::Close => {
                conn.close();
                return false;
            }
        }
    }
    true
}

/// Sends one Event.Composite and applies its suspend policy; returns the packet id.
pub(super) fn send_event(shared: &Shared, conn: &Conn, policy: u8, kind: u8, request_id: u32, thread: u64) -> u32 {
    send_events(shared, conn, policy, &[(kind, request_id, thread)])
}

/// Sends one Event.Composite of several events and applies its suspend policy once (for the
/// first event's thread), as a VM posting them together does; returns the packet id.
pub(super) fn send_events(shared: &Shared, conn: &Conn, policy: u8, events: &[(u8, u32, u64)]) -> u32 {
    let idx = events.first().and_then(|e| shared.thread_index(e.2));
    shared.with(|s| s.apply_policy(policy, idx));
    let id = conn.next_event_id();
    conn.send(Packet::command(id, SET_EVENT, EVENT_COMPOSITE, events_payload(policy, events)).encode());
    id
}
