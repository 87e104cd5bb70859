//! A recording TCP relay put between the proxy and a real VM, so a test can see every packet
//! the proxy sent to the VM without trusting the proxy's own account.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::wire::{try_decode, Packet, HANDSHAKE};

pub struct Tap {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Packet>>>,
    accept: tokio::task::AbortHandle,
}

impl Tap {
    /// Listens on 127.0.0.1:0 and relays each connection to `target`.
    pub async fn start(target: SocketAddr) -> Tap {
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
                tokio::spawn(relay(inbound, outbound, rec.clone()));
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
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn relay(inbound: TcpStream, outbound: TcpStream, seen: Arc<Mutex<Vec<Packet>>>) {
    let (mut ir, mut iw) = inbound.into_split();
    let (mut or, mut ow) = outbound.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut or, &mut iw).await;
        let _ = iw.shutdown().await;
    });
    let mut buf = Vec::new();
    let mut skipped = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match ir.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if ow.write_all(&chunk[..n]).await.is_err() {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if !skipped && buf.len() >= HANDSHAKE.len() {
            buf.drain(..HANDSHAKE.len());
            skipped = true;
        }
        if skipped {
            while let Ok(Some((p, used))) = try_decode(&buf, 1 << 30) {
                buf.drain(..used);
                if let Ok(mut v) = seen.lock() {
                    v.push(p);
                }
            }
        }
    }
    let _ = ow.shutdown().await;
    down.abort();
}
