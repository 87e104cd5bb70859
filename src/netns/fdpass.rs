//! One descriptor over a Unix stream socket (SCM_RIGHTS), with one byte beside it (a
//! control message needs at least one byte of data to ride on). The helper sends; jdwpmux
//! receives.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

/// The byte sent with the descriptor.
const TAG: u8 = b'F';

/// Sends `fd` over the Unix socket `sock` (blocking).
pub fn send_fd(sock: impl AsFd, fd: impl AsFd) -> io::Result<()> {
    let fds = [fd.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor in the control buffer"));
    }
    let n = sendmsg(sock, &[IoSlice::new(&[TAG])], &mut control, SendFlags::NOSIGNAL)?;
    if n != 1 {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "the descriptor's byte was not sent"));
    }
    Ok(())
}

/// One attempt to receive a descriptor on `sock`: `Ok(None)` at end of stream (the sender
/// closed without sending one). `WouldBlock` on a non-blocking socket with nothing yet.
/// Descriptors beyond the first, if a sender put any, are closed.
pub fn recv_fd_once(sock: impl AsFd) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    // CMSG_CLOEXEC: the received socket must not leak into processes started later.
    let got = recvmsg(sock, &mut [IoSliceMut::new(&mut byte)], &mut control, RecvFlags::CMSG_CLOEXEC)?;
    let mut first = None;
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = msg {
            for fd in fds {
                first.get_or_insert(fd);
            }
        }
    }
    if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the control message was cut short"));
    }
    match (got.bytes, first) {
        (0, None) => Ok(None),
        (_, Some(fd)) if byte[0] == TAG => Ok(Some(fd)),
        (_, Some(_)) => Err(io::Error::new(io::ErrorKind::InvalidData, "a descriptor came with an unknown byte")),
        (_, None) => Err(io::Error::new(io::ErrorKind::InvalidData, "a byte came without a descriptor")),
    }
}

/// Waits for a descriptor on `sock` without blocking the runtime.
pub async fn recv_fd(sock: &tokio::net::UnixStream) -> io::Result<Option<OwnedFd>> {
    sock.async_io(tokio::io::Interest::READABLE, || recv_fd_once(sock)).await
}
