//! What `--exec NAME=COMMAND` says: the name its rows carry, the command's words (split as a
//! POSIX shell splits them, by `shell-words`, so quotes work as the user typed them and no
//! shell runs here), the command lines made from it, and the place its JVMs are shown in
//! (`pod shop/orders-5f7c` for a `kubectl exec`, `container billing-api (podman)` for a
//! `podman exec`). Pure.

use crate::discovery::jvms::place::{Place, Runtime};

/// One `--exec` host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSpec {
    /// The name its host row and its VMs carry (`list`'s HOST column, `select NAME:APP`).
    pub name: String,
    /// The command as given (shown in the host row).
    pub text: String,
    /// The command's words; `jdwpmux far ...` is appended as more words.
    pub words: Vec<String>,
    /// The Compose service of the container it enters, when the runtime named one (set by
    /// `remote::runtime`; an `--exec` the user gave has none).
    pub compose: Option<String>,
    /// The pod it enters has several containers (set by the pod follower, `remote::kube`,
    /// which knows; an `--exec` the user gave has false): its WHERE names the container.
    pub several: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("--exec {0:?}: expected NAME=COMMAND, e.g. orders='kubectl exec -i -n shop orders-5f7c --'")]
    NoName(String),
    #[error("--exec {0:?}: the name may hold letters, digits, '.', '_' and '-' only (it names the host in `list` and `select NAME:APP`)")]
    BadName(String),
    #[error("--exec {name}: the command cannot be split into words: {why}")]
    BadWords { name: String, why: String },
    #[error("--exec {0}: no command")]
    Empty(String),
}

/// Longest name: it is a file name prefix and a column.
const MAX_NAME: usize = 64;

impl std::str::FromStr for ExecSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<ExecSpec, SpecError> {
        let (name, text) = s.split_once('=').ok_or_else(|| SpecError::NoName(s.to_string()))?;
        let name = name.trim();
        if name.is_empty() || name.len() > MAX_NAME || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) || name == "local" {
            return Err(SpecError::BadName(s.to_string()));
        }
        let words = shell_words::split(text).map_err(|e| SpecError::BadWords { name: name.into(), why: e.to_string() })?;
        if words.is_empty() {
            return Err(SpecError::Empty(name.into()));
        }
        Ok(ExecSpec { name: name.into(), text: text.trim().to_string(), words, compose: None, several: false })
    }
}

impl std::fmt::Display for ExecSpec {
    /// As given: `NAME=COMMAND`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.name, self.text)
    }
}

impl ExecSpec {
    /// The command with `far` and its arguments after it (`far_path far --attach`).
    pub fn with(&self, more: &[&str]) -> Vec<String> {
        self.words.iter().cloned().chain(more.iter().map(|s| s.to_string())).collect()
    }

    /// Where its JVMs run, as `list`'s WHERE column says it: read from a `kubectl exec`,
    /// `podman exec` or `docker exec` command line; else the name given.
    pub fn place(&self) -> Place {
        let all: Vec<&str> = self.words.iter().map(String::as_str).collect();
        // `sudo [-n] [-u USER] podman exec ...`: the runtime's exec as another user (a rootful
        // Podman's containers, reached by a user whom sudo lets run podman).
        let w = without_sudo(&all);
        let tool = w.first().map(|p| p.rsplit('/').next().unwrap_or(p)).unwrap_or("");
        match (tool, w.get(1).copied()) {
            ("kubectl" | "oc", Some("exec")) => match kubectl_place(&w[2..]) {
                Some(Place::Pod { namespace, name, uid, container, .. }) => Place::Pod { namespace, name, uid, container, several: self.several },
                Some(other) => other,
                None => Place::Reported(self.name.clone()),
            },
            ("podman" | "docker", Some("exec")) => match first_operand(&w[2..], &["-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys", "--preserve-fds"]) {
                Some(c) => Place::Container { runtime: if tool == "podman" { Runtime::Podman } else { Runtime::Docker }, name: c.to_string(), id: None, compose: self.compose.clone() },
                None => Place::Reported(self.name.clone()),
            },
            _ => Place::Reported(self.name.clone()),
        }
    }
}

