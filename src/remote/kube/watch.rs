//! kubectl's watch output cut into events: `kubectl get --raw '...pods?watch=1&...'` prints
//! the API server's events (`{"type": "ADDED", "object": {...}}`) one JSON object a line,
//! and `kubectl get pods -o json --watch --output-watch-events` as indented JSON, one object
//! after another with no separator but whitespace. This finds where each top-level object ends (braces counted
//! outside strings), so each is read alone by [`super::pod::WatchEvent::parse`]. Pure; an
//! object over [`MAX_EVENT_BYTES`] is an error and is skipped whole.

use super::pod::MAX_EVENT_BYTES;

/// Cuts a byte stream into top-level JSON objects.
#[derive(Debug, Default)]
pub struct Splitter {
    /// The bytes of the object being read (from its `{`).
    cur: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The object being read is too large: its bytes are dropped until it ends.
    skipping: bool,
}

/// One thing read from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A whole top-level object's bytes.
    Object(Vec<u8>),
    /// An object over [`MAX_EVENT_BYTES`], skipped.
    TooLarge,
    /// A byte outside any object that is not whitespace (kubectl printed something else).
    Stray(u8),
}

impl Splitter {
    /// Feeds `bytes`; what ended in them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Piece> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.depth == 0 {
                match b {
                    b'{' => {
                        self.depth = 1;
                        self.cur.clear();
                        self.cur.push(b);
                        self.skipping = false;
                    }
                    b' ' | b'\n' | b'\r' | b'\t' => {}
                    other => out.push(Piece::Stray(other)),
                }
                continue;
            }
            if !self.skipping {
                if self.cur.len() >= MAX_EVENT_BYTES {
                    self.skipping = true;
                    self.cur = Vec::new();
                } else {
                    self.cur.push(b);
                }
            }
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        out.push(if self.skipping { Piece::TooLarge } else { Piece::Object(std::mem::take(&mut self.cur)) });
                        self.skipping = false;
                    }
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TWO: &str = "{\n    \"type\": \"ADDED\",\n    \"object\": {\"a\": \"}{\\\"\", \"b\": [1, {}]}\n}\n{\"type\": \"DELETED\", \"object\": {}}\n";

    #[test]
    fn objects_are_cut_where_they_end() {
        let mut s = Splitter::default();
        let got = s.feed(TWO.as_bytes());
        assert_eq!(got.len(), 2);
        let first: serde_json::Value = match &got[0] {
            Piece::Object(b) => serde_json::from_slice(b).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(first["object"]["a"], "}{\"");
        assert_eq!(s.feed(b"x"), [Piece::Stray(b'x')]);
    }

    #[test]
    fn a_huge_object_is_skipped_and_the_next_read() {
        let mut s = Splitter::default();
        let big = format!("{{\"a\": \"{}\"}}", "x".repeat(MAX_EVENT_BYTES));
        assert_eq!(s.feed(big.as_bytes()), [Piece::TooLarge]);
        assert_eq!(s.feed(b"{}"), [Piece::Object(b"{}".to_vec())]);
    }

    proptest! {
        /// Fed in any fragments, the same objects come out.
        #[test]
        fn fragments_do_not_matter(cuts in proptest::collection::vec(0usize..TWO.len(), 0..8)) {
            let mut cuts = cuts;
            cuts.sort();
            let mut s = Splitter::default();
            let mut got = Vec::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([TWO.len()]) {
                got.extend(s.feed(&TWO.as_bytes()[at..c]));
                at = c;
            }
            prop_assert_eq!(got, Splitter::default().feed(TWO.as_bytes()));
        }
    }
}
