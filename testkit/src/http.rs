//! A small HTTP/1.1 client for tests of the monitor page: every header under the test's
//! control (a wrong Host, a foreign Origin), chunked bodies decoded, and server-sent event
//! streams read event by event.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Longest a test waits for one answer.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest head or body a test reads.
const MAX_READ: usize = 16 << 20;

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One request. `Host: ADDR` is sent unless `headers` has a Host of its own.
pub async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Response> {
    tokio::time::timeout(HTTP_TIMEOUT, async {
        let mut s = TcpStream::connect(addr).await.context("connect")?;
        s.write_all(&head(addr, method, path, headers, body.len())).await?;
        s.write_all(body).await?;
        let mut r = BufReader::new(s);
        let (status, headers) = read_head(&mut r).await?;
        let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
        let body = if chunked {
            let mut body = Vec::new();
            while let Some(chunk) = read_chunk(&mut r).await? {
                body.extend_from_slice(&chunk);
            }
            body
        } else {
            let length = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse::<u64>().ok());
            let mut body = Vec::new();
            // Read to the length given (a server may keep the connection open), else to EOF.
            r.take(length.unwrap_or(MAX_READ as u64).min(MAX_READ as u64)).read_to_end(&mut body).await?;
            body
        };
        Ok(Response { status, headers, body })
    })
    .await
    .context("HTTP request timed out")?
}

/// `GET path` with these headers.
pub async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Response> {
    request(addr, "GET", path, headers, &[]).await
}

fn head(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body_len: usize) -> Vec<u8> {
    let mut h = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        h.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    if body_len > 0 || method == "POST" {
        h.push_str(&format!("Content-Length: {body_len}\r\n"));
    }
    h.push_str("Connection: close\r\n\r\n");
    h.into_bytes()
}

async fn read_head(r: &mut BufReader<TcpStream>) -> Result<(u16, Vec<(String, String)>)> {
    let mut line = String::new();
    r.read_line(&mut line).await?;
    let status: u16 = line.split_whitespace().nth(1).context("no status line")?.parse().context("status")?;
    let mut headers = Vec::new();
    let mut total = 0;
    loop {
        line.clear();
        let n = r.read_line(&mut line).await?;
        total += n;
        if n == 0 || total > MAX_READ {
            bail!("the head did not end");
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Ok((status, headers));
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
}

/// One chunk of a chunked body; None at the end.
async fn read_chunk(r: &mut BufReader<TcpStream>) -> Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if r.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16).context("chunk size")?;
    if size > MAX_READ {
        bail!("chunk of {size} bytes");
    }
    let mut chunk = vec![0; size + 2];
    r.read_exact(&mut chunk).await?;
    chunk.truncate(size);
    Ok((size > 0).then_some(chunk))
}

/// A server-sent event: its name and data.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: String,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.data))
    }
}

/// An open event stream; dropping it closes the connection.
pub struct EventStream {
    r: BufReader<TcpStream>,
    pending: String,
}

/// Opens `GET path` as an event stream (status 200 and text/event-stream, else an error
/// with the answer).
pub async fn events(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<EventStream> {
    let mut s = TcpStream::connect(addr).await.context("connect")?;
    let mut h: Vec<(&str, &str)> = headers.to_vec();
    h.push(("Accept", "text/event-stream"));
    s.write_all(&head(addr, "GET", path, &h, 0)).await?;
    let mut r = BufReader::new(s);
    let (status, headers) = tokio::time::timeout(HTTP_TIMEOUT, read_head(&mut r)).await.context("no answer")??;
    let ct = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-type")).map(|(_, v)| v.clone()).unwrap_or_default();
    if status != 200 || !ct.starts_with("text/event-stream") {
        bail!("not an event stream: {status} {ct}");
    }
    Ok(EventStream { r, pending: String::new() })
}

impl EventStream {
    /// The next event (comments and keep-alives skipped), within `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Result<Event> {
        tokio::time::timeout(timeout, async {
            loop {
                if let Some(end) = self.pending.find("\n\n") {
                    let block: String = self.pending.drain(..end + 2).collect();
                    let (mut name, mut data) = (String::from("message"), Vec::new());
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            name = v.trim().to_string();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                        }
                    }
                    if !data.is_empty() {
                        return Ok(Event { name, data: data.join("\n") });
                    }
                    continue;
                }
                match read_chunk(&mut self.r).await? {
                    Some(c) => self.pending.push_str(&String::from_utf8_lossy(&c)),
                    None => bail!("the stream ended"),
                }
            }
        })
        .await
        .context("no event in time")?
    }

    /// The next event named `name`, skipping others, within `timeout`.
    pub async fn next_named(&mut self, name: &str, timeout: Duration) -> Result<Event> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let e = self.next(left).await?;
            if e.name == name {
                return Ok(e);
            }
        }
    }
}
