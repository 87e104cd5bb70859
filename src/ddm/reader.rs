//! A bounded big-endian reader over `&[u8]` and the matching writer.
//!
//! Every read names the field it reads, so errors say which field did not fit and by how much.
//! Lengths and counts that come from the wire are checked against the bytes that are left
//! before anything is allocated: a 4 GiB string length in a 20-byte chunk is an error value.

use super::error::DdmError;

/// Cursor over a byte slice; reads never go past its end.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Takes the next `n` bytes, or fails naming `field`.
    pub fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DdmError> {
        let available = self.remaining();
        if n > available {
            return Err(DdmError::Short { field, needed: n as u64, available });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DdmError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, field)?);
        Ok(out)
    }

    pub fn u1(&mut self, field: &'static str) -> Result<u8, DdmError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub fn u2(&mut self, field: &'static str) -> Result<u16, DdmError> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    pub fn u4(&mut self, field: &'static str) -> Result<u32, DdmError> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u64, DdmError> {
        Ok(u64::from_be_bytes(self.array(field)?))
    }

    /// `u4 length in UTF-16 units` followed by that many UTF-16BE units.
    pub fn string(&mut self, field: &'static str) -> Result<String, DdmError> {
        let units = self.u4(field)?;
        self.utf16(units, field)
    }

    /// `units` UTF-16BE code units (length given elsewhere, as in HELO). Unpaired surrogates
    /// become U+FFFD: a VM's odd thread name is worth logging, not rejecting.
    pub fn utf16(&mut self, units: u32, field: &'static str) -> Result<String, DdmError> {
        let needed = u64::from(units) * 2;
        let available = self.remaining();
        if needed > available as u64 {
            return Err(DdmError::StringTooLong { field, units, needed, available });
        }
        let raw = self.bytes(needed as usize, field)?;
        let code_units: Vec<u16> =
            raw.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect();
        Ok(String::from_utf16_lossy(&code_units))
    }

    /// Checks that `count` elements of at least `min_size` bytes each can still be present,
    /// so a caller may `Vec::with_capacity(count)` without trusting the wire.
    pub fn check_count(
        &self,
        count: u64,
        min_size: u64,
        field: &'static str,
    ) -> Result<usize, DdmError> {
        let needed = count.saturating_mul(min_size);
        let available = self.remaining();
        if needed > available as u64 {
            return Err(DdmError::CountTooLarge { field, count, needed, available });
        }
        // count <= available here whenever min_size >= 1, so it fits in usize.
        usize::try_from(count).map_err(|_| DdmError::CountTooLarge {
            field,
            count,
            needed,
            available,
        })
    }

    /// A child reader over the next `n` bytes; this reader moves past them.
    pub fn sub(&mut self, n: usize, field: &'static str) -> Result<Reader<'a>, DdmError> {
        Ok(Reader::new(self.bytes(n, field)?))
    }

    pub fn skip(&mut self, n: usize, field: &'static str) -> Result<(), DdmError> {
        self.bytes(n, field).map(|_| ())
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Fails if anything is left; `after` names the layout that should have ended here.
    pub fn expect_empty(&self, after: &'static str) -> Result<(), DdmError> {
        match self.remaining() {
            0 => Ok(()),
            trailing => Err(DdmError::Trailing { after, trailing }),
        }
    }
}

/// Big-endian writer for the chunks the proxy (or a test VM) sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }

    pub fn put_u1(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    pub fn put_u2(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_u4(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_u8(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    /// UTF-16BE units without a length prefix.
    pub fn put_utf16(&mut self, s: &str) -> &mut Self {
        for unit in s.encode_utf16() {
            self.buf.extend_from_slice(&unit.to_be_bytes());
        }
        self
    }

    /// `u4 length in UTF-16 units` + UTF-16BE. Lengths saturate at u32::MAX (never reached
    /// by anything this proxy sends).
    pub fn put_string(&mut self, s: &str) -> &mut Self {
        self.put_u4(utf16_len(s));
        self.put_utf16(s)
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }
}

/// Length of `s` in UTF-16 code units, as the wire counts it.
pub fn utf16_len(s: &str) -> u32 {
    u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_integers() {
        let data = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        let mut r = Reader::new(&data);
        assert_eq!(r.u1("a").unwrap(), 1);
        assert_eq!(r.u2("b").unwrap(), 0x0203);
        assert_eq!(r.u4("c").unwrap(), 0x0405_0607);
        assert_eq!(r.u8("d").unwrap(), 0x0809_0a0b_0c0d_0e0f);
        assert_eq!(r.remaining(), 0);
        assert!(r.expect_empty("x").is_ok());
    }

    #[test]
    fn short_reads_name_field_and_numbers() {
        let cases: &[(&[u8], DdmError)] = &[
            (&[], DdmError::Short { field: "f", needed: 1, available: 0 }),
            (&[1], DdmError::Short { field: "f", needed: 2, available: 1 }),
            (&[1, 2, 3], DdmError::Short { field: "f", needed: 4, available: 3 }),
            (&[1; 7], DdmError::Short { field: "f", needed: 8, available: 7 }),
        ];
        for (i, (data, want)) in cases.iter().enumerate() {
            let mut r = Reader::new(data);
            let got = match i {
                0 => r.u1("f").map(u64::from),
                1 => r.u2("f").map(u64::from),
                2 => r.u4("f").map(u64::from),
                _ => r.u8("f"),
            };
            assert_eq!(got.unwrap_err(), *want, "case {i}");
        }
    }

    #[test]
    fn strings_decode_utf16be() {
        // "hé" then "😀" (a surrogate pair: 2 units).
        let data = [0, 0, 0, 2, 0, b'h', 0, 0xe9, 0, 0, 0, 2, 0xd8, 0x3d, 0xde, 0x00];
        let mut r = Reader::new(&data);
        assert_eq!(r.string("a").unwrap(), "hé");
        assert_eq!(r.string("b").unwrap(), "😀");
        assert!(r.is_empty());
    }

    #[test]
    fn unpaired_surrogate_is_replaced_not_rejected() {
        let data = [0, 0, 0, 1, 0xd8, 0x00];
        assert_eq!(Reader::new(&data).string("s").unwrap(), "\u{fffd}");
    }

    #[test]
    fn huge_string_length_is_refused_before_allocating() {
        let data = [0xff, 0xff, 0xff, 0xff, 0, b'a'];
        let err = Reader::new(&data).string("name").unwrap_err();
        assert_eq!(
            err,
            DdmError::StringTooLong {
                field: "name",
                units: u32::MAX,
                needed: u64::from(u32::MAX) * 2,
                available: 2
            }
        );
    }

    #[test]
    fn sub_reader_is_bounded_and_advances_parent() {
        let data = [1, 2, 3, 4, 5];
        let mut r = Reader::new(&data);
        let mut s = r.sub(3, "entry").unwrap();
        assert_eq!(r.remaining(), 2);
        assert_eq!(s.u2("x").unwrap(), 0x0102);
        assert_eq!(s.u2("y").unwrap_err(), DdmError::Short { field: "y", needed: 2, available: 1 });
        assert_eq!(r.sub(3, "entry").unwrap_err(), DdmError::Short {
            field: "entry",
            needed: 3,
            available: 2
        });
    }

    #[test]
    fn count_check_and_trailing() {
        let data = [0u8; 10];
        let r = Reader::new(&data);
        assert_eq!(r.check_count(2, 5, "n").unwrap(), 2);
        assert_eq!(r.check_count(u64::from(u32::MAX), 29, "n").unwrap_err(), DdmError::CountTooLarge {
            field: "n",
            count: u64::from(u32::MAX),
            needed: u64::from(u32::MAX) * 29,
            available: 10
        });
        assert_eq!(r.expect_empty("HELO").unwrap_err(), DdmError::Trailing {
            after: "HELO",
            trailing: 10
        });
    }

    #[test]
    fn writer_matches_hand_written_bytes() {
        let mut w = Writer::new();
        w.put_u1(7).put_u2(0x0102).put_u4(0x0a0b0c0d).put_u8(1).put_string("hé");
        let want: Vec<u8> =
            vec![7, 1, 2, 10, 11, 12, 13, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, b'h', 0, 0xe9];
        assert_eq!(w.len(), want.len());
        assert_eq!(w.into_vec(), want);
        assert_eq!(utf16_len("😀x"), 3);
    }
}
