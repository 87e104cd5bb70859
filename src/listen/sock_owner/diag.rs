//! One sock_diag query (NETLINK_SOCK_DIAG, inet_diag_req_v2 with the exact address pair):
//! the kernel finds the socket in its hash and answers with one inet_diag_msg holding its
//! uid and inode, or with ENOENT. The message layouts are the kernel's fixed ABI
//! (linux/inet_diag.h, linux/netlink.h); building and reading them is pure and tested here.

use std::net::{IpAddr, SocketAddr};

use rustix::net::netlink::{SocketAddrNetlink, SOCK_DIAG};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use crate::listen::owner::Owner;

/// SOCK_DIAG_BY_FAMILY: the request and the answer's message type.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HDRLEN: usize = 16;
/// inet_diag_req_v2: family, protocol, ext, pad, states, then inet_diag_sockid (48 bytes).
const REQ_LEN: usize = NLMSG_HDRLEN + 8 + 48;
/// In an inet_diag_msg after the netlink header: 4 bytes, the sockid, expires, rqueue,
/// wqueue, then uid and inode.
const MSG_UID: usize = NLMSG_HDRLEN + 4 + 48 + 12;
const MSG_INODE: usize = MSG_UID + 4;
const IPPROTO_TCP: u8 = 6;
/// Ask about a socket in any TCP state.
const ALL_STATES: u32 = u32::MAX;
/// INET_DIAG_NOCOOKIE: no cookie to check.
const NO_COOKIE: u32 = u32::MAX;
/// A sequence number to match the answer with.
const SEQ: u32 = 0x6a64_7770;

