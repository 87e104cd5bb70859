//! Triage of fuzzer findings: `cargo run --features fuzzing --example fuzz_replay -- TARGET PATH...` runs every
//! file named (a folder: each file in it, say AFL's `crashes`) through TARGET's check, the
//! same one `cargo test` and the AFL binaries run, and prints which inputs still break a
//! property and which property. Exits 1 when any does. See fuzz/README.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use jdwpmux::fuzzing::{target, TARGETS};

fn files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file() && !p.ends_with("README.txt")).collect();
    out.sort();
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    let (Some(name), true) = (args.first(), args.len() >= 2) else {
        eprintln!("usage: fuzz_replay TARGET PATH...   (targets: {})", names.join(" "));
        return ExitCode::from(2);
    };
    let Some(t) = target(name) else {
        eprintln!("fuzz_replay: no target {name} (targets: {})", names.join(" "));
        return ExitCode::from(2);
    };
    let (mut failed, mut total) = (0, 0);
    for path in args[1..].iter().map(PathBuf::from) {
        let list = match files(&path) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fuzz_replay: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        for f in list {
            let data = match std::fs::read(&f) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("fuzz_replay: {}: {e}", f.display());
                    return ExitCode::from(2);
                }
            };
            total += 1;
            // The panic hook prints the broken property; the file it came from follows.
            if std::panic::catch_unwind(|| (t.check)(&data)).is_err() {
                failed += 1;
                println!("FAILS: {}", f.display());
            }
        }
    }
    println!("{name}: {failed} of {total} inputs fail");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
