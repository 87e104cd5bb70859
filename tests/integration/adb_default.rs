//! adb on a machine that has it: `serve` on its defaults follows an adb server if one runs,
//! says in one INFO line that none does, and never starts one (a server started for nobody
//! outlives jdwpmux and makes keys in ~/.android); `--adb` asks for one and starts it. The
//! real binary with an `adb` on its PATH that only notes that it ran, and nothing listening
//! where the server is looked for.

use crate::cli::Served;
use crate::support::PortHold;

/// The level of a plain-text log line ("2026-01-01T00:00:00Z  INFO target: message").
fn level(line: &str) -> Option<&str> {
    line.split_whitespace().nth(1)
}

/// A folder holding an `adb` that writes its arguments to `ran` and exits 0.
fn fake_adb(dir: &std::path::Path) -> std::path::PathBuf {
    let ran = dir.join("ran");
    let adb = dir.join("adb");
    std::fs::write(&adb, format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 0\n", ran.display())).unwrap();
    std::fs::set_permissions(&adb, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ran
}

fn serve(adb_port: u16, dir: &std::path::Path, args: &[&str]) -> Served {
    let mut all = vec!["--no-scan", "--no-proc"];
    all.extend_from_slice(args);
    let path = format!("{}:/usr/bin:/bin", dir.display());
    Served::start_with(&all, &[], |cmd| {
        cmd.env("PATH", path).env("ANDROID_ADB_SERVER_PORT", adb_port.to_string()).env("XDG_CONFIG_HOME", dir).env("RUST_LOG", "debug");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_its_defaults_serve_never_starts_an_adb_server() {
    let hold = PortHold::new();
    let dir = tempfile::tempdir().unwrap();
    let ran = fake_adb(dir.path());
    let served = serve(hold.port(), dir.path(), &[]);
    // The start-up line, then the watcher's first attempt (at DEBUG): all there is to say.
    let line = served.wait_log("no adb server answers").await;
    assert_eq!(level(&line), Some("INFO"), "{line}");
    assert!(line.contains(&format!("127.0.0.1:{}", hold.port())) && line.contains("--adb"), "{line}");
    served.wait_log("adb server unavailable").await;
    assert!(!ran.exists(), "adb was run unasked: {}", std::fs::read_to_string(&ran).unwrap_or_default());
    let text = served.log_text();
    let about_adb: Vec<&str> = text.lines().filter(|l| matches!(level(l), Some("INFO" | "WARN")) && l.contains("adb")).collect();
    assert_eq!(about_adb.len(), 1, "one line about adb:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adb_asked_for_starts_its_server() {
    let hold = PortHold::new();
    let dir = tempfile::tempdir().unwrap();
    let ran = fake_adb(dir.path());
    let named = format!("127.0.0.1:{}", hold.port());
    let served = serve(hold.port(), dir.path(), &["--adb", &named]);
    // The stand-in starts nothing: said as a failed start, a warning for a server asked for.
    let line = served.wait_log("could not start the adb server").await;
    assert_eq!(level(&line), Some("WARN"), "{line}");
    let args = std::fs::read_to_string(&ran).unwrap_or_default();
    assert!(args.contains(&format!("-P {} start-server", hold.port())), "{args:?}");
}
