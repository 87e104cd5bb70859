//! Whether an ssh config file has a `Host` entry for a name (ssh_config(5), PATTERNS): when
//! ssh "Could not resolve hostname" a name, the hint says whether the config in use names
//! it at all, the usual cause being a name meant for `--ssh-config FILE` but missing from
//! it. Pure; an `Include` or a `Match` block makes the answer unknown, never a guess.

/// `Some(true)` if a `Host` line of `text` matches `host`, `Some(false)` if none does, `None`
/// when the file includes others or has `Match` blocks (what they say is not read here).
pub fn host_entry(text: &str, host: &str) -> Option<bool> {
    let mut found = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (key, rest) = line.split_once(|c: char| c.is_whitespace() || c == '=').unwrap_or((line, ""));
        let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '=');
        if key.eq_ignore_ascii_case("include") || key.eq_ignore_ascii_case("match") {
            return None;
        }
        if key.eq_ignore_ascii_case("host") && host_line_matches(rest, host) {
            found = true;
        }
    }
    Some(found)
}

/// A `Host` line's patterns against `host`: one positive pattern matches and no negated one.
fn host_line_matches(patterns: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let mut any = false;
    for p in patterns.split_whitespace().map(|p| p.trim_matches('"').to_ascii_lowercase()) {
        match p.strip_prefix('!') {
            Some(neg) if glob(neg.as_bytes(), host.as_bytes()) => return false,
            Some(_) => {}
            None => any |= glob(p.as_bytes(), host.as_bytes()),
        }
    }
    any
}

/// `*` (any run) and `?` (one character), as ssh's `match_pattern`.
fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.split_first(), s.split_first()) {
        (None, _) => s.is_empty(),
        (Some((b'*', rest)), _) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        (Some((b'?', rest)), Some((_, srest))) => glob(rest, srest),
        (Some((c, rest)), Some((d, srest))) if c == d => glob(rest, srest),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lines_and_their_patterns() {
        let cfg = "# test hosts\nHost nchost-a nchost-b\n  HostName 10.9.0.2\nHost=*.lab !bad.lab\n  User x\nHost \"q?\"\n";
        assert_eq!(host_entry(cfg, "nchost-a"), Some(true));
        assert_eq!(host_entry(cfg, "NCHOST-B"), Some(true));
        assert_eq!(host_entry(cfg, "nchost-new"), Some(false));
        assert_eq!(host_entry(cfg, "one.lab"), Some(true));
        assert_eq!(host_entry(cfg, "bad.lab"), Some(false), "negated");
        assert_eq!(host_entry(cfg, "q1"), Some(true));
        assert_eq!(host_entry(cfg, "q12"), Some(false));
        assert_eq!(host_entry("Host *\n  User me\n", "anything"), Some(true));
        assert_eq!(host_entry("Include ~/.ssh/conf.d/*\nHost a\n", "b"), None, "an Include may name it");
        assert_eq!(host_entry("Match host b\n", "b"), None);
        assert_eq!(host_entry("", "b"), Some(false));
    }
}
