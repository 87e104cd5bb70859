//! A large capture for the decode benchmark, written with the proxy's own pcapng encoder: a
//! debugging session as jdwpmux records it, both legs of every request (debugger leg, then
//! the VM leg with the rewritten id and the debugger's in the comment), replies with their
//! latency, events, THST chunks on the VM leg, and now and then a large AllClasses reply.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use bytes::Bytes;
use jdwpmux::capture::pcapng::PcapngEncoder;
use jdwpmux::capture::{ConnInfo, DataKind, Direction, Leg, Record};

/// What was written.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaptureInfo {
    pub bytes: u64,
    /// JDWP packets, both legs.
    pub packets: u64,
    /// Debugger requests (each is 4 packets: 2 legs, command and reply).
    pub requests: u64,
}

/// The debugger's usual requests while stepping: (set, cmd, command bytes, reply bytes).
const STEPPING: [(u8, u8, usize, usize); 6] = [
    (11, 6, 16, 180),  // ThreadReference.Frames
    (16, 1, 30, 60),   // StackFrame.GetValues
    (6, 1, 16, 420),   // Method.LineTable
    (2, 1, 8, 40),     // ReferenceType.Signature
    (15, 1, 40, 4),    // EventRequest.Set
    (1, 9, 0, 0),      // VirtualMachine.Resume
];
/// Every this many requests, an AllClasses with a large reply.
const ALL_CLASSES_EVERY: u64 = 500;
const ALL_CLASSES_REPLY: usize = 100_000;
/// Every this many requests, a breakpoint event (both legs) and a THST chunk (VM leg).
const EVENT_EVERY: u64 = 6;
const THST_EVERY: u64 = 20;
const THST_THREADS: usize = 12;

struct Gen {
    enc: PcapngEncoder,
    out: std::io::BufWriter<std::fs::File>,
    clock: SystemTime,
    info: CaptureInfo,
    dbg: Arc<ConnInfo>,
    vm: Arc<ConnInfo>,
}

fn packet(id: u32, flags: u8, a: u8, b: u8, body: usize) -> Bytes {
    let mut v = Vec::with_capacity(11 + body);
    v.extend_from_slice(&((11 + body) as u32).to_be_bytes());
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&[flags, a, b]);
    v.extend((0..body).map(|i| (i % 251) as u8));
    Bytes::from(v)
}

impl Gen {
    fn tick(&mut self, us: u64) -> SystemTime {
        self.clock += Duration::from_micros(us);
        self.clock
    }

    fn record(&mut self, r: Record) -> Result<()> {
        self.enc.encode(&r).map_err(|e| anyhow::anyhow!("pcapng: {e}"))?;
        let bytes = self.enc.take_output();
        self.info.bytes += bytes.len() as u64;
        self.out.write_all(&bytes).context("write the capture")
    }

    fn data(&mut self, conn: &Arc<ConnInfo>, dir: Direction, kind: DataKind, bytes: Bytes) -> Result<()> {
        if matches!(kind, DataKind::Packet { .. }) {
            self.info.packets += 1;
        }
        let time = self.tick(15);
        let orig_len = bytes.len();
        self.record(Record::Data { time, conn: conn.clone(), dir, kind, bytes, orig_len })
    }

    fn open(&mut self, conn: &Arc<ConnInfo>) -> Result<()> {
        let time = self.tick(100);
        self.record(Record::Open { time, conn: conn.clone() })?;
        for dir in [Direction::ToServer, Direction::ToClient] {
            self.data(conn, dir, DataKind::Handshake, Bytes::from_static(b"JDWP-Handshake"))?;
        }
        Ok(())
    }

    /// One debugger request through the proxy: both legs, command and reply.
    fn request(&mut self, n: u64, set: u8, cmd: u8, out: usize, back: usize) -> Result<()> {
        let (dbg, vm) = (self.dbg.clone(), self.vm.clone());
        let id = n as u32 + 1;
        let vm_id = id + 1000;
        let plain = DataKind::Packet { orig_id: None, latency: None };
        self.data(&dbg, Direction::ToServer, plain, packet(id, 0, set, cmd, out))?;
        let rewritten = DataKind::Packet { orig_id: Some(id), latency: None };
        self.data(&vm, Direction::ToServer, rewritten, packet(vm_id, 0, set, cmd, out))?;
        let latency = Duration::from_micros(40 + n % 97);
        let vm_reply = DataKind::Packet { orig_id: Some(id), latency: Some(latency) };
        self.data(&vm, Direction::ToClient, vm_reply, packet(vm_id, 0x80, 0, 0, back))?;
        let dbg_reply = DataKind::Packet { orig_id: None, latency: Some(latency + Duration::from_micros(20)) };
        self.data(&dbg, Direction::ToClient, dbg_reply, packet(id, 0x80, 0, 0, back))?;
        self.info.requests += 1;
        Ok(())
    }

