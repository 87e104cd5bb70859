//! The client side of the control socket, used by `list`, `select` and the per-VM commands.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::protocol::{Request, Response};

/// How long a command waits for the daemon's answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no jdwpmux daemon answers at {path} ({error}); start one with `jdwpmux serve`, or name its socket with --control")]
    NoDaemon { path: PathBuf, error: std::io::Error },
    #[error("the daemon did not answer within {0:?}")]
    Timeout(Duration),
    #[error("talking to the daemon failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the daemon sent something unreadable: {0}")]
    Protocol(String),
}

/// Sends one request and reads one response.
pub async fn request(path: &Path, req: &Request) -> Result<Response, ClientError> {
    request_within(path, req, REQUEST_TIMEOUT).await
}

/// Like `request`, for commands that may take longer (waiting for a GC).
pub async fn request_within(path: &Path, req: &Request, limit: Duration) -> Result<Response, ClientError> {
    let sock = connect(path).await?;
    tokio::time::timeout(limit, exchange(sock, req)).await.map_err(|_| ClientError::Timeout(limit))?
}

async fn connect(path: &Path) -> Result<UnixStream, ClientError> {
    UnixStream::connect(path).await.map_err(|error| ClientError::NoDaemon { path: path.to_path_buf(), error })
}

/// A request answered by a stream of responses (thread updates).
pub struct ResponseStream {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    _wr: tokio::net::unix::OwnedWriteHalf,
}

impl ResponseStream {
    /// The next response; None when the daemon ends the stream.
    pub async fn next(&mut self) -> Result<Option<Response>, ClientError> {
        match self.lines.next_line().await? {
            None => Ok(None),
            Some(line) => serde_json::from_str(&line).map(Some).map_err(|e| ClientError::Protocol(e.to_string())),
        }
    }
}

pub async fn stream(path: &Path, req: &Request) -> Result<ResponseStream, ClientError> {
    let (rd, mut wr) = connect(path).await?.into_split();
    let mut line = serde_json::to_string(req).map_err(|e| ClientError::Protocol(e.to_string()))?;
    line.push('\n');
    wr.write_all(line.as_bytes()).await?;
    Ok(ResponseStream { lines: BufReader::new(rd).lines(), _wr: wr })
}

async fn exchange(sock: UnixStream, req: &Request) -> Result<Response, ClientError> {
    let (rd, mut wr) = sock.into_split();
    let mut line = serde_json::to_string(req).map_err(|e| ClientError::Protocol(e.to_string()))?;
    line.push('\n');
    wr.write_all(line.as_bytes()).await?;
    let mut answer = String::new();
    BufReader::new(rd).read_line(&mut answer).await?;
    if answer.is_empty() {
        return Err(ClientError::Protocol("the daemon closed the connection".into()));
    }
    serde_json::from_str(answer.trim()).map_err(|e| ClientError::Protocol(e.to_string()))
}
