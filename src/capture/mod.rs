//! Capture of proxied JDWP traffic to a file (pcapng for Wireshark, or JSON lines), and
//! reading such files back for `jdwpmux decode`.
//!
//! The proxy builds [`Record`]s and hands them to a [`CaptureHandle`]; a background task
//! encodes and writes them so the relay never waits on the disk (records are dropped and
//! counted when the task falls behind).

pub mod ddm;
pub mod decode_cmd;
mod decoded;
pub mod display;
pub mod figures;
pub mod jsonl;
pub mod pairing;
pub mod pcapng;
pub mod pcapng_meta;
pub mod reader;
mod reader_pcapng;
mod reader_stream;
pub mod record;
pub mod synth_tcp;
pub mod tap;
pub mod tcpip;
pub mod time;
pub mod trace;
pub mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use thiserror::Error;

pub use display::format_line;
pub use jsonl::ChunkDecoder;
pub use reader::{
    read_capture, stream_capture, ConnDesc, DecodedCapture, DecodedEvent, DecodedPacket, DecodedRecord,
    PacketKind, ReadError, Sink,
};
pub use reader_stream::{MAX_KEPT_PAYLOAD, MAX_REORDER};
pub use record::{ConnInfo, DataKind, Direction, Leg, Record};
pub use writer::{Capture, CaptureHandle, CaptureSummary};

/// Queue length between the relay and the writer task; beyond it records are dropped.
pub const CHANNEL_CAPACITY: usize = 4096;
/// Default number of bytes kept from each record (the rest is only counted).
pub const DEFAULT_SNAPLEN: usize = 256 * 1024;
/// Smallest snaplen accepted: room for the JDWP header and a DDM chunk header or two.
pub const MIN_SNAPLEN: usize = 64;

/// Capture file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcapng,
    Jsonl,
}

impl Format {
    /// From the file extension: `.pcapng`/`.pcap` (reading also accepts classic pcap),
    /// `.jsonl`/`.ndjson`/`.json`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "pcapng" | "pcap" => Some(Format::Pcapng),
            "jsonl" | "ndjson" | "json" => Some(Format::Jsonl),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Pcapng => "pcapng",
            Format::Jsonl => "jsonl",
        })
    }
}

impl FromStr for Format {
    type Err = CaptureError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "pcapng" | "pcap" => Ok(Format::Pcapng),
            "jsonl" | "json" | "ndjson" => Ok(Format::Jsonl),
            _ => Err(CaptureError::UnknownFormatName(s.to_string())),
        }
    }
}

/// Capture settings.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Stop writing before the file would exceed this many bytes.
    pub max_bytes: Option<u64>,
    /// Bytes kept per record (>= MIN_SNAPLEN).
    pub snaplen: usize,
    /// Full DDM decoder for the JSON lines `chunks` field; default lists chunk type/length.
    pub chunk_decoder: Option<ChunkDecoder>,
    /// Records queued before drops start; CHANNEL_CAPACITY unless a test wants it tiny.
    pub channel_capacity: usize,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            max_bytes: None,
            snaplen: DEFAULT_SNAPLEN,
            chunk_decoder: None,
            channel_capacity: CHANNEL_CAPACITY,
        }
    }
}

#[derive(Debug, Error)]
pub enum CaptureError {
    #[error("cannot create capture file {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the capture header to {path}: {source}")]
    Header {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot tell the capture format of {0} from its extension: use .pcapng or .jsonl, or name the format")]
    UnknownFormat(PathBuf),
    #[error("unknown capture format {0:?} (expected pcapng or jsonl)")]
    UnknownFormatName(String),
    #[error("snaplen {0} is below the minimum of {MIN_SNAPLEN} bytes")]
    Snaplen(usize),
    #[error("channel capacity must be at least 1")]
    Capacity,
    #[error("capture must be started inside a tokio runtime")]
    NoRuntime,
    #[error("pcapng encoder: {0}")]
    Pcapng(String),
    #[error("capture was already closed")]
    AlreadyClosed,
    #[error("capture writer task failed: {0}")]
    Task(String),
}
