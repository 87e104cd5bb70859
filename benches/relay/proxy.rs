//! The jdwpmux process under test: started with `serve --base-port 0 --current-port 0`, its
//! log (stderr) in a file that is followed for the stable "listening on" lines and for DDM
//! chunk lines; plus the startup measurement (exec to the last "listening" line).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::procs::Proc;

/// What the binary supports, read once from its `--help`.
#[derive(Debug, Clone)]
pub struct ProxyBin {
    pub path: PathBuf,
    /// The global `--control PATH` option (a per-run control socket).
    pub has_control: bool,
    /// The `list` subcommand.
    pub has_list: bool,
    /// `serve --web` (the monitor page).
    pub has_web: bool,
    /// Extra `serve` arguments from JDWPMUX_ARGS (whitespace separated).
    pub extra: Vec<String>,
}

impl ProxyBin {
    pub fn probe(path: PathBuf) -> Result<ProxyBin> {
        let out = Command::new(&path).arg("--help").output().with_context(|| format!("run {}", path.display()))?;
        let help = String::from_utf8_lossy(&out.stdout);
        let serve = Command::new(&path).args(["serve", "--help"]).output().with_context(|| format!("run {} serve --help", path.display()))?;
        let has_web = String::from_utf8_lossy(&serve.stdout).contains("--web");
        let extra = std::env::var("JDWPMUX_ARGS").unwrap_or_default().split_whitespace().map(String::from).collect();
        Ok(ProxyBin {
            has_control: help.contains("--control"),
            has_list: help.lines().any(|l| l.trim_start().starts_with("list ")),
            has_web,
            path,
            extra,
        })
    }

    /// `[--control DIR/control.sock] serve --vm ... --base-port 0 --current-port 0`.
    pub fn serve_args(&self, vms: &[SocketAddr], dir: &Path) -> Vec<String> {
        let mut a = Vec::new();
        if self.has_control {
            a.push("--control".into());
            a.push(dir.join("control.sock").display().to_string());
        }
        a.push("serve".into());
        for vm in vms {
            a.push("--vm".into());
            a.push(vm.to_string());
        }
        a.extend(["--base-port", "0", "--current-port", "0"].map(String::from));
        a.extend(self.extra.iter().cloned());
        a
    }
}

impl ProxyBin {
    /// `--control DIR/control.sock serve --no-scan --no-proc --no-adb --ssh-config CONFIG --ssh HOST...
    /// --base-port 0 --current-port 0`: VMs of ssh hosts only, with the daemon's defaults
    /// otherwise (scan interval, keep-alives), plus JDWPMUX_ARGS.
    pub fn serve_ssh_args(&self, hosts: &[&str], config: &Path, dir: &Path) -> Vec<String> {
        let mut a = vec!["--control".to_string(), dir.join("control.sock").display().to_string(), "serve".into()];
        a.extend(["--no-scan", "--no-proc", "--no-adb", "--ssh-config"].map(String::from));
        a.push(config.display().to_string());
        for h in hosts {
            a.push("--ssh".into());
            a.push(h.to_string());
        }
        a.extend(["--base-port", "0", "--current-port", "0"].map(String::from));
        a.extend(self.extra.iter().cloned());
        a
    }
}

/// Which port a "listening on 127.0.0.1:PORT for ..." line announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Current(u16),
    Vm { port: u16, vm: String },
}

pub fn parse_listen_line(line: &str) -> Option<Listen> {
    let rest = &line[line.find("listening on ")? + "listening on ".len()..];
    let (addr, what) = rest.split_once(" for ")?;
    let port = addr.rsplit_once(':')?.1.parse().ok()?;
    if what.starts_with("the current VM") {
        Some(Listen::Current(port))
    } else {
        let vm = what.strip_prefix("vm ")?.split_whitespace().next()?;
        Some(Listen::Vm { port, vm: vm.to_string() })
    }
}

/// Follows a growing log file line by line.
pub struct LogFollower {
    file: std::fs::File,
    partial: Vec<u8>,
    buf: Vec<u8>,
}

impl LogFollower {
    pub fn open(path: &Path) -> Result<LogFollower> {
        let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
        Ok(LogFollower { file, partial: Vec::new(), buf: vec![0; 1 << 20] })
    }

    /// Calls `f` for every complete line written since the last call.
    pub fn poll(&mut self, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        loop {
            let n = self.file.read(&mut self.buf)?;
            if n == 0 {
                return Ok(());
            }
            let mut data = &self.buf[..n];
            while let Some(nl) = data.iter().position(|b| *b == b'\n') {
                if self.partial.is_empty() {
                    f(&data[..nl]);
                } else {
                    self.partial.extend_from_slice(&data[..nl]);
                    f(&self.partial);
                    self.partial.clear();
                }
                data = &data[nl + 1..];
            }
            self.partial.extend_from_slice(data);
        }
    }
}

