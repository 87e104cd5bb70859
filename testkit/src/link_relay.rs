//! What the delay relay (`delay_link.rs`) and the thin link (`rate_link.rs`) share: a
//! listener on 127.0.0.1 that connects each client to the target and hands both sockets to
//! the link's own pipes, everything shut down when it is dropped; and the writer half of a
//! pipe, which writes each piece of bytes when it is due. A crate that includes a link module
//! by path (the benchmark) includes this one beside it, as `link_relay`.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Bytes and when they are due at the other end.
pub struct Due {
    pub at: Instant,
    pub bytes: Vec<u8>,
}

/// The listener of a link: see the module's doc.
pub struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    /// Every socket of every connection, shut down on drop to end its threads.
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// Listens; each connection's client and target sockets (TCP_NODELAY set: the relay must
    /// not hold back small packets of its own accord, and ssh sets it too) go to `serve`.
    /// `what` names the relay in its messages.
    pub fn start(what: &'static str, target: SocketAddr, serve: impl Fn(TcpStream, TcpStream) -> Result<()> + Send + 'static) -> Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").with_context(|| format!("bind the {what}"))?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (s, o) = (stop.clone(), open.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                if let Err(e) = connect(client, target, &o).and_then(|(c, t)| serve(c, t)) {
                    eprintln!("{what}: {e:#}");
                }
            }
        });
        Ok(Relay { port, stop, open })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn connect(client: TcpStream, target: SocketAddr, open: &Mutex<Vec<TcpStream>>) -> Result<(TcpStream, TcpStream)> {
    let server = TcpStream::connect_timeout(&target, Duration::from_secs(10)).with_context(|| format!("connect to {target}"))?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    if let Ok(mut o) = open.lock() {
        o.push(client.try_clone()?);
        o.push(server.try_clone()?);
    }
    Ok((client, server))
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Ok(open) = self.open.lock() {
            for s in open.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// The writer half of a pipe, on a thread of its own: writes each piece to `to` when it is
/// due, in order, and shuts `to`'s write side once the reader half ended and everything was
/// written.
pub fn deliver(rx: Receiver<Due>, mut to: TcpStream) {
    std::thread::spawn(move || {
        for d in rx {
            let now = Instant::now();
            if d.at > now {
                std::thread::sleep(d.at - now);
            }
            if to.write_all(&d.bytes).is_err() {
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
