//! An ssh destination as the user names it (`build-box`, `deploy@staging-2`, an alias of
//! `~/.ssh/config`), checked so that it can only ever be a destination on ssh's command line,
//! and the short host name `list` shows and `select HOST:...` takes.

use std::str::FromStr;

/// Longest destination accepted.
pub const MAX_DESTINATION: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// What is given to ssh.
    pub dest: String,
    /// The host part: `staging-2` for `deploy@staging-2`.
    pub host: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("ssh destination {0:?}: expected HOST or USER@HOST (a name from ~/.ssh/config, say)")]
    Bad(String),
}

impl FromStr for Destination {
    type Err = DestinationError;

    fn from_str(s: &str) -> Result<Destination, DestinationError> {
        let bad = || DestinationError::Bad(s.chars().take(80).collect());
        // A leading '-' would be read by ssh as an option; ':' and '/' as a path or a URI.
        let ok_char = |c: char| c.is_ascii_alphanumeric() || "._-@+".contains(c);
        if s.is_empty() || s.len() > MAX_DESTINATION || s.starts_with('-') || !s.chars().all(ok_char) {
            return Err(bad());
        }
        let host = match s.rsplit_once('@') {
            Some((user, host)) if !user.is_empty() && !user.contains('@') => host,
            Some(_) => return Err(bad()),
            None => s,
        };
        if host.is_empty() || host.starts_with('-') {
            return Err(bad());
        }
        Ok(Destination { dest: s.to_string(), host: host.to_string() })
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.dest)
    }
}

/// The names `list` shows for `hosts`: each host part, or the whole destination where two
/// destinations share a host part (`deploy@box` and `root@box`).
pub fn labels(hosts: &[Destination]) -> Vec<String> {
    hosts
        .iter()
        .map(|d| {
            let shared = hosts.iter().filter(|o| o.host == d.host).count() > 1;
            if shared { d.dest.clone() } else { d.host.clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_people_write() {
        let d: Destination = "deploy@staging-2".parse().unwrap();
        assert_eq!((d.dest.as_str(), d.host.as_str()), ("deploy@staging-2", "staging-2"));
        let d: Destination = "build-box".parse().unwrap();
        assert_eq!(d.host, "build-box");
        assert!("10.0.0.5".parse::<Destination>().is_ok());
        assert!("user.name@host.example.com".parse::<Destination>().is_ok());
    }

    #[test]
    fn nothing_that_ssh_would_read_as_an_option_or_a_command() {
        for bad in ["", "-oProxyCommand=sh", "a b", "host;rm", "x@-oFoo", "@host", "a@b@c", "host:22", "ssh://h", "h\n", "h%h", "$(x)", "`x`"] {
            assert!(bad.parse::<Destination>().is_err(), "{bad:?}");
        }
        assert!("h".repeat(MAX_DESTINATION + 1).parse::<Destination>().is_err());
    }

    #[test]
    fn labels_stay_apart() {
        let hosts: Vec<Destination> = ["deploy@box", "root@box", "build"].iter().map(|s| s.parse().unwrap()).collect();
        assert_eq!(labels(&hosts), vec!["deploy@box", "root@box", "build"]);
    }
}
