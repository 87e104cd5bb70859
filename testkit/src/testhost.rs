//! Other machines for tests: network namespaces made by the test (`ip netns`, a veth pair),
//! each with its own address and Debian's sshd run in the foreground with a test config, a
//! host key and a client key made by the test, and a known_hosts and ssh config for the
//! client. Everything is removed on drop, also when the test fails.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::testnet::Netns;

/// Why test hosts cannot be made here (not root, no `ip`, no sshd), or None when they can.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("test hosts need root (ip netns add)".into());
    }
    for tool in ["ip", "/usr/sbin/sshd", "ssh", "ssh-keygen", "nsenter", "unshare"] {
        let ok = Command::new(tool).arg("-V").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
        if !ok {
            return Some(format!("{tool} is not installed (./test.sh installs iproute2, openssh-server, util-linux)"));
        }
    }
    // One name per probe: tests run at once in one process probe at once.
    static PROBE: AtomicU32 = AtomicU32::new(0);
    let probe = format!("jmprobe{}-{}", std::process::id(), PROBE.fetch_add(1, Ordering::Relaxed));
    let made = run(&["ip", "netns", "add", &probe]);
    let _ = run(&["ip", "netns", "del", &probe]);
    made.err().map(|e| format!("cannot make a network namespace: {e:#}"))
}

/// Ends the calling test through [`not_run!`](crate::not_run) (a failure, unless skipping is
/// allowed) when test hosts cannot be made on this machine.
#[macro_export]
macro_rules! need_test_hosts {
    () => {
        if let Some(why) = $crate::testhost::unavailable() {
            $crate::not_run!(why);
        }
    };
}

pub(super) fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().with_context(|| format!("run {args:?}"))?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Keys and files an ssh client and server need, in one folder.
pub struct Keys {
    pub dir: tempfile::TempDir,
}

impl Keys {
    pub fn new() -> Result<Keys> {
        let dir = tempfile::tempdir()?;
        let k = Keys { dir };
        for name in ["host_key", "id_ed25519"] {
            let path = k.path(name);
            run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path.to_str().context("path")?])?;
        }
        std::fs::copy(k.path("id_ed25519.pub"), k.path("authorized_keys"))?;
        std::fs::write(k.path("known_hosts"), "")?;
        std::fs::write(k.path("ssh_config"), "")?;
        Ok(k)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Trusts `key_file` (a host's public key) for `addr` in the client's known_hosts.
    pub fn trust(&self, addr: Ipv4Addr, key_file: &Path) -> Result<()> {
        let key = std::fs::read_to_string(key_file)?;
        let mut parts = key.split_whitespace();
        let line = format!("{addr} {} {}\n", parts.next().context("key type")?, parts.next().context("key")?);
        let mut text = std::fs::read_to_string(self.path("known_hosts"))?;
        text.push_str(&line);
        std::fs::write(self.path("known_hosts"), text)?;
        Ok(())
    }

    /// Adds a `Host` block to the client's ssh config, logging in with `identity` (a file of
    /// this folder).
    pub fn add_host(&self, alias: &str, addr: Ipv4Addr, identity: &str, extra: &str) -> Result<()> {
        let mut text = std::fs::read_to_string(self.path("ssh_config"))?;
        text.push_str(&format!(
            "Host {alias}\n  HostName {addr}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n{extra}",
            self.path(identity).display(),
            self.path("known_hosts").display()
        ));
        std::fs::write(self.path("ssh_config"), text)?;
        Ok(())
    }

    /// A client key protected by a passphrase (`id_locked`), authorized on every host: a
    /// login with it needs the passphrase typed, or an agent.
    pub fn locked_key(&self) -> Result<&'static str> {
        let path = self.path("id_locked");
        run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-C", "locked", "-f", path.to_str().context("path")?])?;
        let mut keys = std::fs::read_to_string(self.path("authorized_keys"))?;
        keys.push_str(&std::fs::read_to_string(self.path("id_locked.pub"))?);
        std::fs::write(self.path("authorized_keys"), keys)?;
        Ok("id_locked")
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.path("ssh_config")
    }
}

