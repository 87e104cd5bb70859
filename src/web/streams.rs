//! Server-sent events: the VM list (`/api/events`) and one VM's threads and packets
//! (`/api/vms/{id}/events`).
//!
//! Each stream is fed by a task of its own through a small channel. The task asks the VM
//! for thread updates and keeps its packet summaries only while the stream is open: when the
//! page closes it, the channel closes, the task ends, and with it the subscriptions, so a
//! VM nobody looks at is asked nothing. Sends never wait: a page that reads slowly misses
//! intermediate states and gets the latest one at the next tick.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::time::{Instant, MissedTickBehavior};

use super::json::now_ms;
use super::json;
use super::WebState;
use crate::ddm::ClientData;
use crate::session::ThreadUpdate;
use crate::registry::VmId;

/// How often the thread table is asked for. A session looks at its viewers every 500 ms
/// and asks the VM when one is due; asking for a bit less than that makes every look due,
/// so the table comes twice a second (500 ms exactly would miss every other look).
pub const THREAD_INTERVAL: Duration = Duration::from_millis(400);
/// How often a VM stream sends what is new (threads, packets).
const VM_TICK: Duration = Duration::from_millis(500);
/// How often a VM stream sends the VM's traffic figures (`stats`).
const STATS_TICK: Duration = Duration::from_secs(1);
/// How often the VM list is looked at; it is sent when it changed.
const LIST_TICK: Duration = Duration::from_secs(1);
/// The list is sent at least this often, so rates computed by the page fall to zero.
const LIST_HEARTBEAT: Duration = Duration::from_secs(5);
/// After thread updates stopped (the VM went away, or is not DDM-aware yet), how long
/// before asking again.
const THREADS_RETRY: Duration = Duration::from_secs(2);
/// Events queued for a page.
const STREAM_QUEUE: usize = 8;
/// A comment line this often keeps proxies and browsers from closing an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A stream's feeding end: sends never wait.
struct Feed {
    tx: mpsc::Sender<Event>,
    _permit: OwnedSemaphorePermit,
}

impl Feed {
    /// Sends a named event with JSON data; false when the page is slow or gone.
    fn send(&self, name: &str, data: String) -> bool {
        self.tx.try_send(Event::default().event(name).data(data)).is_ok()
    }
}

/// Opens a stream fed by `feed`, or 503 when [`super::MAX_STREAMS`] are open.
fn open<F, Fut>(st: &Arc<WebState>, feed: F) -> Response
where
    F: FnOnce(Feed) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Ok(permit) = st.streams.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "jdwpmux: too many event streams open\n").into_response();
    };
    let (tx, rx) = mpsc::channel(STREAM_QUEUE);
    let cancel = st.cancel.clone();
    let fut = feed(Feed { tx, _permit: permit });
    st.tracker.spawn(async move {
        tokio::select! {
            _ = fut => {}
            _ = cancel.cancelled() => {}
        }
    });
    Sse::new(events(rx)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response()
}

fn events(rx: mpsc::Receiver<Event>) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) })
}

/// `vms` events: `{"now_ms": ..., "vms": [...]}`, as `GET /api/vms`, when the list changed.
pub async fn vms(State(st): State<Arc<WebState>>) -> Response {
    let state = st.clone();
    open(&st, move |feed| list_feed(state, feed))
}

async fn list_feed(st: Arc<WebState>, feed: Feed) {
    let mut tick = tokio::time::interval(LIST_TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let (mut last, mut sent_at) = (String::new(), None::<Instant>);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = feed.tx.closed() => return,
        }
        let (Ok(vms), Ok(hosts)) = (serde_json::to_string(&st.registry.list()), serde_json::to_string(&st.registry.hosts.rows())) else { continue };
        let list = format!("\"vms\":{vms},\"hosts\":{hosts}");
        let due = sent_at.is_none_or(|t| t.elapsed() >= LIST_HEARTBEAT);
        if (list != last || due) && feed.send("vms", format!("{{\"now_ms\":{},{list}}}", now_ms())) {
            last = list;
            sent_at = Some(Instant::now());
        }
    }
}

