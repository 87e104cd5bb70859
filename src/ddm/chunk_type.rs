//! Chunk types: four ASCII letters packed big-endian into a u32 (`HELO`), the known ones
//! named. In a file of its own: the framing (`chunk`) and the errors (`error`) both name it.

use std::fmt;

/// A DDM chunk type such as `HELO`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkType(pub u32);

macro_rules! chunk_types {
    ($($name:ident),* $(,)?) => {
        impl ChunkType {
            $(pub const $name: ChunkType = ChunkType::from_name(stringify!($name));)*
            /// Every type this decoder knows by name.
            pub const KNOWN: &'static [ChunkType] = &[$(ChunkType::$name),*];
        }
    };
}

chunk_types!(
    HELO, DBGD, APNM, WAIT, THEN, THCR, THDE, THST, THNM, HPIF, HPSG, HPSO, NHSG, HPST, HPEN,
    NHST, NHEN, FAIL, EXIT, DTRC, FEAT, STAG, ARTT, STKL, HPGC, HPDU, HPDS, REAE, REAQ, REAL,
    NHGT, MPRS, MPRE, MPSS, MPSE, SPSS, SPSE, MPRQ, VULW, VURT, VUOP, VUGL, TEST, ZLIB,
);

impl ChunkType {
    pub const fn from_bytes(b: [u8; 4]) -> Self {
        ChunkType(u32::from_be_bytes(b))
    }

    /// For the constants: indexing runs at compile time on our own four-letter names.
    const fn from_name(name: &str) -> Self {
        let b = name.as_bytes();
        ChunkType::from_bytes([b[0], b[1], b[2], b[3]])
    }

    pub const fn to_bytes(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }

    /// Types whose data may legitimately be far larger than anything we want to hold.
    pub fn is_huge(self) -> bool {
        matches!(self, ChunkType::HPDS | ChunkType::MPSE | ChunkType::SPSE | ChunkType::REAL)
    }

    pub fn is_known(self) -> bool {
        ChunkType::KNOWN.contains(&self)
    }
}

/// Writes four bytes as text: printable ASCII as is, anything else (and `\`) as `\xNN`.
pub(super) fn fmt_fourcc(v: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let bytes = v.to_be_bytes();
    let shown_as_is = |b: u8| b.is_ascii_graphic() && b != b'\\' || b == b' ';
    // Every logged chunk starts with its type: the usual four letters go in one write.
    if bytes.iter().all(|&b| shown_as_is(b)) {
        if let Ok(s) = std::str::from_utf8(&bytes) {
            return f.write_str(s);
        }
    }
    for b in bytes {
        if shown_as_is(b) {
            write!(f, "{}", b as char)?;
        } else {
            write!(f, "\\x{b:02x}")?;
        }
    }
    Ok(())
}

impl fmt::Display for ChunkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_fourcc(self.0, f)
    }
}

impl fmt::Debug for ChunkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkType({self})")
    }
}

impl serde::Serialize for ChunkType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
