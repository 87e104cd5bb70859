//! The three ways to a JVM on an ssh host that the `remote` section compares, with the same
//! ssh config, keys and host, each a fresh set of processes per run:
//!
//! - `ssh -L`: `ssh -N -L 127.0.0.1:P:127.0.0.1:PORT HOST`, the forward a user would type:
//!   debugger -> ssh -> sshd -> JVM;
//! - `ssh -W`: a master (`ssh -M -N`) and, per debugger connection, `ssh -S CTL -W
//!   127.0.0.1:PORT HOST` whose standard input and output are the far end of the debugger's
//!   TCP connection. The `-W` process hands them to the master, which relays them itself,
//!   and then waits for as long as the connection lasts: a process per connection;
//! - socat on the forward: a master with a forward from a Unix socket added as jdwpmux adds
//!   it (`ssh -S CTL -O forward -L DIR/f.sock:127.0.0.1:PORT HOST`), and `socat
//!   TCP-LISTEN:P,bind=127.0.0.1,reuseaddr,nodelay UNIX-CONNECT:DIR/f.sock` in front:
//!   jdwpmux's transport and hop count with a plain byte relay in jdwpmux's place (a
//!   control: what the hop itself costs, apart from what jdwpmux does in it);
//! - jdwpmux: `jdwpmux serve --ssh HOST`: debugger -> the VM's debugger port -> the daemon ->
//!   its master's forward from a Unix socket -> sshd -> JVM.
//!
//! One run is one debugger connection that measures latency, pipelined requests and the
//! 4 MiB array, with the CPU of the path's local processes, and checks every reply.

use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::jdwp_ops::{self as ops, get_values_request};
use crate::jvm::{Jvm, BIG_ARRAY_LEN, BIG_CLASS_SIG, BIG_FIELD};
use crate::jvm_suite::{latency, pipelined, read_region};
use crate::paths::CpuMeter;
use crate::procs::{free_port, wait_listening, Proc};
use crate::proxy::{Proxy, ProxyBin};
use crate::stats::percentile;
use testkit::blocking_client::{BlockingClient, ClientError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    Forward,
    Stdio,
    SocatForward,
    Jdwpmux,
}

pub const REMOTE_PATHS: [RemoteKind; 4] = [RemoteKind::Forward, RemoteKind::Stdio, RemoteKind::SocatForward, RemoteKind::Jdwpmux];

impl RemoteKind {
    pub fn label(self) -> &'static str {
        match self {
            RemoteKind::Forward => "ssh -L",
            RemoteKind::Stdio => "ssh -W",
            RemoteKind::SocatForward => "socat + master's forward",
            RemoteKind::Jdwpmux => "jdwpmux",
        }
    }

    /// The table column, in the order of `REMOTE_PATHS`.
    pub fn column(self) -> usize {
        self as usize
    }

    /// Forward in even repetitions, backward in odd ones.
    pub fn order(rep: usize) -> [RemoteKind; 4] {
        let mut p = REMOTE_PATHS;
        if rep % 2 == 1 {
            p.reverse();
        }
        p
    }
}

/// Sizes of one path run.
#[derive(Debug, Clone, Copy)]
pub struct PathParams {
    pub warmup: usize,
    pub latency_n: usize,
    pub pipelined_n: usize,
    pub window: usize,
    pub array_n: usize,
}

/// Where the JVM is: a host of `config` and its agent's port on the host's loopback.
#[derive(Debug, Clone)]
pub struct Target {
    pub config: PathBuf,
    pub host: String,
    pub port: u16,
}

impl Target {
    /// `ssh -F CONFIG -o BatchMode=yes` (dies with the benchmark).
    fn ssh(&self) -> Command {
        let mut c = crate::procs::command("ssh");
        c.arg("-F").arg(&self.config).args(["-o", "BatchMode=yes"]);
        c
    }

