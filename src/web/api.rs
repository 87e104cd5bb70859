//! The JSON API under `/api/`: the VM list (`jdwpmux list --json`), a VM's threads and heap
//! (`jdwpmux threads --once`, `jdwpmux heap`), its recent packets, and the three things that
//! change something, all POST: make a VM current, GC and draw the heap map, exit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use tracing::info;

use super::json;
use super::WebState;
use crate::control::heap::{self, HeapAsk};
use crate::control::stats_cmd;
use crate::ddm::Chunk;
use crate::registry::{VmEntry, VmId, VmInfo};
use crate::session::recent::RecentPackets;
use crate::session::{Completion, Outcome, VmHandle};

/// Longest wait for the first thread snapshot.
const FIRST_SNAPSHOT: Duration = Duration::from_secs(10);
/// How long "GC and refresh" waits for the heap map.
const GC_TIMEOUT: Duration = Duration::from_secs(30);
/// How long EXIT waits for a refusal before it reports the request sent (a VM that obeys
/// halts, usually without a reply).
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Heap pictures kept (one per VM, the oldest dropped past this).
pub const MAX_PICTURES: usize = 16;
/// A VM's packet summaries are kept this long after the last `GET .../packets`.
pub const PACKETS_LEASE: Duration = Duration::from_secs(30);

/// An error answer: `{"error": "..."}` with a status.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

fn entry(st: &WebState, id: VmId) -> Result<VmEntry, ApiError> {
    st.registry.get(id).ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no VM with id {id}")))
}

/// The VM, if it speaks DDM now (as `jdwpmux threads` and `heap` require).
fn ddm_entry(st: &WebState, id: VmId) -> Result<VmEntry, ApiError> {
    let vm = entry(st, id)?;
    let status = vm.handle.status();
    match status.ddm {
        Some(true) => Ok(vm),
        Some(false) => Err(ApiError(StatusCode::CONFLICT, format!("{} does not speak DDM (only Android VMs do; HotSpot does not)", vm.name))),
        None => Err(ApiError(StatusCode::CONFLICT, format!("{} is not ready yet ({})", vm.name, status.state))),
    }
}

pub async fn vms(State(st): State<Arc<WebState>>) -> Json<Vec<VmInfo>> {
    Json(st.registry.list())
}

/// Each `--ssh` host's row, as `jdwpmux list --hosts --json`.
pub async fn hosts(State(st): State<Arc<WebState>>) -> Json<Vec<crate::remote::status::HostRow>> {
    Json(st.registry.hosts.rows())
}

