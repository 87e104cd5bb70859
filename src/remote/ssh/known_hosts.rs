//! Which known_hosts files ssh reads for a host, and whether one of them changed: a host
//! refused for its key is tried again as soon as the user fixed the file (by connecting
//! once with `ssh HOST`), not after the long wait for a refusal. The files are those
//! `ssh -G HOST` names (the ssh config in use, `UserKnownHostsFile` included), else
//! `~/.ssh/known_hosts` of the user's passwd home. Parsing is pure; the look is a stat.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use tokio::process::Command;

use super::destination::Destination;
use super::cmd::SshOptions;

/// How long `ssh -G` may take (it only reads the config).
const CONFIG_TIMEOUT: Duration = Duration::from_secs(5);

/// The known_hosts files `ssh -G` printed (`userknownhostsfile` and `globalknownhostsfile`,
/// each a list), `~` expanded to `home`; `/dev/null` and `none` are no file.
pub fn files_from_config(text: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        if !key.eq_ignore_ascii_case("userknownhostsfile") && !key.eq_ignore_ascii_case("globalknownhostsfile") {
            continue;
        }
        for w in words {
            let path = match (w.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => h.join(rest),
                (Some(_), None) => continue,
                (None, _) => PathBuf::from(w),
            };
            if path.is_absolute() && path != Path::new("/dev/null") && !files.contains(&path) {
                files.push(path);
            }
        }
    }
    files
}

/// The home folder /etc/passwd gives `uid` (ssh reads `~` from there, not from $HOME).
pub fn passwd_home(passwd: &str, uid: u32) -> Option<PathBuf> {
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[2].parse::<u32>().ok() == Some(uid)).then(|| PathBuf::from(f[5]))
    })
}

/// The files ssh reads for `dest`: from `ssh -G`, else the passwd home's default.
pub async fn files(ssh: &SshOptions, dest: &Destination) -> Vec<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let home = std::fs::read_to_string("/etc/passwd").ok().and_then(|p| passwd_home(&p, uid));
    let mut args: Vec<OsString> = Vec::new();
    if let Some(f) = &ssh.config {
        args.extend(["-F".into(), f.into()]);
    }
    args.extend(["-G".into(), "--".into(), dest.dest.clone().into()]);
    let run = Command::new(&ssh.program).args(args).stdin(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true).output();
    let from_config = match tokio::time::timeout(CONFIG_TIMEOUT, run).await {
        Ok(Ok(o)) if o.status.success() => files_from_config(&String::from_utf8_lossy(&o.stdout), home.as_deref()),
        _ => Vec::new(),
    };
    if !from_config.is_empty() {
        return from_config;
    }
    home.map(|h| vec![h.join(".ssh/known_hosts")]).unwrap_or_default()
}

/// What a look at the files saw: each one's modification time and size (None: no file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp(Vec<Option<(SystemTime, u64)>>);

impl Stamp {
    pub fn of(files: &[PathBuf]) -> Stamp {
        Stamp(files.iter().map(|f| std::fs::metadata(f).ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_ssh_reads_from_its_config() {
        let g = "user root\nuserknownhostsfile ~/.ssh/known_hosts ~/.ssh/known_hosts2\nglobalknownhostsfile /etc/ssh/ssh_known_hosts /dev/null\nstricthostkeychecking true\n";
        let files = files_from_config(g, Some(Path::new("/home/ann")));
        assert_eq!(files, [PathBuf::from("/home/ann/.ssh/known_hosts"), "/home/ann/.ssh/known_hosts2".into(), "/etc/ssh/ssh_known_hosts".into()]);
        assert!(files_from_config(g, None).iter().all(|f| f.starts_with("/etc")));
        assert_eq!(files_from_config("userknownhostsfile /t/kh\n", None), [PathBuf::from("/t/kh")]);
    }

    #[test]
    fn the_home_is_the_passwd_one() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000:Ann,,,:/home/ann:/bin/sh\nbad line\n";
        assert_eq!(passwd_home(passwd, 1000), Some(PathBuf::from("/home/ann")));
        assert_eq!(passwd_home(passwd, 0), Some(PathBuf::from("/root")));
        assert_eq!(passwd_home(passwd, 7), None);
    }

    #[test]
    fn a_stamp_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = vec![dir.path().join("known_hosts")];
        let none = Stamp::of(&f);
        std::fs::write(&f[0], "a\n").unwrap();
        let one = Stamp::of(&f);
        assert_ne!(none, one);
        std::fs::write(&f[0], "a\nb\n").unwrap();
        assert_ne!(one, Stamp::of(&f));
    }
}
