//! Heap segment data (HPSG, HPSO and NHSG from the VM): a run-length encoded bitmap of a
//! stretch of heap, in allocation units.
//!
//! Layout: `u4 heapId, u1 allocUnit, u4 address, u4 offset, u4 lengthInUnits`, then pairs
//! `(u1 state, u1 units-1)`. As the design document requires, the runs and the unit count
//! must end together, or the chunk is rejected. The offset is counted in allocation units, as
//! in the document's example (a 0x400-unit heap sent as 0x300 units at offset 0, then 0x100
//! units at offset 0x300).

use std::fmt;

use serde::ser::SerializeTuple;
use serde::Serialize;

use super::error::DdmError;
use super::reader::Reader;

/// The state byte of a run: `P U0 K2 K1 K0 S2 S1 S0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct HeapState(pub u8);

impl HeapState {
    pub fn solidity(self) -> Solidity {
        Solidity::from_bits(self.0 & 0x07)
    }

    pub fn kind(self) -> Kind {
        Kind::from_bits((self.0 >> 3) & 0x07)
    }

    /// Set on every run but the last of an object longer than 256 units (HPSO only).
    pub fn partial(self) -> bool {
        self.0 & 0x80 != 0
    }

    /// The bit the document reserves ("must be zero"); kept, not enforced.
    pub fn unused_bit(self) -> bool {
        self.0 & 0x40 != 0
    }

    pub fn is_free(self) -> bool {
        self.solidity() == Solidity::Free
    }
}

/// What kind of reference holds a unit (or that it is free).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Solidity {
    Free,
    Hard,
    Soft,
    Weak,
    Phantom,
    Finalizable,
    Sweep,
    /// The one 3-bit value the document leaves undefined (7).
    Other(u8),
}

impl Solidity {
    fn from_bits(b: u8) -> Self {
        match b {
            0 => Solidity::Free,
            1 => Solidity::Hard,
            2 => Solidity::Soft,
            3 => Solidity::Weak,
            4 => Solidity::Phantom,
            5 => Solidity::Finalizable,
            6 => Solidity::Sweep,
            n => Solidity::Other(n),
        }
    }
}

impl fmt::Display for Solidity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Solidity::Free => "free",
            Solidity::Hard => "hard",
            Solidity::Soft => "soft",
            Solidity::Weak => "weak",
            Solidity::Phantom => "phantom",
            Solidity::Finalizable => "finalizable",
            Solidity::Sweep => "sweep",
            Solidity::Other(n) => return write!(f, "solidity{n}"),
        };
        f.write_str(name)
    }
}

/// What occupies a unit. Kind 7 marks a native (non-VM) allocation in NHSG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Object,
    ClassObject,
    /// Arrays of byte/boolean.
    Array1,
    /// Arrays of char/short.
    Array2,
    /// Arrays of Object/int/float.
    Array4,
    /// Arrays of long/double.
    Array8,
    Native,
    Other(u8),
}

impl Kind {
    fn from_bits(b: u8) -> Self {
        match b {
            0 => Kind::Object,
            1 => Kind::ClassObject,
            2 => Kind::Array1,
            3 => Kind::Array2,
            4 => Kind::Array4,
            5 => Kind::Array8,
            7 => Kind::Native,
            n => Kind::Other(n),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Kind::Object => "object",
            Kind::ClassObject => "class",
            Kind::Array1 => "array1",
            Kind::Array2 => "array2",
            Kind::Array4 => "array4",
            Kind::Array8 => "array8",
            Kind::Native => "native",
            Kind::Other(n) => return write!(f, "kind{n}"),
        };
        f.write_str(name)
    }
}

// Names as JSON strings (also usable as map keys in totals).
impl Serialize for Solidity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One run: `units` consecutive allocation units (1..=256) in one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub state: HeapState,
    pub units: u16,
}

/// Serialized compactly as `[state, units]`: segments can hold thousands of runs.
impl Serialize for Run {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.state.0)?;
        t.serialize_element(&self.units)?;
        t.end()
    }
}

