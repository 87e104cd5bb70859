//! Cuts fuzz seeds out of real captures: `cargo run --features fuzzing --example fuzz_seeds -- OUT CAPTURE...`
//! writes `OUT/TARGET/NAME` files for the targets whose input is traffic (codec, handshake,
//! ddm, heapmap, capture), from pcapng and JSON-lines captures made with `serve --capture`
//! (a real JVM under jdb, the fake DDM VM under `threads`/`heap`/`features`). Each file is
//! named after its content's hash, so running it twice adds nothing new.
//! `cargo run --features fuzzing --example fuzz_seeds -- --nearlink DIR` writes the `nearlink` seeds
//! (`jdwpmux::fuzzing::nearlink::seeds()`, made in code) to DIR. See fuzz/README.md.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use jdwpmux::capture::{read_capture, DecodedEvent, DecodedPacket, PacketKind};
use jdwpmux::ddm::{split_chunks, zlib::wrap_zlib, ChunkType};
use jdwpmux::jdwp::handshake::HANDSHAKE;
use jdwpmux::jdwp::packet::{DDM_CMD_SET, FLAG_REPLY};

/// Packets per codec seed: enough for pipelining and replies in between, small for AFL.
const PACKETS_PER_SEED: usize = 6;
/// Bytes kept of a capture file used as a capture seed.
const MAX_CAPTURE_SEED: usize = 8 * 1024;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--nearlink") {
        let dir = PathBuf::from(args.nth(1).expect("usage: fuzz_seeds --nearlink DIR"));
        std::fs::create_dir_all(&dir)?;
        for (name, data) in jdwpmux::fuzzing::nearlink::seeds() {
            std::fs::write(dir.join(format!("{name}-{:02x}", data[0])), data)?;
        }
        return Ok(());
    }
    let out = PathBuf::from(args.next().expect("usage: fuzz_seeds OUT CAPTURE... | --nearlink DIR"));
    let mut seeds = Seeds::default();
    for path in args.map(PathBuf::from) {
        seeds.capture_file(&path)?;
        let capture = read_capture(&path).map_err(std::io::Error::other)?;
        // Each connection's packets per direction, in order, whole ones only.
        let mut streams: BTreeMap<(u64, bool), Vec<&DecodedPacket>> = BTreeMap::new();
        for r in &capture.records {
            if let DecodedEvent::Packet(p) = &r.event {
                if p.payload.is_some() && !p.truncated {
                    streams.entry((r.conn.id, p.dir.from_vm())).or_default().push(p);
                }
            }
        }
        for ((_, from_vm), packets) in &streams {
            seeds.stream(*from_vm, packets);
        }
    }
    seeds.write(&out)
}

#[derive(Default)]
struct Seeds {
    files: BTreeMap<&'static str, Vec<Vec<u8>>>,
    heap: Vec<u8>,
}

impl Seeds {
    fn add(&mut self, target: &'static str, data: Vec<u8>) {
        self.files.entry(target).or_default().push(data);
    }

    fn capture_file(&mut self, path: &Path) -> std::io::Result<()> {
        let bytes = std::fs::read(path)?;
        if bytes.first() == Some(&b'{') {
            // JSON lines: a few lines at a time, from several places in the file.
            let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
            for window in lines.chunks(12).step_by(4) {
                self.add("capture", window.join(&b'\n'));
            }
        } else {
            self.add("capture", bytes[..bytes.len().min(MAX_CAPTURE_SEED)].to_vec());
        }
        Ok(())
    }

