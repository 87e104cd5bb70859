//! Counting what an IDE asks: a JDWP relay in front of a path that reads the packets both
//! ways and counts the debugger's commands, and of those the ones sent while no other was
//! outstanding (each of those waits a whole round trip: the sequential ones), between the
//! VM's event packets. Between two step events lies exactly one IDE step (Clear, the views'
//! reads, Set, Resume), so the counts between events are the commands of a step.
//!
//! The tap adds a hop, so the timed runs go without it: it runs in the warm-up repetition.
//! A packet is counted before it is passed on, so a reply is seen as answered before the
//! debugger can send its next command.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::wire::{HANDSHAKE, HEADER_LEN, REPLY_FLAG};

/// Composite event packets: command set 64, command 100.
const EVENT: (u8, u8) = (64, 100);

/// The counts, fed with the bytes of each direction as they pass.
#[derive(Debug, Default)]
pub struct Counts {
    commands: u64,
    sequential: u64,
    outstanding: HashSet<u32>,
    /// (commands, sequential) when each event packet arrived.
    marks: Vec<(u64, u64)>,
    up: Framer,
    down: Framer,
}

/// Splits one direction's bytes into JDWP packet headers (after the 14-byte handshake).
#[derive(Debug, Default)]
struct Framer {
    buf: Vec<u8>,
    handshaken: bool,
}

impl Framer {
    /// Headers (id, flags, a, b) of the packets completed by `bytes`.
    fn feed(&mut self, bytes: &[u8]) -> Vec<(u32, u8, u8, u8)> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        if !self.handshaken {
            if self.buf.len() < HANDSHAKE.len() {
                return out;
            }
            self.buf.drain(..HANDSHAKE.len());
            self.handshaken = true;
        }
        loop {
            if self.buf.len() < HEADER_LEN {
                return out;
            }
            let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
            if len < HEADER_LEN {
                // Not JDWP: stop counting rather than guess.
                self.buf.clear();
                return out;
            }
            if self.buf.len() < len {
                return out;
            }
            let b = &self.buf;
            out.push((u32::from_be_bytes([b[4], b[5], b[6], b[7]]), b[8], b[9], b[10]));
            self.buf.drain(..len);
        }
    }
}

impl Counts {
    /// Bytes from the debugger to the VM.
    pub fn up(&mut self, bytes: &[u8]) {
        for (id, flags, _, _) in self.up.feed(bytes) {
            if flags & REPLY_FLAG == 0 {
                self.commands += 1;
                if self.outstanding.is_empty() {
                    self.sequential += 1;
                }
                self.outstanding.insert(id);
            }
        }
    }

    /// Bytes from the VM to the debugger.
    pub fn down(&mut self, bytes: &[u8]) {
        for (id, flags, a, b) in self.down.feed(bytes) {
            if flags & REPLY_FLAG != 0 {
                self.outstanding.remove(&id);
            } else if (a, b) == EVENT {
                self.marks.push((self.commands, self.sequential));
            }
        }
    }

    pub fn summary(&self) -> TapSummary {
        let (attach, _) = self.marks.first().copied().unwrap_or((self.commands, self.sequential));
        // Event 1 is the breakpoint; from event 2 on, one step lies between two events.
        let steps: Vec<(u64, u64)> = self.marks.windows(2).skip(1).map(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1)).collect();
        let first_stop = match (self.marks.first(), self.marks.get(1)) {
            (Some(a), Some(b)) => Some(b.0 - a.0),
            _ => None,
        };
        TapSummary { attach, first_stop, steps }
    }
}

/// What one IDE session asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TapSummary {
    /// Commands from the handshake to the breakpoint's event.
    pub attach: u64,
    /// Commands from the breakpoint's event to the first step's (the first stop's views and
    /// the first step's request).
    pub first_stop: Option<u64>,
    /// Per step: (commands, sequential commands).
    pub steps: Vec<(u64, u64)>,
}