#[derive(Debug, thiserror::Error)]
pub enum DiagError {
    #[error("{0}")]
    Io(#[from] rustix::io::Errno),
    #[error("the kernel answered with error {0}")]
    Kernel(i32),
    #[error("an answer that is no inet_diag message ({0} bytes)")]
    Malformed(usize),
}

/// The request for the socket whose own address is `src` and whose remote one is `dst`.
pub fn request(src: SocketAddr, dst: SocketAddr) -> [u8; REQ_LEN] {
    let mut b = [0u8; REQ_LEN];
    b[0..4].copy_from_slice(&(REQ_LEN as u32).to_ne_bytes());
    b[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    b[8..12].copy_from_slice(&SEQ.to_ne_bytes());
    // pid 0: the kernel fills it.
    let r = NLMSG_HDRLEN;
    b[r] = if src.is_ipv4() { libc::AF_INET as u8 } else { libc::AF_INET6 as u8 };
    b[r + 1] = IPPROTO_TCP;
    b[r + 4..r + 8].copy_from_slice(&ALL_STATES.to_ne_bytes());
    // inet_diag_sockid: ports and addresses in network order.
    let id = r + 8;
    b[id..id + 2].copy_from_slice(&src.port().to_be_bytes());
    b[id + 2..id + 4].copy_from_slice(&dst.port().to_be_bytes());
    put_ip(&mut b[id + 4..id + 20], src.ip());
    put_ip(&mut b[id + 20..id + 36], dst.ip());
    // idiag_if 0: any interface; the cookie not checked.
    b[id + 40..id + 44].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    b[id + 44..id + 48].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    b
}

fn put_ip(out: &mut [u8], ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out.copy_from_slice(&v6.octets()),
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Reads the kernel's answer: the socket's owner, NotFound for ENOENT, or an error.
pub fn parse_answer(b: &[u8]) -> Result<Owner, DiagError> {
    let bad = || DiagError::Malformed(b.len());
    let ty = b.get(4..6).map(|t| u16::from_ne_bytes([t[0], t[1]])).ok_or_else(bad)?;
    match ty {
        NLMSG_ERROR => {
            let errno = u32_at(b, NLMSG_HDRLEN).ok_or_else(bad)? as i32;
            match -errno {
                0 => Err(bad()),
                libc::ENOENT => Ok(Owner::NotFound),
                e => Err(DiagError::Kernel(e)),
            }
        }
        SOCK_DIAG_BY_FAMILY => {
            let uid = u32_at(b, MSG_UID).ok_or_else(bad)?;
            let inode = u32_at(b, MSG_INODE).ok_or_else(bad)?;
            Ok(super::found(uid, u64::from(inode)))
        }
        _ => Err(bad()),
    }
}

/// Asks the kernel. Never blocks: the kernel answers a sock_diag request before `sendto`
/// returns, so the answer is read without waiting.
pub fn lookup(src: SocketAddr, dst: SocketAddr) -> Result<Owner, DiagError> {
    let fd = rustix::net::socket_with(AddressFamily::NETLINK, SocketType::DGRAM, SocketFlags::CLOEXEC, Some(SOCK_DIAG))?;
    rustix::net::sendto(&fd, &request(src, dst), SendFlags::empty(), &SocketAddrNetlink::new(0, 0))?;
    let mut buf = [0u8; 512];
    let (got, _) = rustix::net::recv(&fd, &mut buf[..], RecvFlags::DONTWAIT)?;
    let answer = &buf[..got];
    if u32_at(answer, 8) != Some(SEQ) {
        return Err(DiagError::Malformed(answer.len()));
    }
    parse_answer(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(ty: u16, body: &[(usize, u32)], len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[4..6].copy_from_slice(&ty.to_ne_bytes());
        for (at, v) in body {
            b[*at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn the_request_holds_the_pair_in_network_order() {
        let r = request("127.0.0.2:40000".parse().unwrap(), "127.0.0.1:8700".parse().unwrap());
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()) as usize, REQ_LEN);
        assert_eq!(r[16], libc::AF_INET as u8);
        assert_eq!(r[17], IPPROTO_TCP);
        assert_eq!(&r[24..28], &[0x9c, 0x40, 0x21, 0xfc]);
        assert_eq!(&r[28..32], &[127, 0, 0, 2]);
        assert_eq!(&r[32..44], &[0; 12]);
        assert_eq!(&r[44..48], &[127, 0, 0, 1]);
        assert_eq!(&r[64..72], &[0xff; 8]);
        let r6 = request("[::1]:1".parse().unwrap(), "[fe80::2]:2".parse().unwrap());
        assert_eq!(r6[16], libc::AF_INET6 as u8);
        assert_eq!(r6[43], 1);
        assert_eq!(&r6[44..46], &[0xfe, 0x80]);
    }

    #[test]
    fn answers_found_orphaned_missing_refused_and_short() {
        let full = NLMSG_HDRLEN + 72;
        let open = answer(SOCK_DIAG_BY_FAMILY, &[(MSG_UID, 1001), (MSG_INODE, 4242)], full);
        assert_eq!(parse_answer(&open).unwrap(), Owner::Uid(1001));
        let orphan = answer(SOCK_DIAG_BY_FAMILY, &[(MSG_UID, 0), (MSG_INODE, 0)], full);
        assert_eq!(parse_answer(&orphan).unwrap(), Owner::Orphaned);
        let enoent = answer(NLMSG_ERROR, &[(NLMSG_HDRLEN, (-libc::ENOENT) as u32)], 36);
        assert_eq!(parse_answer(&enoent).unwrap(), Owner::NotFound);
        let eperm = answer(NLMSG_ERROR, &[(NLMSG_HDRLEN, (-libc::EPERM) as u32)], 36);
        assert!(matches!(parse_answer(&eperm), Err(DiagError::Kernel(e)) if e == libc::EPERM));
        for short in [&open[..MSG_INODE], &open[..3], &[][..], &enoent[..NLMSG_HDRLEN + 2]] {
            assert!(matches!(parse_answer(short), Err(DiagError::Malformed(_))), "{} bytes", short.len());
        }
        assert!(parse_answer(&answer(3, &[], full)).is_err(), "NLMSG_DONE is no answer");
        assert!(parse_answer(&answer(NLMSG_ERROR, &[], 36)).is_err(), "an ack is no answer");
    }
}
