//! The user's private runtime folder, and what the daemon accepts at a socket's path in a
//! folder before it binds there: used by the control socket and by the ssh sockets' folder,
//! so it sits below both.
//!
//! The socket gives whoever connects every VM the daemon reaches, so its folder must belong
//! to the daemon's user and be closed to others' writes (else another user could swap the
//! socket for one of theirs and answer the clients), and whatever already sits at the path
//! may only be replaced if it is a socket of that same user that no daemon answers on.
//! Anything else is refused and left exactly as it is.

use std::fs::{DirBuilder, Metadata};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};


/// Why a socket's folder or path is refused (the words name the control socket, its first
/// user; the ssh sockets' folder is the same folder).
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("cannot create the control folder {path}: {source}")]
    Folder { path: PathBuf, source: std::io::Error },
    #[error("refusing the control folder {path}: {why} (use --control to put the socket in a folder of your own)")]
    UnsafeFolder { path: PathBuf, why: String },
    #[error("refusing the control socket path {path}: {why}; it is left as it is (use --control to pick another path)")]
    PathTaken { path: PathBuf, why: String },
    #[error("cannot listen on the control socket {path}: {source}")]
    Bind { path: PathBuf, source: std::io::Error },
}

/// This user's runtime folders for jdwpmux, the default first: `$XDG_RUNTIME_DIR/jdwpmux`
/// when set, then `/tmp/jdwpmux-UID` and `/run/user/UID/jdwpmux`.
pub fn runtime_folders(xdg_runtime_dir: Option<&std::ffi::OsStr>, uid: u32) -> Vec<PathBuf> {
    let mut all = Vec::new();
    if let Some(dir) = xdg_runtime_dir.filter(|d| !d.is_empty()) {
        all.push(PathBuf::from(dir).join("jdwpmux"));
    }
    for dir in [format!("/tmp/jdwpmux-{uid}"), format!("/run/user/{uid}/jdwpmux")] {
        let path = PathBuf::from(dir);
        if !all.contains(&path) {
            all.push(path);
        }
    }
    all
}

/// The default runtime folder (the first of `runtime_folders`).
pub fn default_runtime_folder() -> PathBuf {
    runtime_folders(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), own_uid()).swap_remove(0)
}

/// The uid the daemon runs as (the owner of its own /proc entry).
pub fn own_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0)
}

/// Whether a control client of `uid` may be served: the daemon's own user, or root (who
/// could read the socket's folder anyway).
pub fn peer_allowed(uid: u32, own: u32) -> bool {
    uid == own || uid == 0
}

/// Makes the socket's folder (mode 0700) if it is missing, else checks that it is a real
/// folder of the daemon's user that nobody else may write to.
pub fn prepare_folder(dir: &Path) -> Result<(), FolderError> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let folder_err = |source| FolderError::Folder { path: dir.into(), source };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(folder_err)?;
            std::fs::symlink_metadata(dir).map_err(folder_err)?
        }
        Err(e) => return Err(folder_err(e)),
    };
    match folder_problem(&meta, own_uid()) {
        Some(why) => Err(FolderError::UnsafeFolder { path: dir.into(), why }),
        None => Ok(()),
    }
}

/// Whether `dir` is a real folder of this user's that no other user may write to (where a
/// client may trust a socket it did not name).
pub fn own_private_folder(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| folder_problem(&m, own_uid()).is_none())
}

fn folder_problem(meta: &Metadata, own: u32) -> Option<String> {
    let mode = meta.mode() & 0o7777;
    if meta.file_type().is_symlink() {
        Some("it is a symbolic link".into())
    } else if !meta.is_dir() {
        Some("it is not a folder".into())
    } else if meta.uid() != own {
        Some(format!("it belongs to uid {}, not to uid {own} that runs the daemon", meta.uid()))
    } else if mode & 0o022 != 0 {
        Some(format!("it is writable by other users (mode {mode:04o})"))
    } else {
        None
    }
}

/// What sits at the socket's path now.
#[derive(Debug, PartialEq, Eq)]
pub enum AtPath {
    Nothing,
    /// A socket of the daemon's user: a live daemon's, or a stale one to replace.
    OwnSocket,
}

/// Checks whatever is at `path` without following a symbolic link.
pub fn inspect(path: &Path) -> Result<AtPath, FolderError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AtPath::Nothing),
        Err(source) => return Err(FolderError::Bind { path: path.into(), source }),
    };
    match path_problem(&meta, own_uid()) {
        Some(why) => Err(FolderError::PathTaken { path: path.into(), why }),
        None => Ok(AtPath::OwnSocket),
    }
}

fn path_problem(meta: &Metadata, own: u32) -> Option<String> {
    let ty = meta.file_type();
    if ty.is_symlink() {
        Some("it is a symbolic link, not a socket".into())
    } else if !ty.is_socket() {
        Some("it exists and is not a socket".into())
    } else if meta.uid() != own {
        Some(format!("the socket there belongs to uid {}, not to uid {own} that runs the daemon", meta.uid()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn meta(p: &Path) -> Metadata {
        std::fs::symlink_metadata(p).unwrap()
    }

    #[test]
    fn folders_must_be_own_real_and_closed_to_others() {
        let base = tempfile::tempdir().unwrap();
        let own = own_uid();
        let d = base.path().join("d");
        std::fs::create_dir(&d).unwrap();
        for (mode, ok) in [(0o700, true), (0o755, true), (0o775, false), (0o777, false), (0o1777, false)] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(folder_problem(&meta(&d), own).is_none(), ok, "mode {mode:o}");
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(folder_problem(&meta(&d), own.wrapping_add(1)).unwrap().contains("belongs to uid"));
        let link = base.path().join("l");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert_eq!(folder_problem(&meta(&link), own).unwrap(), "it is a symbolic link");
        let f = base.path().join("f");
        std::fs::write(&f, "").unwrap();
        assert_eq!(folder_problem(&meta(&f), own).unwrap(), "it is not a folder");
    }

    #[test]
    fn a_missing_folder_is_made_owner_only() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("a").join("b");
        prepare_folder(&d).unwrap();
        assert_eq!(meta(&d).mode() & 0o777, 0o700);
    }

    #[test]
    fn only_own_sockets_may_be_replaced() {
        let base = tempfile::tempdir().unwrap();
        let own = own_uid();
        let s = base.path().join("s");
        drop(std::os::unix::net::UnixListener::bind(&s).unwrap());
        assert_eq!(path_problem(&meta(&s), own), None);
        assert!(path_problem(&meta(&s), own.wrapping_add(1)).unwrap().contains("belongs to uid"));
        assert_eq!(inspect(&s).unwrap(), AtPath::OwnSocket);
        assert_eq!(inspect(&base.path().join("none")).unwrap(), AtPath::Nothing);
        let f = base.path().join("f");
        std::fs::write(&f, "x").unwrap();
        assert!(matches!(inspect(&f), Err(FolderError::PathTaken { .. })));
        let link = base.path().join("l");
        std::os::unix::fs::symlink(&s, &link).unwrap();
        assert!(path_problem(&meta(&link), own).unwrap().contains("symbolic link"));
    }

    #[test]
    fn peers_of_other_uids_are_refused() {
        assert!(peer_allowed(1000, 1000));
        assert!(peer_allowed(0, 1000));
        assert!(!peer_allowed(65534, 1000));
        assert!(!peer_allowed(1000, 0));
    }
}