/// The words after a leading `sudo` and its options (`-n`, `-E`, `-u USER`...), else all.
fn without_sudo<'a, 'b>(w: &'b [&'a str]) -> &'b [&'a str] {
    let is_sudo = w.first().is_some_and(|p| p.rsplit('/').next() == Some("sudo"));
    if !is_sudo {
        return w;
    }
    let mut i = 1;
    while i < w.len() && w[i].starts_with('-') {
        let with_value = matches!(w[i], "-u" | "--user" | "-g" | "--group" | "-C" | "--close-from" | "-D" | "--chdir" | "-h" | "--host" | "-p" | "--prompt" | "-r" | "--role" | "-t" | "--type");
        i += if with_value { 2 } else { 1 };
        if w.get(i - 1) == Some(&"--") {
            break;
        }
    }
    &w[i.min(w.len())..]
}

/// `[-n NS] POD [-c C] [--]` of `kubectl exec`, in any order.
fn kubectl_place(args: &[&str]) -> Option<Place> {
    let (mut ns, mut pod, mut container) = (String::new(), None, None);
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "--" {
            break;
        }
        let value = |i: &mut usize| {
            *i += 1;
            args.get(*i).map(|s| s.to_string())
        };
        match a {
            "-n" | "--namespace" => ns = value(&mut i)?,
            "-c" | "--container" => container = value(&mut i),
            "--context" | "--kubeconfig" | "--cluster" | "--user" | "-f" | "--filename" | "--pod-running-timeout" | "-s" | "--server" => {
                value(&mut i);
            }
            _ if a.starts_with("--namespace=") => ns = a["--namespace=".len()..].to_string(),
            _ if a.starts_with("--container=") => container = Some(a["--container=".len()..].to_string()),
            _ if a.starts_with('-') => {}
            _ if pod.is_none() => pod = Some(a.strip_prefix("pod/").unwrap_or(a).to_string()),
            _ => {}
        }
        i += 1;
    }
    Some(Place::Pod { namespace: ns, name: pod?, uid: String::new(), container, several: false })
}

/// The first word that is neither an option nor the value of one of `with_value`.
fn first_operand<'a>(args: &[&'a str], with_value: &[&str]) -> Option<&'a str> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if with_value.contains(&a) {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            return Some(a);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_words() {
        let s: ExecSpec = "orders=kubectl exec -i -n shop orders-5f7c -c app --".parse().unwrap();
        assert_eq!(s.name, "orders");
        assert_eq!(s.words, ["kubectl", "exec", "-i", "-n", "shop", "orders-5f7c", "-c", "app", "--"]);
        assert_eq!(s.with(&["jdwpmux", "far", "--attach"]).last().map(String::as_str), Some("--attach"));
        let quoted: ExecSpec = r#"b=podman exec -i "my app" "#.parse().unwrap();
        assert_eq!(quoted.words, ["podman", "exec", "-i", "my app"]);
        assert_eq!(quoted.text, r#"podman exec -i "my app""#);
        for bad in ["nocommand", "=podman exec -i c", "a b=podman", "local=podman exec -i c", "x=", "x=  ", "x=podman 'open"] {
            assert!(bad.parse::<ExecSpec>().is_err(), "{bad}");
        }
        assert_eq!("x=podman 'open".parse::<ExecSpec>().unwrap_err().to_string(), "--exec x: the command cannot be split into words: missing closing quote");
    }

    #[test]
    fn places_read_from_the_command() {
        let place = |s: &str| s.parse::<ExecSpec>().unwrap().place().to_string();
        assert_eq!(place("o=kubectl exec -i -n shop orders-5f7c -c app --"), "pod shop/orders-5f7c");
        assert_eq!(place("o=kubectl exec -i orders-5f7c --"), Place::Pod { namespace: String::new(), name: "orders-5f7c".into(), uid: String::new(), container: None, several: false }.to_string());
        assert_eq!(place("o=/usr/bin/kubectl exec -i pod/x --namespace=n --context prod --"), "pod n/x");
        assert_eq!(place("o=kubectl exec -i --namespace=n pod/x --"), "pod n/x");
        assert_eq!(place("b=podman exec -i -u 0 billing-api"), "container billing-api (podman)");
        assert_eq!(place("b=docker exec -i -e A=1 billing"), "container billing (docker)");
        assert_eq!(place("b=ssh box podman exec -i c"), "b");
        // A rootful Podman's container through sudo: the container all the same.
        assert_eq!(place("b=sudo -n podman exec -i billing-api"), "container billing-api (podman)");
        assert_eq!(place("b=/usr/bin/sudo -n -u root -- podman exec -i -u 0 billing-api"), "container billing-api (podman)");
        assert_eq!(place("b=sudo"), "b");
    }
}
