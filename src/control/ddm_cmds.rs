//! The daemon's side of the per-VM DDM commands: `threads`, `heap`, `exit`, `features`.

use std::time::Duration;

use tokio::net::unix::OwnedWriteHalf;

use super::protocol::{to_hex, ErrorKind, Request, Response};
use crate::ddm::{Chunk, ChunkType};
use crate::registry::{Registry, VmEntry};
use crate::session::{Completion, Outcome, VmHandle};
use crate::views;

/// Longest wait for the first thread snapshot.
const FIRST_SNAPSHOT: Duration = Duration::from_secs(10);
/// Longest wait for a VM's answer to FEAT.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `exit` waits for a refusal before it reports the request sent (a VM that
/// obeys halts, usually without a reply).
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// Width of the thread table.
const TABLE_WIDTH: usize = 100;
/// Interval limits for thread updates.
const MIN_INTERVAL_MS: u64 = 100;
const MAX_INTERVAL_MS: u64 = 60_000;

fn error(kind: ErrorKind, message: impl Into<String>) -> Response {
    Response::Error { kind, message: message.into() }
}

/// The VM a selector names, if it speaks DDM.
fn ddm_vm(registry: &Registry, selector: &str) -> Result<VmEntry, Box<Response>> {
    let id = registry.resolve(selector).map_err(|e| Box::new(error(ErrorKind::Selector, e.to_string())))?;
    let vm = registry.get(id).ok_or_else(|| Box::new(error(ErrorKind::Vm, "the VM left meanwhile")))?;
    match vm.handle.status().ddm {
        Some(true) => Ok(vm),
        Some(false) => Err(Box::new(error(ErrorKind::Vm, format!("{} does not speak DDM (only Android VMs do; HotSpot does not)", vm.name)))),
        None => Err(Box::new(error(ErrorKind::Vm, format!("{} is not ready yet ({})", vm.name, vm.handle.status().state)))),
    }
}

/// Streams thread tables until the client leaves (or once).
pub(super) async fn threads(wr: &mut OwnedWriteHalf, registry: &Registry, selector: &str, interval_ms: u64, once: bool) {
    let vm = match ddm_vm(registry, selector) {
        Ok(vm) => vm,
        Err(r) => return drop(super::reply::send(wr, &r).await),
    };
    let interval = Duration::from_millis(interval_ms.clamp(MIN_INTERVAL_MS, MAX_INTERVAL_MS));
    let Some(mut rx) = vm.handle.watch_threads(interval).await else {
        return drop(super::reply::send(wr, &error(ErrorKind::Vm, "the VM session ended")).await);
    };
    let mut first = true;
    loop {
        let wait = if first { FIRST_SNAPSHOT } else { interval * 20 };
        let snapshot = match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(Ok(s))) => s,
            Ok(Some(Err(e))) => return drop(super::reply::send(wr, &error(ErrorKind::Vm, e.to_string())).await),
            Ok(None) => return drop(super::reply::send(wr, &error(ErrorKind::Vm, "thread updates stopped (the VM went away?)")).await),
            Err(_) => return drop(super::reply::send(wr, &error(ErrorKind::Vm, format!("no thread status from the VM within {wait:?}"))).await),
        };
        first = false;
        let header = views::threads_header(snapshot.app_name.as_deref(), snapshot.pid, snapshot.threads.len());
        let text = format!("{header}\n{}", views::threads_table(&snapshot.threads, TABLE_WIDTH));
        if super::reply::send(wr, &Response::Text { text }).await.is_err() || once {
            // Dropping `rx` tells the session the viewer left: it turns updates off.
            return;
        }
    }
}

/// `heap`, `exit`, `features`: one request, one answer.
pub(super) async fn one_shot(req: Request, registry: &Registry) -> Response {
    let selector = match &req {
        Request::Heap { selector, .. } | Request::Exit { selector, .. } | Request::Features { selector } => selector.clone(),
        _ => return error(ErrorKind::Request, "not a per-VM command"),
    };
    let vm = match ddm_vm(registry, &selector) {
        Ok(vm) => vm,
        Err(r) => return *r,
    };
    let h = &vm.handle;
    match req {
        // EXIT `u4 status`, the same in the document and today. A VM that obeys halts and
        // drops the connection, usually without a reply; a FAIL or JDWP error is shown.
        Request::Exit { status, .. } => {
            match h.ddm(vec![Chunk::Exit { status }], Vec::new(), Completion::ReplyOrGone, EXIT_WAIT).await {
                Ok(a) => {
                    let how = match a.outcome {
                        Outcome::VmLeft => "; the VM closed its connection",
                        Outcome::Acknowledged => "; the VM acknowledged it",
                        _ => "",
                    };
                    Response::Text { text: format!("sent EXIT {status} to {}{how}\n", vm.name) }
                }
                Err(e) => error(ErrorKind::Vm, e.to_string()),
            }
        }
        // FEAT (empty) is not in the document: a VM that follows it answers an unknown
        // request empty, shown as "no feature list". A FAIL or JDWP error is shown.
        Request::Features { .. } => match h.ddm(vec![Chunk::FeatRequest], vec![ChunkType::FEAT], Completion::ChunksOrEmptyReplies, ANSWER_TIMEOUT).await {
            Ok(a) if a.outcome == Outcome::AnsweredEmpty => Response::Text {
                text: format!("{}: no feature list (the VM answered FEAT empty, as VMs older than the request do)\n", vm.name),
            },
            Ok(a) => {
                let list = a.state.features.unwrap_or_default();
                let mut text = format!("{}: {} features\n", vm.name, list.len());
                for f in list {
                    text.push_str(&format!("  {f}\n"));
                }
                Response::Text { text }
            }
            Err(e) => error(ErrorKind::Vm, e.to_string()),
        },
        Request::Heap { native, gc, map, png, timeout_ms, .. } => heap(h, native, gc, map || png, png, Duration::from_millis(timeout_ms)).await,
        _ => error(ErrorKind::Request, "not a per-VM command"),
    }
}

async fn heap(h: &VmHandle, native: bool, gc: bool, map: bool, png: bool, timeout: Duration) -> Response {
    let reading = match super::heap::read(h, super::heap::HeapAsk { native, gc, map, timeout }).await {
        Ok(r) => r,
        Err(e) => return error(ErrorKind::Vm, e),
    };
    let picture = if png { reading.png() } else { Ok(None) };
    let (png_hex, png_size) = match picture {
        Ok(Some((bytes, size))) => (Some(to_hex(&bytes)), Some(size)),
        Ok(None) => (None, None),
        Err(e) => return error(ErrorKind::Vm, e),
    };
    Response::Heap { text: reading.text(), png_hex, png_size }
}
