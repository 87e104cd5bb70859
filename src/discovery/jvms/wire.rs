//! The records `scan.sh` prints: `@TAG ARG`, a newline, the bytes read, a newline and
//! `@@NONCE`. A remote host's output is untrusted: every size is bounded, anything odd is an
//! error value or a skipped line, never a panic. Pure.

/// Largest body one record may have (a busy host's TCP table fits many times over).
pub const MAX_RECORD: usize = 16 * 1024 * 1024;
/// Lines of other output (a login script's greeting) skipped before a record at most.
pub const MAX_JUNK_LINES: usize = 64;
/// Longest header line: `@` + tag + space + argument.
pub const MAX_HEADER: usize = 96;

/// One record, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub tag: &'a str,
    pub arg: &'a str,
    pub body: &'a [u8],
}

impl Record<'_> {
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.body)
    }

    /// The argument as a pid (records about one process).
    pub fn pid(&self) -> Option<u32> {
        self.arg.parse().ok()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("a record of more than {MAX_RECORD} bytes (MAX_RECORD)")]
    TooLarge,
    #[error("{MAX_JUNK_LINES} lines that are no record (MAX_JUNK_LINES); the last: {0:?}")]
    Junk(String),
}

/// Finds the next whole record in `buf`. Ok(None): more bytes are needed. On success, also
/// returns how many bytes of `buf` the record (and any skipped lines before it) took.
pub fn next_record<'a>(buf: &'a [u8], nonce: &str) -> Result<Option<(Record<'a>, usize)>, WireError> {
    let mut at = 0;
    for _ in 0..=MAX_JUNK_LINES {
        let rest = &buf[at..];
        let Some(nl) = rest.iter().take(MAX_HEADER + 1).position(|b| *b == b'\n') else {
            if rest.len() > MAX_HEADER {
                // A long line that is no header: skip to its end.
                match rest.iter().position(|b| *b == b'\n') {
                    Some(n) => {
                        at += n + 1;
                        continue;
                    }
                    None if rest.len() > MAX_RECORD => return Err(WireError::TooLarge),
                    None => return Ok(None),
                }
            }
            return Ok(None);
        };
        let Some((tag, arg)) = header(&rest[..nl]) else {
            at += nl + 1;
            continue;
        };
        let body_start = at + nl + 1;
        let end = format!("\n@@{nonce}\n");
        let body = &buf[body_start..];
        return match find(body, end.as_bytes()) {
            Some(n) => Ok(Some((Record { tag, arg, body: &body[..n] }, body_start + n + end.len()))),
            None if body.len() > MAX_RECORD + end.len() => Err(WireError::TooLarge),
            None => Ok(None),
        };
    }
    let last = buf[..at].rsplit(|b| *b == b'\n').nth(1).unwrap_or_default();
    Err(WireError::Junk(String::from_utf8_lossy(&last[..last.len().min(80)]).into_owned()))
}

/// `@tag arg` with a lowercase tag and a printable argument.
fn header(line: &[u8]) -> Option<(&str, &str)> {
    let line = std::str::from_utf8(line.strip_prefix(b"@")?).ok()?;
    let (tag, arg) = line.split_once(' ')?;
    let ok_tag = !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_lowercase());
    let ok_arg = !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_graphic());
    (ok_tag && ok_arg).then_some((tag, arg))
}

/// Where `needle` first occurs in `hay` (an empty needle at 0). Compares only where the
/// needle's first byte is: the end marker starts with a newline, so a body is compared once
/// a line, not once a byte.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some(&first) = needle.first() else { return Some(0) };
    let mut at = 0;
    while let Some(i) = hay.get(at..)?.iter().position(|b| *b == first) {
        if hay[at + i..].starts_with(needle) {
            return Some(at + i);
        }
        at += i + 1;
    }
    None
}

/// Random bytes in a round's nonce: 128 bits nobody outside the daemon can guess.
pub const NONCE_BYTES: usize = 16;

