//! The exec subresource over WebSocket (`v5.channel.k8s.io`, then `v4.channel.k8s.io`): each
//! exec runs as `docker exec -i CONTAINER CMD...` in the pod's Docker container. Binary
//! messages whose first byte is the channel: 0 stdin (from the client), 1 stdout, 2 stderr,
//! 3 the `Status` JSON with the exit code at the end; v5's 255 `[255, 0]` says the client
//! closed its stdin.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::server::{not_found, status};
use super::Shared;

pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const CLOSE: u8 = 255;
/// The subprotocols served, preferred first.
pub const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
/// Output chunks queued toward a slow client before the readers wait.
const OUT_QUEUE: usize = 64;

/// What the client asked for in the query.
#[derive(Debug, Default)]
struct ExecQuery {
    command: Vec<String>,
    container: Option<String>,
    stdin: bool,
}

fn parse_query(q: &str) -> ExecQuery {
    let mut e = ExecQuery::default();
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        match &*k {
            "command" => e.command.push(v.into_owned()),
            "container" => e.container = Some(v.into_owned()),
            "stdin" => e.stdin = v == "true" || v == "1",
            _ => {}
        }
    }
    e
}

pub(super) async fn exec(
    State(shared): State<Arc<Shared>>,
    Path((ns, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if shared.exec_forbidden.load(Ordering::Relaxed) {
        let message = format!("pods \"{name}\" is forbidden: User \"{}\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"{ns}\"", super::USER);
        return status(StatusCode::FORBIDDEN, "Forbidden", &message, Some(json!({"name": name, "kind": "pods"})));
    }
    let Some((pod, _)) = shared.store.get(&ns, &name) else { return not_found(&name) };
    let q = parse_query(query.as_deref().unwrap_or(""));
    let container = q.container.clone().or_else(|| pod.containers.first().cloned()).unwrap_or_default();
    if !pod.containers.contains(&container) {
        return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("container {container} is not valid for pod {name}"), None);
    }
    if q.command.is_empty() {
        return status(StatusCode::BAD_REQUEST, "BadRequest", "you must specify at least 1 command", None);
    }
    let Some(docker) = pod.docker.clone().filter(|_| pod.phase == "Running") else {
        return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("container {container} in pod {name} is not running"), None);
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        // SPDY, or no upgrade at all: only WebSocket is served here.
        Err(_) => return status(StatusCode::BAD_REQUEST, "BadRequest", "Upgrade request required (the stand-in serves exec over WebSocket only)", None),
    };
    let stop = shared.stop_rx();
    upgrade.protocols(PROTOCOLS).on_upgrade(move |ws| async move {
        if let Err(e) = run(ws, docker, q, stop).await {
            eprintln!("[kube stand-in] exec into {ns}/{name}: {e:#}");
        }
    })
}

/// Runs the command in the container and relays it until it exits (then its Status on
/// channel 3 and a close), the client leaves, or the server stops (then it is killed).
async fn run(mut ws: WebSocket, docker: String, q: ExecQuery, mut stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let v5 = ws.protocol().and_then(|p| p.to_str().ok()) == Some(PROTOCOLS[0]);
    let mut cmd = tokio::process::Command::from(crate::containers::docker_command());
    cmd.arg("exec");
    if q.stdin {
        cmd.arg("-i");
    }
    cmd.arg(&docker).args(&q.command);
    cmd.stdin(if q.stdin { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(OUT_QUEUE);
    for (channel, pipe) in [(STDOUT, child.stdout.take().map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Send + Unpin>)), (STDERR, child.stderr.take().map(|p| Box::new(p) as _))] {
        let Some(mut pipe) = pipe else { continue };
        let tx = out_tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 32 * 1024];
            loop {
                match pipe.read(&mut buf[1..]).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        buf[0] = channel;
                        if tx.send(buf[..=n].to_vec()).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
    drop(out_tx);
    // Stdin is written by a task of its own, so a command that does not read never stalls
    // the relay; None closes it.
    let (in_tx, mut in_rx) = mpsc::unbounded_channel::<Option<Bytes>>();
    if let Some(mut stdin) = child.stdin.take() {
        tokio::spawn(async move {
            while let Some(Some(data)) = in_rx.recv().await {
                if stdin.write_all(&data).await.is_err() {
                    return;
                }
            }
        });
    }
    loop {
        tokio::select! {
            m = ws.recv() => match m {
                Some(Ok(Message::Binary(b))) => match b.first() {
                    Some(&STDIN) => { let _ = in_tx.send(Some(b.slice(1..))); }
                    Some(&CLOSE) if v5 && b.get(1) == Some(&STDIN) => { let _ = in_tx.send(None); }
                    _ => {}
                },
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Ok(()),
                Some(Ok(_)) => {}
            },
            o = out_rx.recv() => match o {
                Some(chunk) => ws.send(Message::Binary(chunk.into())).await?,
                None => break,
            },
            _ = super::stopped(&mut stop) => return Ok(()),
        }
    }
    let code = child.wait().await?.code().unwrap_or(137);
    let status = if code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
               "message": format!("command terminated with non-zero exit code: error executing command {:?}, exit code {code}", q.command),
               "reason": "NonZeroExitCode",
               "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
    };
    let mut msg = vec![ERROR];
    msg.extend_from_slice(status.to_string().as_bytes());
    ws.send(Message::Binary(msg.into())).await?;
    // A normal closure (1000): kubectl takes any other (1005, no status) as a broken stream.
    let _ = ws.send(Message::Close(Some(CloseFrame { code: close_code::NORMAL, reason: "".into() }))).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_keeps_every_command_word() {
        let q = parse_query("command=sh&command=-c&command=cat%3B+exit+3&container=app&stdin=true&stdout=true");
        assert_eq!(q.command, ["sh", "-c", "cat; exit 3"]);
        assert_eq!(q.container.as_deref(), Some("app"));
        assert!(q.stdin);
    }
}
