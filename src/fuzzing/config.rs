//! The TOML config file, through to the command line it sets the defaults of.
//!
//! Input: the file's bytes. What must hold:
//! - text that is not a valid config is an error naming a line of the file;
//! - a valid config makes the `serve` command parse with no other argument (a file the
//!   loader accepts must not make the command line fail or panic later), and every value it
//!   sets arrives in the parsed arguments unchanged.

use std::path::Path;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command, ServeArgs};
use crate::config::{ConfigError, ConfigFile};

/// Environment variables that would override the file (clap reads them as it parses).
const ENV: &[&str] = &["JDWPMUX_LISTEN", "JDWPMUX_BASE_PORT", "JDWPMUX_CURRENT_PORT", "JDWPMUX_SELECT", "JDWPMUX_CAPTURE", "JDWPMUX_ALLOW_REMOTE"];

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file = match ConfigFile::parse(text, Path::new("fuzz.toml")) {
        Ok(file) => file,
        Err(ConfigError::Invalid { line, message, .. }) => {
            assert!(line >= 1 && line <= text.split('\n').count(), "line {line} of a {}-line file", text.split('\n').count());
            return assert!(!message.contains('\n'));
        }
        Err(e) => panic!("parsing text gave {e}"),
    };
    if ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        return;
    }
    let matches = file
        .apply(Cli::command())
        .try_get_matches_from(["jdwpmux", "serve"])
        .unwrap_or_else(|e| panic!("a config the loader accepts breaks the command line: {e}"));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| panic!("{e}"));
    let Command::Serve(args) = cli.command else { panic!("not the serve command") };
    arrives(&file, &args);
    if let Some(control) = &file.control {
        assert_eq!(cli.control.as_ref(), Some(control));
    }
}

/// Every value the file sets is the parsed argument's value.
fn arrives(f: &ConfigFile, a: &ServeArgs) {
    fn same<T: PartialEq + std::fmt::Debug>(key: &str, file: Option<T>, arg: T) {
        if let Some(v) = file {
            assert_eq!(v, arg, "{key} from the file did not arrive");
        }
    }
    same("vm", f.vm.clone(), a.vms.clone());
    same("scan", f.scan.as_ref().map(|v| v.iter().map(|r| r.0.to_string()).collect()), a.scans.iter().map(|r| r.to_string()).collect::<Vec<_>>());
    same("no-scan", f.no_scan, a.no_scan);
    same("cpu-pin", f.cpu_pin_value(), a.cpu_pin);
    if let Some(s) = f.scan_interval {
        assert!(s == a.scan_interval || (s.is_nan() && a.scan_interval.is_nan()), "scan-interval {s} became {}", a.scan_interval);
    }
    same("adb", f.adb.as_ref().map(|p| Some(p.0)), a.adb);
    same("no-adb", f.no_adb, a.no_adb);
    same("listen", f.listen.as_ref().map(|p| p.0), a.listen);
    same("allow-remote", f.allow_remote, a.allow_remote);
    same("allow", f.allow.as_ref().map(|v| v.iter().map(|c| c.0.to_string()).collect()), a.allow.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    same("allow-user", f.allow_user.as_ref().map(|v| v.iter().map(|u| u.0.clone()).collect()), a.allow_users.clone());
    same("base-port", f.base_port, a.base_port);
    same("current-port", f.current_port, a.current_port);
    same("select", f.select.clone().map(Some), a.select.clone());
    same("ddm", f.ddm, a.ddm);
    same("capture", f.capture.clone().map(Some), a.capture.clone());
    same("capture-format", f.capture_format.as_ref().map(|p| Some(p.0)), a.capture_format);
    same("capture-max-bytes", f.capture_max_bytes.map(Some), a.capture_max_bytes);
    same("capture-snaplen", f.capture_snaplen, a.capture_snaplen);
}
