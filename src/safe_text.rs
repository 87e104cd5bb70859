//! Text from VMs, hosts and processes, made safe to show on a terminal or in a text log.
//!
//! A VM names itself in its `Version` reply, a process chooses its own command line, a host
//! prints what it likes on ssh's stderr: any of them may hold characters a terminal obeys
//! (ESC starts a command that can retitle the window or redraw the screen, BEL rings, CR
//! and LF start another line so a forged one can follow, a bidi override shows text in
//! another order than it is stored). [`is_hostile`] is the one list of such characters;
//! everything that reaches a terminal or a text log goes through one of the renderings here:
//!
//! - [`shown`] / [`Shown`]: each one becomes `?`, one column for one character, for tables
//!   and notes (`list`, `threads`, errors);
//! - [`shown_lines`]: the same for a block the daemon laid out, keeping its line breaks;
//! - [`write_escaped`]: `\n`, `\x1b`, `\u{202e}` for the text log, where the exact code
//!   helps whoever reads it;
//! - [`escape_json_line`]: `\u202e` inside a JSON log line, which leaves the decoded string
//!   exact (serde_json escapes C0 itself, but writes DEL, C1 and bidi controls as they are).
//!
//! JSON answers (`list --json`) and the web page carry the exact text: their encoders escape.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Whether a terminal (or a reader of the text) would take `c` as something other than a
/// character to draw: the C0 controls (NUL..US, with TAB, LF and CR), DEL, the C1 controls
/// U+0080..U+009F (U+009B is a one-character CSI to some terminals), the bidi marks,
/// embeddings, overrides and isolates (U+061C, U+200E, U+200F, U+202A..U+202E,
/// U+2066..U+2069) and the line and paragraph separators U+2028, U+2029.
pub fn is_hostile(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// What stands in for a hostile character in [`shown`] text.
pub const REPLACEMENT: char = '?';

/// `s` with every hostile character replaced by `?`; borrowed when there is none (the
/// usual case).
pub fn shown(s: &str) -> Cow<'_, str> {
    replaced(s, |_| false)
}

/// Like [`shown`] but keeps line feeds: for a block of lines the daemon laid out (a thread
/// table, a heap summary) whose single fields were already made [`shown`].
pub fn shown_lines(s: &str) -> Cow<'_, str> {
    replaced(s, |c| c == '\n')
}

fn replaced(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_hostile(c) && !keep(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if bad(c) { REPLACEMENT } else { c }).collect())
}

/// Shows text as [`shown`] does, without allocating: `format!("{}", Shown(name))`.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(pub &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut run = 0;
        for (i, c) in self.0.char_indices() {
            if is_hostile(c) {
                f.write_str(&self.0[run..i])?;
                f.write_char(REPLACEMENT)?;
                run = i + c.len_utf8();
            }
        }
        f.write_str(&self.0[run..])
    }
}

/// Writes `s` with each hostile character as an escape: `\n`, `\r`, `\t`, `\x1b` for the
/// rest below U+0080, `\u{9b}` above. A backslash already in `s` is left as it is, as
/// tracing's own format does; the escapes only have to keep the line one line and the
/// terminal inert.
pub fn write_escaped<W: fmt::Write + ?Sized>(w: &mut W, s: &str) -> fmt::Result {
    let mut run = 0;
    for (i, c) in s.char_indices() {
        if is_hostile(c) {
            w.write_str(&s[run..i])?;
            match c {
                '\n' => w.write_str("\\n")?,
                '\r' => w.write_str("\\r")?,
                '\t' => w.write_str("\\t")?,
                '\0'..='\x7f' => write!(w, "\\x{:02x}", u32::from(c))?,
                _ => write!(w, "\\u{{{:x}}}", u32::from(c))?,
            }
            run = i + c.len_utf8();
        }
    }
    w.write_str(&s[run..])
}

/// A line of JSON (a JSON text and its final `\n`) with every hostile character it holds
/// as is written as a `\uXXXX` escape. All of them lie outside JSON's own syntax (which is
/// ASCII punctuation and the line's final `\n`; a conforming encoder never writes a raw
/// control character below U+0020 inside a string), so each one sits inside a string and
/// the escape decodes to the same character: the JSON means exactly what it did.
pub fn escape_json_line(line: &[u8]) -> Cow<'_, [u8]> {
    let Ok(s) = std::str::from_utf8(line) else { return Cow::Borrowed(line) };
    let bad = |c: char| is_hostile(c) && c != '\n';
    if !s.chars().any(bad) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if bad(c) {
            // Every hostile character is in the Basic Multilingual Plane: one escape each.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out.into_bytes())
}

#[cfg(test)]
#[path = "safe_text_tests.rs"]
mod tests;
