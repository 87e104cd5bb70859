//! A reply written to a control client, under a timeout: a client that does not read is
//! dropped, never waited on. Used by the server and by the commands that stream replies.

use tokio::io::AsyncWriteExt;
use tracing::info;

use super::protocol::Response;

/// How long one reply may wait for a client to read it before the client is dropped (a
/// client that asks for live updates and stops reading must not hold its task and its VM's
/// thread updates forever).
pub const CONTROL_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Writes one response line; an error means the client left, or did not read it within
/// `CONTROL_WRITE_TIMEOUT` (it is then dropped: its task and what it watches end).
pub(super) async fn send(wr: &mut tokio::net::unix::OwnedWriteHalf, r: &Response) -> std::io::Result<()> {
    let mut text = serde_json::to_string(r).map_err(std::io::Error::other)?;
    text.push('\n');
    match tokio::time::timeout(CONTROL_WRITE_TIMEOUT, wr.write_all(text.as_bytes())).await {
        Ok(r) => r,
        Err(_) => {
            info!("control client not reading: a reply waited {CONTROL_WRITE_TIMEOUT:?} (CONTROL_WRITE_TIMEOUT); dropped");
            Err(std::io::ErrorKind::TimedOut.into())
        }
    }
}
