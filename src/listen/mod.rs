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
use tracing::{info, Instrument};

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
                info!(%peer, conn, "debugger connection");
                let span = tracing::info_span!("debugger", conn, %peer);
                tasks.spawn(
                    debugger::serve(sock, peer, conn, target.clone(), opts.handshake_timeout, opts.capture.clone(), cancel.clone())
                        .instrument(span),
                );
            })
            .await;
        }
        .instrument(span),
    );
}
