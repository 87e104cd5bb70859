//! The daemon's side of the control socket.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn, Instrument};

use crate::private_folder::{self as path_check, AtPath, FolderError};
use super::reply::send;
pub use super::reply::CONTROL_WRITE_TIMEOUT;
use super::protocol::{parse_request, ErrorKind, Request, Response, MAX_REQUEST_LINE};
use crate::registry::{Registry, SelectError};


/// How long a client has to send its request line.
pub const CONTROL_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(transparent)]
    Folder(#[from] FolderError),
    #[error("another jdwpmux daemon already answers on {0} (use --control to pick another path)")]
    InUse(PathBuf),
    #[error("cannot listen on the control socket {path}: {source}")]
    Bind { path: PathBuf, source: std::io::Error },
}

/// Binds the control socket (owner-only) and serves it until cancelled. The folder and
/// whatever is at the path are checked first (see `path_check`): nothing of another user,
/// and nothing that is not a socket, is used or removed.
pub async fn start(path: &Path, registry: Arc<Registry>, cancel: CancellationToken, tracker: &TaskTracker) -> Result<(), ControlError> {
    if let Some(dir) = path.parent() {
        path_check::prepare_folder(dir)?;
    }
    if path_check::inspect(path)? == AtPath::OwnSocket {
        // A live daemon answers; a stale socket from a crashed one is replaced.
        if UnixStream::connect(path).await.is_ok() {
            return Err(ControlError::InUse(path.into()));
        }
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path).map_err(|source| ControlError::Bind { path: path.into(), source })?;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    info!("control socket at {}", path.display());
    let path = path.to_path_buf();
    let own = path_check::own_uid();
    let tasks = tracker.clone();
    tracker.spawn(
        async move {
            let l = &listener;
            crate::accept::accept_until(|| l.accept(), &cancel, "control", |sock, _| {
                // File modes keep other users out; this holds even if they were loosened.
                match sock.peer_cred() {
                    Ok(cred) if path_check::peer_allowed(cred.uid(), own) => {
                        tasks.spawn(serve_one(sock, registry.clone()));
                    }
                    Ok(cred) => warn!(
                        uid = cred.uid(),
                        pid = cred.pid(),
                        "refused a control client: uid {} is not the daemon's uid {own}",
                        cred.uid()
                    ),
                    Err(e) => warn!(error = %e, "refused a control client: its uid cannot be read"),
                }
            })
            .await;
            let _ = std::fs::remove_file(&path);
        }
        .instrument(tracing::info_span!("control")),
    );
    Ok(())
}

async fn serve_one(sock: UnixStream, registry: Arc<Registry>) {
    let (rd, mut wr) = sock.into_split();
    let mut line = String::new();
    let mut rd = BufReader::new(rd).take(MAX_REQUEST_LINE as u64);
    let Ok(read) = tokio::time::timeout(CONTROL_READ_TIMEOUT, rd.read_line(&mut line)).await else {
        return info!("control client sent no request within {CONTROL_READ_TIMEOUT:?} (CONTROL_READ_TIMEOUT): dropped");
    };
    let req = match read {
        Ok(0) => return,
        Ok(_) => match parse_request(&line) {
            Ok(req) => req,
            Err(message) => {
                debug!("{message}");
                let _ = send(&mut wr, &Response::Error { kind: ErrorKind::Request, message }).await;
                return;
            }
        },
        Err(e) => return debug!(error = %e, "control read failed"),
    };
    match req {
        Request::List | Request::Select { .. } => {
            let _ = send(&mut wr, &handle(req, &registry)).await;
        }
        Request::Threads { selector, interval_ms, once } => {
            super::ddm_cmds::threads(&mut wr, &registry, &selector, interval_ms, once).await;
        }
        Request::Stats { selector } => {
            let _ = send(&mut wr, &super::stats_cmd::stats(&registry, selector.as_deref()).await).await;
        }
        other => {
            let r = super::ddm_cmds::one_shot(other, &registry).await;
            let _ = send(&mut wr, &r).await;
        }
    }
}


use tokio::io::AsyncReadExt;

fn handle(req: Request, registry: &Registry) -> Response {
    match req {
        Request::List => {
            let (current_port, no_current) = registry.current_port_info();
            Response::Vms { vms: registry.list(), hosts: registry.hosts.rows(), current_port, no_current }
        }
        Request::Select { selector } => match registry.select(&selector) {
            Ok(id) => {
                let vm = registry.list().into_iter().find(|v| v.id == id);
                match vm {
                    Some(vm) => {
                        info!(selector = %selector, vm = %vm.place(), "current VM selected");
                        Response::Selected { vm: Box::new(vm) }
                    }
                    None => Response::Error { kind: ErrorKind::Vm, message: "the VM left meanwhile".into() },
                }
            }
            Err(e @ (SelectError::Unknown { .. } | SelectError::Ambiguous { .. } | SelectError::Unreachable { .. })) => {
                Response::Error { kind: ErrorKind::Selector, message: e.to_string() }
            }
        },
        _ => Response::Error { kind: ErrorKind::Request, message: "not a one-line request".into() },
    }
}