pub async fn vm(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<VmInfo>, ApiError> {
    let found = st.registry.list().into_iter().find(|v| v.id == id);
    found.map(Json).ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no VM with id {id} listed")))
}

/// One thread snapshot, as `jdwpmux threads --once`: updates go on while it is awaited and
/// off again after.
pub async fn threads(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<json::Threads>, ApiError> {
    let vm = ddm_entry(&st, id)?;
    let gone = || ApiError(StatusCode::BAD_GATEWAY, "thread updates stopped (the VM went away?)".into());
    let mut rx = vm.handle.watch_threads(super::streams::THREAD_INTERVAL).await.ok_or_else(gone)?;
    match tokio::time::timeout(FIRST_SNAPSHOT, rx.recv()).await {
        Ok(Some(Ok(snapshot))) => Ok(Json(json::Threads::of(&snapshot))),
        Ok(Some(Err(e))) => Err(ApiError(StatusCode::BAD_GATEWAY, e.to_string())),
        Ok(None) => Err(gone()),
        Err(_) => Err(ApiError(StatusCode::GATEWAY_TIMEOUT, format!("no thread status from the VM within {FIRST_SNAPSHOT:?}"))),
    }
}

/// A heap picture drawn for a VM.
struct Stored {
    png: bytes::Bytes,
    width: u32,
    height: u32,
    taken_ms: u64,
}

/// The last heap picture per VM, bounded by [`MAX_PICTURES`].
#[derive(Default)]
pub struct Pictures(Mutex<HashMap<VmId, Arc<Stored>>>);

impl Pictures {
    fn put(&self, id: VmId, s: Stored) {
        let Ok(mut m) = self.0.lock() else { return };
        if m.len() >= MAX_PICTURES && !m.contains_key(&id) {
            if let Some(oldest) = m.iter().min_by_key(|(_, p)| p.taken_ms).map(|(k, _)| *k) {
                m.remove(&oldest);
            }
        }
        m.insert(id, Arc::new(s));
    }

    fn get(&self, id: VmId) -> Option<Arc<Stored>> {
        self.0.lock().ok()?.get(&id).cloned()
    }

    fn describe(&self, id: VmId) -> Option<json::Picture> {
        self.get(id).map(|p| json::Picture {
            url: format!("/api/vms/{id}/heap.png?t={}", p.taken_ms),
            width: p.width,
            height: p.height,
            taken_ms: p.taken_ms,
        })
    }
}

async fn read_heap(st: &WebState, vm: &VmEntry, ask: HeapAsk) -> Result<Json<json::Heap>, ApiError> {
    let reading = heap::read(&vm.handle, ask).await.map_err(|e| ApiError(StatusCode::BAD_GATEWAY, e))?;
    if ask.map {
        match reading.png() {
            Ok(Some((png, (width, height)))) => {
                st.pictures.put(vm.id, Stored { png: png.into(), width, height, taken_ms: json::now_ms() });
            }
            Ok(None) => return Err(ApiError(StatusCode::BAD_GATEWAY, "the VM sent no heap map to draw".into())),
            Err(e) => return Err(ApiError(StatusCode::INTERNAL_SERVER_ERROR, e)),
        }
    }
    Ok(Json(json::Heap { heaps: reading.infos.clone(), text: reading.text(), picture: st.pictures.describe(vm.id) }))
}

/// The heap summary now (HPIF), and the last picture drawn, if any.
pub async fn heap(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<json::Heap>, ApiError> {
    let vm = ddm_entry(&st, id)?;
    read_heap(&st, &vm, HeapAsk { native: false, gc: false, map: false, timeout: GC_TIMEOUT }).await
}

/// "GC and refresh": a GC, the heap map it sends, drawn; then the summary.
pub async fn gc(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<json::Heap>, ApiError> {
    let vm = ddm_entry(&st, id)?;
    info!(vm = %vm.name, "GC and heap map asked for from the web monitor");
    read_heap(&st, &vm, HeapAsk { native: false, gc: true, map: true, timeout: GC_TIMEOUT }).await
}

pub async fn heap_png(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Response, ApiError> {
    let p = st.pictures.get(id).ok_or_else(|| ApiError(StatusCode::NOT_FOUND, "no heap map drawn yet: POST .../gc first".into()))?;
    Ok(([(header::CONTENT_TYPE, "image/png")], p.png.clone()).into_response())
}

/// The VM's traffic figures since its session started, as `jdwpmux stats VM --json` gives
/// them for one VM: per debugger (and the proxy itself) and command, counts, bytes and
/// reply latency percentiles.
pub async fn stats(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<crate::stats::VmReport>, ApiError> {
    let vm = entry(&st, id)?;
    let report = stats_cmd::vm_report(&vm).await;
    report.map(Json).ok_or_else(|| ApiError(StatusCode::BAD_GATEWAY, format!("{} did not answer (its session ended?)", vm.name)))
}

/// A VM's packet summaries held for scripts that poll `GET .../packets`.
struct Lease {
    ring: Arc<RecentPackets>,
    handle: VmHandle,
    last: Instant,
}

#[derive(Default)]
pub struct Leases(Mutex<HashMap<VmId, Lease>>);

impl Leases {
    /// The ring held for `vm`, its lease renewed, if it is still that session's.
    fn renew(&self, vm: &VmEntry) -> Option<Arc<RecentPackets>> {
        let mut m = self.0.lock().ok()?;
        let l = m.get_mut(&vm.id).filter(|l| l.handle.same_session(&vm.handle))?;
        l.last = Instant::now();
        Some(l.ring.clone())
    }

    /// Drops the lease of `id` once it is older than [`PACKETS_LEASE`]; true when it did.
    fn expire(&self, id: VmId) -> bool {
        let Ok(mut m) = self.0.lock() else { return true };
        match m.get(&id) {
            Some(l) if l.last.elapsed() < PACKETS_LEASE => false,
            _ => {
                m.remove(&id);
                true
            }
        }
    }
}

#[derive(Deserialize)]
pub struct Since {
    #[serde(default)]
    since: u64,
}

/// The VM's last packets with `seq >= since`. The first call starts keeping them; they are
/// kept while calls come at least every [`PACKETS_LEASE`].
pub async fn packets(State(st): State<Arc<WebState>>, Path(id): Path<VmId>, Query(q): Query<Since>) -> Result<Response, ApiError> {
    let vm = entry(&st, id)?;
    let ring = match st.leases.renew(&vm) {
        Some(r) => r,
        None => {
            let ring = vm.handle.watch_packets().await.ok_or_else(|| ApiError(StatusCode::BAD_GATEWAY, "the VM session ended".into()))?;
            if let Ok(mut m) = st.leases.0.lock() {
                m.insert(id, Lease { ring: ring.clone(), handle: vm.handle.clone(), last: Instant::now() });
            }
            let (state, cancel) = (st.clone(), st.cancel.clone());
            st.tracker.spawn(async move {
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(PACKETS_LEASE / 2) => {}
                        _ = cancel.cancelled() => return,
                    }
                    if state.leases.expire(id) {
                        return;
                    }
                }
            });
            ring
        }
    };
    let list = ring.since(q.since);
    Ok(Json(json::Packets::of(&list, q.since)).into_response())
}

/// Makes the VM the current one, as `jdwpmux select` does: by its debugger port, which is
/// its own for the daemon's lifetime (by its name while the port is not bound).
pub async fn select(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Result<Json<VmInfo>, ApiError> {
    let vm = entry(&st, id)?;
    let selector = vm.port.map_or_else(|| vm.name.clone(), |p| format!(":{p}"));
    let conflict = |why: String| ApiError(StatusCode::CONFLICT, format!("cannot make {} current: {why}", vm.name));
    match st.registry.resolve(&selector) {
        Ok(found) if found == id => {}
        Ok(_) => return Err(conflict(format!("{selector} names another VM"))),
        Err(e) => return Err(conflict(e.to_string())),
    }
    st.registry.select(&selector).map_err(|e| conflict(e.to_string()))?;
    info!(selector = %selector, vm = %vm.name, "current VM selected from the web monitor");
    let listed = st.registry.list().into_iter().find(|v| v.id == id);
    listed.map(Json).ok_or_else(|| conflict("the VM left meanwhile".into()))
}

#[derive(Deserialize)]
pub struct ExitBody {
    status: i32,
}

/// Asks a DDM-aware VM to exit (DDM EXIT), as `jdwpmux exit`.
pub async fn exit(State(st): State<Arc<WebState>>, Path(id): Path<VmId>, Json(body): Json<ExitBody>) -> Result<Json<serde_json::Value>, ApiError> {
    let vm = ddm_entry(&st, id)?;
    info!(vm = %vm.name, status = body.status, "EXIT asked for from the web monitor");
    // A VM that obeys halts and drops the connection, usually without a reply; only a
    // refusal (FAIL or a JDWP error) is an error.
    let answer = vm
        .handle
        .ddm(vec![Chunk::Exit { status: body.status }], Vec::new(), Completion::ReplyOrGone, EXIT_TIMEOUT)
        .await
        .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, e.to_string()))?;
    let outcome = match answer.outcome {
        Outcome::VmLeft => "vm_left",
        Outcome::Acknowledged => "acknowledged",
        _ => "no_answer",
    };
    Ok(Json(serde_json::json!({ "sent": format!("EXIT {}", body.status), "outcome": outcome })))
}
