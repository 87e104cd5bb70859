//! What the debugger ports' owner check costs per accept: the connecting socket's owner
//! found by its address pair, with sock_diag (what the daemon asks first) and with the
//! /proc/net/tcp fallback, while this process holds few or many established loopback
//! connections. Timed in this process, on the library's own lookup functions.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use jdwpmux::listen::owner::Owner;
use jdwpmux::listen::sock_owner::{lookup_diag, lookup_proc};

pub struct OwnerCost {
    /// TCP sockets in this network namespace's /proc/net/tcp while measuring.
    pub sockets: usize,
    /// µs per lookup.
    pub diag_us: f64,
    pub proc_us: f64,
}

/// Holds `pairs` established loopback connections (two sockets each) and times `diag_n`
/// sock_diag lookups and `proc_n` /proc lookups, each of another connection, as accepts
/// would ask; every answer must be this process's uid.
pub fn measure(pairs: usize, diag_n: usize, proc_n: usize) -> Result<OwnerCost> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let mut held: Vec<(TcpStream, TcpStream, SocketAddr, SocketAddr)> = Vec::with_capacity(pairs);
    for i in 0..pairs.max(1) {
        let c = TcpStream::connect(addr).with_context(|| format!("connection {i}"))?;
        let (s, peer) = l.accept()?;
        let local = s.local_addr()?;
        held.push((c, s, peer, local));
    }
    let sockets = std::fs::read_to_string("/proc/net/tcp")?.lines().count().saturating_sub(1);
    let me = rustix::process::geteuid().as_raw();
    let check = |what: &str, got: Owner| -> Result<()> {
        match got {
            Owner::Uid(u) if u == me => Ok(()),
            other => bail!("{what}: {other:?} instead of uid {me}"),
        }
    };
    let t0 = Instant::now();
    for i in 0..diag_n {
        let (_, _, peer, local) = &held[i * 7919 % held.len()];
        check("sock_diag", lookup_diag(*peer, *local)?)?;
    }
    let diag_us = t0.elapsed().as_secs_f64() * 1e6 / diag_n.max(1) as f64;
    let t0 = Instant::now();
    for i in 0..proc_n {
        let (_, _, peer, local) = &held[i * 7919 % held.len()];
        check("/proc/net/tcp", lookup_proc(*peer, *local)?)?;
    }
    let proc_us = t0.elapsed().as_secs_f64() * 1e6 / proc_n.max(1) as f64;
    Ok(OwnerCost { sockets, diag_us, proc_us })
}
