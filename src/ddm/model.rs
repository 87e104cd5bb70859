//! The typed `Chunk`: one variant per chunk type and, where the layouts differ, per
//! direction (`...Request` is what goes to the VM, `...Reply` or the bare name what the VM
//! sends). Serialized as a JSON object with a `type` field (the four letters, or `Unknown`,
//! `Truncated`, `EmptyReply`) and the decoded fields.

use serde::Serialize;

use super::chunk::ChunkType;
use super::heap::HeapSegment;
use super::info::{ser_hex, BootStage, Blob, CmdTiming, HeapInfo, HeloInfo};
use super::threads::{StackTrace, ThreadStatus};

/// Which way a DDM packet travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Debugger/proxy side to the VM.
    ToVm,
    /// The VM to the debugger/proxy side.
    FromVm,
}

/// A decoded DDM chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum Chunk {
    #[serde(rename = "HELO")]
    HeloRequest { version: u32 },
    #[serde(rename = "HELO")]
    HeloReply(Box<HeloInfo>),
    #[serde(rename = "DBGD")]
    Dbgd,
    #[serde(rename = "APNM")]
    Apnm { app_name: String, user_id: Option<u32>, package_name: Option<String> },
    /// `reason` 0 = waiting for a debugger.
    #[serde(rename = "WAIT")]
    Wait { reason: u8 },
    #[serde(rename = "THEN")]
    Then { enable: bool },
    #[serde(rename = "THCR")]
    Thcr { tid: u32, name: String },
    #[serde(rename = "THNM")]
    Thnm { tid: u32, name: String },
    #[serde(rename = "THDE")]
    Thde { tid: u32 },
    /// Document: `u4 interval ms` (0 = off); real VMs' requests are empty (`None`).
    #[serde(rename = "THST")]
    ThstRequest { interval_ms: Option<u32> },
    #[serde(rename = "THST")]
    ThstReply(ThreadStatus),
    #[serde(rename = "STKL")]
    StklRequest { tid: u32 },
    #[serde(rename = "STKL")]
    StklReply(StackTrace),
    /// `when`: 0 never, 1 now, 2 next GC, 3 every GC.
    #[serde(rename = "HPIF")]
    HpifRequest { when: u8 },
    #[serde(rename = "HPIF")]
    HpifReply { heaps: Vec<HeapInfo> },
    /// `when`: 0 off, 1 at GC; `what`: 0 HPSG, 1 HPSO.
    #[serde(rename = "HPSG")]
    HpsgRequest { when: u8, what: u8 },
    #[serde(rename = "HPSG")]
    Hpsg(HeapSegment),
    #[serde(rename = "HPSO")]
    Hpso(HeapSegment),
    #[serde(rename = "NHSG")]
    NhsgRequest { when: u8, what: u8 },
    #[serde(rename = "NHSG")]
    Nhsg(HeapSegment),
    #[serde(rename = "HPST")]
    Hpst { heap_id: u32 },
    #[serde(rename = "HPEN")]
    Hpen { heap_id: u32 },
    #[serde(rename = "NHST")]
    Nhst { heap_id: u32 },
    #[serde(rename = "NHEN")]
    Nhen { heap_id: u32 },
    #[serde(rename = "HPGC")]
    Hpgc,
    #[serde(rename = "HPDU")]
    HpduRequest { file: String },
    #[serde(rename = "HPDU")]
    HpduReply { result: u8 },
    #[serde(rename = "HPDS")]
    HpdsRequest,
    /// An hprof dump, summarised.
    #[serde(rename = "HPDS")]
    Hpds(Blob),
    #[serde(rename = "REAE")]
    Reae { enable: bool },
    #[serde(rename = "REAQ")]
    ReaqRequest,
    #[serde(rename = "REAQ")]
    ReaqReply { enabled: bool },
    #[serde(rename = "REAL")]
    RealRequest,
    #[serde(rename = "REAL")]
    Real(Blob),
    #[serde(rename = "NHGT")]
    NhgtRequest,
    #[serde(rename = "NHGT")]
    Nhgt(Blob),
    #[serde(rename = "MPRS")]
    Mprs { buffer_size: u32, flags: u32, file: String },
    #[serde(rename = "MPRE")]
    MpreRequest,
    #[serde(rename = "MPRE")]
    MpreReply { result: u8 },
    #[serde(rename = "MPSS")]
    Mpss { buffer_size: u32, flags: u32 },
    #[serde(rename = "SPSS")]
    Spss { buffer_size: u32, flags: u32, interval_us: u32 },
    #[serde(rename = "MPSE")]
    MpseRequest,
    /// A method trace, summarised.
    #[serde(rename = "MPSE")]
    Mpse(Blob),
    #[serde(rename = "SPSE")]
    SpseRequest,
    #[serde(rename = "SPSE")]
    Spse(Blob),
    /// Reply `mode`: 0 off, 1 tracing, 2 sampling.
    #[serde(rename = "MPRQ")]
    MprqRequest,
    #[serde(rename = "MPRQ")]
    MprqReply { mode: u8 },
    #[serde(rename = "VULW")]
    VulwRequest,
    #[serde(rename = "VULW")]
    VulwReply { windows: Vec<String> },
    #[serde(rename = "VURT")]
    Vurt { op: u32, rest: Blob },
    #[serde(rename = "VURT")]
    VurtReply(Blob),
    #[serde(rename = "VUOP")]
    Vuop { op: u32, rest: Blob },
    #[serde(rename = "VUOP")]
    VuopReply(Blob),
    #[serde(rename = "VUGL")]
    Vugl { enable: bool },
    #[serde(rename = "FEAT")]
    FeatRequest,
    #[serde(rename = "FEAT")]
    FeatReply { features: Vec<String> },
    #[serde(rename = "STAG")]
    Stag { stage: BootStage },
    /// JDWP command timings measured inside ART.
    #[serde(rename = "ARTT")]
    Artt { version: u32, timings: Vec<CmdTiming> },
    #[serde(rename = "EXIT")]
    Exit { status: i32 },
    #[serde(rename = "FAIL")]
    Fail { code: u32, message: String },
    /// Left "TBD" by the design document; kept opaque.
    #[serde(rename = "DTRC")]
    Dtrc(Blob),
    #[serde(rename = "TEST")]
    Test(Blob),
    /// A ZLIB chunk, inflated; `inner` is the original chunk.
    #[serde(rename = "ZLIB")]
    Compressed { compressed_len: u32, original_len: u32, inner: Box<Chunk> },
    /// A zero-length chunk in a reply where the type's layout has data ("nothing to say").
    EmptyReply {
        #[serde(rename = "chunk")]
        ty: ChunkType,
    },
    /// A type this decoder does not know.
    Unknown {
        #[serde(rename = "chunk")]
        ty: ChunkType,
        len: u32,
        #[serde(serialize_with = "ser_hex")]
        head: Vec<u8>,
    },
    /// A huge (or unknown) chunk seen through a prefix of its packet.
    Truncated {
        #[serde(rename = "chunk")]
        ty: ChunkType,
        declared_len: u32,
        have: usize,
        #[serde(serialize_with = "ser_hex")]
        head: Vec<u8>,
    },
}

