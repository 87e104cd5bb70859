//! VMs on other hosts reached through the user's own OpenSSH client: one master connection
//! a host, whose forwards carry each VM's connection from a Unix socket in the daemon's
//! private folder (`private_dir`, here).
//!
//! - [`destination`]: what may be given to ssh as a host. Pure.
//! - [`cmd`]: ssh's command lines and options. Pure.
//! - [`errors`]: what ssh's failures mean. Pure.
//! - [`config`]: whether the user's ssh config names a host. Pure.
//! - [`path`]: paths escaped for ssh's tokens. Pure.
//! - [`known_hosts`]: which files to watch for a host refused for its key. Pure.
//! - [`master`]: the master connection, and the JVM scan run in its own session.
//! - [`start_far`]: starting `jdwpmux far` through the master, and forwarding its socket.
//!
//! The host served by plain ssh (scan and forwards) is `remote::host`; the host served
//! through jdwpmux on it, over the near link, is `remote::through_far`. Both stand on this
//! folder, which names neither.

pub mod cmd;
pub mod config;
pub mod destination;
pub mod errors;
pub mod known_hosts;
pub mod master;
pub mod path;
pub mod start_far;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Longest folder path for the ssh sockets: a Unix socket path has 108 bytes, and the
/// longest file name in it is about 24.
const MAX_DIR_LEN: usize = 80;

/// Makes the daemon's private folder for ssh's sockets: `ssh-PID` beside the control socket
/// (whose folder is the user's own, mode 0700), or in the default one when that path is too
/// long for socket names. A folder whose path ssh cannot be given (`ssh_path`) is an error.
pub fn private_dir(control: Option<&Path>) -> std::io::Result<PathBuf> {
    let default = crate::private_folder::default_runtime_folder();
    let base = control.and_then(Path::parent).filter(|d| d.as_os_str().len() <= MAX_DIR_LEN).unwrap_or(&default);
    if base == default {
        crate::private_folder::prepare_folder(base).map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let dir = base.join(format!("ssh-{}", std::process::id()));
    // Refused before anything is made: ssh would take the path for another.
    path::check_folder(&dir).map_err(std::io::Error::other)?;
    remove_stale(base);
    if dir.exists() {
        // Left by an earlier daemon with this pid.
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Removes the `ssh-PID` folders of daemons that are gone (killed before they could).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("ssh-")).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_folder_per_daemon_and_none_left_of_gone_ones() {
        let base = tempfile::tempdir().unwrap();
        let control = base.path().join("control.sock");
        // A daemon that was killed (no such pid) left its folder; a live one's stays.
        let gone = base.path().join(format!("ssh-{}", u32::MAX - 1));
        let live = base.path().join("ssh-1");
        std::fs::create_dir(&gone).unwrap();
        std::fs::create_dir(&live).unwrap();
        let dir = private_dir(Some(&control)).unwrap();
        assert_eq!(dir, base.path().join(format!("ssh-{}", std::process::id())));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(!gone.exists() && live.exists());
    }

    #[test]
    fn a_folder_ssh_cannot_be_given_is_refused_and_nothing_made() {
        let base = tempfile::tempdir().unwrap();
        let odd = base.path().join("${HOME}");
        std::fs::create_dir(&odd).unwrap();
        let e = private_dir(Some(&odd.join("control.sock"))).unwrap_err();
        assert!(e.to_string().contains("environment variable"), "{e}");
        assert_eq!(std::fs::read_dir(&odd).unwrap().count(), 0);
    }
}
