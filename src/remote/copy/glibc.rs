//! Which glibc a binary needs, read from its ELF version needs (`.gnu.version_r`): the
//! newest `GLIBC_x.y[.z]` any of its symbols asks for. A binary built against glibc runs on a
//! host with that glibc or a newer one, so this is what a host's glibc is checked against
//! before this binary is copied there. Pure: bytes in, a version out; every offset and count
//! read from the file is checked against the file's length.

/// A glibc version, compared part by part (2.34 < 2.35 < 2.35.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Glibc(pub u32, pub u32, pub u32);

impl std::fmt::Display for Glibc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.2 {
            0 => write!(f, "{}.{}", self.0, self.1),
            p => write!(f, "{}.{}.{p}", self.0, self.1),
        }
    }
}

impl Glibc {
    /// `2.36` or `2.35.1`; None for anything else.
    pub fn parse(s: &str) -> Option<Glibc> {
        let mut parts = s.split('.');
        let mut num = || parts.next().map(|p| p.parse::<u32>().ok());
        let (major, minor) = (num()??, num()??);
        let patch = num().unwrap_or(Some(0))?;
        parts.next().is_none().then_some(Glibc(major, minor, patch))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("the ELF file is cut short or its {0} points outside it")]
    Truncated(&'static str),
}

/// The version-needs section's type (SHT_GNU_verneed).
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
/// More entries than any real binary has: a bound on the loops over what the file says.
const MAX_ENTRIES: usize = 4096;

/// Reads fields of an ELF file of either class and byte order.
struct Elf<'a> {
    b: &'a [u8],
    wide: bool,
    big: bool,
}

impl Elf<'_> {
    fn bytes<const N: usize>(&self, at: usize, what: &'static str) -> Result<[u8; N], ElfError> {
        let end = at.checked_add(N).ok_or(ElfError::Truncated(what))?;
        self.b.get(at..end).and_then(|s| s.try_into().ok()).ok_or(ElfError::Truncated(what))
    }
    fn u16(&self, at: usize, what: &'static str) -> Result<usize, ElfError> {
        let b = self.bytes::<2>(at, what)?;
        Ok(usize::from(if self.big { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) }))
    }
    fn u32(&self, at: usize, what: &'static str) -> Result<usize, ElfError> {
        let b = self.bytes::<4>(at, what)?;
        let v = if self.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) };
        usize::try_from(v).map_err(|_| ElfError::Truncated(what))
    }
    /// An address-sized field: 8 bytes in a 64-bit file, 4 in a 32-bit one.
    fn word(&self, at: usize, what: &'static str) -> Result<usize, ElfError> {
        if !self.wide {
            return self.u32(at, what);
        }
        let b = self.bytes::<8>(at, what)?;
        let v = if self.big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) };
        usize::try_from(v).map_err(|_| ElfError::Truncated(what))
    }
    /// The NUL-ended string at `at`.
    fn str(&self, at: usize) -> Result<&str, ElfError> {
        let rest = self.b.get(at..).ok_or(ElfError::Truncated("version name"))?;
        let end = rest.iter().position(|&c| c == 0).ok_or(ElfError::Truncated("version name"))?;
        // A name that is not text is no GLIBC_ name.
        Ok(std::str::from_utf8(&rest[..end]).unwrap_or(""))
    }
}

