//! A link with added delay, in front of a test host's sshd: these machines have no netem
//! (`tc qdisc ... netem` fails), so a relay on this machine takes ssh's TCP connections and
//! delivers every chunk it reads at its arrival time + D, each way, in order. With D = 0 it is
//! a plain relay: the hop's own cost, apart from the delay.
//!
//! A connection is two pipes; a pipe is a reader thread that stamps each chunk with its due
//! time and a writer thread that sleeps until then and writes it, so a chunk's delay does not
//! hold up the reading of the next one (a link carries many chunks at once).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Chunks in flight per direction before the reader waits (bounded like every queue here).
const IN_FLIGHT: usize = 4096;
const CHUNK: usize = 64 * 1024;

/// A chunk and when it is due at the other end.
struct Chunk {
    due: Instant,
    bytes: Vec<u8>,
}

/// When a chunk read at `arrival` is delivered: `arrival + delay`, but never before the chunk
/// ahead of it (`last_due`): order is kept, as on one TCP stream.
pub fn due_time(arrival: Instant, delay: Duration, last_due: Option<Instant>) -> Instant {
    let due = arrival + delay;
    last_due.map_or(due, |l| due.max(l))
}

/// The relay: listens on 127.0.0.1:`port()`, forwards each connection to `target`.
pub struct DelayLink {
    port: u16,
    pub delay: Duration,
    stop: Arc<AtomicBool>,
    /// Every socket of every connection, shut down on drop to end its threads.
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl DelayLink {
    pub fn start(target: SocketAddr, delay: Duration) -> Result<DelayLink> {
        let listener = TcpListener::bind("127.0.0.1:0").context("bind the delay relay")?;
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
                if let Err(e) = connect(client, target, delay, &o) {
                    eprintln!("delay relay: {e:#}");
                }
            }
        });
        Ok(DelayLink { port, delay, stop, open })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for DelayLink {
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

fn connect(client: TcpStream, target: SocketAddr, delay: Duration, open: &Mutex<Vec<TcpStream>>) -> Result<()> {
    let server = TcpStream::connect_timeout(&target, Duration::from_secs(10)).with_context(|| format!("connect to {target}"))?;
    // The relay must not hold back small packets of its own accord: ssh sets TCP_NODELAY too.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    if let Ok(mut o) = open.lock() {
        o.push(client.try_clone()?);
        o.push(server.try_clone()?);
    }
    pipe(client.try_clone()?, server.try_clone()?, delay);
    pipe(server, client, delay);
    Ok(())
}

/// Bytes read from `from` are written to `to` at their arrival + `delay`; `to`'s write side is
/// shut once `from` ends and everything read was delivered.
fn pipe(mut from: TcpStream, to: TcpStream, delay: Duration) {
    let (tx, rx): (SyncSender<Chunk>, Receiver<Chunk>) = sync_channel(IN_FLIGHT);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        let mut last = None;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let due = due_time(Instant::now(), delay, last);
            last = Some(due);
            if tx.send(Chunk { due, bytes: buf[..n].to_vec() }).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let mut to = to;
        for c in rx {
            let now = Instant::now();
            if c.due > now {
                std::thread::sleep(c.due - now);
            }
            if to.write_all(&c.bytes).is_err() {
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_due_after_the_delay_and_never_before_the_one_ahead() {
        let t = Instant::now();
        let d = Duration::from_millis(10);
        assert_eq!(due_time(t, d, None), t + d);
        assert_eq!(due_time(t, d, Some(t)), t + d);
        let later = t + Duration::from_millis(50);
        assert_eq!(due_time(t, d, Some(later)), later, "order kept");
        assert_eq!(due_time(t, Duration::ZERO, None), t);
    }

    /// An echo server behind the relay: every byte comes back once, in order, and no reply
    /// arrives before it could have (two passes of the delay: a lower bound only).
    #[test]
    fn bytes_pass_both_ways_in_order_and_not_early() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = echo.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => s.write_all(&buf[..n]).unwrap(),
                }
            }
        });
        let delay = Duration::from_millis(15);
        let link = DelayLink::start(addr, delay).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", link.port())).unwrap();
        let sent: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let t0 = Instant::now();
        for piece in sent.chunks(1000) {
            c.write_all(piece).unwrap();
        }
        let mut got = vec![0u8; sent.len()];
        c.read_exact(&mut got[..1]).unwrap();
        assert!(t0.elapsed() >= 2 * delay, "the first byte came back after {:?}", t0.elapsed());
        c.read_exact(&mut got[1..]).unwrap();
        assert_eq!(got, sent);
        c.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        server.join().unwrap();
    }
}
