//! Which build a file is, as a host can tell it with the tools it has: its size and a CRC
//! of its bytes. Two CRCs, because no one tool is everywhere: POSIX `cksum` (coreutils,
//! most busybox builds, the BSDs) and busybox's `crc32` (Debian's busybox has no `cksum`
//! applet but has that one). This binary's are computed here the same ways, so a copy left
//! on a host is used again only when its bytes are this binary's, never because it says the
//! same version: any rebuild keeps the version and changes the bytes. Pure.
//!
//! A CRC is no defence against a forged file (the folder is the user's own, mode 0700); it
//! tells builds apart, which is all that is asked of it.

/// This binary's size and CRCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub size: u64,
    /// What `cksum` prints first (POSIX: CRC-32/CKSUM over the bytes and then the length).
    pub cksum: u32,
    /// What busybox's `crc32` prints, in hex (zlib's CRC-32).
    pub crc32: u32,
}

/// What the host printed for the copy there: which tool, its CRC and the size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sum {
    Cksum { crc: u32, size: u64 },
    Crc32 { crc: u32, size: u64 },
}

impl Identity {
    pub fn of(bytes: &[u8]) -> Identity {
        Identity { size: bytes.len() as u64, cksum: cksum(bytes), crc32: crc32(bytes) }
    }

    /// Whether the file the host summed is this one.
    pub fn is(&self, sum: &Sum) -> bool {
        match *sum {
            Sum::Cksum { crc, size } => (crc, size) == (self.cksum, self.size),
            Sum::Crc32 { crc, size } => (crc, size) == (self.crc32, self.size),
        }
    }

    /// This binary as the host's tool of `sum` says it, for a log line.
    pub fn said_as(&self, sum: &Sum) -> String {
        match sum {
            Sum::Cksum { .. } => Sum::Cksum { crc: self.cksum, size: self.size }.to_string(),
            Sum::Crc32 { .. } => Sum::Crc32 { crc: self.crc32, size: self.size }.to_string(),
        }
    }
}

impl std::fmt::Display for Sum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sum::Cksum { crc, size } => write!(f, "{size} bytes, cksum {crc}"),
            Sum::Crc32 { crc, size } => write!(f, "{size} bytes, crc32 {crc:08x}"),
        }
    }
}

/// The probe's lines for the file `$f` (a shell variable): `sum cksum CRC SIZE` or
/// `sum crc32 HEX SIZE`, or `sum none` when the host has neither tool. `cksum` and `wc` read
/// stdin, so no file name (spaces and all) is printed back.
pub const SUM_SCRIPT: &str = r#"if command -v cksum >/dev/null 2>&1; then echo "sum cksum $(cksum < "$f" 2>/dev/null)"
elif command -v crc32 >/dev/null 2>&1; then echo "sum crc32 $(crc32 < "$f" 2>/dev/null) $(wc -c < "$f" 2>/dev/null)"
else echo "sum none"; fi"#;

/// A `sum` line's rest, read (None: no tool there, or an answer not understood, which is no
/// identity either).
pub fn parse_sum(rest: &str) -> Option<Sum> {
    let mut words = rest.split_whitespace();
    let tool = words.next()?;
    let (crc, size) = (words.next()?, words.next()?.parse().ok()?);
    match tool {
        "cksum" => Some(Sum::Cksum { crc: crc.parse().ok()?, size }),
        "crc32" => Some(Sum::Crc32 { crc: u32::from_str_radix(crc, 16).ok()?, size }),
        _ => None,
    }
}