/// A decoded HPSG/HPSO/NHSG data chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapSegment {
    pub heap_id: u32,
    /// Bytes per allocation unit.
    pub unit_size: u8,
    /// Virtual address of the segment start.
    pub address: u32,
    /// Where this piece starts, in allocation units from `address`.
    pub offset: u32,
    /// Length of this piece in allocation units.
    pub length_units: u32,
    pub runs: Vec<Run>,
}

impl HeapSegment {
    /// Byte address of this piece's first unit.
    pub fn start(&self) -> u64 {
        u64::from(self.address) + u64::from(self.offset) * u64::from(self.unit_size)
    }

    pub fn length_bytes(&self) -> u64 {
        u64::from(self.length_units) * u64::from(self.unit_size)
    }

    /// Units in free runs.
    pub fn free_units(&self) -> u64 {
        self.runs.iter().filter(|r| r.state.is_free()).map(|r| u64::from(r.units)).sum()
    }
}

/// Parses segment data, enforcing that runs and `lengthInUnits` end together.
pub fn parse_segment(data: &[u8]) -> Result<HeapSegment, DdmError> {
    let mut r = Reader::new(data);
    let heap_id = r.u4("heap id")?;
    let unit_size = r.u1("allocation unit")?;
    if unit_size == 0 {
        return Err(DdmError::Invalid { field: "allocation unit", value: 0, why: "must be at least 1 byte" });
    }
    let address = r.u4("address")?;
    let offset = r.u4("offset")?;
    let length_units = r.u4("length in units")?;
    let run_data = r.rest();
    if run_data.len() % 2 != 0 {
        return Err(DdmError::OddRunData { len: run_data.len() });
    }
    let expected = u64::from(length_units);
    // One run per byte pair, so this allocation is bounded by the chunk itself.
    let mut runs = Vec::with_capacity(run_data.len() / 2);
    let mut covered: u64 = 0;
    for pair in run_data.chunks_exact(2) {
        let units = u16::from(pair[1]) + 1;
        covered += u64::from(units);
        runs.push(Run { state: HeapState(pair[0]), units });
    }
    if covered != expected {
        return Err(DdmError::RunMismatch { expected, found: covered });
    }
    Ok(HeapSegment { heap_id, unit_size, address, offset, length_units, runs })
}

