//! Checks that the crate's folders import in one direction: the layers listed in `lib.rs`
//! ("# Layers") hold for every import in `src/`, and no files of one folder import each
//! other in a circle (a subfolder counts as one of its folder's files).
//!
//! An import is a path into another file, as [`reading`] reads them (the session's layout
//! test reads them the same way): `use super::x::Y`, `crate::a::b::C` anywhere, a use
//! group, a child named by the file that declares it. Files are every `.rs` under `src/`;
//! comments and strings are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(crate) mod reading;

use reading::{cycles, imports, tokens, File};


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
            // A folder's own layout test reads imports with this module's reader.
            let reader = t == "house_tests::reading" && from.ends_with("layout_tests");
            if there > here && !reader && !KNOWN_UP.iter().any(|(f, i, _)| f == from && i == t) {
                wrong.push(format!("{from} (layer {here}) imports {t} (layer {there})"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports pointing up a layer (see lib.rs's \"# Layers\"):\n  {}", wrong.join("\n  "));
}

/// Circles among sibling files that are known, each with what would break it. Add none.
const KNOWN_CIRCLES: &[&str] = &[
    // "folder: a <-> b <-> ...", as the test names it, under a line saying what breaks it
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
