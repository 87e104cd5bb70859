//! The detached far side's log (`far.log`, its stderr) kept to a size: past [`MAX_LOG`]
//! bytes it becomes `far.log.1` (replacing the one before) and a new `far.log` takes the
//! descriptor's place, so a far side that logs a lot for days holds at most about twice
//! `MAX_LOG` on the host. A far side whose stderr is not its folder's log (run by hand, or in
//! a test) is left alone.

use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::dir::LOG_FILE;

/// Bytes a log grows to before it is rotated.
pub const MAX_LOG: u64 = 1 << 20;
/// How often the log's size is looked at.
pub const CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Rotates `dir/far.log` when descriptor `fd` writes to it and it holds `max` bytes or more:
/// true when it did. The new file is made 0600 before it replaces the descriptor, which
/// stays open throughout (`dup2` swaps it in one step, so no line is written nowhere).
pub fn rotate_if_big(dir: &Path, fd: RawFd, max: u64) -> std::io::Result<bool> {
    let path = dir.join(LOG_FILE);
    let Ok(file) = std::fs::symlink_metadata(&path) else { return Ok(false) };
    // SAFETY: fstat on a descriptor number only reads; a closed one gives an error.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Ok(false);
    }
    if st.st_ino != file.ino() || st.st_dev != file.dev() || file.size() < max {
        return Ok(false);
    }
    let old = dir.join(format!("{LOG_FILE}.1"));
    std::fs::rename(&path, &old)?;
    let new = OpenOptions::new().create(true).append(true).mode(0o600).open(&path)?;
    // SAFETY: dup2 of a descriptor we own onto `fd`; the old one closes in the same step.
    if unsafe { libc::dup2(new.as_raw_fd(), fd) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_big_log_is_rotated_under_its_descriptor_and_a_small_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut log = OpenOptions::new().create(true).append(true).mode(0o600).open(&path).unwrap();
        // A descriptor of its own, as stderr is the detached far side's.
        let fd = unsafe { libc::dup(log.as_raw_fd()) };
        log.write_all(&[b'x'; 100]).unwrap();
        assert!(!rotate_if_big(dir.path(), fd, 1000).unwrap(), "small: kept");
        log.write_all(&[b'y'; 1000]).unwrap();
        assert!(rotate_if_big(dir.path(), fd, 1000).unwrap(), "big: rotated");
        assert_eq!(std::fs::metadata(dir.path().join("far.log.1")).unwrap().len(), 1100);
        // What the descriptor writes now goes to the new far.log, which is 0600.
        let line = b"after the rotation\n";
        assert_eq!(unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) }, line.len() as isize);
        assert_eq!(std::fs::read(&path).unwrap(), line);
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        // A descriptor that is not the folder's log is left alone.
        let other = tempfile::tempfile().unwrap();
        assert!(!rotate_if_big(dir.path(), other.as_raw_fd(), 0).unwrap());
        unsafe { libc::close(fd) };
    }
}