impl TapSummary {
    pub fn per_step(&self) -> Option<(f64, f64)> {
        let n = self.steps.len() as f64;
        (n > 0.0).then(|| {
            let (c, s) = self.steps.iter().fold((0, 0), |(c, s), (a, b)| (c + a, s + b));
            (c as f64 / n, s as f64 / n)
        })
    }
}

/// A tap on 127.0.0.1:`port` in front of 127.0.0.1:`target`, for one connection.
pub struct Tap {
    pub port: u16,
    counts: Arc<Mutex<Counts>>,
    socks: Arc<Mutex<Vec<TcpStream>>>,
}

impl Tap {
    pub fn start(target: u16) -> Result<Tap> {
        let l = TcpListener::bind("127.0.0.1:0").context("bind the tap")?;
        let port = l.local_addr()?.port();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let socks: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (counts.clone(), socks.clone());
        std::thread::spawn(move || {
            let Ok((ide, _)) = l.accept() else { return };
            let Ok(vm) = TcpStream::connect_timeout(&([127, 0, 0, 1], target).into(), Duration::from_secs(10)) else { return };
            let _ = ide.set_nodelay(true);
            let _ = vm.set_nodelay(true);
            let clones = (ide.try_clone(), vm.try_clone(), ide.try_clone(), vm.try_clone());
            let (Ok(ide2), Ok(vm2), Ok(ide3), Ok(vm3)) = clones else { return };
            if let Ok(mut v) = s.lock() {
                v.extend([ide3, vm3]);
            }
            let c2 = c.clone();
            std::thread::spawn(move || copy(ide, vm, &c, true));
            copy(vm2, ide2, &c2, false);
        });
        Ok(Tap { port, counts, socks })
    }

    pub fn summary(&self) -> TapSummary {
        self.counts.lock().map(|c| c.summary()).unwrap_or_default()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if let Ok(v) = self.socks.lock() {
            for s in v.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, counts: &Mutex<Counts>, up: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Ok(mut c) = counts.lock() {
            if up {
                c.up(&buf[..n]);
            } else {
                c.down(&buf[..n]);
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u32, flags: u8, a: u8, b: u8) -> Vec<u8> {
        let mut p = 15u32.to_be_bytes().to_vec();
        p.extend(id.to_be_bytes());
        p.extend([flags, a, b, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn commands_between_events_make_a_step_and_overlapping_ones_are_not_sequential() {
        let mut c = Counts::default();
        c.up(HANDSHAKE);
        c.down(HANDSHAKE);
        // Attach: two commands one after another, then two at once.
        for id in 1..=2 {
            c.up(&packet(id, 0, 1, 1));
            c.down(&packet(id, REPLY_FLAG, 0, 0));
        }
        let both = [packet(3, 0, 1, 1), packet(4, 0, 1, 1)].concat();
        // Split mid-header: the framer waits for the rest.
        c.up(&both[..20]);
        c.up(&both[20..]);
        c.down(&[packet(3, REPLY_FLAG, 0, 0), packet(4, REPLY_FLAG, 0, 0)].concat());
        c.down(&packet(9, 0, 64, 100)); // the breakpoint
        for step in 0..3u32 {
            for k in 0..5 {
                let id = 100 + step * 10 + k;
                c.up(&packet(id, 0, 11, 6));
                c.down(&packet(id, REPLY_FLAG, 0, 0));
            }
            c.down(&packet(50 + step, 0, 64, 100)); // a step event
        }
        let s = c.summary();
        assert_eq!(s.attach, 4);
        assert_eq!(s.first_stop, Some(5));
        assert_eq!(s.steps, vec![(5, 5), (5, 5)]);
        assert_eq!(s.per_step(), Some((5.0, 5.0)));
        let mut seq = Counts::default();
        seq.up(HANDSHAKE);
        seq.up(&both);
        assert_eq!((seq.commands, seq.sequential), (2, 1), "the second was sent while the first was out");
    }
}
