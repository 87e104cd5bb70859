//! Checks that the session module reads top-down: the map in `session/mod.rs` names every
//! file and marks the `impl Session` extensions, imports go from each group of the map to
//! its own or an earlier one, nothing imports an extension, and no files import each other
//! in a circle.
//!
//! An import is a path into another file of the session: `use super::ids::Entry`,
//! `super::recent::RecentPackets` in a signature, `crate::session::handle::VmState`,
//! `super::super::x` from `sharing/`, a use group (`use super::{a::X, b}`), or a child's
//! name in the file that declares it (`pub use actor::spawn` in `mod.rs`). A method call
//! needs no import: the actor calls the extensions' methods and that is no edge. Files
//! are found as the compiler finds them, from the `mod` declarations (and their
//! `#[path]`) down from `session/mod.rs`; comments and string literals are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::house_tests::reading::{cycles, imports, is_ident, show, tokens, File, Tok};


/// The files of the module tree under `root` (a path under `src/`, such as
/// `session/mod.rs`), read with `read`, following each `mod name;` and its `#[path]`.
fn files(root: &str, read: &dyn Fn(&Path) -> Option<String>) -> Result<BTreeMap<PathBuf, File>, String> {
    let module = vec![Path::new(root).parent().and_then(|p| p.file_name()).map_or(String::new(), |n| n.to_string_lossy().into())];
    let mut todo = vec![(PathBuf::from(root), module, true)];
    let mut found = BTreeMap::new();
    while let Some((path, module, mod_rs)) = todo.pop() {
        let src = read(&path).ok_or_else(|| format!("cannot read {}", path.display()))?;
        let toks = tokens(&src);
        let here = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let children_dir = if mod_rs { here.clone() } else { here.join(path.file_stem().unwrap_or_default()) };
        // `#[path = ".."]` before the next item; whether each open brace opened an inline `mod`.
        let (mut attr_path, mut braces) = (None, Vec::new());
        for (i, t) in toks.iter().enumerate() {
            match t {
                Tok::Ident(w) if w == "path" && toks.get(i + 1) == Some(&Tok::Punct('=')) => {
                    if let Some(Tok::Str(p)) = toks.get(i + 2) {
                        attr_path = Some(p.clone());
                    }
                }
                Tok::Ident(w) if w == "mod" => {
                    let Some(Tok::Ident(name)) = toks.get(i + 1) else { continue };
                    match toks.get(i + 2) {
                        Some(Tok::Punct(';')) if !braces.contains(&true) => {
                            let child = module.iter().cloned().chain([name.clone()]).collect::<Vec<_>>();
                            let (file, child_mod_rs) = match attr_path.take() {
                                Some(p) => (here.join(p), true),
                                None if read(&children_dir.join(format!("{name}.rs"))).is_some() => (children_dir.join(format!("{name}.rs")), false),
                                None => (children_dir.join(name).join("mod.rs"), true),
                            };
                            todo.push((file, child, child_mod_rs));
                        }
                        _ => {}
                    }
                }
                Tok::Punct('{') => {
                    braces.push(i >= 2 && is_ident(toks.get(i - 2), "mod"));
                    attr_path = None;
                }
                Tok::Punct('}') => {
                    braces.pop();
                    attr_path = None;
                }
                Tok::Punct(';') => attr_path = None,
                _ => {}
            }
        }
        found.insert(path, File { module, toks });
    }
    Ok(found)
}


fn from_disk(rel: &Path) -> Option<String> {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel)).ok()
}

/// Whether the words (and one-character punctuation) of `seq` follow each other in `toks`.
fn has(toks: &[Tok], seq: &[&str]) -> bool {
    let want: Vec<Tok> = seq
        .iter()
        .map(|s| match s.chars().next() {
            Some(c) if s.len() == 1 && !c.is_alphanumeric() => Tok::Punct(c),
            _ => Tok::Ident(s.to_string()),
        })
        .collect();
    toks.windows(want.len()).any(|w| w == want.as_slice())
}