    fn event(&mut self, n: u64) -> Result<()> {
        let mut body = vec![2, 0, 0, 0, 1, 2];
        body.extend_from_slice(&(n as u32).to_be_bytes());
        body.extend_from_slice(&[0; 8 + 1 + 8 + 8 + 8]); // thread, location
        let id = 0x4000_0000 + n as u32;
        let mut p = packet(id, 0, 64, 100, 0).to_vec();
        p.extend_from_slice(&body);
        let len = p.len() as u32;
        p[..4].copy_from_slice(&len.to_be_bytes());
        let p = Bytes::from(p);
        let kind = DataKind::Packet { orig_id: None, latency: None };
        let (dbg, vm) = (self.dbg.clone(), self.vm.clone());
        self.data(&vm, Direction::ToClient, kind, p.clone())?;
        self.data(&dbg, Direction::ToClient, kind, p)
    }

    /// A THST chunk in the layout real VMs send.
    fn thst(&mut self, n: u64) -> Result<()> {
        let mut data = vec![4, 18, 0, THST_THREADS as u8];
        for t in 0..THST_THREADS as u32 {
            data.extend_from_slice(&(t + 1).to_be_bytes());
            data.push(if t == 0 { 1 } else { 2 });
            data.extend_from_slice(&(1000 + t).to_be_bytes());
            data.extend_from_slice(&(n as u32).to_be_bytes());
            data.extend_from_slice(&(t * 3).to_be_bytes());
            data.push(u8::from(t > 0));
        }
        let mut chunk = b"THST".to_vec();
        chunk.extend_from_slice(&(data.len() as u32).to_be_bytes());
        chunk.extend_from_slice(&data);
        let mut p = packet(0x8000_0000 + n as u32, 0, 0xC7, 1, 0).to_vec();
        p.extend_from_slice(&chunk);
        let len = p.len() as u32;
        p[..4].copy_from_slice(&len.to_be_bytes());
        let vm = self.vm.clone();
        self.data(&vm, Direction::ToClient, DataKind::Packet { orig_id: None, latency: None }, Bytes::from(p))
    }
}

/// Writes a capture of at least `target` bytes to `path`.
pub fn write_capture(path: &Path, target: u64) -> Result<CaptureInfo> {
    let file = std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
    let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let conn = |id, leg, client, server| Arc::new(ConnInfo { id, vm: "127.0.0.1:8000".into(), leg, client, server });
    let mut g = Gen {
        enc: PcapngEncoder::new().map_err(|e| anyhow::anyhow!("pcapng: {e}"))?,
        out: std::io::BufWriter::with_capacity(1 << 20, file),
        clock: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        info: CaptureInfo::default(),
        dbg: conn(2, Leg::Debugger, addr(40_000), addr(8700)),
        vm: conn(1, Leg::Vm, addr(40_001), addr(8000)),
    };
    let (dbg, vm) = (g.dbg.clone(), g.vm.clone());
    g.open(&vm)?;
    g.open(&dbg)?;
    let mut n = 0u64;
    while g.info.bytes < target {
        if n % ALL_CLASSES_EVERY == 0 {
            g.request(n, 1, 3, 0, ALL_CLASSES_REPLY)?;
        } else if n % 3 == 0 {
            g.request(n, 1, 1, 0, 90)?; // VirtualMachine.Version
        } else {
            let (set, cmd, out, back) = STEPPING[(n % STEPPING.len() as u64) as usize];
            g.request(n, set, cmd, out, back)?;
        }
        if n % EVENT_EVERY == 0 {
            g.event(n)?;
        }
        if n % THST_EVERY == 0 {
            g.thst(n)?;
        }
        n += 1;
    }
    for c in [&dbg, &vm] {
        let time = g.tick(100);
        g.record(Record::Close { time, conn: c.clone() })?;
    }
    g.out.flush().context("write the capture")?;
    Ok(g.info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capture_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let info = write_capture(&path, 300_000).unwrap();
        assert!(info.bytes >= 300_000);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), info.bytes);
        let c = jdwpmux::capture::read_capture(&path).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let packets = c.records.iter().filter(|r| matches!(r.event, jdwpmux::capture::DecodedEvent::Packet(_))).count();
        assert_eq!(packets as u64, info.packets);
        assert_eq!(info.packets, info.requests * 4 + info.requests.div_ceil(EVENT_EVERY) * 2 + info.requests.div_ceil(THST_EVERY));
    }
}
