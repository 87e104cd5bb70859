//! The JDWP commands the benchmark issues (from the JDWP specification) and the checks on
//! their replies: IDSizes, Version, AllClasses, finding the static `Big.data` byte[] and
//! verifying an ArrayReference.GetValues region of it as it streams past.

use testkit::blocking_client::{BlockingClient, ClientError, Result};
use testkit::reader::{put_id, put_jdwp_string as put_str, Reader};

// The commands the kit's lean fake VMs answer, as they know them.
pub use testkit::consts::ERR_NOT_IMPLEMENTED;
pub use testkit::fake_vm::lean_wire::{ALL_THREADS, ARRAY_GET_VALUES, DDM, ID_SIZES, STRING_VALUE, TAG_BYTE, VERSION};

pub const CLASSES_BY_SIGNATURE: (u8, u8) = (1, 2);
pub const ALL_CLASSES: (u8, u8) = (1, 3);
pub const FIELDS: (u8, u8) = (2, 4);
pub const REF_GET_VALUES: (u8, u8) = (2, 6);
pub const ARRAY_LENGTH: (u8, u8) = (13, 1);
/// JDWP tag of an array object.
pub const TAG_ARRAY: u8 = b'[';

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdSizes {
    pub field: usize,
    pub method: usize,
    pub object: usize,
    pub reftype: usize,
    pub frame: usize,
}

pub fn id_sizes(c: &mut BlockingClient) -> Result<IdSizes> {
    parse_id_sizes(&c.request(ID_SIZES.0, ID_SIZES.1, &[])?)
}

pub fn parse_id_sizes(data: &[u8]) -> Result<IdSizes> {
    let mut r = Reader::new(data);
    let mut v = [0usize; 5];
    for s in v.iter_mut() {
        *s = r.u4()? as usize;
        if !(1..=8).contains(s) {
            return Err(ClientError::Content(format!("id size {s}")));
        }
    }
    Ok(IdSizes { field: v[0], method: v[1], object: v[2], reftype: v[3], frame: v[4] })
}

/// `vmName` out of a VirtualMachine.Version reply.
pub fn version_vm_name(data: &[u8]) -> Result<String> {
    let mut r = Reader::new(data);
    let _description = r.jdwp_string()?;
    let _major = r.u4()?;
    let _minor = r.u4()?;
    let _vm_version = r.jdwp_string()?;
    Ok(r.jdwp_string()?)
}

