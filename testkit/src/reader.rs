//! A bounds-checked big-endian byte reader and the two string encodings on the wire:
//! DDM strings (u4 UTF-16 units + UTF-16BE) and JDWP strings (u4 bytes + UTF-8).

use bytes::BufMut;

use super::wire::WireError;

/// UTF-16BE code units of `s`, without a length.
pub fn utf16be(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_be_bytes()).collect()
}

/// DDM string: u4 length in UTF-16 units + UTF-16BE.
pub fn put_ddm_string(out: &mut Vec<u8>, s: &str) {
    let units = utf16be(s);
    out.put_u32((units.len() / 2) as u32);
    out.extend_from_slice(&units);
}

pub fn ddm_string(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_ddm_string(&mut out, s);
    out
}

/// JDWP string: u4 byte length + UTF-8.
pub fn put_jdwp_string(out: &mut Vec<u8>, s: &str) {
    out.put_u32(s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// An object, type, field, method or frame id of `size` bytes (the VM's IDSizes): the low
/// bytes of `v`, big-endian.
pub fn put_id(out: &mut Vec<u8>, v: u64, size: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - size.min(8)..]);
}

pub fn jdwp_string(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_jdwp_string(&mut out, s);
    out
}

/// Big-endian cursor over bytes; every read checks bounds. The small reads are inlined
/// across crates: the benchmark parses whole class lists with it inside timed runs.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let left = self.remaining();
        if n > left {
            return Err(WireError::Truncated { at: self.pos, wanted: n, left });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    #[inline]
    pub fn u1(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    pub fn u2(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u4(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// An id of `size` bytes (the VM's IDSizes, 1..=8).
    #[inline]
    pub fn id(&mut self, size: usize) -> Result<u64, WireError> {
        if !(1..=8).contains(&size) {
            return Err(WireError::BadIdSize { size });
        }
        Ok(self.bytes(size)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// Four raw bytes, e.g. a chunk type or a boot stage.
    pub fn ty4(&mut self) -> Result<[u8; 4], WireError> {
        self.array()
    }

    /// `units` UTF-16BE code units (for layouts that give the length elsewhere, like HELO).
    pub fn utf16(&mut self, units: usize) -> Result<String, WireError> {
        let at = self.pos;
        let n = units.checked_mul(2).ok_or(WireError::BadString { at })?;
        let raw = self.bytes(n)?;
        let cu: Vec<u16> = raw.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect();
        String::from_utf16(&cu).map_err(|_| WireError::BadString { at })
    }

    pub fn ddm_string(&mut self) -> Result<String, WireError> {
        let units = self.u4()? as usize;
        self.utf16(units)
    }

    #[inline]
    pub fn jdwp_string(&mut self) -> Result<String, WireError> {
        let n = self.u4()? as usize;
        let at = self.pos;
        let raw = self.bytes(n)?;
        String::from_utf8(raw.to_vec()).map_err(|_| WireError::BadString { at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_encode_and_decode() {
        let d = ddm_string("h\u{e9}\u{1F600}");
        assert_eq!(&d[..4], &[0, 0, 0, 4]); // surrogate pair counts as two units
        assert_eq!(Reader::new(&d).ddm_string().unwrap(), "h\u{e9}\u{1F600}");
        let j = jdwp_string("h\u{e9}");
        assert_eq!(j, vec![0, 0, 0, 3, b'h', 0xC3, 0xA9]);
        assert_eq!(Reader::new(&j).jdwp_string().unwrap(), "h\u{e9}");
        assert!(Reader::new(&[0, 0, 0, 9, 0]).ddm_string().is_err());
        assert!(Reader::new(&[0, 0, 0, 1, 0xFF]).jdwp_string().is_err());
    }

    #[test]
    fn ids_of_any_size() {
        let mut d = Vec::new();
        put_id(&mut d, 0x0102_0304_0506_0708, 8);
        put_id(&mut d, 0x1234, 2);
        put_id(&mut d, 0xAB, 1);
        assert_eq!(&d[8..], &[0x12, 0x34, 0xAB]);
        let mut r = Reader::new(&d);
        assert_eq!(r.id(8).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(r.id(2).unwrap(), 0x1234);
        assert_eq!(r.id(1).unwrap(), 0xAB);
        assert!(matches!(r.id(4), Err(WireError::Truncated { wanted: 4, left: 0, .. })));
        assert!(matches!(Reader::new(&[0; 16]).id(9), Err(WireError::BadIdSize { size: 9 })));
        assert!(matches!(Reader::new(&[0; 16]).id(0), Err(WireError::BadIdSize { size: 0 })));
    }
}