    fn stream(&mut self, from_vm: bool, packets: &[&DecodedPacket]) {
        let wire: Vec<Vec<u8>> = packets.iter().map(|p| wire_bytes(p)).collect();
        for (i, group) in wire.chunks(PACKETS_PER_SEED).enumerate() {
            // Seed byte: a different read size and streaming threshold per file.
            let mut seed = vec![(i as u8).wrapping_mul(37)];
            seed.extend(group.concat());
            self.add("codec", seed);
        }
        if let Some(first) = wire.first() {
            let mut hs = vec![if from_vm { 3 } else { 0 }];
            hs.extend_from_slice(HANDSHAKE);
            hs.extend_from_slice(first);
            self.add("handshake", hs);
        }
        for p in packets {
            let Some(payload) = &p.payload else { continue };
            let is_reply = matches!(p.kind, PacketKind::Reply { .. });
            let ddm = match p.kind {
                PacketKind::Command { set, .. } => set == DDM_CMD_SET,
                PacketKind::Reply { command, .. } => command.is_some_and(|(set, _)| set == DDM_CMD_SET),
            };
            if !ddm || payload.is_empty() {
                continue;
            }
            let flags = u8::from(!from_vm) | (u8::from(is_reply) << 1);
            self.add("ddm", [&[flags][..], payload].concat());
            if from_vm {
                // ART's early packet: a DDM command from the VM before its handshake echo.
                if !is_reply && self.heap.is_empty() {
                    let mut early = vec![3];
                    early.extend(wire_bytes(p));
                    early.extend_from_slice(HANDSHAKE);
                    self.add("handshake", early);
                }
                self.heap.extend_from_slice(payload);
                self.zlib_forms(flags, payload);
            }
        }
    }

    /// The VM's chunks as ZLIB chunks (zlib-wrapped, and in the document's layout), and
    /// one ZLIB inside another (which must be refused).
    fn zlib_forms(&mut self, flags: u8, payload: &[u8]) {
        for chunk in split_chunks(payload, None).flatten() {
            let wrapped = wrap_zlib(chunk.ty, chunk.data);
            self.add("ddm", [&[flags][..], &jdwpmux::ddm::encode_chunk(ChunkType::ZLIB, &wrapped)].concat());
            let document_layout = &wrapped[4..];
            self.add("ddm", [&[flags][..], &jdwpmux::ddm::encode_chunk(ChunkType::ZLIB, document_layout)].concat());
            let nested = wrap_zlib(ChunkType::ZLIB, &wrapped);
            self.add("ddm", [&[flags][..], &jdwpmux::ddm::encode_chunk(ChunkType::ZLIB, &nested)].concat());
            // Seen through a prefix of its packet.
            let whole = jdwpmux::ddm::encode_chunk(chunk.ty, chunk.data);
            self.add("ddm", [&[flags | 4 | (3 << 3)][..], &whole[..whole.len() / 2 + 4]].concat());
        }
    }

    fn write(mut self, out: &Path) -> std::io::Result<()> {
        let heap = std::mem::take(&mut self.heap);
        if !heap.is_empty() {
            self.add("heapmap", heap);
        }
        for (target, files) in &self.files {
            let dir = out.join(target);
            std::fs::create_dir_all(&dir)?;
            for data in files {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                data.hash(&mut h);
                std::fs::write(dir.join(format!("seed-{:016x}", h.finish())), data)?;
            }
            println!("{target}: {} seeds", files.len());
        }
        Ok(())
    }
}

/// The packet as it was on the wire: header rebuilt from the decoded fields, then the body.
fn wire_bytes(p: &DecodedPacket) -> Vec<u8> {
    let (b9, b10) = match p.kind {
        PacketKind::Command { set, cmd } => (set, cmd),
        PacketKind::Reply { error, .. } => (error.to_be_bytes()[0], error.to_be_bytes()[1]),
    };
    let mut v = Vec::with_capacity(p.length as usize);
    v.extend_from_slice(&p.length.to_be_bytes());
    v.extend_from_slice(&p.id.to_be_bytes());
    v.push(p.flags | if matches!(p.kind, PacketKind::Reply { .. }) { FLAG_REPLY } else { 0 });
    v.push(b9);
    v.push(b10);
    v.extend_from_slice(p.payload.as_deref().unwrap_or_default());
    v
}