/// Parses a whole AllClasses reply and returns the class count.
pub fn count_classes(data: &[u8], ids: &IdSizes) -> Result<usize> {
    let mut r = Reader::new(data);
    let n = r.u4()? as usize;
    for _ in 0..n {
        let _tag = r.u1()?;
        let _type_id = r.id(ids.reftype)?;
        let sig = r.jdwp_string()?;
        let _status = r.u4()?;
        if sig.is_empty() {
            return Err(ClientError::Content("empty class signature".into()));
        }
    }
    if r.remaining() != 0 {
        return Err(ClientError::Content(format!("{} bytes after {n} classes", r.remaining())));
    }
    Ok(n)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BigArray {
    pub id: u64,
    pub len: u32,
}

/// Finds the array in static field `field` of class `sig` (e.g. "LBig;", "data").
pub fn find_static_array(c: &mut BlockingClient, ids: &IdSizes, sig: &str, field: &str) -> Result<BigArray> {
    let mut q = Vec::new();
    put_str(&mut q, sig);
    let d = c.request(CLASSES_BY_SIGNATURE.0, CLASSES_BY_SIGNATURE.1, &q)?;
    let mut r = Reader::new(&d);
    if r.u4()? == 0 {
        return Err(ClientError::Content(format!("class {sig} is not loaded")));
    }
    let _tag = r.u1()?;
    let class = r.id(ids.reftype)?;
    let mut q = Vec::new();
    put_id(&mut q, class, ids.reftype);
    let d = c.request(FIELDS.0, FIELDS.1, &q)?;
    let mut r = Reader::new(&d);
    let n = r.u4()?;
    let mut found = None;
    for _ in 0..n {
        let fid = r.id(ids.field)?;
        let name = r.jdwp_string()?;
        let _sig = r.jdwp_string()?;
        let _mods = r.u4()?;
        if name == field {
            found = Some(fid);
        }
    }
    let fid = found.ok_or_else(|| ClientError::Content(format!("{sig} has no field {field}")))?;
    let mut q = Vec::new();
    put_id(&mut q, class, ids.reftype);
    q.extend_from_slice(&1u32.to_be_bytes());
    put_id(&mut q, fid, ids.field);
    let d = c.request(REF_GET_VALUES.0, REF_GET_VALUES.1, &q)?;
    let mut r = Reader::new(&d);
    if r.u4()? != 1 || r.u1()? != TAG_ARRAY {
        return Err(ClientError::Content(format!("{sig}.{field} is not an array")));
    }
    let id = r.id(ids.object)?;
    if id == 0 {
        return Err(ClientError::Content(format!("{sig}.{field} is null")));
    }
    let mut q = Vec::new();
    put_id(&mut q, id, ids.object);
    let d = c.request(ARRAY_LENGTH.0, ARRAY_LENGTH.1, &q)?;
    let len = Reader::new(&d).u4()?;
    Ok(BigArray { id, len })
}

/// Body of ArrayReference.GetValues(array, first, length).
pub fn get_values_request(array: u64, object_size: usize, first: u32, length: u32) -> Vec<u8> {
    let mut q = Vec::new();
    put_id(&mut q, array, object_size);
    q.extend_from_slice(&first.to_be_bytes());
    q.extend_from_slice(&length.to_be_bytes());
    q
}

pub use testkit::fake_vm::lean_wire::pattern_byte;

/// Checks a byte[] GetValues reply body (tag 'B', count, bytes) piece by piece.
pub struct ByteRegionCheck {
    first: u64,
    count: u32,
    head: Vec<u8>,
    seen: u64,
    pattern: Vec<u8>,
}

const HEAD: usize = 5;
const PIECE: usize = 64 * 1024;

impl ByteRegionCheck {
    pub fn new(first: u32, count: u32) -> ByteRegionCheck {
        let pattern = (0..(PIECE + 256) as u64).map(pattern_byte).collect();
        ByteRegionCheck { first: u64::from(first), count, head: Vec::with_capacity(HEAD), seen: 0, pattern }
    }

    pub fn body_len(count: u32) -> usize {
        HEAD + count as usize
    }

    pub fn feed(&mut self, mut data: &[u8]) -> Result<()> {
        if self.head.len() < HEAD {
            let n = (HEAD - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.head.len() == HEAD {
                let count = u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
                if self.head[0] != TAG_BYTE || count != self.count {
                    return Err(ClientError::Content(format!("region tag {} count {count}", self.head[0])));
                }
            }
        }
        while !data.is_empty() {
            let n = data.len().min(PIECE);
            let at = ((self.first + self.seen) % 256) as usize;
            if data[..n] != self.pattern[at..at + n] {
                return Err(ClientError::Content(format!("array bytes differ near index {}", self.seen)));
            }
            self.seen += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    pub fn finish(&self) -> Result<()> {
        if self.head.len() != HEAD || self.seen != u64::from(self.count) {
            return Err(ClientError::Content(format!("region ended after {} of {} bytes", self.seen, self.count)));
        }
        Ok(())
    }
}

/// A byte[] GetValues reply body as the fake VM sends it, for tests.
#[cfg(test)]
pub fn region_body(first: u32, count: u32) -> Vec<u8> {
    let mut b = vec![TAG_BYTE];
    b.extend_from_slice(&count.to_be_bytes());
    b.extend((0..u64::from(count)).map(|i| pattern_byte(u64::from(first) + i)));
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_entry(out: &mut Vec<u8>, sig: &str) {
        out.push(1);
        put_id(out, 42, 8);
        put_str(out, sig);
        out.extend_from_slice(&7u32.to_be_bytes());
    }

    #[test]
    fn all_classes_is_parsed_whole() {
        let ids = IdSizes { field: 8, method: 8, object: 8, reftype: 8, frame: 8 };
        let mut d = 2u32.to_be_bytes().to_vec();
        class_entry(&mut d, "LA;");
        class_entry(&mut d, "LB;");
        assert_eq!(count_classes(&d, &ids).unwrap(), 2);
        let mut extra = d.clone();
        extra.push(0);
        assert!(count_classes(&extra, &ids).is_err());
        assert!(count_classes(&d[..d.len() - 1], &ids).is_err());
    }

    #[test]
    fn id_sizes_and_version() {
        let mut d = Vec::new();
        for s in [8u32, 8, 8, 8, 8] {
            d.extend_from_slice(&s.to_be_bytes());
        }
        assert_eq!(parse_id_sizes(&d).unwrap().object, 8);
        d[11] = 9;
        assert!(parse_id_sizes(&d).is_err());
        let mut v = Vec::new();
        put_str(&mut v, "desc");
        v.extend_from_slice(&[0, 0, 0, 17, 0, 0, 0, 0]);
        put_str(&mut v, "17.0");
        put_str(&mut v, "OpenJDK 64-Bit Server VM");
        assert_eq!(version_vm_name(&v).unwrap(), "OpenJDK 64-Bit Server VM");
    }

    #[test]
    fn region_check_accepts_any_split_and_rejects_damage() {
        let body = region_body(3, 200_000);
        for split in [1usize, 4, 5, 6, 65_536, 150_000] {
            let mut c = ByteRegionCheck::new(3, 200_000);
            c.feed(&body[..split]).unwrap();
            c.feed(&body[split..]).unwrap();
            c.finish().unwrap();
        }
        let mut bad = body.clone();
        bad[100_000] ^= 1;
        let mut c = ByteRegionCheck::new(3, 200_000);
        assert!(c.feed(&bad).is_err());
        let mut short = ByteRegionCheck::new(3, 200_000);
        short.feed(&body[..1000]).unwrap();
        assert!(short.finish().is_err());
        let mut wrong_count = ByteRegionCheck::new(3, 10);
        assert!(wrong_count.feed(&body[..HEAD]).is_err());
    }
}
