//! A bounded big-endian reader for JDWP packet bodies: every read is checked against what is
//! left, so a malformed reply is an error value with the numbers in it, never a panic.

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{what}: needed {needed} bytes, {available} left")]
pub struct ReadError {
    pub what: &'static str,
    pub needed: usize,
    pub available: usize,
}

pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ReadError> {
        if n > self.buf.len() {
            return Err(ReadError { what, needed: n, available: self.buf.len() });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, ReadError> {
        Ok(self.bytes(1, what)?[0])
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, ReadError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i32(&mut self, what: &'static str) -> Result<i32, ReadError> {
        self.u32(what).map(|v| v as i32)
    }

    /// A JDWP string: u4 byte length, then (modified) UTF-8; invalid bytes are replaced.
    pub fn string(&mut self, what: &'static str) -> Result<String, ReadError> {
        let len = self.u32(what)? as usize;
        Ok(String::from_utf8_lossy(self.bytes(len, what)?).into_owned())
    }

    /// An object id of the size the VM announced in IDSizes (1 to 8 bytes).
    pub fn id(&mut self, size: usize, what: &'static str) -> Result<u64, ReadError> {
        let b = self.bytes(size, what)?;
        Ok(b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
    }
}

/// Appends an object id of `size` bytes, big-endian.
pub fn put_id(out: &mut Vec<u8>, id: u64, size: usize) {
    let be = id.to_be_bytes();
    out.extend_from_slice(&be[8usize.saturating_sub(size)..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_bounds() {
        let data = [0, 0, 0, 2, b'h', b'i', 0, 0, 0, 7, 9];
        let mut r = Reader::new(&data);
        assert_eq!(r.string("s").unwrap(), "hi");
        assert_eq!(r.u32("n").unwrap(), 7);
        assert_eq!(r.u32("x"), Err(ReadError { what: "x", needed: 4, available: 1 }));
        assert_eq!(r.u8("b").unwrap(), 9);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn string_length_beyond_data_is_an_error() {
        let mut r = Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 1]);
        assert_eq!(r.string("vm name").unwrap_err().needed, 0xFFFF_FFFF);
    }

    #[test]
    fn ids_of_any_size_round_trip() {
        for size in [1usize, 2, 4, 8] {
            let mut out = Vec::new();
            put_id(&mut out, 0x42, size);
            assert_eq!(out.len(), size);
            assert_eq!(Reader::new(&out).id(size, "id").unwrap(), 0x42);
        }
    }
}
