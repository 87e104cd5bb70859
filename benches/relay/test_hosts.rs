//! Other machines for the `remote` section: the integration tests' test hosts
//! (testkit/src/testhost.rs: a network namespace joined by a veth pair, Debian's sshd in it
//! with a test config, keys, known_hosts and an ssh config file made for the run), with the
//! benchmark's HotSpot debuggee started inside on the host's own loopback. Every JVM, sshd
//! and namespace goes on drop, also during a panic; the signal watcher removes the namespaces
//! on Ctrl-C (see `procs::netns_made`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::jvm::{Debuggee, Jvm, Launch};
use testkit::testhost::{Keys, TestHost};

/// Why test hosts cannot be made here (not root, no `ip netns`, no sshd), or None.
pub fn unavailable() -> Option<String> {
    testkit::testhost::unavailable()
}

/// Whether `section` can have its test hosts. When not, it did not run: as with a test,
/// that goes through the test kit's record (testkit/src/skip.rs), and is a failure unless
/// `JDWPMUX_TEST_ALLOW_SKIP=1` allows it (then one `skipped: WHY` line).
pub fn can_run(section: &str, fail: crate::remote::Fail) -> bool {
    let Some(why) = unavailable() else { return true };
    if let Err(e) = testkit::skip::not_run_as(&format!("bench relay: {section}"), &format!("{section}: no test hosts on this machine: {why}")) {
        fail(&format!("{section}: not run"), e);
    }
    false
}

/// A test host and the JVMs the benchmark runs on it.
pub struct BenchHost {
    /// First field: the JVMs go before their namespace.
    pub jvms: Vec<Jvm>,
    host: Option<TestHost>,
    ns: String,
}

impl BenchHost {
    /// A host named `alias` in `keys`' ssh config.
    pub fn start(keys: &Keys, alias: &str) -> Result<BenchHost> {
        // With a process list of its own, as every test host: sharing this machine's would
        // make its JVMs this machine's containers to every discovery running here.
        let host = TestHost::start(keys, alias).with_context(|| format!("test host {alias}"))?;
        let ns = host.net.name.clone();
        crate::procs::netns_made(&ns);
        Ok(BenchHost { jvms: Vec::new(), host: Some(host), ns })
    }

    /// The network namespace's name.
    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// The host's address on its veth (where its sshd listens).
    pub fn addr(&self) -> std::net::Ipv4Addr {
        self.host.as_ref().map_or(std::net::Ipv4Addr::UNSPECIFIED, |h| h.net.addr)
    }

    /// Cuts (false) or restores (true) the host's link, at the namespace's end of its veth.
    pub fn set_link(&self, up: bool) -> Result<()> {
        self.host.as_ref().context("no test host")?.net.set_link(up)
    }

    pub fn alias(&self) -> &str {
        self.host.as_ref().map_or("", |h| h.alias.as_str())
    }

    /// Starts a JVM of `prog` on the host, its agent on the host's 127.0.0.1:`port`; it is
    /// not waited for (see [`BenchHost::wait_ready`]), so several come up side by side.
    pub fn launch(&mut self, prog: &Arc<Debuggee>, port: u16, small: bool) -> Result<()> {
        let prefix = self.host.as_ref().map(TestHost::prefix).unwrap_or_default();
        let jvm = Jvm::launch(prog, &Launch { prefix, port, small })?;
        self.jvms.push(jvm);
        Ok(())
    }

    pub fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        for j in &mut self.jvms {
            j.wait_ready(limit).with_context(|| format!("a JVM on {} (port {})", self.ns, j.port))?;
        }
        Ok(())
    }

    /// The JVMs' processes: each one started (`nsenter`, entering the host's process list)
    /// and the JVM it runs there, its child.
    pub fn jvm_pids(&self) -> Vec<u32> {
        let children = |pid: u32| -> Vec<u32> {
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
        };
        self.jvms.iter().map(Jvm::pid).flat_map(|pid| std::iter::once(pid).chain(children(pid))).collect()
    }
}

impl Drop for BenchHost {
    fn drop(&mut self) {
        self.jvms.clear();
        // Kills what runs in the namespace, then removes it and its veth pair.
        drop(self.host.take());
        crate::procs::netns_removed(&self.ns);
    }
}

/// The keys, known_hosts and ssh config every host of a run shares.
pub fn keys() -> Result<Keys> {
    Keys::new().context("ssh keys for the test hosts (ssh-keygen)")
}
