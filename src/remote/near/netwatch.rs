//! Changes of this machine's network, as the kernel announces them (rtnetlink: a link, an
//! address or a route added or removed). A host whose link was cut while its far side holds
//! the VMs is tried again the moment the network comes back (a cable or Wi-Fi back, a VPN up),
//! instead of at its next timed attempt, whose connect may be waiting on a SYN sent into the
//! cut. What changed is not read: any change is a reason to try. (A change needs root to
//! make; the remote tests, which cut and restore a test host's link, check it is acted on.)

use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// The burst of messages one change makes (a link up brings its routes and addresses) is
/// taken as one: a change is reported once none came for this long, or after `SETTLE_MAX`.
const SETTLE: Duration = Duration::from_millis(50);
const SETTLE_MAX: Duration = Duration::from_millis(500);

/// The multicast groups listened to: links, IPv4 and IPv6 addresses and routes.
const GROUPS: u32 = (libc::RTMGRP_LINK | libc::RTMGRP_IPV4_IFADDR | libc::RTMGRP_IPV4_ROUTE | libc::RTMGRP_IPV6_IFADDR | libc::RTMGRP_IPV6_ROUTE) as u32;

pub struct NetChanges {
    fd: AsyncFd<OwnedFd>,
    buf: Vec<u8>,
}

impl NetChanges {
    /// Listens for changes; an error where rtnetlink cannot be had (a sandbox): hosts are
    /// then tried again on their timers alone.
    pub fn open() -> std::io::Result<NetChanges> {
        let fd = rustix::net::socket_with(AddressFamily::NETLINK, SocketType::RAW, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK, None)?;
        rustix::net::bind(&fd, &SocketAddrNetlink::new(0, GROUPS))?;
        // SAFETY: the OwnedFd is moved into the AsyncFd and owned by it until it is dropped,
        // so the descriptor stays open and the same for the AsyncFd's whole life.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
        Ok(NetChanges { fd, buf: vec![0; 16 * 1024] })
    }

    /// Waits for the next change and the rest of its burst. A read error (the socket's
    /// buffer overran: many changes) counts as a change.
    pub async fn changed(&mut self) {
        let _ = self.read_one().await;
        let until = tokio::time::Instant::now() + SETTLE_MAX;
        while tokio::time::Instant::now() < until {
            match tokio::time::timeout(SETTLE, self.read_one()).await {
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }

    /// Drops the changes announced so far (those while nobody asked are old news).
    pub fn forget(&mut self) {
        // Bounded: the socket's buffer holds a limited number of messages.
        for _ in 0..10_000 {
            if rustix::io::read(self.fd.get_ref(), &mut self.buf[..]).is_err() {
                return;
            }
        }
    }

    async fn read_one(&mut self) -> std::io::Result<usize> {
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|fd| rustix::io::read(fd.get_ref(), &mut self.buf[..]).map_err(std::io::Error::from)) {
                Ok(r) => return r,
                Err(_would_block) => continue,
            }
        }
    }
}
