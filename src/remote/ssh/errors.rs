//! What ssh said when a link could not be made, as one line for the log: a login that needs
//! a password or a passphrase (a daemon never prompts), a host key that is unknown or changed
//! (in ssh's own words; such a host is refused, not trusted), or anything else. Pure.

/// Why a link failed, and so how soon it is tried again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkFailure {
    /// Authentication failed: retried rarely.
    Auth(String),
    /// Host key verification failed: retried rarely.
    HostKey(String),
    /// Anything else (no route, refused, reset, timed out): retried with back-off.
    Other(String),
}

impl LinkFailure {
    /// Whether trying again soon could help.
    pub fn transient(&self) -> bool {
        matches!(self, LinkFailure::Other(_))
    }
}

impl std::fmt::Display for LinkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkFailure::Auth(s) | LinkFailure::HostKey(s) | LinkFailure::Other(s) => f.write_str(s),
        }
    }
}

/// Lines ssh prints while a link works that say nothing about the link itself.
pub fn is_channel_noise(line: &str) -> bool {
    line.starts_with("channel ") || line.contains("open failed: connect failed")
}

/// What the hints know of the ssh config in use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSeen {
    /// `--ssh-config FILE`: the commands a hint names need `-F FILE` too, or plain `ssh`
    /// would not know the host.
    pub file: Option<String>,
    /// Whether that config (else `~/.ssh/config`) has a `Host` entry for the host; None:
    /// not known (not read, or it includes other files).
    pub host_entry: Option<bool>,
}

impl ConfigSeen {
    /// The ssh command line a user runs to reach `dest` as jdwpmux does.
    fn ssh(&self, dest: &str) -> String {
        match &self.file {
            Some(f) => format!("ssh -F {} {dest}", shell_word(f)),
            None => format!("ssh {dest}"),
        }
    }
}

/// `word` as one shell word: quoted when it holds anything a shell would split or expand.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=~".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What to do about a refused host key, and why jdwpmux does not do it itself.
fn host_key_remedy(dest: &str, changed: bool, seen: &ConfigSeen) -> String {
    let again = "jdwpmux tries again as soon as known_hosts changes";
    let ssh = seen.ssh(dest);
    if changed {
        format!(
            "if {dest} was reinstalled, remove its old key with `ssh-keygen -R HOST` and connect once with `{ssh}` to check and accept the new one ({again}); \
             jdwpmux never replaces a key itself"
        )
    } else {
        format!(
            "connect once with `{ssh}` and accept its key if the fingerprint is the right one ({again}); \
             jdwpmux never answers ssh's prompt, as accepting an unseen key would trust it on first use for you"
        )
    }
}

/// What to do about a refused login: most often the host accepts none of the keys offered
/// for that user (a wrong `User`, a key not in its authorized_keys), less often a key with
/// a passphrase that is not in ssh-agent. Says both, with the command that shows which, and
/// when it is tried again.
fn auth_hint(dest: &str, line: &str, seen: &ConfigSeen) -> String {
    let verbose = seen.ssh(dest).replacen("ssh ", "ssh -v ", 1);
    format!(
        "ssh could not log in to {dest} ({line}): the host accepts none of the keys offered for that user; `{verbose}` shows the user and keys tried (check User and IdentityFile, and the host's authorized_keys); a key with a passphrase must be loaded into ssh-agent (ssh-add), as jdwpmux never asks for one; tried again within a minute, at once when the ssh config changes"
    )
}

