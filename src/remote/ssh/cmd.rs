//! The OpenSSH command lines jdwpmux runs: one master a host (its own session is the scan's
//! shell), and `ssh -O` requests to that master to add and remove forwards. The user's config,
//! keys, agent and known_hosts apply as for any ssh; jdwpmux only adds what a daemon needs
//! (never a prompt, keep-alives, no agent or X11 forwarding, none of the config's own forwards)
//! and never touches host key checking. Paths go through `ssh_path`, which escapes them for
//! ssh's `%` tokens or refuses them. Pure.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::destination::Destination;
use super::path::{expanded_path, forward_socket, SshPathError};

/// Unanswered keep-alives after which ssh drops the link.
pub const KEEPALIVE_COUNT: u32 = 3;

/// How ssh is run for every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshOptions {
    pub program: PathBuf,
    /// `-F FILE`: another config than `~/.ssh/config`.
    pub config: Option<PathBuf>,
    /// Seconds of silence before a keep-alive (`ServerAliveInterval`).
    pub keepalive: Duration,
    /// How long one attempt to connect may take (`ConnectTimeout`): a link made again
    /// after an outage should not wait long on an attempt made while it was down.
    pub connect_timeout: Duration,
}

impl Default for SshOptions {
    fn default() -> Self {
        SshOptions { program: PathBuf::from("ssh"), config: None, keepalive: Duration::from_secs(2), connect_timeout: Duration::from_secs(6) }
    }
}

impl SshOptions {
    fn base(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        if let Some(f) = &self.config {
            a.push("-F".into());
            a.push(f.into());
        }
        a
    }

    /// The master: `ssh -M -S CONTROL ... DEST sh`, whose stdin and stdout are the scan's shell.
    pub fn master(&self, control: &Path, dest: &Destination) -> Result<Vec<OsString>, SshPathError> {
        let mut a = self.base();
        a.extend(["-M".into(), "-S".into(), expanded_path(control)?, "-T".into()]);
        let opts = [
            "ControlPersist=no".to_string(),
            "BatchMode=yes".into(),
            format!("ServerAliveInterval={}", self.keepalive.as_secs().max(1)),
            format!("ServerAliveCountMax={KEEPALIVE_COUNT}"),
            format!("ConnectTimeout={}", self.connect_timeout.as_secs().max(1)),
            "ClearAllForwardings=yes".into(),
            "ForwardAgent=no".into(),
            "ForwardX11=no".into(),
            "PermitLocalCommand=no".into(),
            "RemoteCommand=none".into(),
            "RequestTTY=no".into(),
            "StreamLocalBindUnlink=yes".into(),
            "StreamLocalBindMask=0177".into(),
        ];
        for o in opts {
            a.push("-o".into());
            a.push(o.into());
        }
        a.push("--".into());
        a.push(dest.dest.clone().into());
        a.push("sh".into());
        Ok(a)
    }

    /// `ssh -S CONTROL -O forward|cancel -L SOCKET:HOST:PORT DEST`.
    pub fn forward(&self, control: &Path, dest: &Destination, socket: &Path, target: SocketAddr, cancel: bool) -> Result<Vec<OsString>, SshPathError> {
        let mut a = self.control_request(control, if cancel { "cancel" } else { "forward" })?;
        let host = match target {
            SocketAddr::V4(v4) => v4.ip().to_string(),
            SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
        };
        let mut spec = forward_socket(socket)?;
        spec.push(format!(":{host}:{}", target.port()));
        a.extend(["-L".into(), spec, "--".into(), dest.dest.clone().into()]);
        Ok(a)
    }

    /// `ssh -S CONTROL -O exit DEST`: the master ends, and every forward with it.
    pub fn exit(&self, control: &Path, dest: &Destination) -> Result<Vec<OsString>, SshPathError> {
        let mut a = self.control_request(control, "exit")?;
        a.extend(["--".into(), dest.dest.clone().into()]);
        Ok(a)
    }

    fn control_request(&self, control: &Path, op: &str) -> Result<Vec<OsString>, SshPathError> {
        let mut a = self.base();
        a.extend(["-S".into(), expanded_path(control)?, "-o".into(), "BatchMode=yes".into(), "-O".into(), op.into()]);
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: Vec<OsString>) -> Vec<String> {
        v.into_iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn the_master_never_prompts_and_keeps_host_keys_as_configured() {
        let o = SshOptions { config: Some("/t/ssh_config".into()), ..Default::default() };
        let dest: Destination = "deploy@staging-2".parse().unwrap();
        let a = strings(o.master(Path::new("/run/j/h0.ctl"), &dest).unwrap());
        assert_eq!(&a[..6], ["-F", "/t/ssh_config", "-M", "-S", "/run/j/h0.ctl", "-T"]);
        assert!(a.contains(&"BatchMode=yes".to_string()));
        assert!(a.contains(&"ServerAliveInterval=2".to_string()));
        assert!(a.contains(&"ForwardAgent=no".to_string()));
        assert!(!a.iter().any(|s| s.contains("StrictHostKeyChecking") || s.contains("KnownHosts")), "{a:?}");
        assert_eq!(&a[a.len() - 3..], ["--", "deploy@staging-2", "sh"]);
    }

    #[test]
    fn forwards_to_either_address_family() {
        let o = SshOptions::default();
        let dest: Destination = "box".parse().unwrap();
        let a = strings(o.forward(Path::new("/r/h0.1.sock"), &dest, Path::new("/r/h0.1.sock"), "127.0.0.1:8000".parse().unwrap(), false).unwrap());
        assert_eq!(a, ["-S", "/r/h0.1.sock", "-o", "BatchMode=yes", "-O", "forward", "-L", "/r/h0.1.sock:127.0.0.1:8000", "--", "box"]);
        let a = strings(o.forward(Path::new("/c"), &dest, Path::new("/s"), "[::1]:9".parse().unwrap(), true).unwrap());
        assert!(a.contains(&"cancel".to_string()) && a.contains(&"/s:[::1]:9".to_string()), "{a:?}");
        assert_eq!(strings(o.exit(Path::new("/c"), &dest).unwrap()), ["-S", "/c", "-o", "BatchMode=yes", "-O", "exit", "--", "box"]);
    }

    #[test]
    fn paths_are_given_as_ssh_reads_them() {
        let o = SshOptions::default();
        let dest: Destination = "box".parse().unwrap();
        let a = strings(o.master(Path::new("/t/50%h/h0.ctl"), &dest).unwrap());
        assert_eq!(&a[..3], ["-M", "-S", "/t/50%%h/h0.ctl"]);
        let a = strings(o.forward(Path::new("/t/a:%/h0.ctl"), &dest, Path::new("/t/a:%/h0.1.sock"), "127.0.0.1:8".parse().unwrap(), false).unwrap());
        assert_eq!(a[1], "/t/a:%%/h0.ctl");
        assert_eq!(a[7], "[/t/a:%%/h0.1.sock]:127.0.0.1:8");
        assert!(o.exit(Path::new("/t/${HOME}/h0.ctl"), &dest).is_err());
    }
}