/// The tables of a CRC-32 with `poly`, most significant bit first (`cksum`) or reflected
/// (zlib's, `poly` given reflected), eight of them: eight bytes a step ("slicing by 8"),
/// as a binary of 8 MB (180 MB unoptimised, as the tests run it) is summed at each start
/// that finds a copy.
const fn tables(poly: u32, reflected: bool) -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = if reflected { i as u32 } else { (i as u32) << 24 };
        let mut k = 0;
        while k < 8 {
            c = match (reflected, c & if reflected { 1 } else { 0x8000_0000 } != 0) {
                (true, true) => (c >> 1) ^ poly,
                (true, false) => c >> 1,
                (false, true) => (c << 1) ^ poly,
                (false, false) => c << 1,
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let c = t[k - 1][i];
            t[k][i] = if reflected { (c >> 8) ^ t[0][(c & 0xff) as usize] } else { (c << 8) ^ t[0][(c >> 24) as usize] };
            i += 1;
        }
        k += 1;
    }
    t
}

static CKSUM: [[u32; 256]; 8] = tables(0x04C1_1DB7, false);
static CRC32: [[u32; 256]; 8] = tables(0xEDB8_8320, true);

/// The CRC (register `crc`, not complemented) of `bytes` after what it has seen,
/// most significant bit first.
fn cksum_update(mut crc: u32, bytes: &[u8]) -> u32 {
    let t = &CKSUM;
    let mut chunks = bytes.chunks_exact(8);
    for b in &mut chunks {
        let c = crc ^ u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        crc = t[7][(c >> 24) as usize] ^ t[6][(c >> 16 & 0xff) as usize] ^ t[5][(c >> 8 & 0xff) as usize] ^ t[4][(c & 0xff) as usize] ^ t[3][b[4] as usize] ^ t[2][b[5] as usize] ^ t[1][b[6] as usize] ^ t[0][b[7] as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc << 8) ^ t[0][((crc >> 24) ^ u32::from(b)) as usize & 0xff];
    }
    crc
}

/// POSIX `cksum`'s CRC: the bytes, then their count in as few bytes as it takes, least
/// significant first, then complemented.
pub fn cksum(bytes: &[u8]) -> u32 {
    let mut crc = cksum_update(0, bytes);
    let mut n = bytes.len() as u64;
    while n != 0 {
        crc = cksum_update(crc, &[(n & 0xff) as u8]);
        n >>= 8;
    }
    !crc
}

