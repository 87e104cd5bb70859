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

static NEXT: AtomicU32 = AtomicU32::new(1);

/// Why test hosts cannot be made here (not root, no `ip`, no sshd), or None when they can.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("test hosts need root (ip netns add)".into());
    }
    for tool in ["ip", "/usr/sbin/sshd", "ssh", "ssh-keygen", "nsenter", "unshare"] {
        let ok = Command::new(tool).arg("-V").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
        if !ok {
            return Some(format!("{tool} is not installed (.ci/run installs iproute2, openssh-server, util-linux)"));
        }
    }
    // One name per probe: tests run at once in one process probe at once.
    static PROBE: AtomicU32 = AtomicU32::new(0);
    let probe = format!("jmprobe{}-{}", std::process::id(), PROBE.fetch_add(1, Ordering::Relaxed));
    let made = run(&["ip", "netns", "add", &probe]);
    let _ = run(&["ip", "netns", "del", &probe]);
    made.err().map(|e| format!("cannot make a network namespace: {e:#}"))
}

/// Skips the calling test (returns from it) with a line naming why, when test hosts cannot
/// be made on this machine.
#[macro_export]
macro_rules! need_test_hosts {
    () => {
        if let Some(why) = $crate::support::testhost::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().with_context(|| format!("run {args:?}"))?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A /30 for host `n` of this test process: 10.A.B.0, with the host side .1 and the test
/// host .2; A and B come from the pid so that two test processes never share addresses.
fn subnet(n: u32) -> [u8; 3] {
    subnet_try(n, 0)
}

/// The `k`-th choice for host `n`: 0 is `subnet(n)`; later ones step through the 10.100-199
/// blocks so that two processes whose first choices meet part at once.
fn subnet_try(n: u32, k: u32) -> [u8; 3] {
    let pid = std::process::id();
    let block = ((pid % 4000) * 16 + (n % 16) + k * 16 * 263) % (100 * 256);
    [10, 100 + (block >> 8) as u8, (block & 0xFF) as u8]
}

/// The first choice for host `n` that no interface here is addressed in. Test processes run
/// at once (several checkouts on one machine): two of them on one /30 would route one's
/// packets to the other's host, and one's cut would cut the other.
fn free_subnet(n: u32) -> [u8; 3] {
    (0..256)
        .map(|k| subnet_try(n, k))
        .find(|[a, b, c]| run(&["ip", "-4", "-o", "addr", "show", "to", &format!("{a}.{b}.{c}.0/30")]).is_ok_and(|out| out.trim().is_empty()))
        .unwrap_or_else(|| subnet(n))
}

/// A network namespace joined to this one by a veth pair.
///
/// A cut sets the namespace's own veth end down, never this side's: this side's end then
/// loses its carrier and keeps its route (`linkdown`), so packets for the test host are
/// dropped here. Setting this side's end down would remove the route, and until the link
/// came back the kernel would send the test host's packets (ssh's retries, a relay's) to
/// the default gateway, off this machine. An `unreachable` route for the host's /30 with a
/// high metric catches any other way that route could go.
pub struct Netns {
    pub name: String,
    /// The veth end on this side (in this namespace, or in the front host's).
    pub host_dev: String,
    /// The veth end inside the namespace: the one a cut sets down.
    peer_dev: String,
    /// The namespace `host_dev` is in when it is not this one (a host behind another).
    front: Option<String>,
    pub addr: Ipv4Addr,
    pub here: Ipv4Addr,
}

impl Netns {
    /// A namespace with loopback up and a veth to this namespace, addressed 10.x.y.2/30.
    pub fn new() -> Result<Netns> {
        Self::joined_to(None)
    }

    /// A namespace joined only to `front` (not to this one): a host behind another.
    pub fn behind(front: &Netns) -> Result<Netns> {
        Self::joined_to(Some(front))
    }

    /// A namespace on a veth pair whose other end is in `front`'s namespace, or in this one.
    /// `host_dev` is that other end: setting it down cuts only this namespace's link.
    fn joined_to(front: Option<&Netns>) -> Result<Netns> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let name = format!("jm{pid}h{n}");
        let side = if front.is_some() { 'f' } else { 'h' };
        let (host_dev, peer_dev) = (format!("jm{}{side}{n}", pid % 100_000), format!("jm{}p{n}", pid % 100_000));
        let [a, b, c] = if front.is_some() { subnet(n) } else { free_subnet(n) };
        let net = Netns {
            name: name.clone(),
            host_dev: host_dev.clone(),
            peer_dev: peer_dev.clone(),
            front: front.map(|f| f.name.clone()),
            addr: Ipv4Addr::new(a, b, c, 2),
            here: Ipv4Addr::new(a, b, c, 1),
        };
        run(&["ip", "netns", "add", &name])?;
        let here = |args: &[&str]| match front {
            Some(f) => f.exec(args),
            None => run(args),
        };
        here(&["ip", "link", "add", &host_dev, "type", "veth", "peer", "name", &peer_dev])?;
        here(&["ip", "link", "set", &peer_dev, "netns", &name])?;
        here(&["ip", "addr", "add", &format!("{}/30", net.here), "dev", &host_dev])?;
        here(&["ip", "link", "set", &host_dev, "up"])?;
        // Removed in `drop`: the test host's packets never take the default route.
        here(&["ip", "route", "replace", "unreachable", &net.subnet(), "metric", UNREACHABLE_METRIC])?;
        net.exec(&["ip", "addr", "add", &format!("{}/30", net.addr), "dev", &peer_dev])?;
        net.exec(&["ip", "link", "set", &peer_dev, "up"])?;
        net.exec(&["ip", "link", "set", "lo", "up"])?;
        Ok(net)
    }

    /// Runs a command in the namespace and waits for it.
    pub fn exec(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// The prefix that runs a command in the namespace.
    pub fn prefix(&self) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), self.name.clone()]
    }

    /// Cuts (false) or restores (true) the link to this namespace, at the namespace's end.
    pub fn set_link(&self, up: bool) -> Result<()> {
        run(&["ip", "-n", &self.name, "link", "set", &self.peer_dev, if up { "up" } else { "down" }]).map(|_| ())
    }

    /// The host's /30, as `ip route` writes it.
    pub fn subnet(&self) -> String {
        let [a, b, c, _] = self.addr.octets();
        format!("{a}.{b}.{c}.0/30")
    }

    /// What `ip route get ADDR` says on this side of the link (where the test host's packets
    /// are routed from).
    pub fn route_to_host(&self) -> Result<String> {
        let addr = self.addr.to_string();
        let mut args = vec!["ip"];
        if let Some(front) = &self.front {
            args.extend(["-n", front.as_str()]);
        }
        args.extend(["route", "get", &addr]);
        run(&args).map(|s| s.trim().to_string())
    }

    /// The routes on this side of the link for the host's /30 (`ip route show`), where a
    /// cut shows as `linkdown`.
    pub fn routes_to_subnet(&self) -> Result<String> {
        let subnet = self.subnet();
        self.on_this_side(&["ip", "route", "show", &subnet]).map(|s| s.trim().to_string())
    }

    fn on_this_side(&self, args: &[&str]) -> Result<String> {
        match &self.front {
            Some(front) => {
                let mut all = vec!["ip", "netns", "exec", front.as_str()];
                all.extend_from_slice(args);
                run(&all)
            }
            None => run(args),
        }
    }
}

