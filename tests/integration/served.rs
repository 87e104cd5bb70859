//! The real binary as a daemon: `jdwpmux serve` in a child process with its own control
//! socket and log, and what tests ask it (`list`, `select`, ...). A module of the
//! integration tests that tests/cpu_pin.rs includes too; not part of the test kit
//! (testkit/), which the benchmark and the fake VM example use and which has no binary to
//! run.
#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");

/// A `jdwpmux serve` child with its log in a file, killed on drop.
pub struct Served {
    child: std::process::Child,
    pub log: std::path::PathBuf,
    pub control: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    pub fn start(args: &[&str]) -> Served {
        Self::start_env(args, &[])
    }

    /// `start` with extra environment variables for the daemon.
    pub fn start_env(args: &[&str], env: &[(&str, &str)]) -> Served {
        Self::start_at(None, args, env)
    }

    /// `start_env` with the control socket at `control` (None: in a fresh private folder).
    pub fn start_at(control: Option<&std::path::Path>, args: &[&str], env: &[(&str, &str)]) -> Served {
        Self::spawn(&[], control, args, env, |_| {})
    }

    /// `start` run as another user (`wrapper`: `setpriv ...` as `TestUser::prefix` gives),
    /// its control socket at `control`, in a folder that user owns.
    pub fn start_as(wrapper: &[String], control: &std::path::Path, args: &[&str]) -> Served {
        let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
        Self::spawn(&wrapper, Some(control), args, &[], |_| {})
    }

    /// `start_as` with `bin` for the binary: a copy where the wrapper's user may run it (the
    /// build's folder may be closed to others, and only the first exec of a `setpriv` gets
    /// through it). It runs from `/`: what it starts may not enter this process's folder.
    pub fn start_bin_as(wrapper: &[String], bin: &std::path::Path, control: &std::path::Path, args: &[&str]) -> Served {
        let mut wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
        let bin = bin.to_str().expect("a UTF-8 path");
        wrapper.push(bin);
        Self::spawn_bin(&wrapper, Some(control), args, &[], |c| {
            c.current_dir("/");
        }, None)
    }

    /// `start` run through a wrapper command (`prlimit --nofile=...`, say).
    pub fn start_wrapped(wrapper: &[&str], args: &[&str]) -> Served {
        Self::spawn(wrapper, None, args, &[], |_| {})
    }

    /// `start_env`, with `prepare` given the command last (a resource limit, say).
    pub fn start_with(args: &[&str], env: &[(&str, &str)], prepare: impl FnOnce(&mut Command)) -> Served {
        Self::spawn(&[], None, args, env, prepare)
    }

    fn spawn(
        wrapper: &[&str],
        control: Option<&std::path::Path>,
        args: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&mut Command),
    ) -> Served {
        Self::spawn_bin(wrapper, control, args, env, prepare, Some(BIN))
    }

    /// `spawn`, running `bin` (None: the wrapper's last word is the binary).
    fn spawn_bin(
        wrapper: &[&str],
        control: Option<&std::path::Path>,
        args: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&mut Command),
        bin: Option<&str>,
    ) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        let control = control.map_or_else(|| dir.path().join("control.sock"), std::path::Path::to_path_buf);
        let mut cmd = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).args(bin);
                c
            }
            None => Command::new(bin.unwrap_or(BIN)),
        };
        cmd.env_remove("JDWPMUX_CONFIG")
            .arg("serve")
            .args(["--base-port", "0", "--current-port", "0", "--control"])
            .arg(&control)
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        prepare(&mut cmd);
        let child = cmd.spawn().unwrap();
        Served { child, log, control, _dir: dir }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the daemon has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM and waits (bounded) for the exit code.
    pub fn terminate(&mut self, within: Duration) -> Option<i32> {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        self.wait_exit(within)
    }

    /// Waits (bounded) for the daemon to exit by itself; its exit code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for a log line containing `needle`.
    pub async fn wait_log(&self, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = self.log_text().lines().find(|l| l.contains(needle)) {
                return line.to_string();
            }
            assert!(tokio::time::Instant::now() < deadline, "no {needle:?} in the log:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the line that says the link to a far side's host is cut: the first of "lost
    /// the link to jdwpmux on HOST" (the near link heard nothing) and "lost the ssh link to
    /// HOST" (the ssh master ended), whichever noticed the cut first.
    pub async fn wait_cut(&self, host: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let needles = [format!("lost the link to jdwpmux on {host} "), format!("lost the ssh link to {host}")];
        loop {
            if let Some(line) = self.log_text().lines().find(|l| needles.iter().any(|n| l.contains(n.as_str()))) {
                return line.to_string();
            }
            assert!(tokio::time::Instant::now() < deadline, "no cut of {host} said in the log:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (up to 40 s) until the rows of `list --json` satisfy `cond`; returns them.
    pub async fn list_until(&self, what: &str, cond: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
        loop {
            let (code, out, _) = self.run(&["list", "--json"]);
            if code == 0 {
                let v: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
                if cond(&v) {
                    return v;
                }
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {out}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every VM `list` shows (one at least) is ready.
    pub async fn wait_ready(&self) -> Vec<serde_json::Value> {
        self.list_until("the VMs ready", |r| !r.is_empty() && r.iter().all(|v| v["state"] == "ready")).await
    }

    /// Runs `jdwpmux ARGS --control SOCKET`; returns (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN).args(args).arg("--control").arg(&self.control).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port number in a "listening on 127.0.0.1:PORT ..." line.
pub fn port_of(line: &str) -> u16 {
    let after = line.split("listening on ").nth(1).unwrap();
    let addr = after.split_whitespace().next().unwrap();
    addr.rsplit(':').next().unwrap().parse().unwrap()
}
