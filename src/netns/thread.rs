//! The root way: a thread of this process joins the target's network namespace, connects,
//! and ends.
//!
//! A new thread per connect, not one long-lived thread fed by a channel: a thread's
//! namespace dies with it, so nothing has to `setns` back (a long-lived thread that failed
//! to return would make every later socket in the wrong namespace), and a connect to a
//! slow target never queues the others behind it. Starting a thread costs tens of
//! microseconds; connects happen when a VM is found or attached, not per packet.

use std::time::Duration;

use tokio::sync::oneshot;

use super::enter::{check_net, connect_here, join, open};
use super::{NsError, NsTarget, REMEDY_NO_CAP};

/// Time past the connect's own timeout that the thread may take to answer (opening and
/// joining a namespace are quick; this only bounds a thread that never answers).
const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// A socket connected inside `t`'s network namespace, made by a thread of its own. The
/// runtime is never blocked: the answer comes through a oneshot.
pub(super) async fn connect(t: &NsTarget, timeout: Duration) -> Result<std::net::TcpStream, NsError> {
    let (tx, rx) = oneshot::channel();
    let target = t.clone();
    std::thread::Builder::new()
        .name("jdwpmux-netns".into())
        .spawn(move || {
            // If the caller gave up, the socket is dropped here, closed.
            let _ = tx.send(enter_and_connect(&target, timeout));
        })
        .map_err(|source| NsError::System { what: "start a thread to enter the namespace", source })?;
    match tokio::time::timeout(timeout + ANSWER_GRACE, rx).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(NsError::System { what: "enter the namespace", source: std::io::Error::other("its thread ended without an answer") }),
        Err(_) => Err(NsError::Timeout { pid: t.pid, addr: t.addr, after: timeout }),
    }
}

/// Runs on the thread: open, check, join, connect. The namespace is opened and checked
/// before it is joined, so a reused pid is never entered.
fn enter_and_connect(t: &NsTarget, timeout: Duration) -> Result<std::net::TcpStream, NsError> {
    let net = open(t, "net", REMEDY_NO_CAP)?;
    check_net(t, &net)?;
    join(t, &net, libc::CLONE_NEWNET, REMEDY_NO_CAP)?;
    connect_here(t, timeout)
}