/// The metric of the `unreachable` route kept for every test host's /30: above any route
/// the kernel or a test adds, so it only ever catches what no other route does.
const UNREACHABLE_METRIC: &str = "4000";

impl Drop for Netns {
    fn drop(&mut self) {
        let subnet = self.subnet();
        let _ = self.on_this_side(&["ip", "route", "del", "unreachable", &subnet, "metric", UNREACHABLE_METRIC]);
        let _ = self.on_this_side(&["ip", "link", "del", &self.host_dev]);
        let _ = run(&["ip", "netns", "del", &self.name]);
    }
}

/// A TCP listener bound inside network namespace `netns`: a thread of its own enters the
/// namespace, binds, and ends; the socket stays in the namespace it was made in.
pub fn bind_in_netns(netns: &str, addr: std::net::SocketAddr) -> Result<std::net::TcpListener> {
    let path = format!("/run/netns/{netns}");
    std::thread::scope(|s| {
        s.spawn(|| -> Result<std::net::TcpListener> {
            let ns = std::fs::File::open(&path).with_context(|| format!("open {path}"))?;
            // SAFETY: setns(2) on this short-lived thread only; the fd is valid while `ns` lives.
            let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
            if rc != 0 {
                bail!("setns {path}: {}", std::io::Error::last_os_error());
            }
            let l = std::net::TcpListener::bind(addr).with_context(|| format!("bind {addr} in {netns}"))?;
            l.set_nonblocking(true)?;
            Ok(l)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the binding thread panicked"))?
    })
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
    /// started on first use. It waits (`sleep`) after giving the host a JVM performance-data
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
                // `unshare --fork`'s child is ours once it runs `sleep` in the new namespace.
                if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep") {
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
/// shared, as tests hand files to the host there.
const OWN_PERF_DATA: &str = "mkdir -p /tmp/hsperfdata_root && mount -t tmpfs -o mode=0755,size=16m jmperf /tmp/hsperfdata_root; exec sleep infinity";

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
