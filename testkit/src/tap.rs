//! A recording TCP relay put between the proxy (or a debugger) and a VM, so a test can see
//! every packet sent to the VM without trusting the proxy's own account. Started with
//! [`Tap::start_both`] it also keeps the VM's packets, both directions in one log in the
//! order the tap saw them: a packet is recorded before it is passed on, so a reply is in the
//! log before the debugger can send its next command (what [`crate::ide_counts`] counts).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use super::wire::{try_decode, Packet, HANDSHAKE};

/// One packet the tap passed on, and which way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// From the debugger side to the VM (else from the VM).
    pub to_vm: bool,
    pub packet: Packet,
}

type Log = Arc<Mutex<Vec<Seen>>>;

pub struct Tap {
    addr: SocketAddr,
    seen: Log,
    accept: tokio::task::AbortHandle,
}

impl Tap {
    /// Listens on 127.0.0.1:0 and relays each connection to `target`, recording what is sent
    /// to the VM.
    pub async fn start(target: SocketAddr) -> Tap {
        Self::start_with(target, false).await
    }

    /// Like `start`, recording the VM's packets too.
    pub async fn start_both(target: SocketAddr) -> Tap {
        Self::start_with(target, true).await
    }

    async fn start_with(target: SocketAddr, both: bool) -> Tap {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind tap");
        let addr = l.local_addr().expect("tap addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rec = seen.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = l.accept().await {
                // Refused upstream (the VM is busy or resetting): refuse downstream too.
                let Ok(outbound) = TcpStream::connect(target).await else { continue };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                tokio::spawn(relay(inbound, outbound, rec.clone(), both));
            }
        })
        .abort_handle();
        Tap { addr, seen, accept }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every packet the proxy sent to the VM so far.
    pub fn sent_to_vm(&self) -> Vec<Packet> {
        self.seen.lock().map(|v| v.iter().filter(|s| s.to_vm).map(|s| s.packet.clone()).collect()).unwrap_or_default()
    }

    /// Both directions so far, in the order seen (the VM's only with `start_both`).
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn relay(inbound: TcpStream, outbound: TcpStream, seen: Log, both: bool) {
    let (ir, mut iw) = inbound.into_split();
    let (mut or, ow) = outbound.into_split();
    let down = if both {
        tokio::spawn(pass(or, iw, seen.clone(), false))
    } else {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut or, &mut iw).await;
            let _ = iw.shutdown().await;
        })
    };
    pass(ir, ow, seen, true).await;
    down.abort();
}

/// Relays one direction, recording each whole packet (after the handshake) before passing
/// on the bytes that completed it.
async fn pass(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, seen: Log, to_vm: bool) {
    let mut buf = Vec::new();
    let mut skipped = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if !skipped && buf.len() >= HANDSHAKE.len() {
            buf.drain(..HANDSHAKE.len());
            skipped = true;
        }
        if skipped {
            while let Ok(Some((packet, used))) = try_decode(&buf, 1 << 30) {
                buf.drain(..used);
                if let Ok(mut v) = seen.lock() {
                    v.push(Seen { to_vm, packet });
                }
            }
        }
        if to.write_all(&chunk[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
