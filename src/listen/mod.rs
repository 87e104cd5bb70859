//! Debugger listeners: one port per VM and the current-VM port, each an accept loop that
//! starts one task per debugger connection.

pub mod allow;
pub mod debugger;
pub mod owner;
pub mod sock_owner;
pub mod users;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn, Instrument};

pub use debugger::Target;


/// Binds a debugger port. The "listening on" line is stable: scripts and tests read it.
pub async fn bind(addr: SocketAddr, what: &str) -> std::io::Result<TcpListener> {
    let l = TcpListener::bind(addr).await?;
    let local = l.local_addr()?;
    info!(port = local.port(), "listening on {local} for {what}");
    Ok(l)
}

/// Runs an accept loop until cancelled.
/// What every debugger listener shares.
#[derive(Clone)]
pub struct ListenOptions {
    pub handshake_timeout: Duration,
    pub capture: Option<crate::capture::CaptureHandle>,
    /// Peers allowed to connect (`--allow`); empty: anyone who can reach the port.
    pub allow: std::sync::Arc<Vec<allow::Cidr>>,
    /// Local users besides the daemon's own who may connect (`--allow-user`).
    pub allow_users: std::sync::Arc<owner::AllowedUsers>,
    /// The daemon's effective uid: the owner whose sockets are let in.
    pub own_uid: u32,
    /// Refusals counted per owner, shared by every debugger port.
    pub refusals: std::sync::Arc<owner::RefusalLog>,
}

pub fn spawn_accept(listener: TcpListener, target: Target, opts: ListenOptions, cancel: CancellationToken, tracker: &TaskTracker) {
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let span = tracing::info_span!("listen", port);
    let tasks = tracker.clone();
    tracker.spawn(
        async move {
            let l = &listener;
            crate::accept::accept_until(|| l.accept(), &cancel, "debugger", |sock, peer| {
                if !allow::allowed(&opts.allow, peer.ip()) {
                    info!(%peer, "refused a debugger: its address is not in --allow");
                    return;
                }
                let conn = crate::capture::tap::next_conn_id();
                let span = tracing::info_span!("debugger", conn, %peer);
                let (opts, target, cancel) = (opts.clone(), target.clone(), cancel.clone());
                tasks.spawn(
                    async move {
                        // Before the handshake: someone else's debugger gets nothing at all.
                        if !owner_admits(&sock, peer, &opts).await {
                            return;
                        }
                        debug!(%peer, conn, "debugger connection");
                        debugger::serve(sock, peer, conn, target, opts.handshake_timeout, opts.capture, cancel).await
                    }
                    .instrument(span),
                );
            })
            .await;
        }
        .instrument(span),
    );
}

/// Whether the user behind a connection may use the port (see `owner`): looks up the
/// connecting socket's owner and logs one line for a refusal (the 1st, 2nd, 4th... of each
/// owner, with the count), or for another user let in.
async fn owner_admits(sock: &tokio::net::TcpStream, peer: SocketAddr, opts: &ListenOptions) -> bool {
    use owner::{Accepted, Verdict};
    let found = if owner::needs_lookup(&opts.allow_users) {
        match sock.local_addr() {
            Ok(local) => sock_owner::lookup_async(peer, local).await,
            Err(e) => owner::Owner::Unknown(format!("the connection's own address: {e}")),
        }
    } else {
        owner::Owner::NotFound
    };
    match owner::judge(peer.ip().is_loopback(), &found, opts.own_uid, &opts.allow_users) {
        Verdict::Accept(Accepted::AllowedUser(uid)) => {
            let (user, _) = names_of(uid, opts.own_uid).await;
            let user = user.unwrap_or_default();
            info!(%peer, uid, user, "a debugger of another user, let in by --allow-user");
            true
        }
        Verdict::Accept(_) => true,
        // A connection gone before it sent anything (a port probe: `nc -z`, a health check,
        // an IDE testing the port) has no owner because its socket is closed: there is
        // nobody to refuse and nothing to warn about.
        Verdict::Refuse(owner::Refused::Orphaned | owner::Refused::NotFound) if gone_silently(sock) => {
            debug!(%peer, "a connection gone before it sent anything (a port probe): closed");
            false
        }
        Verdict::Refuse(r) => {
            let Some(refusals) = opts.refusals.count(&r) else { return false };
            match r {
                owner::Refused::OtherUser { uid } => {
                    let (user, own) = names_of(uid, opts.own_uid).await;
                    let line = r.describe(opts.own_uid, |u| if u == uid { user.clone() } else { own.clone() });
                    let user = user.unwrap_or_default();
                    warn!(%peer, uid, user, refusals, "{line}");
                }
                _ => warn!(%peer, refusals, "{}", r.describe(opts.own_uid, |_| None)),
            }
            false
        }
    }
}

/// Whether the peer closed the connection without sending a byte: its end of file (or its
/// reset) is all there is to read. Peeked without waiting: a peer that is still there, or
/// that sent something, is not a probe.
fn gone_silently(sock: &tokio::net::TcpStream) -> bool {
    use rustix::net::{recv, RecvFlags};
    let mut byte = [0u8; 1];
    match recv(sock, &mut byte, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
        Ok((0, _)) => true,
        Ok(_) => false,
        Err(e) => e == rustix::io::Errno::CONNRESET,
    }
}

/// The user names of `uid` and `own`, on a blocking thread: the user database may be a
/// directory server (NSS) that takes its time.
async fn names_of(uid: u32, own: u32) -> (Option<String>, Option<String>) {
    tokio::task::spawn_blocking(move || (users::name_of(uid), users::name_of(own))).await.unwrap_or_default()
}
