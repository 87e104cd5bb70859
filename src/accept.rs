//! The accept loop shared by the debugger ports and the control socket.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Pause after a failed accept (out of file descriptors and the like), so the loop never spins.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Accepts connections until `cancel`, handing each to `on_conn`. A failed accept is
/// logged (with `what`) and retried after a pause.
pub(crate) async fn accept_until<S, A, F>(
    mut accept: impl FnMut() -> F,
    cancel: &CancellationToken,
    what: &'static str,
    mut on_conn: impl FnMut(S, A),
) where
    F: Future<Output = std::io::Result<(S, A)>>,
{
    loop {
        let accepted = tokio::select! {
            r = accept() => r,
            _ = cancel.cancelled() => return,
        };
        match accepted {
            Ok((sock, peer)) => on_conn(sock, peer),
            Err(e) => {
                warn!(error = %e, "{what} accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hands_over_connections_retries_failures_and_stops_on_cancel() {
        let cancel = CancellationToken::new();
        let mut calls = 0;
        let mut got = Vec::new();
        let stop = cancel.clone();
        accept_until(
            || {
                calls += 1;
                let n = calls;
                let stop = stop.clone();
                async move {
                    match n {
                        1 | 3 => Ok((n, "peer")),
                        2 => Err(std::io::Error::other("EMFILE")),
                        _ => {
                            stop.cancel();
                            std::future::pending().await
                        }
                    }
                }
            },
            &cancel,
            "test",
            |s, _| got.push(s),
        )
        .await;
        assert_eq!(got, [1, 3]);
    }
}