/// A test host: a namespace running sshd, optionally with its own process list.
pub struct TestHost {
    pub alias: String,
    /// `ForceCommand` of its sshd: what every session runs instead of what it asked for.
    force: Option<String>,
    /// Keys made for this host (its host key lives here).
    host_dir: tempfile::TempDir,
    /// The listening sshd (in the host's pid namespace: the `nsenter` that started it).
    sshd: Option<std::process::Child>,
    /// The host's pid namespace: `unshare --pid --fork --mount-proc --kill-child` running a
    /// process that only waits, as the namespace's first process. sshd is not that process,
    /// so it can be killed alone (the first process of a pid namespace takes every other
    /// with it), as on a real machine whose ssh service stops.
    pidns: Option<std::process::Child>,
    pub net: Netns,
}

impl TestHost {
    /// A host named `alias` in `keys`' ssh config, trusted in its known_hosts, with a process
    /// list of its own: it sees only its own processes, as another machine would, and this
    /// machine's discovery never sees them as its own (a JVM in another network namespace
    /// that shares our process list is a container of this machine's, and is reached).
    /// sshd, and everything started through it or with `prefix`, runs in that pid namespace
    /// with its own /proc.
    pub fn start(keys: &Keys, alias: &str) -> Result<TestHost> {
        Self::make(keys, alias, Netns::new()?, "id_ed25519", "")
    }

    /// A host whose sshd runs `command` for every session, whatever the client asked for (a
    /// host that answers jdwpmux's scan with what `command` prints).
    pub fn start_forced(keys: &Keys, alias: &str, command: &str) -> Result<TestHost> {
        let mut h = Self::make(keys, alias, Netns::new()?, "id_ed25519", "")?;
        h.force = Some(command.to_string());
        h.restart_sshd(keys)?;
        Ok(h)
    }

    /// From now on every session runs `command` (as `start_forced`); the sessions open now,
    /// the processes started in the host's own process list with them, are ended.
    pub fn force(&mut self, keys: &Keys, command: &str) -> Result<()> {
        self.force = Some(command.to_string());
        self.kill_all_sshd();
        self.start_sshd(keys)
    }

    /// A host that `keys`' config logs in to with `identity`.
    pub fn start_as(keys: &Keys, alias: &str, identity: &str) -> Result<TestHost> {
        Self::make(keys, alias, Netns::new()?, identity, "")
    }

    /// A host reachable only from `jump` (a link between their namespaces), reached with
    /// `ProxyJump`.
    pub fn start_behind(keys: &Keys, alias: &str, jump: &TestHost) -> Result<TestHost> {
        let net = Netns::behind(&jump.net)?;
        Self::make(keys, alias, net, "id_ed25519", &format!("  ProxyJump {}\n", jump.alias))
    }

    fn make(keys: &Keys, alias: &str, net: Netns, identity: &str, extra: &str) -> Result<TestHost> {
        let host_dir = tempfile::tempdir()?;
        let host_key = host_dir.path().join("host_key");
        run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", alias, "-f", host_key.to_str().context("path")?])?;
        keys.trust(net.addr, &host_dir.path().join("host_key.pub"))?;
        keys.add_host(alias, net.addr, identity, extra)?;
        let mut h = TestHost { alias: alias.to_string(), force: None, host_dir, sshd: None, pidns: None, net };
        h.start_sshd(keys)?;
        Ok(h)
    }

