//! Reading Rust source for its imports, shared by the checks of the crate's layers
//! (`house_tests`) and of the session's map (`session/layout_tests.rs`): a small tokenizer
//! that skips comments and strings, the paths into other files each file names (`use
//! super::x::Y`, `crate::a::b::C` anywhere, use groups, a child named by the file that
//! declares it), and the circles among them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What the import search needs of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

pub(crate) fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            let start = i + 1;
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push(Tok::Str(c[start..i.min(c.len())].iter().collect()));
            i += 1;
        } else if ch == '\'' {
            // A char literal ('x', '\n') or a lifetime ('a): a lifetime is skipped with its name.
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ident_char(ch) {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = (word == "r" || word == "br") && c[i..].iter().find(|&&h| h != '#') == Some(&'"');
            if raw {
                // r"..", r#".."#: ends at a quote followed by as many hashes.
                let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
                i += hashes + 1;
                let start = i;
                while i < c.len() && !(c[i] == '"' && c[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes) {
                    i += 1;
                }
                out.push(Tok::Str(c[start..i.min(c.len())].iter().collect()));
                i += 1 + hashes;
            } else if word == "b" && (at(i) == '"' || at(i) == '\'') {
                // b"..", b'x': the literal itself comes next.
            } else if ch.is_ascii_digit() {
                out.push(Tok::Punct('0'));
            } else {
                out.push(Tok::Ident(word));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

pub(crate) fn is_ident(t: Option<&Tok>, name: &str) -> bool {
    matches!(t, Some(Tok::Ident(s)) if s == name)
}

/// One source file: its module path from the crate root (`["session", "actor"]`, `["remote", "far", "vms"]`).
pub(crate) struct File {
    pub(crate) module: Vec<String>,
    pub(crate) toks: Vec<Tok>,
}

/// Which file of `known` a module path lands in: the longest prefix that is a file.
pub(crate) fn file_of<'a>(known: &'a BTreeSet<Vec<String>>, path: &[String]) -> Option<&'a Vec<String>> {
    (1..=path.len()).rev().find_map(|n| known.get(&path[..n]))
}

/// Resolves the rest of a path after `base` (at `toks[j]`): into deeper files while the
/// segments name them, into each item of a `{..}` group, else the module `base` itself.
pub(crate) fn resolve(known: &BTreeSet<Vec<String>>, base: Vec<String>, toks: &[Tok], j: usize, out: &mut BTreeSet<Vec<String>>) {
    match toks.get(j) {
        Some(Tok::Ident(seg)) if seg != "self" && known.contains(&[base.clone(), vec![seg.clone()]].concat()) => {
            let deeper = [base, vec![seg.clone()]].concat();
            if toks.get(j + 1) == Some(&Tok::Sep) {
                resolve(known, deeper, toks, j + 2, out);
            } else {
                out.insert(deeper);
            }
        }
        Some(Tok::Punct('{')) => {
            let (mut depth, mut k, mut item) = (0, j + 1, true);
            while let Some(t) = toks.get(k) {
                if item && depth == 0 && *t != Tok::Punct('}') {
                    resolve(known, base.clone(), toks, k, out);
                }
                item = false;
                match t {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') if depth == 0 => break,
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct(',') if depth == 0 => item = true,
                    _ => {}
                }
                k += 1;
            }
        }
        _ => {
            out.insert(base);
        }
    }
}

/// Which files each file imports (module paths joined with `::`, self-imports left out).
pub(crate) fn imports(files: &BTreeMap<PathBuf, File>) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<Vec<String>> = files.values().map(|f| f.module.clone()).collect();
    let mut graph = BTreeMap::new();
    for f in files.values() {
        let (toks, mut targets) = (&f.toks, BTreeSet::new());
        // The module a path starts from: the file's, plus the inline modules (`mod tests {`) around it.
        let (mut inline, mut braces): (Vec<String>, Vec<bool>) = (Vec::new(), Vec::new());
        for (i, t) in toks.iter().enumerate() {
            let after_sep = i > 0 && matches!(toks[i - 1], Tok::Sep | Tok::Punct('.'));
            let cur = [f.module.clone(), inline.clone()].concat();
            match t {
                Tok::Punct('{') => {
                    let opens_mod = i >= 2 && is_ident(toks.get(i - 2), "mod");
                    if let (true, Some(Tok::Ident(name))) = (opens_mod, toks.get(i - 1)) {
                        inline.push(name.clone());
                    }
                    braces.push(opens_mod);
                }
                Tok::Punct('}') => {
                    let closes_mod = braces.pop() == Some(true);
                    if closes_mod {
                        inline.pop();
                    }
                }
                Tok::Ident(w) if !after_sep && toks.get(i + 1) == Some(&Tok::Sep) => {
                    let mut j = i;
                    let base = match w.as_str() {
                        "super" => {
                            let mut up = 0;
                            while is_ident(toks.get(j), "super") && toks.get(j + 1) == Some(&Tok::Sep) {
                                up += 1;
                                j += 2;
                            }
                            cur.len().checked_sub(up).map(|n| cur[..n].to_vec())
                        }
                        "crate" | "self" => {
                            j += 2;
                            Some(if w == "crate" { Vec::new() } else { cur.clone() })
                        }
                        // A child of this module named without `self::`.
                        _ if known.contains(&[cur.clone(), vec![w.clone()]].concat()) => Some(cur.clone()),
                        _ => None,
                    };
                    if let Some(base) = base {
                        resolve(&known, base, toks, j, &mut targets);
                    }
                }
                _ => {}
            }
        }
        let node = |m: &[String]| m.join("::");
        let edges = targets.iter().filter_map(|t| file_of(&known, t)).filter(|t| **t != f.module).map(|t| node(t)).collect();
        graph.insert(node(&f.module), edges);
    }
    graph
}

/// The strongly connected groups of more than one file: each is a circle of imports.
pub(crate) fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) -> usize {
            let n = self.index.len();
            self.index.insert(v, n);
            self.stack.push(v);
            let mut low = n;
            let graph = self.graph;
            for w in graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                low = match self.index.get(w) {
                    None => low.min(self.visit(w)),
                    Some(&wi) if self.stack.contains(&w) => low.min(wi),
                    Some(_) => low,
                };
            }
            if low == n {
                let at = self.stack.iter().rposition(|x| *x == v).unwrap_or(0);
                let group: Vec<String> = self.stack.drain(at..).map(String::from).collect();
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
            low
        }
    }
    let mut t = Tarjan { graph, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found
}

/// Renders a graph's edges, one file a line, for failure messages.
pub(crate) fn show(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    graph.iter().map(|(f, to)| format!("  {f} -> {}\n", to.iter().cloned().collect::<Vec<_>>().join(", "))).collect()
}
