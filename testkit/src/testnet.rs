//! A test host's network: a namespace joined to this one (or to another test host's) by a
//! veth pair on a /30 no interface here is in, cut by setting its own end down, and removed
//! on drop.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};

use super::testhost::run;

static NEXT: AtomicU32 = AtomicU32::new(1);

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
