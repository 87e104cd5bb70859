//! A machine without Android tools: `serve` on its defaults looks for the usual adb server
//! and says in one INFO line that there is none, with no warning; an adb server named with
//! `--adb` that does not answer is a warning. The real binary, with no `adb` on its PATH and
//! nothing listening where it looks for the server.

use crate::cli::Served;
use crate::support::PortHold;

/// The level of a plain-text log line ("2026-01-01T00:00:00Z  INFO target: message").
fn level(line: &str) -> Option<&str> {
    line.split_whitespace().nth(1)
}

/// `serve --no-scan --no-proc ARGS` with an empty PATH, the usual adb port pointing at `adb_port`
/// (where nothing answers), logging at DEBUG so that the quiet lines can be waited for.
fn serve_without_adb(adb_port: u16, args: &[&str], empty: &std::path::Path) -> Served {
    let mut all = vec!["--no-scan", "--no-proc"];
    all.extend_from_slice(args);
    Served::start_with(&all, &[], |cmd| {
        cmd.env("PATH", empty)
            .env("ANDROID_ADB_SERVER_PORT", adb_port.to_string())
            .env("XDG_CONFIG_HOME", empty)
            .env("RUST_LOG", "debug");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_adb_anywhere_is_one_info_line_and_no_warning() {
    let hold = PortHold::new();
    let empty = tempfile::tempdir().unwrap();
    let served = serve_without_adb(hold.port(), &[], empty.path());
    // The start-up check, then the watcher's first attempt (at DEBUG): all there is to say.
    served.wait_log("no adb server answers at").await;
    served.wait_log("adb server unavailable").await;
    let text = served.log_text();
    let warnings: Vec<&str> = text.lines().filter(|l| level(l) == Some("WARN")).collect();
    assert!(warnings.is_empty(), "warnings on a machine without adb:\n{text}");
    let about_adb = text.lines().filter(|l| level(l) == Some("INFO") && l.contains("adb")).count();
    assert_eq!(about_adb, 1, "one INFO line about adb:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_adb_server_that_does_not_answer_is_a_warning() {
    let hold = PortHold::new();
    let empty = tempfile::tempdir().unwrap();
    let named = format!("127.0.0.1:{}", hold.port());
    let served = serve_without_adb(hold.port(), &["--adb", &named], empty.path());
    let line = served.wait_log("no adb server answers").await;
    assert_eq!(level(&line), Some("WARN"), "{line}");
    assert!(line.contains(&named), "{line}");
}