/// `threads` events (a thread table, about twice a second, DDM-aware VMs only), `packets`
/// events (the summaries new since the last one), `stats` events (the traffic figures, as
/// `GET /api/vms/{id}/stats`, every second), and `notice` events (why something is not
/// shown).
pub async fn vm(State(st): State<Arc<WebState>>, Path(id): Path<VmId>) -> Response {
    if st.registry.get(id).is_none() {
        return (StatusCode::NOT_FOUND, axum::Json(serde_json::json!({ "error": format!("no VM with id {id}") }))).into_response();
    }
    let state = st.clone();
    open(&st, move |feed| vm_feed(state, id, feed))
}

/// What a VM stream holds of its VM.
#[derive(Default)]
struct Watch {
    handle: Option<crate::session::VmHandle>,
    ring: Option<Arc<crate::session::recent::RecentPackets>>,
    next_seq: u64,
    threads: Option<mpsc::Receiver<ThreadUpdate>>,
    threads_retry: Option<Instant>,
    /// When the traffic figures are due next.
    stats_due: Option<Instant>,
    latest: Option<ClientData>,
    /// Why there are no thread updates ("" while there are), and what the page was told.
    notice: String,
    told: Option<String>,
}

async fn next_snapshot(rx: &mut Option<mpsc::Receiver<ThreadUpdate>>) -> Option<ThreadUpdate> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn vm_feed(st: Arc<WebState>, id: VmId, feed: Feed) {
    let mut w = Watch::default();
    let mut tick = tokio::time::interval(VM_TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            s = next_snapshot(&mut w.threads) => {
                match s {
                    Some(Ok(s)) => {
                        w.latest = Some(s);
                        w.notice.clear();
                    }
                    // The session says why no snapshots will come (the VM refused THST...).
                    Some(Err(e)) => {
                        w.notice = e.to_string();
                        w.threads = None;
                        w.threads_retry = Some(Instant::now() + THREADS_RETRY);
                    }
                    None => {
                        w.threads = None;
                        w.threads_retry = Some(Instant::now() + THREADS_RETRY);
                    }
                }
                continue;
            }
            _ = feed.tx.closed() => return,
        }
        let Some(vm) = st.registry.get(id) else {
            feed.send("notice", serde_json::json!({ "text": "the VM left" }).to_string());
            return;
        };
        // An app that came back with a new pid has a new session: subscribe again.
        if !w.handle.as_ref().is_some_and(|h| h.same_session(&vm.handle)) {
            w = Watch { handle: Some(vm.handle.clone()), ring: vm.handle.watch_packets().await, ..Watch::default() };
        }
        watch_threads(&mut w, &vm).await;
        if w.told.as_deref() != Some(w.notice.as_str()) && feed.send("notice", serde_json::json!({ "text": w.notice }).to_string()) {
            w.told = Some(w.notice.clone());
        }
        if let Some(s) = w.latest.take() {
            if let Ok(data) = serde_json::to_string(&json::Threads::of(&s)) {
                feed.send("threads", data);
            }
        }
        if w.stats_due.is_none_or(|t| Instant::now() >= t) {
            w.stats_due = Some(Instant::now() + STATS_TICK);
            let report = crate::control::stats_cmd::vm_report(&vm).await;
            if let Some(data) = report.and_then(|r| serde_json::to_string(&r).ok()) {
                feed.send("stats", data);
            }
        }
        if let Some(ring) = &w.ring {
            let new = ring.since(w.next_seq);
            if !new.is_empty() {
                let p = json::Packets::of(&new, w.next_seq);
                if let Ok(data) = serde_json::to_string(&p) {
                    if feed.send("packets", data) {
                        w.next_seq = p.next;
                    }
                }
            }
        }
    }
}

/// Starts thread updates for a DDM-aware VM, or says why there are none.
async fn watch_threads(w: &mut Watch, vm: &crate::registry::VmEntry) {
    if w.threads.is_some() || w.threads_retry.is_some_and(|t| Instant::now() < t) {
        return;
    }
    let status = vm.handle.status();
    w.notice = match status.ddm {
        Some(true) => match vm.handle.watch_threads(THREAD_INTERVAL).await {
            // The notice stays until the first snapshot, so a VM that refuses again at
            // once does not make it blink.
            Some(rx) => {
                w.threads = Some(rx);
                return;
            }
            None => "the VM session ended".into(),
        },
        Some(false) => "not DDM-aware (HotSpot, or DDM off): threads and heap need DDM".into(),
        None => format!("not ready yet ({})", status.state),
    };
    w.threads_retry = Some(Instant::now() + THREADS_RETRY);
}