/// Encodes segment data (for tests and fake VMs); runs longer than 256 units are split.
pub fn encode_segment(seg: &HeapSegment) -> Vec<u8> {
    let mut out = Vec::with_capacity(17 + seg.runs.len() * 2);
    out.extend_from_slice(&seg.heap_id.to_be_bytes());
    out.push(seg.unit_size);
    out.extend_from_slice(&seg.address.to_be_bytes());
    out.extend_from_slice(&seg.offset.to_be_bytes());
    out.extend_from_slice(&seg.length_units.to_be_bytes());
    for run in &seg.runs {
        let mut left = run.units;
        while left > 0 {
            let n = left.min(256);
            out.push(run.state.0);
            out.push((n - 1) as u8);
            left -= n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header for the document's example heap: 8-byte units at 0x10000.
    fn header(offset: u32, len: u32) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 1, 8, 0, 1, 0, 0];
        v.extend_from_slice(&offset.to_be_bytes());
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    #[test]
    fn state_byte_splits_into_fields() {
        let cases = [
            (0x00, Solidity::Free, Kind::Object, false),
            (0x01, Solidity::Hard, Kind::Object, false),
            (0x0a, Solidity::Soft, Kind::ClassObject, false),
            (0x93, Solidity::Weak, Kind::Array1, true),
            (0x1c, Solidity::Phantom, Kind::Array2, false),
            (0x25, Solidity::Finalizable, Kind::Array4, false),
            (0x2e, Solidity::Sweep, Kind::Array8, false),
            (0x39, Solidity::Hard, Kind::Native, false),
            (0x37, Solidity::Other(7), Kind::Other(6), false),
        ];
        for (b, s, k, p) in cases {
            let st = HeapState(b);
            assert_eq!((st.solidity(), st.kind(), st.partial()), (s, k, p), "{b:#x}");
        }
        assert!(HeapState(0x40).unused_bit());
        assert_eq!(Solidity::Other(7).to_string(), "solidity7");
        assert_eq!(Kind::Array4.to_string(), "array4");
    }

    #[test]
    fn document_example_as_one_chunk() {
        // 0x400 units: 0x200 hard objects (2 runs of 256), 0x100 byte arrays, 0x100 free.
        let mut d = header(0, 0x400);
        d.extend_from_slice(&[0x01, 0xff, 0x01, 0xff, 0x11, 0xff, 0x00, 0xff]);
        let seg = parse_segment(&d).unwrap();
        assert_eq!((seg.heap_id, seg.unit_size, seg.address, seg.offset), (1, 8, 0x10000, 0));
        assert_eq!(seg.length_units, 0x400);
        assert_eq!(seg.length_bytes(), 0x2000);
        assert_eq!(seg.runs.len(), 4);
        assert_eq!(seg.runs[2], Run { state: HeapState(0x11), units: 256 });
        assert_eq!(seg.free_units(), 0x100);
        assert_eq!(encode_segment(&seg), d);
    }

    #[test]
    fn document_example_as_two_pieces() {
        let mut a = header(0, 0x300);
        a.extend_from_slice(&[0x01, 0xff, 0x01, 0xff, 0x11, 0xff]);
        let mut b = header(0x300, 0x100);
        b.extend_from_slice(&[0x00, 0x7f, 0x00, 0x7f]);
        let (a, b) = (parse_segment(&a).unwrap(), parse_segment(&b).unwrap());
        assert_eq!((a.start(), a.length_bytes()), (0x10000, 0x1800));
        assert_eq!((b.start(), b.length_bytes()), (0x11800, 0x800));
        assert_eq!(b.free_units(), 0x100);
    }

    #[test]
    fn bad_run_data_is_rejected_with_numbers() {
        let cases: Vec<(Vec<u8>, DdmError)> = vec![
            // Runs stop short of the length.
            ([header(0, 0x400), vec![0x01, 0xff]].concat(), DdmError::RunMismatch { expected: 0x400, found: 0x100 }),
            // Runs overshoot it.
            ([header(0, 10), vec![0x01, 0x0a]].concat(), DdmError::RunMismatch { expected: 10, found: 11 }),
            // Units accounted for, data left over.
            ([header(0, 1), vec![0x01, 0x00, 0x00, 0x00]].concat(), DdmError::RunMismatch { expected: 1, found: 2 }),
            // No run data at all for a non-empty piece.
            (header(0, 5), DdmError::RunMismatch { expected: 5, found: 0 }),
            // Half a pair.
            ([header(0, 1), vec![0x01, 0x00, 0x01]].concat(), DdmError::OddRunData { len: 3 }),
            // Header cut short.
            (vec![0, 0, 0, 1, 8, 0, 1], DdmError::Short { field: "address", needed: 4, available: 2 }),
            // Zero-byte unit.
            (vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], DdmError::Invalid {
                field: "allocation unit",
                value: 0,
                why: "must be at least 1 byte",
            }),
        ];
        for (i, (data, want)) in cases.into_iter().enumerate() {
            assert_eq!(parse_segment(&data).unwrap_err(), want, "case {i}");
        }
    }

    #[test]
    fn empty_piece_is_fine() {
        let seg = parse_segment(&header(0, 0)).unwrap();
        assert!(seg.runs.is_empty());
    }

    #[test]
    fn runs_serialize_compactly() {
        let mut d = header(0, 3);
        d.extend_from_slice(&[0x01, 0x02]);
        let v = serde_json::to_value(parse_segment(&d).unwrap()).unwrap();
        assert_eq!(v["runs"], serde_json::json!([[1, 3]]));
        assert_eq!(v["address"], 0x10000);
    }
}
