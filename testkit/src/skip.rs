//! Tests that cannot run here (no root, no sshd, no podman, no JDK 25...) never count as
//! passed. Every such test goes through [`not_run!`] (the `need_*!` macros call it):
//!
//! - by default the test FAILS, its message naming what it needs, how to get it, and
//!   [`ALLOW_ENV`], which lets such tests be skipped;
//! - with `JDWPMUX_TEST_ALLOW_SKIP=1` it prints `skipped: WHY` and returns early;
//! - either way one line, `TEST<TAB>WHY`, is appended to the record ([`record_path`]), which
//!   `./test.sh` makes empty before the run and reads after it to say how many tests did not
//!   run and why.
//!
//! A `need_*!` macro of a new kind of peer is one line over it:
//!
//! ```ignore
//! if let Some(why) = $crate::containers::docker_unavailable() { $crate::not_run!(why); }
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Set to `1` to let tests that cannot run here be skipped (and recorded) instead of failing.
pub const ALLOW_ENV: &str = "JDWPMUX_TEST_ALLOW_SKIP";
/// The record's path; `./test.sh` sets it. Unset: [`DEFAULT_RECORD`] in the target folder.
pub const RECORD_ENV: &str = "JDWPMUX_TEST_NOT_RUN_FILE";
/// The record's name in the target folder (the one holding Cargo's `CACHEDIR.TAG`).
pub const DEFAULT_RECORD: &str = "jdwpmux-not-run.txt";
/// The command that installs what the tests need and runs them all.
pub const TEST_COMMAND: &str = "./test.sh";

/// Ends the calling test that cannot run here: fails it, or (skipping allowed) returns from
/// it after printing `skipped: WHY`; recorded either way. `why` is anything `Display`: what
/// is missing and how to get it. A test returning a value names it after `=>`:
/// `not_run!("needs root" => Ok(()))`.
#[macro_export]
macro_rules! not_run {
    ($why:expr) => {
        $crate::not_run!($why => ())
    };
    ($why:expr => $ret:expr) => {{
        $crate::skip::not_run(concat!(module_path!(), ":", line!()), &$why);
        return $ret;
    }};
}

/// What [`not_run!`] does before it returns: panics unless skipping is allowed
/// ([`ALLOW_ENV`]); records the test and `why` first either way. `place` (the caller's module
/// and line) names the test when the thread does not (libtest names each test's thread).
pub fn not_run(place: &str, why: &dyn std::fmt::Display) {
    if let Err(e) = not_run_as(&test_name(place), &why.to_string()) {
        panic!("{e}");
    }
}

/// [`not_run`] for what is not a test thread (a benchmark's section): records `name` and
/// `why`; `Err` (the failure's message) unless skipping is allowed ([`ALLOW_ENV`]).
pub fn not_run_as(name: &str, why: &str) -> Result<(), String> {
    let allowed = std::env::var(ALLOW_ENV).is_ok_and(|v| v == "1");
    decide(allowed, &record_path(), name, why)
}

/// The pure part of [`not_run`]: records, then says whether the test may end as skipped
/// (`Ok`, after printing `skipped: WHY`) or must fail (`Err`, the message to fail with).
pub fn decide(allowed: bool, record: &Path, test: &str, why: &str) -> Result<(), String> {
    // One line per test, whatever `why` holds.
    let why = why.replace(['\n', '\r', '\t'], " ");
    let recorded = append(record, &format!("{test}\t{why}\n"));
    if allowed {
        eprintln!("skipped: {why}");
        if let Err(e) = recorded {
            // Unrecorded, a skip would pass unseen: that is the failure this module prevents.
            return Err(format!("skipped ({why}), but the record {} cannot be written: {e}", record.display()));
        }
        return Ok(());
    }
    Err(format!(
        "this test cannot run here: {why}. Run `{TEST_COMMAND}` as root (it installs what the \
         tests need); or, to let tests that cannot run be skipped instead (recorded and named \
         at the end of `{TEST_COMMAND}`), set {ALLOW_ENV}=1"
    ))
}

/// The record: [`RECORD_ENV`], else [`DEFAULT_RECORD`] in the target folder of the running
/// test binary, else in the system's temporary folder.
pub fn record_path() -> PathBuf {
    if let Some(p) = std::env::var_os(RECORD_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let target = exe.ancestors().skip(1).find(|d| d.join("CACHEDIR.TAG").is_file());
    target.map_or_else(std::env::temp_dir, Path::to_path_buf).join(DEFAULT_RECORD)
}

/// The test's name as libtest gives it (its thread's name), else the caller's place.
fn test_name(place: &str) -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => place.to_string(),
    }
}

/// Appends one line in one write (O_APPEND): lines of tests running at once, in one process
/// or several, do not interleave.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    OpenOptions::new().create(true).append(true).open(path)?.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn lines(p: &Path) -> Vec<String> {
        std::fs::read_to_string(p).unwrap_or_default().lines().map(str::to_string).collect()
    }

    #[test]
    fn not_allowed_fails_with_the_remedy_and_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        let err = decide(false, &record, "a::test", "no sshd\n(install openssh-server)").unwrap_err();
        assert!(err.contains("no sshd (install openssh-server)"), "{err}");
        assert!(err.contains(ALLOW_ENV) && err.contains(TEST_COMMAND), "{err}");
        assert_eq!(lines(&record), ["a::test\tno sshd (install openssh-server)"]);
    }

    #[test]
    fn allowed_is_recorded_and_appended() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        decide(true, &record, "a::one", "needs root").unwrap();
        decide(true, &record, "a::two", "no JDK 25").unwrap();
        assert_eq!(lines(&record), ["a::one\tneeds root", "a::two\tno JDK 25"]);
    }

    #[test]
    fn allowed_but_unrecordable_fails() {
        let dir = tempfile::tempdir().unwrap();
        let err = decide(true, &dir.path().join("missing/record"), "a::test", "needs root").unwrap_err();
        assert!(err.contains("cannot be written"), "{err}");
    }

    /// Run only by [`the_macro_fails_or_skips_as_the_environment_says`], in a child process
    /// of its own (the environment is the process's).
    #[test]
    #[ignore = "a probe run by the_macro_fails_or_skips_as_the_environment_says"]
    #[allow(unreachable_code)]
    fn probe_not_run() {
        crate::not_run!("the probe's reason");
        panic!("not_run! returned into the test");
    }

    /// The macro end to end, in this test binary run again: without the variable the test
    /// fails naming why and the variable; with it, the test passes as skipped; both recorded
    /// under the test's name.
    #[test]
    fn the_macro_fails_or_skips_as_the_environment_says() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        let run = |allow: Option<&str>| {
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args(["--ignored", "--exact", "skip::tests::probe_not_run", "--nocapture"]).env(RECORD_ENV, &record).env_remove(ALLOW_ENV);
            if let Some(v) = allow {
                cmd.env(ALLOW_ENV, v);
            }
            let out = cmd.output().unwrap();
            (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
        };
        let (ok, text) = run(None);
        assert!(!ok && text.contains("cannot run here: the probe's reason") && text.contains(ALLOW_ENV), "{text}");
        let (ok, text) = run(Some("0"));
        assert!(!ok, "only 1 allows: {text}");
        let (ok, text) = run(Some("1"));
        assert!(ok && text.contains("skipped: the probe's reason") && text.contains("1 passed"), "{text}");
        let want = "skip::tests::probe_not_run\tthe probe's reason";
        assert_eq!(lines(&record), [want, want, want]);
    }
}
