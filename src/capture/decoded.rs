//! What reading a capture gives: its connections, packets and events, decoded; the error
//! a reader stops with. Shared by the readers of each format (`reader` for JSON lines and
//! the format's dispatch, `reader_pcapng`, `reader_stream`), which import it, not each other.

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use thiserror::Error;

use super::ddm::{chunk_headers, is_ddm};
use super::record::{Direction, Leg};

/// A connection as far as the file tells: pcaps from other tools have no id/leg/VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnDesc {
    /// The proxy's connection id, or the stream's order of appearance in a foreign pcap.
    pub id: u64,
    /// Empty when unknown.
    pub vm: String,
    pub leg: Option<Leg>,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    Command {
        set: u8,
        cmd: u8,
    },
    /// `command`: what it answers, when that command was seen.
    Reply {
        error: u16,
        command: Option<(u8, u8)>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedPacket {
    pub dir: Direction,
    /// Id as seen on this leg.
    pub id: u32,
    pub orig_id: Option<u32>,
    pub flags: u8,
    pub kind: PacketKind,
    /// The JDWP length field (header included).
    pub length: u32,
    pub latency: Option<Duration>,
    /// A reply the proxy made from its near cache (the VM's earlier answer), not the VM.
    pub near: bool,
    /// Bytes after the 11-byte header as captured (pcapng), at most
    /// [`MAX_KEPT_PAYLOAD`](super::reader_stream::MAX_KEPT_PAYLOAD) of them; `None` when
    /// the format does not store them (JSON lines).
    pub payload: Option<Vec<u8>>,
    /// Part of the packet was not captured (snaplen) or lost.
    pub truncated: bool,
    /// DDM chunk (type, length) list, when the packet is DDM and it is known.
    pub ddm_chunks: Vec<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedEvent {
    Open,
    Close,
    Handshake { dir: Direction },
    Packet(DecodedPacket),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedRecord {
    pub time: SystemTime,
    pub conn: Arc<ConnDesc>,
    pub event: DecodedEvent,
}

/// Everything read from a file, in file order, plus what could not be decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodedCapture {
    pub records: Vec<DecodedRecord>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Error)]
pub enum ReadError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a capture file (starts with {0:02x?}): expected pcapng, pcap or JSON lines")]
    UnknownFormat(Vec<u8>),
    #[error("pcap/pcapng: {0}")]
    Pcap(String),
}

/// Where a streamed capture's records go, in file order; `Break` stops the reading.
pub type Sink<'a> = &'a mut dyn FnMut(DecodedRecord) -> ControlFlow<()>;

/// DDM chunk headers in a payload, for readers that have the bytes.
pub(super) fn ddm_chunks_of(kind: PacketKind, payload: &[u8]) -> Vec<(String, u32)> {
    match kind {
        PacketKind::Command { set, cmd }
        | PacketKind::Reply {
            command: Some((set, cmd)),
            ..
        } if is_ddm(set, cmd) => chunk_headers(payload),
        _ => Vec::new(),
    }
}
