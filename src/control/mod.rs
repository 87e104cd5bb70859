//! The control endpoint: a Unix socket, owner-only, through which `jdwpmux list`,
//! `jdwpmux select` and the per-VM commands talk to a running daemon.
//!
//! A Unix socket rather than loopback TCP: file permissions keep other local users out,
//! which a TCP port cannot do, and a path is easy to name with `--control`.

pub mod client;
mod ddm_cmds;
pub mod heap;
pub mod hosts_view;
pub mod protocol;
mod reply;
pub mod server;
pub mod stats_cmd;
pub mod view;

use std::path::PathBuf;

use crate::private_folder;

/// Environment variable that names the control socket for every command.
pub const CONTROL_ENV: &str = "JDWPMUX_CONTROL";

/// The default socket path: `$XDG_RUNTIME_DIR/jdwpmux/control.sock`, else
/// `/tmp/jdwpmux-UID/control.sock`. Its folder is created with mode 0700 by the daemon, which refuses
/// one that another user made or may write to.
pub fn default_path() -> PathBuf {
    candidates(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), private_folder::own_uid()).swap_remove(0)
}

/// Where this user's daemon may answer, the default first: a daemon started in a shell
/// where `XDG_RUNTIME_DIR` was set (a desktop or login session: `/run/user/UID`) answers
/// under it, one started where it was not (`su`, cron, a bare ssh session) under
/// `/tmp/jdwpmux-UID`; commands run from the other shell look in both.
pub fn candidates(xdg_runtime_dir: Option<&std::ffi::OsStr>, uid: u32) -> Vec<PathBuf> {
    private_folder::runtime_folders(xdg_runtime_dir, uid).into_iter().map(|d| d.join("control.sock")).collect()
}

/// The control socket of this user's daemon, for commands other than `serve` when none was
/// named (`--control`, `JDWPMUX_CONTROL`): the first of `candidates` where a daemon answers,
/// in a folder of this user's that no other user may write to (another user could put a
/// socket of theirs anywhere else); else the default path, which the error then names.
pub fn locate() -> PathBuf {
    let all = candidates(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), private_folder::own_uid());
    all.iter().find(|p| answers(p)).cloned().unwrap_or_else(|| all[0].clone())
}

/// Whether a daemon of this user answers at `path` (a blocking connect: a local socket
/// answers at once or never).
pub fn answers(path: &std::path::Path) -> bool {
    path.parent().is_some_and(private_folder::own_private_folder) && std::os::unix::net::UnixStream::connect(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shells_look_in_both_places() {
        let with = candidates(Some(std::ffi::OsStr::new("/run/user/1000")), 1000);
        assert_eq!(with, [PathBuf::from("/run/user/1000/jdwpmux/control.sock"), PathBuf::from("/tmp/jdwpmux-1000/control.sock")]);
        let without = candidates(None, 1000);
        assert_eq!(without, [PathBuf::from("/tmp/jdwpmux-1000/control.sock"), PathBuf::from("/run/user/1000/jdwpmux/control.sock")]);
        // Another runtime folder (a test's, a container's): looked in first, then both.
        let other = candidates(Some(std::ffi::OsStr::new("/home/ann/run")), 1000);
        assert_eq!(other.len(), 3);
        assert_eq!(other[0], PathBuf::from("/home/ann/run/jdwpmux/control.sock"));
        assert_eq!(candidates(Some(std::ffi::OsStr::new("")), 7)[0], PathBuf::from("/tmp/jdwpmux-7/control.sock"));
    }

    #[test]
    fn a_socket_in_a_folder_others_may_write_is_not_answered() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sock = dir.join("control.sock");
        let _listening = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert!(answers(&sock));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!answers(&sock));
        assert!(!answers(&base.path().join("none.sock")));
    }
}
