//! The compared paths (direct, socat, socat -b 65536, jdwpmux), the relay process that
//! stands between client and VM for one run, and CPU metering of that relay.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Result;

use crate::procs::{status_kib, CpuSnap, Socat};
use crate::proxy::{Proxy, ProxyBin};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Direct,
    Socat,
    Socat64k,
    Jdwpmux,
}

pub const PATHS: [PathKind; 4] = [PathKind::Direct, PathKind::Socat, PathKind::Socat64k, PathKind::Jdwpmux];

impl PathKind {
    pub fn label(self) -> &'static str {
        match self {
            PathKind::Direct => "direct",
            PathKind::Socat => "socat",
            PathKind::Socat64k => "socat -b65536",
            PathKind::Jdwpmux => "jdwpmux",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The order of repetition `rep`: forward, then backward, so no path always runs first
    /// or last (A B C D, D C B A, ...).
    pub fn order(rep: usize) -> [PathKind; 4] {
        let mut p = PATHS;
        if rep % 2 == 1 {
            p.reverse();
        }
        p
    }
}

/// What stands between the client and the VM for one run.
pub enum Relay {
    Direct(SocketAddr),
    Socat(Socat),
    Proxy { proxy: Proxy, _dir: tempfile::TempDir },
}

impl Relay {
    pub fn start(kind: PathKind, vm: SocketAddr, bin: &ProxyBin) -> Result<Relay> {
        Ok(match kind {
            PathKind::Direct => Relay::Direct(vm),
            PathKind::Socat => Relay::Socat(Socat::start(vm.port(), None)?),
            PathKind::Socat64k => Relay::Socat(Socat::start(vm.port(), Some(65536))?),
            PathKind::Jdwpmux => {
                let dir = tempfile::tempdir()?;
                let p = Proxy::start(bin, &[vm], dir.path())?;
                Relay::Proxy { proxy: p, _dir: dir }
            }
        })
    }

    /// Where the client connects.
    pub fn addr(&self) -> SocketAddr {
        let port = match self {
            Relay::Direct(vm) => return *vm,
            Relay::Socat(s) => s.port,
            Relay::Proxy { proxy, .. } => proxy.current_port,
        };
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    }

    /// The relay process, if there is one.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Relay::Direct(_) => None,
            Relay::Socat(s) => Some(s.proc.pid()),
            Relay::Proxy { proxy, .. } => Some(proxy.pid()),
        }
    }

    pub fn cpu(&self) -> CpuMeter {
        CpuMeter::start(self.pid())
    }

    /// Peak RSS of the relay so far, KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        status_kib(self.pid()?, "VmHWM")
    }

    /// Ends the run. The proxy is stopped while the client is still attached, so the VM sees
    /// exactly one disconnect (a debugger leaving first would make it reconnect to HotSpot).
    pub fn stop(&mut self) {
        match self {
            Relay::Direct(_) => {}
            Relay::Socat(s) => {
                // socat exits by itself once either side closes; the caller closes first.
                if !s.proc.wait_exit(Duration::from_secs(2)) {
                    s.proc.kill();
                }
            }
            Relay::Proxy { proxy, .. } => proxy.stop(),
        }
    }

    pub fn proxy_log(&self) -> Option<String> {
        match self {
            Relay::Proxy { proxy, .. } => Some(proxy.log_tail(4000)),
            _ => None,
        }
    }
}

/// CPU time a relay spends between `start` and `ns`.
pub struct CpuMeter {
    pid: Option<u32>,
    at: Option<CpuSnap>,
}

impl CpuMeter {
    pub fn start(pid: Option<u32>) -> CpuMeter {
        CpuMeter { pid, at: pid.and_then(CpuSnap::take) }
    }

    pub fn ns(&self) -> Option<u64> {
        CpuSnap::take(self.pid?)?.since(self.at.as_ref()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_alternates() {
        assert_eq!(PathKind::order(0), PATHS);
        let back = PathKind::order(1);
        assert_eq!(back[0], PathKind::Jdwpmux);
        assert_eq!(back[3], PathKind::Direct);
        assert_eq!(PathKind::order(2), PATHS);
        for (i, p) in PATHS.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
    }

    #[test]
    fn direct_has_no_relay_process() {
        let vm: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let r = Relay::Direct(vm);
        assert_eq!(r.addr(), vm);
        assert!(r.pid().is_none() && r.cpu().ns().is_none());
    }
}
