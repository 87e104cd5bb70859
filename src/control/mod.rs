//! The control endpoint: a Unix socket, owner-only, through which `jdwpmux list`,
//! `jdwpmux select` and the per-VM commands talk to a running daemon.
//!
//! A Unix socket rather than loopback TCP: file permissions keep other local users out,
//! which a TCP port cannot do, and a path is easy to name with `--control`.

pub mod client;
mod ddm_cmds;
pub mod heap;
pub mod hosts_view;
pub mod path_check;
pub mod protocol;
pub mod server;
pub mod stats_cmd;
pub mod view;

use std::path::PathBuf;

/// Environment variable that names the control socket for every command.
pub const CONTROL_ENV: &str = "JDWPMUX_CONTROL";

/// The default socket path: `$XDG_RUNTIME_DIR/jdwpmux/control.sock`, else
/// `/tmp/jdwpmux-UID/control.sock`. Its folder is created with mode 0700 by the daemon, which refuses
/// one that another user made or may write to.
pub fn default_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("jdwpmux").join("control.sock");
    }
    let uid = path_check::own_uid();
    PathBuf::from(format!("/tmp/jdwpmux-{uid}")).join("control.sock")
}
