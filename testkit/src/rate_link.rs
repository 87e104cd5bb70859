//! A thin link: a bandwidth limit plus a delay, in front of a test host's sshd, in the style
//! of `delay_link.rs` (these machines have no netem). Each way, the bytes read are cut into
//! packets of at most [`MTU`] bytes that leave one after the other at `rate` bits per second
//! and arrive `delay` after they left, in order: a 1 MB answer at 10 Mbit/s takes 0.8 s
//! more than one byte does, as on a VPN of that speed.
//!
//! A connection is two pipes; a pipe is a reader thread that stamps each packet with its due
//! time ([`Pacer`]) and a writer thread that sleeps until then and writes it. The queue
//! between them is bounded ([`QUEUED`] packets, about 380 KB: the link's buffer): once it is
//! full the reader stops reading and the sender's socket fills, so a sender feels the link's
//! speed as it would feel a real one's (ssh's window, TCP's own).

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::link_relay::{deliver, Due, Relay};

/// The largest packet the link carries: what a byte's wait for the link is made of.
pub const MTU: usize = 1500;
/// Packets queued per direction before the reader waits (the link's buffer).
pub const QUEUED: usize = 256;

/// When each packet of a pipe leaves and arrives: one after the other at `bits_per_s`, each
/// `delay` on the way.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    bits_per_s: u64,
    delay: Duration,
    /// When the link is free again (the last packet's last bit has left).
    free_at: Option<Instant>,
}

impl Pacer {
    pub fn new(bits_per_s: u64, delay: Duration) -> Pacer {
        Pacer { bits_per_s: bits_per_s.max(1), delay, free_at: None }
    }

    /// How long `bytes` take to leave.
    pub fn on_the_wire(&self, bytes: usize) -> Duration {
        Duration::from_nanos((bytes as u64 * 8).saturating_mul(1_000_000_000) / self.bits_per_s)
    }

    /// A packet of `bytes` read at `arrival`: when it is due at the other end (its last bit
    /// left after the packets ahead of it, plus the delay). Order is kept.
    pub fn due(&mut self, arrival: Instant, bytes: usize) -> Instant {
        let start = self.free_at.map_or(arrival, |f| f.max(arrival));
        let end = start + self.on_the_wire(bytes);
        self.free_at = Some(end);
        end + self.delay
    }
}

/// The relay: listens on 127.0.0.1:`port()`, forwards each connection to `target` through
/// a link of `bits_per_s` and `delay`, each way.
pub struct RateLink {
    relay: Relay,
    pub bits_per_s: u64,
    pub delay: Duration,
    /// Bytes carried towards the host and from it, every connection's.
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

impl RateLink {
    pub fn start(target: SocketAddr, bits_per_s: u64, delay: Duration) -> Result<RateLink> {
        let (up, down) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (u, d) = (up.clone(), down.clone());
        let relay = Relay::start("rate relay", target, move |client, server| {
            let pacer = Pacer::new(bits_per_s, delay);
            pipe(client.try_clone()?, server.try_clone()?, pacer, u.clone());
            pipe(server, client, pacer, d.clone());
            Ok(())
        })?;
        Ok(RateLink { relay, bits_per_s, delay, up, down })
    }

    pub fn port(&self) -> u16 {
        self.relay.port()
    }

    /// Bytes carried so far (towards the host, from it): read before and after what is to
    /// be counted.
    pub fn carried(&self) -> (u64, u64) {
        (self.up.load(Ordering::SeqCst), self.down.load(Ordering::SeqCst))
    }
}

/// Bytes read from `from` are written to `to` when the pacer says; `to`'s write side is shut
/// once `from` ends and everything read was delivered.
fn pipe(mut from: TcpStream, to: TcpStream, mut pacer: Pacer, count: Arc<AtomicU64>) {
    let (tx, rx): (SyncSender<Due>, Receiver<Due>) = sync_channel(QUEUED);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        'read: loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let now = Instant::now();
            count.fetch_add(n as u64, Ordering::SeqCst);
            for p in buf[..n].chunks(MTU) {
                let due = pacer.due(now, p.len());
                if tx.send(Due { at: due, bytes: p.to_vec() }).is_err() {
                    break 'read;
                }
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
    fn packets_leave_one_after_the_other_at_the_rate() {
        let t = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        // 8 Mbit/s: 1000 bytes take 1 ms; 5 ms on the way.
        let mut p = Pacer::new(8_000_000, ms(5));
        assert_eq!(p.on_the_wire(1000), ms(1));
        assert_eq!(p.due(t, 1000), t + ms(6));
        assert_eq!(p.due(t, 1000), t + ms(7), "queued behind the first");
        assert_eq!(p.due(t + ms(1), 500), t + ms(7) + Duration::from_micros(500));
        // An idle link: the next packet leaves when it comes.
        assert_eq!(p.due(t + ms(100), 1000), t + ms(106));
        assert_eq!(Pacer::new(0, ms(1)).on_the_wire(1), Duration::from_secs(8), "no rate of 0");
    }

    /// 400 KB through a 10 Mbit/s, 5 ms link: it takes the rate's time, every byte comes back
    /// in order, and the relay counts them.
    #[test]
    fn a_big_transfer_takes_the_rates_time() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = echo.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            s.write_all(&got[..10]).unwrap();
            got.len()
        });
        let link = RateLink::start(addr, 10_000_000, Duration::from_millis(5)).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", link.port())).unwrap();
        let sent: Vec<u8> = (0..400_000u32).map(|i| (i % 251) as u8).collect();
        let t0 = Instant::now();
        c.write_all(&sent).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        let took = t0.elapsed();
        assert_eq!(server.join().unwrap(), sent.len());
        assert_eq!(back, sent[..10]);
        // 400 KB at 10 Mbit/s is 320 ms, the way back 10 ms more.
        assert!(took >= Duration::from_millis(330), "took {took:?}");
        assert!(took < Duration::from_secs(10), "took {took:?}");
        assert_eq!(link.carried(), (400_000, 10));
    }
}
