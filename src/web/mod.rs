//! The live monitor page (`serve --web`): every VM and its debuggers, and for the VM a user
//! picks its threads, heap and traffic, in a browser, with a JSON API under `/api/` that
//! scripts can use too.
//!
//! It reads the same state as `jdwpmux list`, `threads` and `heap` (the registry and the
//! sessions' handles) and polls nothing from a VM nobody looks at: thread updates and the
//! packet summaries of a VM run only while a page's stream for that VM is open, and heap
//! requests only when asked for.
//!
//! - `guard`: the token, Host and origin checks every request passes first;
//! - `api`: the JSON endpoints and the heap picture;
//! - `streams`: server-sent events for the VM list and for one VM;
//! - `assets`: the page itself (HTML, CSS, plain JavaScript), built into the binary.

mod api;
mod assets;
pub mod guard;
mod json;
mod streams;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::registry::Registry;
use guard::{Guard, Pass, Refusal, Seen};

/// Event streams open at once (pages, scripts); past this a new one gets 503.
pub const MAX_STREAMS: usize = 64;
/// Largest request body (a POST carries a few bytes of JSON at most).
pub const MAX_BODY: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("cannot serve the monitor page on {addr}: {error}")]
    Bind { addr: SocketAddr, error: std::io::Error },
    #[error("cannot make the monitor page's token: {0}")]
    Token(getrandom::Error),
}

/// The served monitor: where it listens and the address to open.
#[derive(Debug, Clone)]
pub struct Monitor {
    pub addr: SocketAddr,
    /// `http://ADDR/?token=...`
    pub url: String,
}

/// What every handler shares.
pub(crate) struct WebState {
    pub registry: Arc<Registry>,
    pub guard: Guard,
    pub pictures: api::Pictures,
    pub leases: api::Leases,
    pub streams: Arc<Semaphore>,
    pub cancel: CancellationToken,
    pub tracker: TaskTracker,
}

/// Binds `addr` and serves the page until `cancel`. Logs the "listening on" line and the
/// address to open, token included.
pub async fn start(addr: SocketAddr, registry: Arc<Registry>, cancel: CancellationToken, tracker: &TaskTracker) -> Result<Monitor, WebError> {
    let token = guard::new_token().map_err(WebError::Token)?;
    let listener = crate::listen::bind(addr, "the web monitor").await.map_err(|error| WebError::Bind { addr, error })?;
    let served = listener.local_addr().map_err(|error| WebError::Bind { addr, error })?;
    let guard = Guard::new(token, served);
    let url = guard.url();
    let state = Arc::new(WebState {
        registry,
        guard,
        pictures: api::Pictures::default(),
        leases: api::Leases::default(),
        streams: Arc::new(Semaphore::new(MAX_STREAMS)),
        cancel: cancel.clone(),
        tracker: tracker.clone(),
    });
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    info!("monitor at {url}");
    if !served.ip().is_loopback() {
        warn!(addr = %served, "the monitor page is open to the network: whoever has the token can make VMs GC or exit");
    }
    tracker.spawn(async move {
        let shutdown = cancel.clone().cancelled_owned();
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
            warn!(error = %e, "the web monitor stopped");
        }
    });
    Ok(Monitor { addr: served, url })
}

fn router(state: Arc<WebState>) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/app.js", get(assets::script))
        .route("/style.css", get(assets::style))
        .route("/api/vms", get(api::vms))
        .route("/api/hosts", get(api::hosts))
        .route("/api/vms/{id}", get(api::vm))
        .route("/api/vms/{id}/threads", get(api::threads))
        .route("/api/vms/{id}/heap", get(api::heap))
        .route("/api/vms/{id}/heap.png", get(api::heap_png))
        .route("/api/vms/{id}/packets", get(api::packets))
        .route("/api/vms/{id}/stats", get(api::stats))
        .route("/api/vms/{id}/gc", post(api::gc))
        .route("/api/vms/{id}/select", post(api::select))
        .route("/api/vms/{id}/exit", post(api::exit))
        .route("/api/events", get(streams::vms))
        .route("/api/vms/{id}/events", get(streams::vm))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard_layer))
        .with_state(state)
}

fn header_str(h: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Checks every request (see `guard`), answers refusals with one log line each, swaps a
/// token in the page's URL for a cookie, and adds the headers that keep the page in its box.
async fn guard_layer(State(st): State<Arc<WebState>>, ConnectInfo(peer): ConnectInfo<SocketAddr>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let cookie_name = st.guard.cookie_name();
    let cookie = h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|c| guard::cookie(c, &cookie_name));
    let seen = Seen {
        post: req.method() != Method::GET && req.method() != Method::HEAD,
        host: header_str(h, header::HOST),
        origin: header_str(h, header::ORIGIN),
        fetch_site: header_str(h, "sec-fetch-site"),
        header_token: header_str(h, guard::TOKEN_HEADER),
        query_token: req.uri().query().and_then(|q| guard::query_param(q, guard::TOKEN_PARAM)),
        cookie_token: cookie,
    };
    let pass = match st.guard.check(&seen) {
        Ok(p) => p,
        Err(refusal) => {
            // The path only: the query may hold a (wrong) token.
            warn!(%peer, method = %req.method(), path = %req.uri().path(), reason = %refusal, "web monitor refused a request");
            return refused(&refusal, &st.guard);
        }
    };
    let mut resp = if pass == Pass::QueryToken && req.method() == Method::GET && req.uri().path() == "/" {
        // The page: keep the token in a cookie, and out of the address bar and history.
        let cookie = format!("{cookie_name}={}; Path=/; HttpOnly; SameSite=Strict", st.guard.token());
        let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        r
    } else {
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(assets::CSP));
    resp
}

fn refused(r: &Refusal, g: &Guard) -> Response {
    let (status, hint) = if r.is_token() {
        (StatusCode::UNAUTHORIZED, format!("; open the address the daemon logged (monitor at http://{}/?token=...)", g.served()))
    } else {
        (StatusCode::FORBIDDEN, String::new())
    };
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("jdwpmux: refused: {r}{hint}\n")).into_response()
}