#[test]
fn the_session_files_import_each_other_in_one_direction() {
    let files = files("session/mod.rs", &from_disk).unwrap();
    let mut on_disk = Vec::new();
    let mut dirs = vec![PathBuf::from("session")];
    while let Some(d) = dirs.pop() {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(&d);
        for e in std::fs::read_dir(full).unwrap().flatten() {
            let rel = d.join(e.file_name());
            match e.file_type() {
                Ok(t) if t.is_dir() => dirs.push(rel),
                _ if rel.extension().is_some_and(|x| x == "rs") => on_disk.push(rel),
                _ => {}
            }
        }
    }
    for f in &on_disk {
        assert!(files.contains_key(f), "{} is not reached from session/mod.rs, so it is not checked", f.display());
    }
    let graph = imports(&files);
    let circles = cycles(&graph);
    assert!(circles.is_empty(), "files of session/ import each other in a circle: {circles:?}\nimports:\n{}", show(&graph));

    // The map in mod.rs: one line per file, in groups; `(impl Session)` on exactly the extensions.
    let map = from_disk(Path::new("session/mod.rs")).unwrap();
    let mut group_of = BTreeMap::new();
    let mut group = 0;
    for line in map.lines().filter(|l| l.starts_with("//!")) {
        if let Some(name) = line.strip_prefix("//! - `").and_then(|l| l.split('`').next()) {
            group_of.insert(format!("session::{name}"), (group, line));
        } else if !line.starts_with("//!   ") && group_of.values().any(|(g, _)| *g == group) {
            group += 1;
        }
    }
    let mut extensions = BTreeSet::new();
    for f in files.values().filter(|f| f.module.len() == 2) {
        let name = &f.module[1];
        let entry = group_of.get(&f.module.join("::")).map(|(_, line)| *line);
        let entry = entry.unwrap_or_else(|| panic!("session/mod.rs's map has no line for `{name}`"));
        let extends = has(&f.toks, &["impl", "Session", "{"]) && !has(&f.toks, &["struct", "Session", "{"]);
        assert_eq!(entry.contains("(impl Session)"), extends, "the map's line for `{name}` marks (impl Session) on the files that extend Session: {entry}");
        if extends {
            extensions.insert(format!("session::{name}"));
        }
    }
    // Imports go up the map, never down; the actor calls an extension's methods and nothing
    // imports one (other than mod.rs, for its re-exports).
    let top = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    for (from, to) in graph.iter().filter(|(from, _)| *from != "session") {
        let named = to.intersection(&extensions).collect::<Vec<_>>();
        assert!(named.is_empty(), "{from} imports {named:?}, which extend Session: move what it needs to a file above the actor");
        let (from_group, _) = group_of[&top(from)];
        for t in to.iter().filter(|t| top(t) != top(from)) {
            let (to_group, _) = group_of[&top(t)];
            assert!(to_group <= from_group, "{from} imports {t}, which session/mod.rs's map puts in a later group");
        }
    }
}

/// Sources for the tests below: `files` reading from a table.
fn fixture<'a>(table: &'a [(&'a str, &'a str)]) -> impl Fn(&Path) -> Option<String> + 'a {
    move |p: &Path| table.iter().find(|(name, _)| Path::new(name) == p).map(|(_, src)| src.to_string())
}

#[test]
fn imports_are_read_from_paths_groups_and_children_but_not_comments_or_strings() {
    let table = [
        ("session/mod.rs", "mod a;\nmod b;\nmod c;\npub use a::X;\n"),
        ("session/a.rs", "const Q: [char; 3] = ['\\'', '\"', '\\\\'];\nuse super::b::Y; // super::c::Z\nconst S: &str = \"super::c::Z\"; /* super::c */\nfn f<'a>(x: &'a u8) -> char { 'c' }"),
        ("session/b.rs", "use super::{\n    c::Z,\n    a,\n};\nfn f() -> u8 { let _ = r#\"super::c\"#; 0 }"),
        ("session/c.rs", "pub(super) fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::a::X;\n}\n"),
    ];
    let graph = imports(&files("session/mod.rs", &fixture(&table)).unwrap());
    let want = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(graph["session"], want(&["session::a"]));
    assert_eq!(graph["session::a"], want(&["session::b"]));
    assert_eq!(graph["session::b"], want(&["session::a", "session::c"]));
    assert_eq!(graph["session::c"], want(&["session::a"]));
    let circles = cycles(&graph);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].iter().cloned().collect::<BTreeSet<_>>(), want(&["session::a", "session::b", "session::c"]));
}

#[test]
fn a_circle_through_a_subfolder_and_a_path_attribute_is_found() {
    let table = [
        ("session/mod.rs", "mod x;\npub mod sub;\n"),
        ("session/x.rs", "pub fn f() { crate::session::sub::inner::g(); crate::jdwp::Packet::new(); }"),
        ("session/sub/mod.rs", "pub mod inner;\n"),
        ("session/sub/inner.rs", "pub fn g() {}\n#[cfg(test)]\n#[path = \"inner_tests.rs\"]\nmod tests;\n"),
        ("session/sub/inner_tests.rs", "use super::*;\nuse super::super::super::x::f;\n"),
    ];
    let read = fixture(&table);
    let graph = imports(&files("session/mod.rs", &read).unwrap());
    assert_eq!(graph.len(), 5, "{}", show(&graph));
    assert!(graph["session::sub::inner::tests"].contains("session::x"), "{}", show(&graph));
    assert!(cycles(&graph).is_empty(), "a test module's imports make no circle: {}", show(&graph));

    let table = [table[0], table[1], table[2], ("session/sub/inner.rs", "use super::super::x::f;\npub fn g() { f() }\n")];
    let graph = imports(&files("session/mod.rs", &fixture(&table)).unwrap());
    let circles: Vec<BTreeSet<String>> = cycles(&graph).into_iter().map(|c| c.into_iter().collect()).collect();
    let want: BTreeSet<String> = ["session::x", "session::sub::inner"].map(String::from).into();
    assert_eq!(circles, vec![want], "{}", show(&graph));
}
