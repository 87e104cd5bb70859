//! The one error type of the DDM decoder. Every variant carries the numbers that explain it
//! (what was needed, what was there) so a log line is enough to diagnose a bad chunk.

use super::chunk_type::ChunkType;

/// Anything that can be wrong with DDM bytes (or with a request to encode a chunk).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DdmError {
    /// A fixed-size field (or byte run) does not fit in what is left.
    #[error("{field}: need {needed} bytes, only {available} left")]
    Short { field: &'static str, needed: u64, available: usize },

    /// A string's declared UTF-16 length does not fit; checked before allocating.
    #[error("{field}: string of {units} UTF-16 units needs {needed} bytes, only {available} left")]
    StringTooLong { field: &'static str, units: u32, needed: u64, available: usize },

    /// An element count that cannot fit even at the smallest element size.
    #[error("{field}: count {count} needs at least {needed} bytes, only {available} left")]
    CountTooLarge { field: &'static str, count: u64, needed: u64, available: usize },

    /// Bytes left over after a layout was fully read.
    #[error("{trailing} unexpected trailing bytes after {after}")]
    Trailing { after: &'static str, trailing: usize },

    /// A field value that is out of its allowed range.
    #[error("{field}: invalid value {value} ({why})")]
    Invalid { field: &'static str, value: u64, why: &'static str },

    /// Fewer than 8 bytes at the end of a payload that should start a chunk.
    #[error("{available} stray bytes where an 8-byte chunk header was expected")]
    ShortHeader { available: usize },

    /// A chunk's declared length runs past the end of the payload.
    #[error("chunk {ty} declares {declared} bytes but only {available} follow")]
    ChunkOverrun { ty: ChunkType, declared: u32, available: usize },

    /// A payload made of more chunks than we are willing to list.
    #[error("more than {limit} chunks in one payload (MAX_CHUNKS_PER_PAYLOAD); {remaining} bytes not decoded")]
    TooManyChunks { limit: usize, remaining: usize },

    /// HPSG/HPSO/NHSG run data and the declared unit count do not end together.
    #[error("heap segment: expected {expected} units, run data covers {found}")]
    RunMismatch { expected: u64, found: u64 },

    /// Run data is a stream of byte pairs; an odd length cannot be right.
    #[error("heap segment: run data has odd length {len} (pairs of bytes expected)")]
    OddRunData { len: usize },

    /// THST data that fits neither the document's layout nor the real VMs' one.
    #[error(
        "THST: {len} bytes fit neither layout (document: count {doc_count} needs {doc_needed}; \
         real: header {header_len}, {bytes_per_entry} bytes x {real_count} needs {real_needed})"
    )]
    ThstLayout {
        len: usize,
        doc_count: u32,
        doc_needed: u64,
        header_len: u8,
        bytes_per_entry: u8,
        real_count: u16,
        real_needed: u64,
    },

    /// A ZLIB chunk announces more inflated data than we allow.
    #[error("ZLIB: declared original length {declared} exceeds the {cap}-byte cap (MAX_INFLATED_LEN)")]
    ZlibTooLarge { declared: u32, cap: usize },

    /// A ZLIB chunk announces more inflated data than its compressed bytes can hold.
    #[error(
        "ZLIB: declared original length {declared} is more than {compressed} compressed bytes can hold \
         ({max_ratio}:1, MAX_DEFLATE_RATIO)"
    )]
    ZlibRatio { declared: u32, compressed: usize, max_ratio: usize },

    /// The deflate stream produces more than it may (declared length or cap).
    #[error("ZLIB: stream inflates past {limit} bytes, its declared original length {declared} (a bomb)")]
    ZlibBomb { limit: usize, declared: u32 },

    /// The deflate stream is not valid deflate (zlib-wrapped or raw).
    #[error("ZLIB: corrupt deflate data ({consumed} of {total} input bytes used): {msg}")]
    ZlibCorrupt { consumed: u64, total: usize, msg: String },

    /// A length field of the ZLIB wrapper disagrees with the data.
    #[error("ZLIB: {what}: declared {declared}, actual {actual}")]
    LengthMismatch { what: &'static str, declared: u64, actual: u64 },

    /// A ZLIB chunk wrapping another ZLIB chunk (refused: no recursion on VM data).
    #[error("ZLIB: nested ZLIB chunk refused")]
    NestedZlib,

    /// Any of the above, inside a named chunk.
    #[error("{ty} (len {len}): {source}")]
    InChunk { ty: ChunkType, len: u32, source: Box<DdmError> },

    /// `Chunk::encode` on a form that only exists as a decoded summary.
    #[error("{ty}: cannot encode ({why})")]
    NotEncodable { ty: ChunkType, why: &'static str },
}

impl DdmError {
    /// The innermost error (the one without the chunk context).
    pub fn root(&self) -> &DdmError {
        match self {
            DdmError::InChunk { source, .. } => source.root(),
            other => other,
        }
    }

    /// The chunk type the error was found in, if known.
    pub fn chunk_type(&self) -> Option<ChunkType> {
        match self {
            DdmError::InChunk { ty, .. } => Some(*ty),
            DdmError::ChunkOverrun { ty, .. } => Some(*ty),
            _ => None,
        }
    }
}