    /// Kills every sshd of the host, the sessions' too (a host whose ssh service restarts and
    /// drops its connections).
    pub fn kill_all_sshd(&mut self) {
        self.kill_sshd();
        if let Ok(pids) = run(&["ip", "netns", "pids", &self.net.name]) {
            for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sshd") {
                    // SAFETY: plain kill(2) on an sshd of the test's own namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }

    fn start_sshd(&mut self, keys: &Keys) -> Result<()> {
        std::fs::create_dir_all("/run/sshd")?;
        let cfg = self.host_dir.path().join("sshd_config");
        // `SetEnv SHLVL=1`: bash runs a login's command without reading ~/.bashrc when it is
        // not the first shell, so the test host does not depend on this machine's dotfiles
        // (one that runs `pyenv rehash` leaves a lock when a test kills the login mid-way, and
        // every later login then waits 60 s for it).
        std::fs::write(
            &cfg,
            format!(
                "ListenAddress {}:22\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 AllowTcpForwarding yes\nAllowStreamLocalForwarding yes\nLogLevel VERBOSE\nSetEnv SHLVL=1\n{}",
                self.net.addr,
                self.host_dir.path().join("host_key").display(),
                keys.path("authorized_keys").display(),
                self.host_dir.path().join("sshd.pid").display(),
                self.force.as_ref().map(|c| format!("ForceCommand {c}\n")).unwrap_or_default(),
            ),
        )?;
        let log = std::fs::File::create(self.host_dir.path().join("sshd.log"))?;
        let init = self.pid_namespace()?;
        let mut cmd = Command::new("nsenter");
        cmd.args(["--target", &init.to_string(), "--pid", "--mount", "--net", "--"]);
        cmd.args(["/usr/sbin/sshd", "-D", "-e", "-f"]).arg(&cfg);
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().context("spawn sshd")?;
        self.sshd = Some(child);
        self.wait_listening(Duration::from_secs(20))
    }

    /// The first process of the host's pid namespace (in this namespace's numbering),
    /// started on first use. It stays and reaps after giving the host a JVM performance-data
    /// folder of its own (`OWN_PERF_DATA`).
    fn pid_namespace(&mut self) -> Result<u32> {
        if self.pidns.is_none() {
            let child = Command::new("ip")
                .args(["netns", "exec", &self.net.name, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", OWN_PERF_DATA])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("spawn the host's pid namespace")?;
            self.pidns = Some(child);
        }
        let holder = self.pidns.as_ref().map_or(0, |c| c.id());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(pid) = first_child(holder) {
                // `unshare --fork`'s child is ours once it started its first `sleep` in the
                // new namespace (the folder is mounted by then).
                if first_child(pid).is_some_and(|s| std::fs::read_to_string(format!("/proc/{s}/comm")).is_ok_and(|c| c.trim() == "sleep")) {
                    return Ok(pid);
                }
            }
            if std::time::Instant::now() > deadline {
                bail!("the pid namespace of {} did not start within 20 s", self.alias);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_listening(&self, within: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + within;
        loop {
            // Asked inside the host: a host behind a jump host cannot be reached from here.
            if self.sshd_log().contains("Server listening on") {
                return Ok(());
            }
            let log = self.sshd_log();
            if log.contains("Cannot bind any address") {
                bail!("sshd on {} could not listen: {log}", self.net.addr);
            }
            if std::time::Instant::now() > deadline {
                bail!("sshd on {} did not listen within {within:?}: {log}", self.net.addr);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.host_dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Stops the listening sshd (its sessions live on, as on a real host).
    pub fn kill_sshd(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            // nsenter's child is sshd, in the host's pid namespace: the listener alone goes,
            // its per-connection children carry on.
            if let Some(pid) = first_child(c.id()) {
                // SAFETY: plain kill(2) on the sshd this test started.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts sshd again, with the same host key.
    pub fn restart_sshd(&mut self, keys: &Keys) -> Result<()> {
        self.kill_sshd();
        // A killed listener in its own pid namespace is ended by `unshare --kill-child`
        // after `unshare` itself: on a busy machine it may still hold port 22 for a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match self.start_sshd(keys) {
                Err(e) if e.to_string().contains("Address already in use") && std::time::Instant::now() < deadline => {
                    self.kill_sshd();
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => return other,
            }
        }
    }

    /// The host's public key (to trust it again in a known_hosts).
    pub fn host_key_pub(&self) -> PathBuf {
        self.host_dir.path().join("host_key.pub")
    }

    /// Gives the host a new host key (as a reinstalled machine has) and restarts sshd.
    pub fn new_host_key(&mut self, keys: &Keys) -> Result<()> {
        let key = self.host_dir.path().join("host_key");
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_file(self.host_dir.path().join("host_key.pub"));
        run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "new", "-f", key.to_str().context("path")?])?;
        self.restart_sshd(keys)
    }

    /// The first process of the host's pid namespace, in this machine's numbering.
    pub fn init_pid(&self) -> Option<u32> {
        self.pidns.as_ref().and_then(|c| first_child(c.id()))
    }

    /// Mounts this machine's cgroup hierarchies in the host's mount namespace (`ip netns
    /// exec` gave it a /sys of its own, without them), as a real machine has them: Podman
    /// and runc can then run containers on the host.
    pub fn allow_containers(&self) -> Result<()> {
        let mounts = std::fs::read_to_string("/proc/self/mounts")?;
        let mut script = String::from("set -e; ");
        for line in mounts.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [_, dir, kind, opts, ..] = f[..] else { continue };
            if !dir.starts_with("/sys/fs/cgroup") || !["tmpfs", "cgroup", "cgroup2"].contains(&kind) {
                continue;
            }
            script.push_str(&format!("mkdir -p {dir}; mount -t {kind} -o {opts} {kind} {dir}; "));
        }
        if !script.contains("mount") {
            bail!("no cgroup hierarchy is mounted here");
        }
        let mut argv = self.prefix();
        argv.extend(["sh".to_string(), "-c".to_string(), script]);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        run(&argv).map(drop)
    }

    /// The prefix that runs a command on this host: its network and its own process list.
    pub fn prefix(&self) -> Vec<String> {
        match self.pidns.as_ref().and_then(|c| first_child(c.id())) {
            Some(pid) => vec!["nsenter".into(), "--target".into(), pid.to_string(), "--pid".into(), "--mount".into(), "--net".into(), "--".into()],
            None => self.net.prefix(),
        }
    }
}

/// Run by a host's pid namespace's first process, in the mount namespace `unshare` made for
/// it: a JVM as root writes /tmp/hsperfdata_root/<its pid>, and in two hosts' process lists
/// two JVMs can have one pid. The second one then warns on its output that the file is
/// locked ("Cannot use file /tmp/hsperfdata_root/18"), which a separate machine never does.
/// So that folder is the host's own (a tmpfs, gone with the namespace); the rest of /tmp is
/// shared, as tests hand files to the host there. Then it stays, as a host's init does,
/// and reaps what is left to it: an ssh session's `sh` and the `jdwpmux far --attach` it ran
/// end after their parent when a link is cut, and `sleep infinity` as the namespace's first
/// process left them zombies (a soak of an hour gathered hundreds); the shell's `wait` takes
/// any child that ends, adopted ones too.
const OWN_PERF_DATA: &str = "mkdir -p /tmp/hsperfdata_root && mount -t tmpfs -o mode=0755,size=16m jmperf /tmp/hsperfdata_root; while :; do sleep 3600 & wait; done";

/// The first child (in this namespace's numbering) of `parent`: for `unshare --fork`, the
/// new pid namespace's first process; for `nsenter --pid`, the command it runs there.
fn first_child(parent: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

impl Drop for TestHost {
    fn drop(&mut self) {
        // Every process of the namespace: sshd, its sessions, and what they started.
        if let Ok(pids) = run(&["ip", "netns", "pids", &self.net.name]) {
            for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: plain kill(2) on processes in the test's own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for c in [self.sshd.take(), self.pidns.take()].into_iter().flatten() {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