pub struct Proxy {
    pub proc: Proc,
    pub current_port: u16,
    /// Debugger port of each VM, by the VM address as given.
    pub vm_ports: HashMap<String, u16>,
    pub log: PathBuf,
    pub control: PathBuf,
}

/// Open files the proxy may need: two per VM plus headroom.
fn nofile_for(vms: usize) -> usize {
    (vms * 2 + 1024).max(4096)
}

impl Proxy {
    /// Starts the proxy with its log in `dir/jdwpmux.log` and waits for every "listening" line.
    pub fn start(bin: &ProxyBin, vms: &[SocketAddr], dir: &Path) -> Result<Proxy> {
        Self::start_with(bin, vms, dir, &[], &[])
    }

    /// As [`Proxy::start`], with more `serve` arguments and these environment variables set
    /// for the proxy.
    pub fn start_with(bin: &ProxyBin, vms: &[SocketAddr], dir: &Path, more: &[&str], env: &[(&str, &str)]) -> Result<Proxy> {
        let mut args = bin.serve_args(vms, dir);
        args.extend(more.iter().map(|a| a.to_string()));
        Self::start_args(bin, &args, dir, env, vms.len(), vms.len())
    }

    /// Starts the proxy with exactly `args` (see [`ProxyBin::serve_args`]) and an open-file
    /// limit for `room_for` VMs, and waits for the current-VM port and `listed` VM ports.
    pub fn start_args(bin: &ProxyBin, args: &[String], dir: &Path, env: &[(&str, &str)], room_for: usize, listed: usize) -> Result<Proxy> {
        let log = dir.join("jdwpmux.log");
        let file = std::fs::File::create(&log).context("create the proxy log")?;
        // A shell raises the open-file limit, then execs: the pid stays the proxy's.
        let script = format!("ulimit -n {} 2>/dev/null || ulimit -n \"$(ulimit -Hn)\"; exec \"$0\" \"$@\"", nofile_for(room_for));
        let mut cmd = crate::procs::command("sh");
        cmd.arg("-c").arg(script).arg(&bin.path).args(args);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(file).env("NO_COLOR", "1");
        cmd.envs(env.iter().copied());
        let proc = Proc::spawn("jdwpmux", &mut cmd)?;
        let mut p = Proxy { proc, current_port: 0, vm_ports: HashMap::new(), log, control: dir.join("control.sock") };
        let mut follow = LogFollower::open(&p.log)?;
        let deadline = Instant::now() + Duration::from_secs(30 + listed as u64 / 20);
        while p.current_port == 0 || p.vm_ports.len() < listed {
            follow.poll(&mut |line| match parse_listen_line(&String::from_utf8_lossy(line)) {
                Some(Listen::Current(port)) => p.current_port = port,
                Some(Listen::Vm { port, vm }) => {
                    p.vm_ports.insert(vm, port);
                }
                None => {}
            })?;
            if let Some(st) = p.proc.exited() {
                bail!("jdwpmux exited at start ({st}); log:\n{}", p.log_tail(2000));
            }
            if Instant::now() > deadline {
                let pid = p.proc.pid();
                let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| String::from_utf8_lossy(&c).replace('\0', " ")).unwrap_or_default();
                bail!("jdwpmux did not announce its ports (pid {pid} waits in {wchan:?}: {cmd}); log:\n{}", p.log_tail(2000));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(p)
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// The rows of `jdwpmux list --json`, asked through this proxy's control socket.
    pub fn list_json(&self, bin: &ProxyBin) -> Result<Vec<serde_json::Value>> {
        let out = Command::new(&bin.path)
            .args(["list", "--json", "--control"])
            .arg(&self.control)
            .stdin(Stdio::null())
            .output()
            .context("run jdwpmux list --json")?;
        if !out.status.success() {
            bail!("jdwpmux list --json: {} {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("jdwpmux list --json printed no JSON")?;
        v.as_array().cloned().context("jdwpmux list --json printed no array")
    }

    pub fn stop(&mut self) {
        self.proc.terminate(Duration::from_secs(10));
    }

    /// The most frequent WARN/ERROR messages of the log with their counts (timestamps and
    /// span fields stripped), for error messages.
    pub fn warn_summary(&self, top: usize) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let mut counts: HashMap<String, usize> = HashMap::new();
        for line in String::from_utf8_lossy(&text).lines() {
            if line.contains(" WARN ") || line.contains(" ERROR ") {
                *counts.entry(normalize(line)).or_default() += 1;
            }
        }
        let mut v: Vec<(String, usize)> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.iter().take(top).map(|(m, n)| format!("{n} x {m}")).collect::<Vec<_>>().join("; ")
    }

    /// The last `max` bytes of the log, for error messages.
    pub fn log_tail(&self, max: usize) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        String::from_utf8_lossy(&text[text.len().saturating_sub(max)..]).into_owned()
    }
}

/// A log line without its timestamp and with `{...}` span fields emptied, so the same
/// message from different VMs counts once.
fn normalize(line: &str) -> String {
    let body = line.split_once(' ').map_or(line, |(_, rest)| rest).trim_start();
    let mut out = String::with_capacity(body.len());
    let mut depth = 0usize;
    for ch in body.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// Time from exec to the last "listening on" line (one VM), read through a pipe.
pub fn startup_once(bin: &ProxyBin, vm: SocketAddr, dir: &Path) -> Result<Duration> {
    let mut cmd = Command::new(&bin.path);
    cmd.args(bin.serve_args(&[vm], dir)).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut proc = Proc::spawn("jdwpmux", &mut cmd)?;
    let stderr = proc_stderr(&mut proc)?;
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads until both lines are in; a thread so a silent proxy hits the timeout below.
    std::thread::spawn(move || {
        let (mut current, mut vm, mut sent) = (false, false, false);
        // Keeps draining after the lines so the proxy never blocks on a full pipe.
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            match parse_listen_line(&line) {
                Some(Listen::Current(_)) => current = true,
                Some(Listen::Vm { .. }) => vm = true,
                None => {}
            }
            if current && vm && !sent {
                sent = true;
                let _ = tx.send(Instant::now());
            }
        }
    });
    let got = rx.recv_timeout(Duration::from_secs(20));
    proc.terminate(Duration::from_secs(5));
    match got {
        Ok(t) => Ok(t - t0),
        Err(_) => bail!("no 'listening on' lines within 20 s"),
    }
}

fn proc_stderr(p: &mut Proc) -> Result<std::process::ChildStderr> {
    p.take_stderr().context("stderr pipe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_lines() {
        let cases = [
            (
                "2026-11-22T05:02:44Z  INFO jdwpmux::listen: listening on 127.0.0.1:45195 for the current VM port=45195",
                Some(Listen::Current(45195)),
            ),
            (
                "INFO jdwpmux::listen: listening on 127.0.0.1:33305 for vm 127.0.0.1:1 port=33305",
                Some(Listen::Vm { port: 33305, vm: "127.0.0.1:1".into() }),
            ),
            ("INFO listening on [::1]:7 for vm [::1]:8", Some(Listen::Vm { port: 7, vm: "[::1]:8".into() })),
            // Who the VM is and how it was found follow its name.
            (
                "INFO jdwpmux::listen: listening on 127.0.0.1:33305 for vm 127.0.0.1:1 (Billing pid 42, named with --vm) port=33305",
                Some(Listen::Vm { port: 33305, vm: "127.0.0.1:1".into() }),
            ),
            ("WARN VM not reachable; retrying", None),
            ("listening on 127.0.0.1:x for the current VM", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_listen_line(line), want, "{line}");
        }
    }

    #[test]
    fn log_lines_are_normalized_for_counting() {
        let a = "2026-11-22T05:44:15Z  WARN vm{vm=127.0.0.1:1}: jdwpmux::x: the VM did not answer HELO";
        let b = "2026-11-22T05:44:16Z  WARN vm{vm=127.0.0.1:2}: jdwpmux::x: the VM did not answer HELO";
        assert_eq!(normalize(a), normalize(b));
        assert_eq!(normalize(a), "WARN vm: jdwpmux::x: the VM did not answer HELO");
    }

    #[test]
    fn follower_yields_complete_lines_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"one\ntw").unwrap();
        let mut f = LogFollower::open(&path).unwrap();
        let mut seen = Vec::new();
        f.poll(&mut |l| seen.push(String::from_utf8_lossy(l).into_owned())).unwrap();
        assert_eq!(seen, ["one"]);
        std::fs::OpenOptions::new().append(true).open(&path).and_then(|mut w| std::io::Write::write_all(&mut w, b"o\nthree\n")).unwrap();
        f.poll(&mut |l| seen.push(String::from_utf8_lossy(l).into_owned())).unwrap();
        assert_eq!(seen, ["one", "two", "three"]);
    }

    #[test]
    fn serve_arguments() {
        let bin = ProxyBin { path: "x".into(), has_control: true, has_list: true, has_web: true, extra: vec!["-q".into()] };
        let vms: Vec<SocketAddr> = vec!["127.0.0.1:5".parse().unwrap()];
        let a = bin.serve_args(&vms, Path::new("/d"));
        assert_eq!(a, ["--control", "/d/control.sock", "serve", "--vm", "127.0.0.1:5", "--base-port", "0", "--current-port", "0", "-q"]);
        assert!(nofile_for(1000) >= 3000);
        let a = bin.serve_ssh_args(&["h1", "h2"], Path::new("/k/ssh_config"), Path::new("/d"));
        let want = "--control /d/control.sock serve --no-scan --no-proc --no-adb --ssh-config /k/ssh_config --ssh h1 --ssh h2 --base-port 0 --current-port 0 -q";
        assert_eq!(a.join(" "), want);
    }
}