/// Classifies what ssh printed on stderr before it exited.
pub fn classify(dest: &str, stderr: &str, seen: &ConfigSeen) -> LinkFailure {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("@@@") && !is_channel_noise(l))
        .collect();
    let has = |s: &str| lines.iter().any(|l| l.contains(s));
    if has("Host key verification failed") || has("IDENTIFICATION HAS CHANGED") || has("host key is known") {
        let words: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| {
                l.contains("IDENTIFICATION HAS CHANGED")
                    || l.contains("has changed and you have requested strict checking")
                    || l.contains("host key is known")
                    || l.contains("Host key verification failed")
                    || l.starts_with("Offending")
            })
            .collect();
        let changed = has("IDENTIFICATION HAS CHANGED") || has("has changed and you have requested strict checking");
        let said = words.join(" ");
        return LinkFailure::HostKey(format!("ssh refused {dest}: {}; {}", said.trim_end_matches('.'), host_key_remedy(dest, changed, seen)));
    }
    if has("Permission denied") || has("Too many authentication failures") {
        let line = lines.iter().find(|l| l.contains("Permission denied") || l.contains("Too many")).copied().unwrap_or_default();
        return LinkFailure::Auth(auth_hint(dest, line, seen));
    }
    let last = lines.last().copied().unwrap_or("ssh exited without saying why");
    if has("Could not resolve hostname") && seen.host_entry == Some(false) {
        let host = dest.rsplit('@').next().unwrap_or(dest);
        let config = seen.file.as_deref().unwrap_or("~/.ssh/config");
        // Short: it is shown on one line of the page's host table.
        let said = last.strip_prefix("ssh: ").unwrap_or(last);
        return LinkFailure::Other(format!("ssh to {dest}: {said}; no `Host {host}` entry in {config}"));
    }
    LinkFailure::Other(format!("ssh to {dest}: {last}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_host_key_in_ssh_own_words() {
        let err = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
Offending ED25519 key in /tmp/t/known_hosts:1
Host key for 10.9.0.2 has changed and you have requested strict checking.
Host key verification failed.
";
        let f = classify("box", err, &ConfigSeen::default());
        assert!(!f.transient());
        let text = f.to_string();
        assert!(text.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") && text.contains("Host key verification failed; if box was reinstalled"), "{text}");
        assert!(!text.contains('\n'), "one line");
        let unknown = "No ED25519 host key is known for 10.9.0.3 and you have requested strict checking.\nHost key verification failed.\n";
        assert!(text.contains("ssh-keygen -R HOST") && text.contains("`ssh box`") && text.contains("as soon as known_hosts changes"), "{text}");
        let f = classify("b", unknown, &ConfigSeen::default());
        let text = f.to_string();
        assert!(matches!(f, LinkFailure::HostKey(_)) && text.contains("No ED25519 host key is known"), "{text}");
        assert!(text.contains("connect once with `ssh b`") && text.contains("trust it on first use") && !text.contains("ssh-keygen -R"), "{text}");
    }

    #[test]
    fn a_password_is_never_asked() {
        let f = classify("deploy@staging-2", "deploy@10.9.0.2: Permission denied (publickey,password).\n", &ConfigSeen::default());
        assert!(matches!(&f, LinkFailure::Auth(t) if t.contains("ssh-agent") && t.contains("Permission denied (publickey,password)")), "{f}");
        // The cause is most often a key or user the host does not accept: said first, with
        // the command that shows which, named as jdwpmux reaches the host.
        let seen = ConfigSeen { file: Some("/home/me/test hosts.cfg".into()), host_entry: Some(true) };
        let t = classify("nchost", "nchost: Permission denied (publickey).\n", &seen).to_string();
        assert!(t.starts_with("ssh could not log in to nchost (nchost: Permission denied (publickey).): the host accepts none of the keys offered for that user;"), "{t}");
        assert!(t.contains("`ssh -v -F '/home/me/test hosts.cfg' nchost` shows the user and keys tried") && t.ends_with("tried again within a minute, at once when the ssh config changes"), "{t}");
    }

    #[test]
    fn the_rest_is_transient() {
        let f = classify("box", "channel 3: open failed: connect failed: Connection refused\nssh: connect to host 10.9.0.2 port 22: Connection refused\n", &ConfigSeen::default());
        assert_eq!(f, LinkFailure::Other("ssh to box: ssh: connect to host 10.9.0.2 port 22: Connection refused".into()));
        assert!(f.transient());
        assert!(matches!(classify("box", "", &ConfigSeen::default()), LinkFailure::Other(t) if t.contains("without saying why")));
    }

    #[test]
    fn hints_name_the_config_given() {
        let unknown = "No ED25519 host key is known for 10.9.0.3 and you have requested strict checking.\nHost key verification failed.\n";
        let seen = ConfigSeen { file: Some("/tmp/t/ssh config".into()), host_entry: Some(true) };
        let text = classify("nchost-new", unknown, &seen).to_string();
        assert!(text.contains("connect once with `ssh -F '/tmp/t/ssh config' nchost-new`"), "{text}");
        let plain = ConfigSeen { file: Some("/tmp/t/cfg".into()), host_entry: None };
        assert!(classify("b", unknown, &plain).to_string().contains("`ssh -F /tmp/t/cfg b`"));
    }

    #[test]
    fn a_name_no_host_entry_knows_says_so() {
        let err = "ssh: Could not resolve hostname nchost-x: Name or service not known\n";
        let seen = ConfigSeen { file: Some("/tmp/t/cfg".into()), host_entry: Some(false) };
        let f = classify("me@nchost-x", err, &seen);
        assert!(f.transient(), "still tried again: DNS may learn it");
        let text = f.to_string();
        assert!(text.contains("Could not resolve hostname nchost-x") && text.ends_with("; no `Host nchost-x` entry in /tmp/t/cfg"), "{text}");
        // Named in the config (a HostName DNS lacks), or unknown: ssh's words alone.
        for entry in [Some(true), None] {
            let text = classify("nchost-x", err, &ConfigSeen { host_entry: entry, ..seen.clone() }).to_string();
            assert!(!text.contains("entry in"), "{text}");
        }
    }
}
