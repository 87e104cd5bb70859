//! DDM (Dalvik Debug Monitor) chunk decoding, pure and self-contained: no I/O, no async, and
//! nothing from the rest of the crate.
//!
//! DDM rides on JDWP as command set 0xC7, command 1; the packet payload is a list of chunks
//! (`u4 type, u4 length, data`). Use:
//! - [`decode_payload`] on the payload of every DDM packet (commands and replies, both
//!   directions) to get typed [`Chunk`]s, each with a one-line `Display` for logs and a
//!   `Serialize` impl for JSON captures;
//! - [`ClientData::apply`] with each decoded chunk to keep per-VM state (pid, names, threads,
//!   heaps, ...);
//! - [`Chunk::encode`] / [`encode_chunk`] to build the requests the proxy sends.
//!
//! Layouts follow the DDM design document plus what real VMs send today (longer HELO
//! replies, the other THST layout, ARTT, STAG, ...). Malformed input is always an error value
//! with numbers in it, never a panic; huge chunks (hprof dumps, traces) are summarised by
//! length and first bytes and may be decoded from a prefix of their packet.

pub mod chunk;
mod chunk_type;
pub mod decode;
mod display;
pub mod encode;
mod encode_vm;
pub mod error;
pub mod heap;
pub mod heapmap;
pub mod info;
pub mod json;
pub mod model;
pub mod reader;
pub mod state;
pub mod threads;
pub mod zlib;

#[cfg(test)]
mod tests_decode;
#[cfg(test)]
mod tests_decode_vm;
#[cfg(test)]
mod tests_payload;

pub use chunk::{encode_chunk, split_chunks, ChunkType, RawChunk, MAX_CHUNKS_PER_PAYLOAD};
pub use decode::{decode_chunk, decode_payload};
pub use encode::encode_payload;
pub use error::DdmError;
pub use heap::{HeapSegment, HeapState, Kind, Run, Solidity};
pub use heapmap::{HeapMap, HeapMapBuilder, HeapTotals, PlacedRun, Usage};
pub use info::{Blob, BootStage, CmdTiming, HeapInfo, HeloInfo, HEAD_LEN};
pub use model::{Chunk, Dir};
pub use reader::{Reader, Writer};
pub use state::{ClientData, FailInfo, ThreadInfo};
pub use threads::{StackFrame, StackTrace, ThreadEntry, ThreadState, ThreadStatus, ThstLayout};
pub use zlib::{MAX_DEFLATE_RATIO, MAX_INFLATED_LEN};

/// JDWP command set of DDM packets.
pub const DDM_COMMAND_SET: u8 = 0xC7;
/// JDWP command of DDM packets within [`DDM_COMMAND_SET`].
pub const DDM_COMMAND: u8 = 0x01;