/// zlib's CRC-32 (busybox `crc32`, `gzip`'s trailer).
pub fn crc32(bytes: &[u8]) -> u32 {
    let t = &CRC32;
    let mut crc = !0u32;
    let mut chunks = bytes.chunks_exact(8);
    for b in &mut chunks {
        let c = crc ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        crc = t[7][(c & 0xff) as usize] ^ t[6][(c >> 8 & 0xff) as usize] ^ t[5][(c >> 16 & 0xff) as usize] ^ t[4][(c >> 24) as usize] ^ t[3][b[4] as usize] ^ t[2][b[5] as usize] ^ t[1][b[6] as usize] ^ t[0][b[7] as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ u32::from(b)) & 0xff) as usize];
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What coreutils' `cksum` and busybox's `crc32` printed for these inputs.
    #[test]
    fn as_the_tools_say() {
        let fox = b"The quick brown fox jumps over the lazy dog";
        for (input, ck, c32) in [
            (&b""[..], 4_294_967_295, 0x0000_0000),
            (b"a", 1_220_704_766, 0xe8b7_be43),
            (b"123456789", 930_766_865, 0xcbf4_3926),
            (fox, 2_074_844_392, 0x414f_a339),
        ] {
            assert_eq!((cksum(input), crc32(input)), (ck, c32), "{:?}", String::from_utf8_lossy(input));
        }
        // Lengths of two and three bytes go into cksum's CRC too.
        assert_eq!(cksum(&[0; 256]), 4_215_202_376);
        assert_eq!((cksum(&[0; 70_000]), crc32(&[0; 70_000])), (1_774_371_287, 0xa6a9_c8dc));
    }

    /// Eight bytes a step is the same CRC as one byte a step, whatever the length's remainder.
    #[test]
    fn sliced_as_byte_by_byte() {
        let bytes: Vec<u8> = (0..41u32).map(|i| (i * 97 + 13) as u8).collect();
        for n in 0..=bytes.len() {
            let b = &bytes[..n];
            assert_eq!(cksum_update(0, b), b.iter().fold(0, |c, &x| cksum_update(c, &[x])), "{n}");
            let one = |c: u32, x: &u8| (c >> 8) ^ CRC32[0][((c ^ u32::from(*x)) & 0xff) as usize];
            assert_eq!(crc32(b), !b.iter().fold(!0, one), "{n}");
        }
    }

    /// This machine's `cksum` on a file of every byte value agrees (when it has one).
    #[test]
    fn as_this_machines_cksum_says() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bytes");
        let bytes: Vec<u8> = (0..5003u32).map(|i| (i * 7 % 256) as u8).collect();
        std::fs::write(&f, &bytes).unwrap();
        let out = std::process::Command::new("sh").arg("-c").arg(format!("f='{}'\n{SUM_SCRIPT}", f.display())).output().unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        let sum = parse_sum(line.trim().strip_prefix("sum ").unwrap()).expect("this machine has cksum or crc32");
        assert!(Identity::of(&bytes).is(&sum), "{line}");
        assert!(!Identity::of(&bytes[1..]).is(&sum));
    }

    /// A shell whose only tools are busybox's `crc32` and `wc` (Debian's busybox: no
    /// `cksum` applet) says the zlib CRC and the size; one with neither tool says none.
    #[test]
    fn as_busybox_crc32_says_and_none_without_a_tool() {
        let busybox = std::path::Path::new("/usr/bin/busybox");
        assert!(busybox.exists(), "busybox is not installed: ./test.sh installs it");
        let dir = tempfile::tempdir().unwrap();
        let (with, without) = (dir.path().join("with"), dir.path().join("without"));
        for (bin, tools) in [(&with, &["sh", "crc32", "wc"][..]), (&without, &["sh"][..])] {
            std::fs::create_dir(bin).unwrap();
            for t in tools {
                std::os::unix::fs::symlink(busybox, bin.join(t)).unwrap();
            }
        }
        let f = dir.path().join("bytes");
        std::fs::write(&f, b"123456789").unwrap();
        let said = |bin: &std::path::Path| {
            let out = std::process::Command::new(bin.join("sh")).arg("-c").arg(format!("f='{}'\n{SUM_SCRIPT}", f.display())).env("PATH", bin).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(said(&with), "sum crc32 cbf43926 9");
        assert_eq!(said(&without), "sum none");
        assert!(Identity::of(b"123456789").is(&parse_sum("crc32 cbf43926 9").unwrap()));
    }

    #[test]
    fn a_sum_line_read() {
        assert_eq!(parse_sum("cksum 930766865 9"), Some(Sum::Cksum { crc: 930_766_865, size: 9 }));
        assert_eq!(parse_sum("crc32 cbf43926 9"), Some(Sum::Crc32 { crc: 0xcbf4_3926, size: 9 }));
        assert_eq!(parse_sum("crc32 cbf43926      9"), Some(Sum::Crc32 { crc: 0xcbf4_3926, size: 9 }), "a padded wc");
        for bad in ["none", "", "cksum ", "cksum 930766865", "cksum x 9", "crc32 cbf43926 ", "md5 abc 9", "cksum 99999999999 9"] {
            assert_eq!(parse_sum(bad), None, "{bad:?}");
        }
        let me = Identity::of(b"123456789");
        assert!(me.is(&Sum::Cksum { crc: 930_766_865, size: 9 }) && me.is(&Sum::Crc32 { crc: 0xcbf4_3926, size: 9 }));
        assert!(!me.is(&Sum::Cksum { crc: 930_766_865, size: 10 }), "the size counts");
        assert!(!me.is(&Sum::Crc32 { crc: 930_766_865, size: 9 }), "each tool's own CRC");
        assert_eq!(me.said_as(&Sum::Crc32 { crc: 0, size: 1 }), "9 bytes, crc32 cbf43926");
        assert_eq!(me.said_as(&Sum::Cksum { crc: 0, size: 1 }), "9 bytes, cksum 930766865");
    }
}
