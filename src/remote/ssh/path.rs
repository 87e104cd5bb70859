//! Local paths as ssh must be given them. ssh rewrites some of what it is given before it
//! uses it (OpenSSH 9.2, ssh_config(5), TOKENS and ENVIRONMENT VARIABLES):
//!
//! - `ControlPath` (so `-S`) and the Unix socket paths of `LocalForward` (so `-L`) expand
//!   `%` tokens (`%h`, `%C`, ...; `%%` is a literal `%`) and `${VAR}` from the environment;
//!   `ControlPath` also expands a leading `~`;
//! - a `-L` spec is split at `:`, unless a field is written in square brackets, which are
//!   taken literally up to the first `]`.
//!
//! So a `%` is doubled, a relative path gets a leading `./` (no `~` can lead it), a socket
//! path holding `:` is bracketed, and what has no escape is refused with the reason: `${`
//! (there is no way to write it literally) and a socket path holding both `:` and `]`.
//! `-F` (the config file) is read as it is and needs none of this. Pure.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A path ssh would read as something else, with no way to write it that it would not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SshPathError {
    #[error("{} holds \"${{\", which ssh reads as an environment variable and has no escape for; choose a folder without it (--control)", .0.display())]
    Variable(PathBuf),
    #[error("{} holds both ':' and ']', which ssh's -L cannot take in a socket path; choose a folder without them (--control)", .0.display())]
    ForwardSpec(PathBuf),
}

/// `path` as ssh must be given it where it expands tokens (`-S`, `ControlPath`).
pub fn expanded_path(path: &Path) -> Result<OsString, SshPathError> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.windows(2).any(|w| w == b"${") {
        return Err(SshPathError::Variable(path.to_path_buf()));
    }
    let mut out = Vec::with_capacity(bytes.len() + 2);
    if !path.is_absolute() {
        out.extend_from_slice(b"./");
    }
    for &b in bytes {
        if b == b'%' {
            out.push(b'%');
        }
        out.push(b);
    }
    Ok(OsString::from_vec(out))
}

/// A local socket path as the first field of a `-L` spec (`FIELD:HOST:PORT`).
pub fn forward_socket(path: &Path) -> Result<OsString, SshPathError> {
    let escaped = expanded_path(path)?;
    let bytes = escaped.as_bytes();
    if !bytes.contains(&b':') {
        return Ok(escaped);
    }
    if bytes.contains(&b']') {
        return Err(SshPathError::ForwardSpec(path.to_path_buf()));
    }
    let mut out = OsString::from("[");
    out.push(&escaped);
    out.push("]");
    Ok(out)
}

/// Whether every socket jdwpmux puts in `dir` (names of its own, `h0.ctl`, `h0.12.sock`:
/// letters, digits and dots) can be given to ssh; the reason if not.
pub fn check_folder(dir: &Path) -> Result<(), SshPathError> {
    let sample = dir.join("h0.0.sock");
    match forward_socket(&sample) {
        Ok(_) => Ok(()),
        Err(SshPathError::Variable(_)) => Err(SshPathError::Variable(dir.to_path_buf())),
        Err(SshPathError::ForwardSpec(_)) => Err(SshPathError::ForwardSpec(dir.to_path_buf())),
    }
}

/// `a` as text for a test's assertion.
#[cfg(test)]
fn text(a: &std::ffi::OsStr) -> String {
    a.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a path becomes, or `Err(())` where it is refused.
    type Given = Result<&'static str, ()>;

    #[test]
    fn paths_are_escaped_for_ssh_or_refused() {
        // (path, for -S, for -L)
        let cases: &[(&str, Given, Given)] = &[
            ("/run/user/1000/jdwpmux/ssh-7/h0.ctl", Ok("/run/user/1000/jdwpmux/ssh-7/h0.ctl"), Ok("/run/user/1000/jdwpmux/ssh-7/h0.ctl")),
            ("/tmp/100%/h0.1.sock", Ok("/tmp/100%%/h0.1.sock"), Ok("/tmp/100%%/h0.1.sock")),
            ("/tmp/%h%C%%/s", Ok("/tmp/%%h%%C%%%%/s"), Ok("/tmp/%%h%%C%%%%/s")),
            ("/tmp/a:b/h0.1.sock", Ok("/tmp/a:b/h0.1.sock"), Ok("[/tmp/a:b/h0.1.sock]")),
            ("/tmp/a:b%/s", Ok("/tmp/a:b%%/s"), Ok("[/tmp/a:b%%/s]")),
            ("/tmp/[a]/s", Ok("/tmp/[a]/s"), Ok("/tmp/[a]/s")),
            ("/tmp/a:b]/s", Ok("/tmp/a:b]/s"), Err(())),
            ("/tmp/${HOME}/s", Err(()), Err(())),
            ("/tmp/$HOME/s", Ok("/tmp/$HOME/s"), Ok("/tmp/$HOME/s")),
            ("/tmp/$/{x}", Ok("/tmp/$/{x}"), Ok("/tmp/$/{x}")),
            ("~other/ssh-7/h0.ctl", Ok("./~other/ssh-7/h0.ctl"), Ok("./~other/ssh-7/h0.ctl")),
            ("ssh-7/h0.ctl", Ok("./ssh-7/h0.ctl"), Ok("./ssh-7/h0.ctl")),
        ];
        for (path, s, l) in cases {
            let p = Path::new(path);
            assert_eq!(expanded_path(p).as_deref().map(text).map_err(|_| ()), s.map(str::to_string), "-S {path}");
            assert_eq!(forward_socket(p).as_deref().map(text).map_err(|_| ()), l.map(str::to_string), "-L {path}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let p = PathBuf::from(OsString::from_vec(b"/tmp/\xff%/s".to_vec()));
        assert_eq!(expanded_path(&p).unwrap().as_bytes(), b"/tmp/\xff%%/s");
    }

    #[test]
    fn refusals_name_the_path_and_the_way_out() {
        let e = check_folder(Path::new("/tmp/${USER}/ssh-1")).unwrap_err();
        assert_eq!(e, SshPathError::Variable("/tmp/${USER}/ssh-1".into()));
        assert!(e.to_string().contains("environment variable") && e.to_string().contains("--control"), "{e}");
        let e = check_folder(Path::new("/tmp/x:]/ssh-1")).unwrap_err();
        assert_eq!(e, SshPathError::ForwardSpec("/tmp/x:]/ssh-1".into()));
        assert!(check_folder(Path::new("/tmp/50%:off/ssh-1")).is_ok());
    }
}
