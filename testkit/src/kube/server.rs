//! The stand-in's HTTP side: the routes kubectl uses (legacy discovery, pods list, watch and
//! get, the exec subresource), the bearer token check, and Status answers for errors.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, watch};

use super::exec::exec;
use super::pods::Selector;
use super::Shared;

/// Lines a watch response may have queued for a slow client before it is ended.
const WATCH_LINES: usize = 256;

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api", get(api_versions))
        .route("/apis", get(api_groups))
        .route("/api/v1", get(api_resources))
        .route("/api/v1/pods", get(all_pods))
        .route("/api/v1/namespaces/{ns}/pods", get(pods))
        .route("/api/v1/namespaces/{ns}/pods/{name}", get(pod))
        // GET is the WebSocket exec; POST is the SPDY one kubectl falls back to when the
        // WebSocket upgrade is refused (a 403 is answered to both).
        .route("/api/v1/namespaces/{ns}/pods/{name}/exec", get(exec).post(exec))
        .fallback(|| async { status(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource", None) })
        .layer(axum::middleware::from_fn_with_state(shared.clone(), auth))
        .with_state(shared)
}

/// A `Status` answer, as the API server gives for errors (kubectl prints its message).
pub(super) fn status(code: StatusCode, reason: &str, message: &str, details: Option<Value>) -> Response {
    let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": message, "reason": reason, "code": code.as_u16()});
    if let Some(d) = details {
        body["details"] = d;
    }
    (code, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn json_ok(v: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// Records each request; one with another token than the kubeconfig's is answered 401, as a
/// real server does. kubectl sends no token over plain HTTP (client-go keeps bearer tokens
/// for TLS), so a request without one is served as the kubeconfig's user.
async fn auth(State(shared): State<Arc<Shared>>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let token = req.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or("").to_string());
    shared.requests.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{} {}{}", req.method(), req.uri(), if token.is_some() { " (token)" } else { "" }));
    if token.is_some_and(|t| t != format!("Bearer {}", super::TOKEN)) {
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized", None);
    }
    next.run(req).await
}

async fn api_versions(State(shared): State<Arc<Shared>>) -> Response {
    let port = shared.port.load(Ordering::Relaxed);
    json_ok(json!({"kind": "APIVersions", "versions": ["v1"],
                   "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{port}")}]}))
}

async fn api_groups() -> Response {
    json_ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": []}))
}

async fn api_resources() -> Response {
    json_ok(json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
         "verbs": ["get", "list", "watch"], "shortNames": ["po"], "categories": ["all"]},
        {"name": "pods/exec", "singularName": "", "namespaced": true, "kind": "PodExecOptions", "verbs": ["create", "get"]},
    ]}))
}

async fn all_pods(State(shared): State<Arc<Shared>>, Query(q): Query<HashMap<String, String>>) -> Response {
    list_or_watch(&shared, None, &q)
}

async fn pods(State(shared): State<Arc<Shared>>, Path(ns): Path<String>, Query(q): Query<HashMap<String, String>>) -> Response {
    list_or_watch(&shared, Some(ns), &q)
}

fn list_or_watch(shared: &Arc<Shared>, ns: Option<String>, q: &HashMap<String, String>) -> Response {
    let selector = Selector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""));
    if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
        let from = q.get("resourceVersion").and_then(|v| v.parse::<u64>().ok()).filter(|v| *v > 0);
        return watch_response(shared, ns, selector, from);
    }
    let (pods, rv) = shared.store.list(ns.as_deref(), &selector);
    for (ns, name) in std::mem::take(&mut *shared.after_list.lock().unwrap_or_else(|e| e.into_inner())) {
        shared.store.delete(&ns, &name);
    }
    let items: Vec<Value> = pods.iter().map(|(p, rv)| p.to_json(*rv)).collect();
    json_ok(json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()}, "items": items}))
}

/// A watch: newline-separated events, the first ones at once, then each change as it is
/// made, until the client leaves or the server stops.
fn watch_response(shared: &Arc<Shared>, ns: Option<String>, selector: Selector, from: Option<u64>) -> Response {
    let (first, mut rx) = shared.store.watch(from);
    let mut stop = shared.stop_rx();
    let (tx, lines) = mpsc::channel::<Bytes>(WATCH_LINES);
    let wanted = move |e: &super::pods::Event| ns.as_deref().is_none_or(|n| e.pod.namespace == n) && selector.matches(&e.pod.labels);
    tokio::spawn(async move {
        for e in first.iter().filter(|e| wanted(e)) {
            if tx.send(Bytes::from(e.line())).await.is_err() {
                return;
            }
        }
        loop {
            tokio::select! {
                e = rx.recv() => match e {
                    Ok(e) if wanted(&e) => {
                        if tx.send(Bytes::from(e.line())).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    // Lagged or closed: the watch ends, as a real one does; the client watches again.
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tx.closed() => return,
                _ = super::stopped(&mut stop) => return,
            }
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(Body::from_stream(Lines(lines)))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A receiver of lines as a body stream.
struct Lines(mpsc::Receiver<Bytes>);

impl futures_core::Stream for Lines {
    type Item = Result<Bytes, std::convert::Infallible>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|l| l.map(Ok))
    }
}

async fn pod(State(shared): State<Arc<Shared>>, Path((ns, name)): Path<(String, String)>) -> Response {
    match shared.store.get(&ns, &name) {
        Some((p, rv)) => json_ok(p.to_json(rv)),
        None => not_found(&name),
    }
}

pub(super) fn not_found(name: &str) -> Response {
    status(StatusCode::NOT_FOUND, "NotFound", &format!("pods \"{name}\" not found"), Some(json!({"name": name, "kind": "pods"})))
}

impl Shared {
    pub(super) fn stop_rx(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }
}