impl Chunk {
    /// The chunk type on the wire (`ZLIB` for a compressed chunk).
    pub fn chunk_type(&self) -> ChunkType {
        use Chunk::*;
        match self {
            HeloRequest { .. } | HeloReply(_) => ChunkType::HELO,
            Dbgd => ChunkType::DBGD,
            Apnm { .. } => ChunkType::APNM,
            Wait { .. } => ChunkType::WAIT,
            Then { .. } => ChunkType::THEN,
            Thcr { .. } => ChunkType::THCR,
            Thnm { .. } => ChunkType::THNM,
            Thde { .. } => ChunkType::THDE,
            ThstRequest { .. } | ThstReply(_) => ChunkType::THST,
            StklRequest { .. } | StklReply(_) => ChunkType::STKL,
            HpifRequest { .. } | HpifReply { .. } => ChunkType::HPIF,
            HpsgRequest { .. } | Hpsg(_) => ChunkType::HPSG,
            Hpso(_) => ChunkType::HPSO,
            NhsgRequest { .. } | Nhsg(_) => ChunkType::NHSG,
            Hpst { .. } => ChunkType::HPST,
            Hpen { .. } => ChunkType::HPEN,
            Nhst { .. } => ChunkType::NHST,
            Nhen { .. } => ChunkType::NHEN,
            Hpgc => ChunkType::HPGC,
            HpduRequest { .. } | HpduReply { .. } => ChunkType::HPDU,
            HpdsRequest | Hpds(_) => ChunkType::HPDS,
            Reae { .. } => ChunkType::REAE,
            ReaqRequest | ReaqReply { .. } => ChunkType::REAQ,
            RealRequest | Real(_) => ChunkType::REAL,
            NhgtRequest | Nhgt(_) => ChunkType::NHGT,
            Mprs { .. } => ChunkType::MPRS,
            MpreRequest | MpreReply { .. } => ChunkType::MPRE,
            Mpss { .. } => ChunkType::MPSS,
            Spss { .. } => ChunkType::SPSS,
            MpseRequest | Mpse(_) => ChunkType::MPSE,
            SpseRequest | Spse(_) => ChunkType::SPSE,
            MprqRequest | MprqReply { .. } => ChunkType::MPRQ,
            VulwRequest | VulwReply { .. } => ChunkType::VULW,
            Vurt { .. } | VurtReply(_) => ChunkType::VURT,
            Vuop { .. } | VuopReply(_) => ChunkType::VUOP,
            Vugl { .. } => ChunkType::VUGL,
            FeatRequest | FeatReply { .. } => ChunkType::FEAT,
            Stag { .. } => ChunkType::STAG,
            Artt { .. } => ChunkType::ARTT,
            Exit { .. } => ChunkType::EXIT,
            Fail { .. } => ChunkType::FAIL,
            Dtrc(_) => ChunkType::DTRC,
            Test(_) => ChunkType::TEST,
            Compressed { .. } => ChunkType::ZLIB,
            EmptyReply { ty } | Unknown { ty, .. } | Truncated { ty, .. } => *ty,
        }
    }

    /// Was this chunk sent inside a ZLIB wrapper?
    pub fn is_compressed(&self) -> bool {
        matches!(self, Chunk::Compressed { .. })
    }

    /// The chunk itself, looking through a ZLIB wrapper.
    pub fn uncompressed(&self) -> &Chunk {
        match self {
            Chunk::Compressed { inner, .. } => inner,
            other => other,
        }
    }
}
