//! Folders whose paths ssh cannot be given, through `serve --ssh`: ssh reads `${` in a
//! control or socket path as an environment variable (with no escape), and a `-L` spec
//! cannot hold a socket path with both `:` and `]`. `serve` refuses to start with one line
//! naming the folder and why, and makes nothing there. (Folders that can be given, with `%`
//! tokens or a `:`, are served: `remote_link`.)

use std::time::Duration;

use crate::cli::Served;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_folder_ssh_would_misread_is_refused_at_start() {
    let base = tempfile::tempdir().unwrap();
    for (name, why) in [("${HOME}", "environment variable"), ("x:]", "both ':' and ']'")] {
        let dir = base.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let control = dir.join("control.sock");
        let mut served = Served::start_at(Some(&control), &["--no-scan", "--no-proc", "--no-adb", "--ssh", "build-box"], &[]);
        let code = served.wait_exit(Duration::from_secs(30));
        let log = served.log_text();
        assert_eq!(code, Some(1), "{name}: {log}");
        let line = log.lines().find(|l| l.starts_with("jdwpmux: ")).unwrap_or_else(|| panic!("no error line: {log}"));
        assert!(line.contains(&dir.join(format!("ssh-{}", served.pid())).display().to_string()) && line.contains(why), "{line}");
        assert!(line.contains("--control"), "{line}");
        let made: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).filter(|n| n.to_string_lossy().starts_with("ssh-")).collect();
        assert!(made.is_empty(), "{name}: {made:?}");
    }
}
