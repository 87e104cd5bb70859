//! The far side's private folder and its lock: where the socket lives, and how a second
//! start finds the first.
//!
//! The folder is `$XDG_RUNTIME_DIR/jdwpmux-far` when the user has a runtime folder of their
//! own, else `/tmp/jdwpmux-far-UID`. In /tmp anyone may have made that name first, so an
//! existing folder is used only when it is a real folder (not a link), owned by this user, and
//! closed to everyone else (no group or other bits); otherwise the far side refuses to start
//! and says why. Nothing in it is ever chmod'ed into shape: a folder in the wrong state may
//! already hold someone else's socket.
//!
//! Any user may make `/tmp/jdwpmux-far-UID` before its owner does, and so would keep every
//! far side of that user from starting. When the default folder is in /tmp and is someone
//! else's (or not a folder, or open to others), the far side uses `~/.cache/jdwpmux/far`
//! instead (`choose_default`): a folder under the user's own home, which nobody else can make.
//! The choice is the same for every start of that user's, so a second start still finds the
//! first.
//!
//! `far.pid` is both the lock (an exclusive `flock` held for the life of the process) and the
//! pid file (it holds the pid): a second start that cannot take the lock reads the pid of the
//! one running and points to its socket instead of starting another.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The socket's name in the folder.
pub const SOCKET: &str = "far.sock";
/// The lock and pid file's name in the folder.
pub const PID_FILE: &str = "far.pid";
/// The log file of a detached far side.
pub const LOG_FILE: &str = "far.log";

#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is a symbolic link or not a folder: refusing to use it")]
    NotAFolder { path: PathBuf },
    #[error("{path} belongs to uid {owner}, not to this user (uid {me}): refusing to use it")]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error("{path} has mode {mode:04o}: others may reach it (it must be 0700); remove it or fix its mode")]
    Mode { path: PathBuf, mode: u32 },
}

/// Where the folder is by default: under the user's runtime folder when there is one that is
/// the user's own, else in /tmp by uid.
pub fn default_dir() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        let own = std::fs::symlink_metadata(&run).is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0);
        if run.is_absolute() && own {
            return run.join("jdwpmux-far");
        }
    }
    PathBuf::from(format!("/tmp/jdwpmux-far-{uid}"))
}

/// The folder to use when none was named: `default_dir()`, unless that is in /tmp and was
/// taken by someone else first; then `~/.cache/jdwpmux/far` (made 0700), with the reason the
/// default was passed over, for the log.
pub fn choose_default() -> Result<(PathBuf, Option<String>), DirError> {
    let first = default_dir();
    match prepare(&first) {
        Ok(()) => Ok((first, None)),
        Err(e) if first.starts_with("/tmp") && taken(&e) => {
            let Some(home) = own_home() else { return Err(e) };
            let alt = home.join(".cache").join("jdwpmux").join("far");
            if let Some(parent) = alt.parent() {
                DirBuilder::new().recursive(true).mode(0o700).create(parent).map_err(|source| DirError::Io { path: parent.to_path_buf(), source })?;
            }
            prepare(&alt)?;
            Ok((alt, Some(e.to_string())))
        }
        Err(e) => Err(e),
    }
}

/// Whether a folder's refusal means that someone else has the name (so another name is
/// the way on), not that something failed.
fn taken(e: &DirError) -> bool {
    matches!(e, DirError::Owner { .. } | DirError::NotAFolder { .. } | DirError::Mode { .. })
}

/// `$HOME`, when it is an absolute folder of this user's that no one else may write to.
fn own_home() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let meta = std::fs::metadata(&home).ok()?;
    let ok = home.is_absolute() && meta.is_dir() && meta.uid() == rustix::process::getuid().as_raw() && meta.mode() & 0o022 == 0;
    ok.then_some(home)
}

/// Makes the folder (mode 0700) or checks the one there: a folder, this user's, 0700 or
/// tighter.
pub fn prepare(path: &Path) -> Result<(), DirError> {
    let io = |source| DirError::Io { path: path.to_path_buf(), source };
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    check(path, meta.is_dir(), meta.uid(), meta.mode(), rustix::process::getuid().as_raw())
}

/// The rules for an existing folder, apart from the file system for tests.
fn check(path: &Path, is_dir: bool, owner: u32, mode: u32, me: u32) -> Result<(), DirError> {
    if !is_dir {
        return Err(DirError::NotAFolder { path: path.to_path_buf() });
    }
    if owner != me {
        return Err(DirError::Owner { path: path.to_path_buf(), owner, me });
    }
    if mode & 0o077 != 0 {
        return Err(DirError::Mode { path: path.to_path_buf(), mode: mode & 0o7777 });
    }
    Ok(())
}

/// The lock held for the life of the far side; dropping it releases the lock.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Who holds the lock.
#[derive(Debug)]
pub enum Locked {
    /// This process: it is the far side.
    Mine(Lock),
    /// Another far side runs in the folder: what its pid file says of it.
    Running(Holder),
}

