//! Checks that the crate's folders import in one direction: the layers listed in `lib.rs`
//! ("# Layers") hold for every import in `src/`, and no files of one folder import each
//! other in a circle (a subfolder counts as one of its folder's files).
//!
//! An import is a path into another file, as `session/layout_tests.rs` reads them: `use
//! super::x::Y`, `crate::a::b::C` anywhere, a use group, a child named by the file that
//! declares it. Files are every `.rs` under `src/`; comments and strings are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What the import search needs of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

fn tokens(src: &str) -> Vec<Tok> {
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

fn is_ident(t: Option<&Tok>, name: &str) -> bool {
    matches!(t, Some(Tok::Ident(s)) if s == name)
}

/// One source file: its module path from the crate root (`["remote", "far", "vms"]`).
struct File {
    module: Vec<String>,
    toks: Vec<Tok>,
}

/// Every `.rs` file under `src/` (but `main.rs`, the binary's root), by its module path.
fn files() -> BTreeMap<PathBuf, File> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(root.join(&d)).unwrap().flatten() {
            let rel = d.join(e.file_name());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(rel);
                continue;
            }
            if rel.extension().is_none_or(|x| x != "rs") || rel == Path::new("main.rs") {
                continue;
            }
            let mut module: Vec<String> = rel.with_extension("").iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            // `x_tests.rs` beside a top-level `x.rs` holds the tests of `x`: in its layer.
            if let [only] = module.as_mut_slice() {
                if let Some(of) = only.strip_suffix("_tests").filter(|of| root.join(format!("{of}.rs")).exists()) {
                    *only = of.to_string();
                }
            }
            let src = std::fs::read_to_string(root.join(&rel)).unwrap();
            found.insert(rel, File { module, toks: tokens(&src) });
        }
    }
    found
}

/// Which file of `known` a module path lands in: the longest prefix that is a file.
fn file_of<'a>(known: &'a BTreeSet<Vec<String>>, path: &[String]) -> Option<&'a Vec<String>> {
    (1..=path.len()).rev().find_map(|n| known.get(&path[..n]))
}

/// Resolves the rest of a path after `base` (at `toks[j]`): into deeper files while the
/// segments name them, into each item of a `{..}` group, else the module `base` itself.
fn resolve(known: &BTreeSet<Vec<String>>, base: Vec<String>, toks: &[Tok], j: usize, out: &mut BTreeSet<Vec<String>>) {
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
fn imports(files: &BTreeMap<PathBuf, File>) -> BTreeMap<String, BTreeSet<String>> {
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
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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

/// A top-level module's layer, from the "# Layers" section of `lib.rs`: lines
/// `//! N. a, b, c` (a module's name may be in backticks or brackets).
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    let section = lib.lines().skip_while(|l| *l != "//! # Layers").skip(1).take_while(|l| !l.starts_with("//! #"));
    for line in section {
        let Some((n, names)) = line.strip_prefix("//! ").and_then(|l| l.split_once(". ")) else { continue };
        let Ok(n) = n.trim().parse::<usize>() else { continue };
        let names = names.split(':').next().unwrap_or("");
        for name in names.split(',') {
            let name = name.trim().trim_matches(|c| "[]`".contains(c));
            if !name.is_empty() {
                out.insert(name.to_string(), n);
            }
        }
    }
    out
}

/// Imports that still point up a layer, each with what would remove it. Add none: move the
/// shared piece down instead.
const KNOWN_UP: &[(&str, &str, &str)] = &[
    // (importing file, imported file, what to do)
    ("remote::stop_answers::plan::reply", "session::nearcache::commands",
        "which error answers the near cache keeps (`error_kept`) is a table of JDWP facts: move it below both"),
    ("session::config", "settings", "the session's modes (DdmMode, Timeouts, NearCacheMode) belong to the session, settings builds them"),
    ("session::near_answers", "settings", "as session::config"),
    ("session::proxy_requests", "settings", "as session::config"),
];

#[test]
fn every_import_points_down_the_layers_of_lib_rs() {
    let files = files();
    let graph = imports(&files);
    let layers = layers();
    let mut wrong = Vec::new();
    for f in files.values().filter(|f| !f.module.is_empty()) {
        assert!(layers.contains_key(&f.module[0]), "lib.rs's \"# Layers\" does not place `{}`", f.module[0]);
    }
    for (from, to) in &graph {
        let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
        let Some(&here) = layers.get(&top(from)) else { continue };
        for t in to {
            let Some(&there) = layers.get(&top(t)) else { continue };
            if there > here && !KNOWN_UP.iter().any(|(f, i, _)| f == from && i == t) {
                wrong.push(format!("{from} (layer {here}) imports {t} (layer {there})"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports pointing up a layer (see lib.rs's \"# Layers\"):\n  {}", wrong.join("\n  "));
}

/// Circles among sibling files that are known, each with what would break it. Add none.
const KNOWN_CIRCLES: &[&str] = &[
    // Not taken apart yet: the piece both sides use goes to a file of its own.
    // The view asks `found` about its own processes (agent_of, waiting), `found` reads the view.
    "discovery::jvms: found <-> view",
    // The ways in and the near side name each other (near's Dial::Exec, restart's FarMode):
    // the dial kinds and a far side's unusable reasons belong below both.
    "remote: copy <-> ssh <-> host <-> status <-> near <-> exec",
    "remote::near: api <-> link <-> sockets",
    "remote::stop_answers: plan <-> wire <-> relay",
];

#[test]
fn no_files_of_a_folder_import_each_other_in_a_circle() {
    let files = files();
    let graph = imports(&files);
    // Each folder's children (files and subfolders), with the edges between them; a folder's
    // own mod.rs, which declares and re-exports its children, is no child.
    let mut folders: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let split = |m: &str| m.split("::").filter(|s| !s.is_empty()).map(String::from).collect::<Vec<_>>();
    for (from, to) in &graph {
        let from = split(from);
        for t in to {
            let t = split(t);
            let common = from.iter().zip(&t).take_while(|(a, b)| a == b).count();
            // The top-level modules are held by the layers instead.
            if common > 0 && common < from.len() && common < t.len() {
                let folder = from[..common].to_vec();
                folders.entry(folder).or_default().entry(from[common].clone()).or_default().insert(t[common].clone());
            }
        }
    }
    let mut found = Vec::new();
    let mut all = Vec::new();
    for (folder, graph) in &folders {
        for circle in cycles(graph) {
            let name = format!("{}: {}", folder.join("::"), circle.join(" <-> "));
            if !KNOWN_CIRCLES.contains(&name.as_str()) {
                found.push(name.clone());
            }
            all.push(name);
        }
    }
    let gone: Vec<_> = KNOWN_CIRCLES.iter().filter(|k| !all.iter().any(|a| a == *k)).collect();
    assert!(gone.is_empty(), "circles listed as known that are gone (take them off KNOWN_CIRCLES): {gone:?}");
    assert!(found.is_empty(), "files of a folder that import each other in a circle (move what they share into a file of its own):\n  {}", found.join("\n  "));
}
