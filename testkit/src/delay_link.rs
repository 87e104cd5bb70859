//! A link with added delay, in front of a test host's sshd: these machines have no netem
//! (`tc qdisc ... netem` fails), so a relay on this machine takes ssh's TCP connections and
//! delivers every chunk it reads at its arrival time + D, each way, in order. With D = 0 it is
//! a plain relay: the hop's own cost, apart from the delay.
//!
//! A connection is two pipes; a pipe is a reader thread that stamps each chunk with its due
//! time and a writer thread that sleeps until then and writes it, so a chunk's delay does not
//! hold up the reading of the next one (a link carries many chunks at once).
//!
//! The relay also counts the link's round trips (`turns`): ssh's bytes are encrypted, so what
//! can be seen is when chunks pass and which way. A turn is a burst of chunks towards the host
//! answered by a chunk from the host that could be its answer: one read at least D after the
//! burst's first chunk (the burst reached the host no sooner). Each turn is a time the client
//! waited for the link: a client that sends many commands without waiting for their replies
//! makes one burst and one turn; one that waits for each reply makes a turn per command. A
//! chunk from the host that came sooner (an answer to something older, or news the host sends
//! by itself) does not end the burst. Used by the benchmark (`benches/relay/far.rs`) and the
//! integration tests alike.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::link_relay::{deliver, Due, Relay};

/// Chunks in flight per direction before the reader waits (bounded like every queue here).
const IN_FLIGHT: usize = 4096;
const CHUNK: usize = 64 * 1024;

/// When a chunk read at `arrival` is delivered: `arrival + delay`, but never before the chunk
/// ahead of it (`last_due`): order is kept, as on one TCP stream.
pub fn due_time(arrival: Instant, delay: Duration, last_due: Option<Instant>) -> Instant {
    let due = arrival + delay;
    last_due.map_or(due, |l| due.max(l))
}

/// One connection's round-trip counting: the first chunk towards the host since the last turn.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    since: Option<Instant>,
}

impl Burst {
    /// A chunk towards the host, read at `now`.
    pub fn up(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// A chunk from the host, read at `now`: whether it ends a turn (it could answer the
    /// burst, which reached the host `delay` after its first chunk).
    pub fn down(&mut self, now: Instant, delay: Duration) -> bool {
        match self.since {
            Some(first) if now >= first + delay => {
                self.since = None;
                true
            }
            _ => false,
        }
    }
}

/// The relay: listens on 127.0.0.1:`port()`, forwards each connection to `target`.
pub struct DelayLink {
    relay: Relay,
    pub delay: Duration,
    /// Round trips of all connections so far (see the module's doc).
    turns: Arc<AtomicU64>,
}

impl DelayLink {
    pub fn start(target: SocketAddr, delay: Duration) -> Result<DelayLink> {
        let turns = Arc::new(AtomicU64::new(0));
        let t = turns.clone();
        let relay = Relay::start("delay relay", target, move |client, server| {
            let burst = Arc::new(Mutex::new(Burst::default()));
            pipe(client.try_clone()?, server.try_clone()?, delay, Way::Up(burst.clone()));
            pipe(server, client, delay, Way::Down(burst, t.clone()));
            Ok(())
        })?;
        Ok(DelayLink { relay, delay, turns })
    }

    pub fn port(&self) -> u16 {
        self.relay.port()
    }

    /// The link's round trips so far, every connection's (see the module's doc): read it
    /// before and after what is to be counted.
    pub fn turns(&self) -> u64 {
        self.turns.load(Ordering::SeqCst)
    }
}

/// Which way a pipe carries bytes, for the counting.
#[derive(Clone)]
enum Way {
    Up(Arc<Mutex<Burst>>),
    Down(Arc<Mutex<Burst>>, Arc<AtomicU64>),
}

impl Way {
    fn chunk(&self, now: Instant, delay: Duration) {
        match self {
            Way::Up(b) => {
                if let Ok(mut b) = b.lock() {
                    b.up(now);
                }
            }
            Way::Down(b, turns) => {
                if b.lock().is_ok_and(|mut b| b.down(now, delay)) {
                    turns.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}

/// Bytes read from `from` are written to `to` at their arrival + `delay`; `to`'s write side is
/// shut once `from` ends and everything read was delivered.
fn pipe(mut from: TcpStream, to: TcpStream, delay: Duration, way: Way) {
    let (tx, rx): (SyncSender<Due>, Receiver<Due>) = sync_channel(IN_FLIGHT);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        let mut last = None;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let now = Instant::now();
            way.chunk(now, delay);
            let due = due_time(now, delay, last);
            last = Some(due);
            if tx.send(Due { at: due, bytes: buf[..n].to_vec() }).is_err() {
                break;
            }
        }
    });
    deliver(rx, to);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{Shutdown, TcpListener};

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

    #[test]
    fn a_turn_is_a_burst_up_answered_no_sooner_than_it_could_be() {
        let t = Instant::now();
        let d = Duration::from_millis(10);
        let ms = |n: u64| t + Duration::from_millis(n);
        let mut b = Burst::default();
        assert!(!b.down(ms(0), d), "news from the host with nothing asked");
        b.up(ms(0));
        b.up(ms(1));
        b.up(ms(2));
        assert!(!b.down(ms(5), d), "too soon to answer the burst");
        assert!(b.down(ms(10), d), "the burst answered: one turn for three chunks up");
        assert!(!b.down(ms(11), d), "more of the same answer");
        b.up(ms(20));
        assert!(b.down(ms(31), d));
        // With no delay every change of direction is a turn.
        b.up(ms(40));
        assert!(b.down(ms(40), Duration::ZERO));
    }

    /// A client that waits for each answer makes a turn per exchange; one that sends all at
    /// once makes one.
    #[test]
    fn turns_are_counted_per_wait() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = echo.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 64];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => s.write_all(&buf[..n]).unwrap(),
                }
            }
        });
        let link = DelayLink::start(addr, Duration::from_millis(5)).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", link.port())).unwrap();
        c.set_nodelay(true).unwrap();
        let mut one = [0u8; 1];
        for i in 0..4u8 {
            c.write_all(&[i]).unwrap();
            c.read_exact(&mut one).unwrap();
        }
        assert_eq!(link.turns(), 4);
        c.write_all(&[1, 2, 3]).unwrap();
        let mut three = [0u8; 3];
        c.read_exact(&mut three).unwrap();
        assert_eq!(link.turns(), 5);
        drop(c);
        server.join().unwrap();
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