/// The newest glibc version the ELF file `b` needs; None when it needs none (linked
/// statically, or against another C library).
pub fn needed(b: &[u8]) -> Result<Option<Glibc>, ElfError> {
    if b.get(..4) != Some(b"\x7fELF") {
        return Err(ElfError::NotElf);
    }
    let wide = match b.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err(ElfError::NotElf),
    };
    let big = match b.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err(ElfError::NotElf),
    };
    let e = Elf { b, wide, big };
    let (shoff, shentsize, shnum) = if wide {
        (e.word(0x28, "section table")?, e.u16(0x3a, "section table")?, e.u16(0x3c, "section table")?)
    } else {
        (e.word(0x20, "section table")?, e.u16(0x2e, "section table")?, e.u16(0x30, "section table")?)
    };
    // Offsets within a section header: (type, offset, link, info).
    let (o_off, o_link, o_info) = if wide { (0x18, 0x28, 0x2c) } else { (0x10, 0x18, 0x1c) };
    let section = |i: usize| -> Result<usize, ElfError> {
        i.checked_mul(shentsize).and_then(|o| o.checked_add(shoff)).ok_or(ElfError::Truncated("section table"))
    };
    let mut newest: Option<Glibc> = None;
    for i in 0..shnum {
        let sh = section(i)?;
        if e.u32(sh + 4, "section header")? != SHT_GNU_VERNEED as usize {
            continue;
        }
        let at = e.word(sh + o_off, "version needs")?;
        let count = e.u32(sh + o_info, "version needs")?.min(MAX_ENTRIES);
        let strtab = section(e.u32(sh + o_link, "version needs")?)?;
        let names = e.word(strtab + o_off, "version names")?;
        let mut need = at;
        for _ in 0..count {
            let aux_count = e.u16(need + 2, "version need")?.min(MAX_ENTRIES);
            let mut aux = need.checked_add(e.u32(need + 8, "version need")?).ok_or(ElfError::Truncated("version need"))?;
            for _ in 0..aux_count {
                let name = names.checked_add(e.u32(aux + 8, "version name")?).ok_or(ElfError::Truncated("version name"))?;
                if let Some(v) = e.str(name)?.strip_prefix("GLIBC_").and_then(Glibc::parse) {
                    newest = newest.max(Some(v));
                }
                match e.u32(aux + 12, "version need")? {
                    0 => break,
                    next => aux = aux.checked_add(next).ok_or(ElfError::Truncated("version need"))?,
                }
            }
            match e.u32(need + 12, "version need")? {
                0 => break,
                next => need = need.checked_add(next).ok_or(ElfError::Truncated("version need"))?,
            }
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_and_compare_part_by_part() {
        assert_eq!(Glibc::parse("2.36"), Some(Glibc(2, 36, 0)));
        assert_eq!(Glibc::parse("2.35.1"), Some(Glibc(2, 35, 1)));
        for bad in ["", "2", "2.", "x.1", "2.36.1.1", "2.3a", " 2.36"] {
            assert_eq!(Glibc::parse(bad), None, "{bad:?}");
        }
        assert!(Glibc(2, 9, 0) < Glibc(2, 17, 0) && Glibc(2, 35, 0) < Glibc(2, 35, 1));
        assert_eq!((Glibc(2, 34, 0).to_string(), Glibc(2, 2, 5).to_string()), ("2.34".into(), "2.2.5".into()));
    }

    /// The test binary itself: built against glibc when the target is, and then it needs at
    /// least 2.2.5 (x86_64's first symbol version) and no more than the glibc it runs on.
    #[test]
    fn this_binary_needs_what_it_was_linked_against() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let need = needed(&exe).unwrap();
        if cfg!(target_env = "gnu") {
            let need = need.expect("a glibc build needs a glibc");
            assert!(need >= Glibc(2, 2, 5), "{need}");
            // SAFETY: gnu_get_libc_version returns a static NUL-ended string.
            let running = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) }.to_str().unwrap();
            assert!(need <= Glibc::parse(running).unwrap(), "needs {need}, runs on {running}");
        }
    }

    #[cfg(target_env = "gnu")]
    extern "C" {
        fn gnu_get_libc_version() -> *const std::os::raw::c_char;
    }
    #[cfg(not(target_env = "gnu"))]
    unsafe fn gnu_get_libc_version() -> *const std::os::raw::c_char {
        c"0.0".as_ptr()
    }

    #[test]
    fn anything_else_is_an_error_or_no_need() {
        assert_eq!(needed(b""), Err(ElfError::NotElf));
        assert_eq!(needed(b"#!/bin/sh\n"), Err(ElfError::NotElf));
        assert_eq!(needed(b"\x7fELF\x03\x01"), Err(ElfError::NotElf));
        assert!(matches!(needed(b"\x7fELF\x02\x01\x01"), Err(ElfError::Truncated(_))));
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        // Cut short, or with any byte of its section table (at the end of the file) broken,
        // the file is refused or read, never a panic.
        for cut in (0..4096).step_by(7) {
            let _ = needed(&exe[..cut]);
        }
        let mut broken = exe.clone();
        for at in (exe.len().saturating_sub(8192)..exe.len()).step_by(3) {
            let keep = broken[at];
            broken[at] = 0xff;
            let _ = needed(&broken);
            broken[at] = keep;
        }
        // A 64-bit header with no sections needs nothing.
        let mut bare = vec![0u8; 64];
        bare[..6].copy_from_slice(b"\x7fELF\x02\x01");
        assert_eq!(needed(&bare), Ok(None));
    }
}
