//! `cargo test` replays every committed fuzz input through its target: the corpus each
//! fuzzer starts from (`fuzz/corpus/TARGET`) and every input that once broke a property
//! (`fuzz/regressions/TARGET`, named after what it broke).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::TARGETS;

fn inputs(folder: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(folder).join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

fn replay(folder: &str) -> usize {
    let mut total = 0;
    for t in TARGETS {
        let start = Instant::now();
        let files = inputs(folder, t.name);
        for f in &files {
            let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let outcome = std::panic::catch_unwind(|| (t.check)(&data));
            assert!(outcome.is_ok(), "{} fails on {}", t.name, f.display());
        }
        eprintln!("{}: {} {folder} inputs in {:?}", t.name, files.len(), start.elapsed());
        total += files.len();
    }
    total
}

#[test]
fn every_corpus_input_passes() {
    for t in TARGETS {
        assert!(!inputs("corpus", t.name).is_empty(), "fuzz/corpus/{} is empty", t.name);
    }
    replay("corpus");
}

#[test]
fn every_past_crash_passes() {
    replay("regressions");
}