/// What a far side's pid file says: its pid on the first line (what `kill $(head -n1
/// far.pid)` and older jdwpmux read), then `MIN..MAX VERSION` (the far-side protocols it
/// speaks, its jdwpmux version). Far sides before this record wrote the pid alone: their
/// protocols and version are then unknown, and `far --detach` says so rather than giving
/// its own as theirs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holder {
    pub pid: Option<u32>,
    pub protocols: Option<std::ops::RangeInclusive<u16>>,
    pub version: Option<String>,
}

/// This far side's record, as `lock` writes it.
pub fn record(pid: u32) -> String {
    use crate::remote::protocol::hello::{protocols, PROTOCOL, PROTOCOL_MIN};
    format!("{pid}\n{} {}", protocols(PROTOCOL_MIN, PROTOCOL), env!("CARGO_PKG_VERSION"))
}

/// Reads a pid file's text (bounded by the caller); what cannot be read is unknown.
pub fn holder(text: &str) -> Holder {
    let mut words = text.split_whitespace();
    let pid = words.next().and_then(|p| p.parse().ok());
    let protocols = words.next().and_then(|r| {
        let (min, max) = r.split_once("..").unwrap_or((r, r));
        let (min, max) = (min.parse().ok()?, max.parse().ok()?);
        (min <= max).then_some(min..=max)
    });
    let version = words.next().filter(|v| v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic())).map(str::to_string);
    Holder { pid, protocols, version }
}

/// Takes the folder's lock and writes this process's pid into it, or says who holds it.
pub fn lock(dir: &Path) -> Result<Locked, DirError> {
    let path = dir.join(PID_FILE);
    let io = |source| DirError::Io { path: path.clone(), source };
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&path).map_err(io)?;
    // SAFETY: flock on a descriptor this function owns; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut text = String::new();
            let _ = (&mut file).take(256).read_to_string(&mut text);
            return Ok(Locked::Running(holder(&text)));
        }
        return Err(io(err));
    }
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    writeln!(file, "{}", record(std::process::id())).map_err(io)?;
    Ok(Locked::Mine(Lock { _file: file }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_for_a_folder_found_there() {
        let p = Path::new("/tmp/x");
        assert!(check(p, true, 1000, 0o40700, 1000).is_ok());
        assert!(check(p, true, 1000, 0o40500, 1000).is_ok());
        let cases: Vec<(bool, u32, u32, &str)> = vec![
            (false, 1000, 0o700, "is a symbolic link or not a folder"),
            (true, 0, 0o700, "belongs to uid 0, not to this user (uid 1000)"),
            (true, 1000, 0o40755, "has mode 0755"),
            (true, 1000, 0o40710, "has mode 0710"),
            (true, 1000, 0o41777, "has mode 1777"),
        ];
        for (is_dir, owner, mode, want) in cases {
            let err = check(p, is_dir, owner, mode, 1000).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[test]
    fn a_new_folder_is_private_and_a_loose_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("far");
        prepare(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        prepare(&dir).unwrap();
        let loose = tmp.path().join("loose");
        std::fs::create_dir(&loose).unwrap();
        std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert!(matches!(prepare(&loose), Err(DirError::Mode { mode: 0o755, .. })));
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(prepare(&link), Err(DirError::NotAFolder { .. })));
    }

    #[test]
    fn a_pid_file_says_what_it_can() {
        let h = |pid, p: Option<std::ops::RangeInclusive<u16>>, v: Option<&str>| Holder { pid, protocols: p, version: v.map(str::to_string) };
        let cases = [
            ("41 2..4 0.1.0\n", h(Some(41), Some(2..=4), Some("0.1.0"))),
            ("41 3 0.2.0", h(Some(41), Some(3..=3), Some("0.2.0"))),
            // A far side from before the record: the pid alone.
            ("41\n", h(Some(41), None, None)),
            ("", h(None, None, None)),
            ("x 4..2 \u{7}", h(None, None, None)),
        ];
        for (text, want) in cases {
            assert_eq!(holder(text), want, "{text:?}");
        }
        assert_eq!(holder(&record(7)), h(Some(7), Some(crate::remote::protocol::hello::PROTOCOL_MIN..=crate::remote::protocol::hello::PROTOCOL), Some(env!("CARGO_PKG_VERSION"))));
        assert_eq!(record(7).lines().next(), Some("7"), "the pid alone on the first line");
    }

    #[test]
    fn the_second_lock_names_the_first_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let Locked::Mine(first) = lock(tmp.path()).unwrap() else { panic!("the first lock is taken") };
        match lock(tmp.path()).unwrap() {
            Locked::Running(h) => assert_eq!(
                h,
                Holder { pid: Some(std::process::id()), protocols: Some(crate::remote::protocol::hello::PROTOCOL_MIN..=crate::remote::protocol::hello::PROTOCOL), version: Some(env!("CARGO_PKG_VERSION").into()) }
            ),
            Locked::Mine(_) => panic!("two holders"),
        }
        drop(first);
        assert!(matches!(lock(tmp.path()).unwrap(), Locked::Mine(_)), "released with its holder");
    }
}