/// A fresh marker for one round's records, from the system's random source. Every byte a
/// record holds comes from processes (a command line, an environment) that anyone may set:
/// only an end marker they cannot know keeps such text from ending a record early and
/// posing as records of its own. No random source: no round (a guessable marker would be
/// no protection).
pub fn fresh_nonce() -> Result<String, getrandom::Error> {
    let mut b = [0u8; NONCE_BYTES];
    getrandom::fill(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Records written the way `scan.sh` writes them (for the local scan and for tests).
pub fn write_record(out: &mut Vec<u8>, tag: &str, arg: &str, body: &[u8], nonce: &str) {
    out.extend_from_slice(format!("@{tag} {arg}\n").as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(format!("\n@@{nonce}\n").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all<'a>(mut buf: &'a [u8], nonce: &str) -> Result<Vec<Record<'a>>, WireError> {
        let mut out = Vec::new();
        while let Some((r, n)) = next_record(buf, nonce)? {
            out.push(r);
            buf = &buf[n..];
        }
        Ok(out)
    }

    #[test]
    fn records_with_any_bytes_in_their_bodies() {
        let mut out = Vec::new();
        write_record(&mut out, "cmdline", "42", b"java\0-cp\0.\0Main\0", "n1");
        write_record(&mut out, "tcp", "-", b"line\n@@n2\nmore @@n1\n@@n1x", "n1");
        write_record(&mut out, "done", "-", b"", "n1");
        let r = all(&out, "n1").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].tag, r[0].pid(), r[0].body), ("cmdline", Some(42), &b"java\0-cp\0.\0Main\0"[..]));
        assert_eq!(r[1].body, b"line\n@@n2\nmore @@n1\n@@n1x", "another nonce, or ours not on a line of its own, is data");
        assert_eq!((r[2].tag, r[2].body), ("done", &b""[..]));
    }

    #[test]
    fn find_is_the_first_occurrence() {
        let naive = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
        let hays: [&[u8]; 7] = [b"", b"\n", b"\n@@n", b"\n@@n\n", b"a\n\n@@n\n@@n\nb", b"\n@@\n@@n\n", b"x\n@@m\ny\n@@n"];
        for hay in hays {
            for needle in [&b"\n@@n\n"[..], b"\n", b"@@", b"n\nb", b"\n@@n\n@@n\nb!"] {
                assert_eq!(find(hay, needle), naive(hay, needle), "{hay:?} {needle:?}");
            }
            assert_eq!(find(hay, b""), Some(0));
        }
        let mut body = b"line\n".repeat(1000);
        body.extend_from_slice(b"\n@@n\n");
        assert_eq!(find(&body, b"\n@@n\n"), Some(5000));
    }

    #[test]
    fn nonces_differ_every_round() {
        let a = fresh_nonce().unwrap();
        let b = fresh_nonce().unwrap();
        assert_eq!(a.len(), NONCE_BYTES * 2);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    /// A body that holds another round's end and records after it (text a process put in its
    /// own command line) stays one body when the marker is fresh.
    #[test]
    fn a_forged_end_is_data() {
        let nonce = fresh_nonce().unwrap();
        let forged = b"java\0x\n@@local\n@done -\n\n@@local\n@cmdline 1\njava\0-agentlib:jdwp=address=9\0Forged\0";
        let mut out = Vec::new();
        write_record(&mut out, "cmdline", "7", forged, &nonce);
        write_record(&mut out, "done", "-", b"", &nonce);
        let r = all(&out, &nonce).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].tag, r[0].body), ("cmdline", &forged[..]));
        assert_eq!(r[1].tag, "done");
    }

    #[test]
    fn fragments_wait_for_more() {
        let mut out = Vec::new();
        write_record(&mut out, "id", "-", b"0", "n");
        for cut in 0..out.len() {
            assert_eq!(next_record(&out[..cut], "n"), Ok(None), "cut at {cut}");
        }
        assert!(next_record(&out, "n").unwrap().is_some());
    }

    #[test]
    fn other_output_is_skipped_up_to_a_bound() {
        let mut out = b"Welcome to the build box!\n@BAD header\n\n".to_vec();
        write_record(&mut out, "id", "-", b"1000", "n");
        let r = all(&out, "n").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].text(), "1000");
        let junk = "x\n".repeat(MAX_JUNK_LINES + 1);
        assert!(matches!(next_record(junk.as_bytes(), "n"), Err(WireError::Junk(_))));
        let long = "y".repeat(MAX_HEADER * 4) + "\n";
        let mut out = long.into_bytes();
        write_record(&mut out, "id", "-", b"1", "n");
        assert_eq!(all(&out, "n").unwrap().len(), 1);
    }

    #[test]
    fn a_record_without_its_end_is_bounded() {
        let mut out = b"@tcp -\n".to_vec();
        out.resize(MAX_RECORD + 64, b'a');
        assert_eq!(next_record(&out, "n"), Err(WireError::TooLarge));
        let endless = vec![b'z'; MAX_RECORD + 1];
        assert_eq!(next_record(&endless, "n"), Err(WireError::TooLarge));
    }
}
