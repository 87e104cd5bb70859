//! Where the relay meets the capture: one `Tap` per connection leg turns what a connection
//! task sends and receives into capture records. Copies at most the snaplen of each packet,
//! and costs nothing when no capture runs (the tasks hold `None`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;

use super::record::{ConnInfo, DataKind, Direction, Leg, Record};
use super::CaptureHandle;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::Header;

/// Commands remembered per leg to pair replies for latency; more are forgotten.
pub const MAX_PAIRED: usize = 4096;

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// A number for a connection, unique in this process: debugger and VM legs alike.
pub fn next_conn_id() -> u64 {
    NEXT_CONN.fetch_add(1, Ordering::Relaxed)
}

pub struct Tap {
    handle: CaptureHandle,
    conn: Arc<ConnInfo>,
    /// Commands seen going to the server, for replies' latency.
    sent: HashMap<u32, Instant>,
    /// Bytes of the current packet that may still be kept, per direction: the snaplen
    /// applies to a packet as a whole, head and streamed body together.
    budget: [usize; 2],
}

fn slot(dir: Direction) -> usize {
    match dir {
        Direction::ToServer => 0,
        Direction::ToClient => 1,
    }
}

impl Tap {
    pub fn open(handle: &CaptureHandle, id: u64, vm: &str, leg: Leg, client: SocketAddr, server: SocketAddr) -> Tap {
        let conn = Arc::new(ConnInfo { id, vm: vm.to_string(), leg, client, server });
        handle.record(Record::Open { time: SystemTime::now(), conn: conn.clone() });
        Tap { handle: handle.clone(), conn, sent: HashMap::new(), budget: [0; 2] }
    }

    /// Records both halves of the JDWP handshake.
    pub fn handshakes(&mut self) {
        for dir in [Direction::ToServer, Direction::ToClient] {
            self.budget[slot(dir)] = usize::MAX;
            self.data(dir, DataKind::Handshake, HANDSHAKE);
        }
    }

    /// A packet (or the head of a streamed one) as it crosses this leg. `orig_id` is the id
    /// it had before the proxy rewrote it; latency is found by pairing commands and replies.
    pub fn packet(&mut self, dir: Direction, bytes: &[u8], orig_id: Option<u32>) {
        let Some(h) = Header::parse(bytes) else {
            return self.body(dir, bytes);
        };
        self.budget[slot(dir)] = self.handle.snaplen();
        let latency = if h.is_reply() {
            self.sent.remove(&h.id).map(|t| t.elapsed())
        } else {
            if dir == Direction::ToServer {
                if self.sent.len() >= MAX_PAIRED {
                    self.sent.clear();
                }
                self.sent.insert(h.id, Instant::now());
            }
            None
        };
        self.data(dir, DataKind::Packet { orig_id, latency }, bytes);
    }

    /// A reply whose latency the caller knows better (the session's id table).
    pub fn reply(&mut self, dir: Direction, bytes: &[u8], orig_id: Option<u32>, latency: Option<Duration>) {
        self.budget[slot(dir)] = self.handle.snaplen();
        self.data(dir, DataKind::Packet { orig_id, latency }, bytes);
    }

    /// A reply made from the near cache, whole.
    pub fn near_reply(&mut self, dir: Direction, bytes: &[u8]) {
        // It answers a command seen on this leg: that one is paired now.
        if let Some(h) = Header::parse(bytes) {
            self.sent.remove(&h.id);
        }
        self.budget[slot(dir)] = self.handle.snaplen();
        self.data(dir, DataKind::NearReply, bytes);
    }

    /// A piece of a streamed packet's body.
    pub fn body(&mut self, dir: Direction, bytes: &[u8]) {
        self.data(dir, DataKind::Body, bytes);
    }

    /// `bytes` is everything this record put on the wire; only what is left of the packet's
    /// snaplen is copied (the record still counts every byte, so TCP sequence numbers hold).
    fn data(&mut self, dir: Direction, kind: DataKind, bytes: &[u8]) {
        let budget = &mut self.budget[slot(dir)];
        let keep = bytes.len().min(*budget);
        *budget -= keep;
        self.handle.record(Record::Data {
            time: SystemTime::now(),
            conn: self.conn.clone(),
            dir,
            kind,
            bytes: Bytes::copy_from_slice(&bytes[..keep]),
            orig_len: bytes.len(),
        });
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.handle.record(Record::Close { time: SystemTime::now(), conn: self.conn.clone() });
    }
}