    fn remote(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// An ssh master (`ssh -M -N`), its control socket in a folder of its own.
pub struct Master {
    proc: Proc,
    pub control: PathBuf,
    dir: tempfile::TempDir,
}

impl Master {
    pub fn start(t: &Target) -> Result<Master> {
        let dir = tempfile::tempdir()?;
        let control = dir.path().join("m.ctl");
        let log = std::fs::File::create(dir.path().join("ssh.log"))?;
        let mut cmd = t.ssh();
        cmd.args(["-M", "-S"]).arg(&control).args(["-N", "-o", "ControlPersist=no", "-o", "ServerAliveInterval=2", "--"]).arg(&t.host);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        let mut m = Master { proc: Proc::spawn("ssh master", &mut cmd)?, control, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if m.control.exists() {
                let mut check = Command::new("ssh");
                check.arg("-F").arg(&t.config).arg("-S").arg(&m.control).args(["-O", "check", "--"]).arg(&t.host);
                if check.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
                    return Ok(m);
                }
            }
            if m.proc.exited().is_some() || Instant::now() > deadline {
                bail!("the ssh master to {} did not come up: {}", t.host, m.log());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// One connection through the master: `ssh -S CTL -W 127.0.0.1:PORT HOST` on the far end
    /// of a fresh loopback TCP pair; the near end, handshaken, and the `-W` process.
    pub fn connect(&self, t: &Target) -> Result<(BlockingClient, Proc)> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let near = TcpStream::connect(l.local_addr()?)?;
        let (far, _) = l.accept()?;
        let far_out = far.try_clone()?;
        let mut cmd = t.ssh();
        cmd.arg("-S").arg(&self.control).arg("-W").arg(t.remote()).arg("--").arg(&t.host);
        cmd.stdin(Stdio::from(OwnedFd::from(far))).stdout(Stdio::from(OwnedFd::from(far_out))).stderr(Stdio::null());
        let proc = Proc::spawn("ssh -W", &mut cmd)?;
        // Only ssh may hold the far end: the Command keeps its copies until dropped.
        drop(cmd);
        let c = BlockingClient::over(near).context("handshake through ssh -W")?;
        Ok((c, proc))
    }

    /// Adds a forward from the Unix socket `socket` to the JVM of `t`, as jdwpmux does
    /// (`ssh -S CTL -O forward -L SOCKET:127.0.0.1:PORT HOST`).
    pub fn forward(&self, t: &Target, socket: &std::path::Path) -> Result<()> {
        let mut spec = std::ffi::OsString::from(socket);
        spec.push(format!(":{}", t.remote()));
        let out = Command::new("ssh")
            .arg("-F")
            .arg(&t.config)
            .arg("-S")
            .arg(&self.control)
            .args(["-o", "BatchMode=yes", "-O", "forward", "-L"])
            .arg(spec)
            .arg("--")
            .arg(&t.host)
            .stdin(Stdio::null())
            .output()
            .context("run ssh -O forward")?;
        if !out.status.success() {
            bail!("ssh -O forward: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ssh.log")).unwrap_or_default()
    }

    pub fn stop(&mut self) {
        self.proc.terminate(Duration::from_secs(5));
    }
}

/// The processes of one path run.
pub enum RemoteRelay {
    Forward { ssh: Proc, port: u16, dir: tempfile::TempDir },
    Stdio { master: Master, client: Option<Proc> },
    SocatForward { master: Master, socat: Proc, port: u16 },
    Jdwpmux { proxy: Proxy, port: u16, _dir: tempfile::TempDir },
}

/// The row of `rows` (`jdwpmux list --json`) for the VM at 127.0.0.1:`port` on `host`, when
/// it is ready: its debugger port.
pub fn ready_port(rows: &[serde_json::Value], host: &str, port: u16) -> Option<u16> {
    let addr = format!("127.0.0.1:{port}");
    rows.iter()
        .find(|r| r["host"] == host && r["addr"] == addr.as_str() && r["state"] == "ready")
        .and_then(|r| r["debugger_port"].as_u64())
        .and_then(|p| u16::try_from(p).ok())
}

impl RemoteRelay {
    pub fn start(kind: RemoteKind, t: &Target, bin: &ProxyBin) -> Result<RemoteRelay> {
        Ok(match kind {
            RemoteKind::Forward => {
                let dir = tempfile::tempdir()?;
                let port = free_port()?;
                let log = std::fs::File::create(dir.path().join("ssh.log"))?;
                let mut cmd = t.ssh();
                cmd.args(["-N", "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=2", "-L"])
                    .arg(format!("127.0.0.1:{port}:{}", t.remote()))
                    .arg("--")
                    .arg(&t.host);
                cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
                let mut ssh = Proc::spawn("ssh -L", &mut cmd)?;
                if let Err(e) = wait_listening(port, Duration::from_secs(20)) {
                    ssh.kill();
                    let said = std::fs::read_to_string(dir.path().join("ssh.log")).unwrap_or_default();
                    bail!("ssh -L: {e}: {said}");
                }
                RemoteRelay::Forward { ssh, port, dir }
            }
            RemoteKind::Stdio => RemoteRelay::Stdio { master: Master::start(t)?, client: None },
            RemoteKind::SocatForward => {
                let master = Master::start(t)?;
                let socket = master.dir.path().join("f.sock");
                master.forward(t, &socket)?;
                let port = free_port()?;
                let mut cmd = crate::procs::command("socat");
                cmd.arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,nodelay")).arg(format!("UNIX-CONNECT:{}", socket.display()));
                cmd.stdin(Stdio::null()).stdout(Stdio::null());
                let socat = Proc::spawn("socat", &mut cmd).context("is socat installed? (apt-get install -y socat)")?;
                wait_listening(port, Duration::from_secs(10))?;
                RemoteRelay::SocatForward { master, socat, port }
            }
            RemoteKind::Jdwpmux => {
                let dir = tempfile::tempdir()?;
                let args = bin.serve_ssh_args(&[&t.host], &t.config, dir.path());
                let proxy = Proxy::start_args(bin, &args, dir.path(), &[], 16, 1)?;
                let deadline = Instant::now() + Duration::from_secs(30);
                let port = loop {
                    if let Some(p) = ready_port(&proxy.list_json(bin)?, &t.host, t.port) {
                        break p;
                    }
                    if Instant::now() > deadline {
                        bail!("jdwpmux did not list the VM on {} as ready within 30 s; log:\n{}", t.host, proxy.log_tail(3000));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                RemoteRelay::Jdwpmux { proxy, port, _dir: dir }
            }
        })
    }

    /// The debugger's connection, handshaken.
    pub fn connect(&mut self, t: &Target) -> Result<BlockingClient> {
        let local = |port: u16| std::net::SocketAddr::from(([127, 0, 0, 1], port));
        match self {
            RemoteRelay::Forward { port, .. } | RemoteRelay::Jdwpmux { port, .. } | RemoteRelay::SocatForward { port, .. } => Ok(BlockingClient::connect(local(*port), Duration::from_secs(10))?),
            RemoteRelay::Stdio { master, client } => {
                let (c, p) = master.connect(t)?;
                *client = Some(p);
                Ok(c)
            }
        }
    }

    /// The path's processes on this machine: ssh; the master and the `-W` process; the
    /// master and socat; the daemon and its children (its master).
    pub fn local_pids(&self) -> Vec<u32> {
        match self {
            RemoteRelay::Forward { ssh, .. } => vec![ssh.pid()],
            RemoteRelay::Stdio { master, client } => std::iter::once(master.pid()).chain(client.as_ref().map(Proc::pid)).collect(),
            RemoteRelay::SocatForward { master, socat, .. } => vec![master.pid(), socat.pid()],
            RemoteRelay::Jdwpmux { proxy, .. } => crate::proc_tree::with_children(proxy.pid()).iter().map(|s| s.pid).collect(),
        }
    }

    /// Ends the run; jdwpmux first of all, while its debugger is still attached, so that
    /// the JVM sees exactly one disconnect (as in the `jvm` section).
    pub fn stop(&mut self) {
        match self {
            RemoteRelay::Forward { ssh, .. } => ssh.terminate(Duration::from_secs(5)),
            RemoteRelay::Stdio { master, client } => {
                if let Some(c) = client.as_mut() {
                    if !c.wait_exit(Duration::from_secs(2)) {
                        c.kill();
                    }
                }
                master.stop();
            }
            RemoteRelay::SocatForward { master, socat, .. } => {
                // socat exits by itself once its client closes.
                if !socat.wait_exit(Duration::from_secs(2)) {
                    socat.kill();
                }
                master.stop();
            }
            RemoteRelay::Jdwpmux { proxy, .. } => proxy.stop(),
        }
    }

    pub fn log_tail(&self) -> String {
        match self {
            RemoteRelay::Forward { dir, .. } => std::fs::read_to_string(dir.path().join("ssh.log")).unwrap_or_default(),
            RemoteRelay::Stdio { master, .. } | RemoteRelay::SocatForward { master, .. } => master.log(),
            RemoteRelay::Jdwpmux { proxy, .. } => proxy.log_tail(4000),
        }
    }
}

/// CPU time of several processes since a moment (schedstat ns, see `procs::CpuSnap`).
pub struct GroupMeter(Vec<CpuMeter>);

impl GroupMeter {
    pub fn start(pids: &[u32]) -> GroupMeter {
        GroupMeter(pids.iter().map(|p| CpuMeter::start(Some(*p))).collect())
    }

    /// None when no process could be read.
    pub fn ns(&self) -> Option<u64> {
        let v: Vec<u64> = self.0.iter().filter_map(CpuMeter::ns).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// The first process's part.
    pub fn first_ns(&self) -> Option<u64> {
        self.0.first()?.ns()
    }
}

/// One path run's figures.
#[derive(Debug, Clone, Default)]
pub struct RemoteRun {
    /// TCP connect and JDWP handshake (for `ssh -W` this starts its process).
    pub connect_ms: f64,
    pub latency_us: f64,
    pub latency_p99_us: f64,
    pub pipelined_rps: f64,
    pub array_mbps: f64,
    /// CPU of the path's local processes (see [`RemoteRelay::local_pids`]).
    pub cpu_rt_us: Option<f64>,
    pub cpu_req_us: Option<f64>,
    pub cpu_array_ms_per_mb: Option<f64>,
    /// jdwpmux only: the daemon's part of the local CPU (the rest is its master's).
    pub daemon_rt_us: Option<f64>,
    pub daemon_req_us: Option<f64>,
    pub daemon_array_ms_per_mb: Option<f64>,
}

/// One run of `kind` against `jvm` (on the host of `t`).
pub fn run(kind: RemoteKind, jvm: &mut Jvm, t: &Target, bin: &ProxyBin, p: &PathParams) -> Result<RemoteRun> {
    jvm.wait_free(Duration::from_secs(30))?;
    // Whatever happens below, this run is one debugger session for the JVM.
    jvm.session_ended();
    let mut relay = RemoteRelay::start(kind, t, bin)?;
    let mut client = None;
    let result = measure(&mut relay, t, p, &mut client);
    let log = if result.is_err() { Some(relay.log_tail()) } else { None };
    if kind == RemoteKind::Jdwpmux {
        relay.stop();
    }
    drop(client);
    relay.stop();
    result.map_err(|e| match log {
        Some(l) if !l.is_empty() => e.context(format!("{} log:\n{l}", kind.label())),
        _ => e,
    })
}

const MB: f64 = 1e6;

fn measure(relay: &mut RemoteRelay, t: &Target, p: &PathParams, slot: &mut Option<BlockingClient>) -> Result<RemoteRun> {
    let t0 = Instant::now();
    let c = slot.insert(relay.connect(t).context("connect")?);
    let mut r = RemoteRun { connect_ms: t0.elapsed().as_secs_f64() * 1e3, ..RemoteRun::default() };
    let ids = ops::id_sizes(c).context("IDSizes")?;
    let version = c.request(ops::VERSION.0, ops::VERSION.1, &[]).context("Version")?;
    if ops::version_vm_name(&version)?.is_empty() {
        return Err(ClientError::Content("empty vmName".into()).into());
    }
    latency(c, p.warmup, &version).context("warm-up")?;
    pipelined(c, p.warmup.min(p.pipelined_n), p.window, &version).context("pipelined warm-up")?;
    let pids = relay.local_pids();
    let daemon = matches!(relay, RemoteRelay::Jdwpmux { .. });
    let part = |cpu: &GroupMeter| if daemon { cpu.first_ns() } else { None };

    let cpu = GroupMeter::start(&pids);
    let (elapsed, mut samples) = latency(c, p.latency_n, &version).context("latency")?;
    r.latency_us = elapsed.as_secs_f64() * 1e6 / p.latency_n as f64;
    r.latency_p99_us = percentile(&mut samples, 99.0).map_or(f64::NAN, |ns| f64::from(ns) / 1e3);
    r.cpu_rt_us = cpu.ns().map(|ns| ns as f64 / 1e3 / p.latency_n as f64);
    r.daemon_rt_us = part(&cpu).map(|ns| ns as f64 / 1e3 / p.latency_n as f64);

    let cpu = GroupMeter::start(&pids);
    let elapsed = pipelined(c, p.pipelined_n, p.window, &version).context("pipelined")?;
    r.pipelined_rps = p.pipelined_n as f64 / elapsed.as_secs_f64();
    r.cpu_req_us = cpu.ns().map(|ns| ns as f64 / 1e3 / p.pipelined_n as f64);
    r.daemon_req_us = part(&cpu).map(|ns| ns as f64 / 1e3 / p.pipelined_n as f64);

    let arr = ops::find_static_array(c, &ids, BIG_CLASS_SIG, BIG_FIELD).context("find Big.data")?;
    if arr.len != BIG_ARRAY_LEN {
        return Err(ClientError::Content(format!("Big.data has {} elements, expected {BIG_ARRAY_LEN}", arr.len)).into());
    }
    let q = get_values_request(arr.id, ids.object, 0, arr.len);
    // One reply first: the channel's window opens up, as it has in a working session.
    read_region(c, &q, 0, arr.len).context("ArrayReference.GetValues warm-up")?;
    let cpu = GroupMeter::start(&pids);
    let t0 = Instant::now();
    let mut bytes = 0u64;
    for _ in 0..p.array_n {
        bytes += read_region(c, &q, 0, arr.len).context("ArrayReference.GetValues")?;
    }
    r.array_mbps = bytes as f64 / MB / t0.elapsed().as_secs_f64();
    r.cpu_array_ms_per_mb = cpu.ns().map(|ns| ns as f64 / 1e6 / (bytes as f64 / MB));
    r.daemon_array_ms_per_mb = part(&cpu).map(|ns| ns as f64 / 1e6 / (bytes as f64 / MB));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_alternate_and_keep_their_columns() {
        assert_eq!(RemoteKind::order(0), REMOTE_PATHS);
        assert_eq!(RemoteKind::order(1), [RemoteKind::Jdwpmux, RemoteKind::SocatForward, RemoteKind::Stdio, RemoteKind::Forward]);
        let cols: Vec<usize> = REMOTE_PATHS.iter().map(|k| k.column()).collect();
        assert_eq!(cols, [0, 1, 2, 3], "jdwpmux in the last column, as in the other sections");
    }

    #[test]
    fn the_ready_row_gives_the_debugger_port() {
        let rows: Vec<serde_json::Value> = serde_json::from_str(
            r#"[{"host":"bench","addr":"127.0.0.1:8000","state":"identifying","debugger_port":4001},
                {"host":"other","addr":"127.0.0.1:8000","state":"ready","debugger_port":4002},
                {"host":"bench","addr":"127.0.0.1:8001","state":"ready","debugger_port":4003}]"#,
        )
        .unwrap();
        assert_eq!(ready_port(&rows, "bench", 8000), None, "not ready yet");
        assert_eq!(ready_port(&rows, "other", 8000), Some(4002));
        assert_eq!(ready_port(&rows, "bench", 8001), Some(4003));
        assert_eq!(ready_port(&rows, "nowhere", 8000), None);
    }
}
