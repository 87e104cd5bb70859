//! A stand-in Kubernetes API server for the real `kubectl` (no kube-apiserver, etcd or kubelet
//! can run on these machines): plain HTTP on 127.0.0.1, a token user, and just what kubectl
//! v1.32 asks for `get pods` (`-w` too) and `exec -i`. Facts behind it are in
//! /work/shared/design-runtimes.md (discovery, the watch's lines, the exec channels).
//!
//! - [`pods`]: the pods a test puts in the store ([`StandinPod`]: a Deployment's replica, a
//!   StatefulSet's pod), named, labelled and owned as real ones are; the store with its
//!   resource versions and event history, kept across the server's restarts; label selectors.
//! - `server`: the routes: `GET /api`, `/apis`, `/api/v1` (legacy discovery),
//!   `/api/v1/namespaces/NS/pods` (list, `?watch=true`), `.../pods/NAME`, and errors as
//!   `Status` JSON; a request without the token is answered 401.
//! - [`exec`]: the exec subresource over WebSocket, each exec a `docker exec -i` in the pod's
//!   Docker container (the kit's `containers::DockerContainer`), its exit code in the Status
//!   on channel 3; answered 403 Forbidden, as RBAC does, while [`KubeApi::forbid_exec`] is set.
//!
//! [`KubeApi`] is the server: started on a free port with a kubeconfig file for it, stopped
//! (its watches and execs ended, the port closed) and started again on the same port; stopped
//! on drop. [`KubeApi::kubectl`] is the real kubectl pointed at it.

pub mod exec;
pub mod pods;
mod server;

pub use pods::{Selector, StandinPod, Store};

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::sync::watch;

/// The kubeconfig's user and its bearer token.
pub const USER: &str = "jdwpmux-test";
pub const TOKEN: &str = "jdwpmux-test-token";
/// The real kubectl.
pub const KUBECTL: &str = "/usr/bin/kubectl";
/// How long stopping waits for the connections to close.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the real kubectl cannot be run here, or None when it can.
pub fn kubectl_unavailable() -> Option<String> {
    (!Path::new(KUBECTL).is_file()).then(|| format!("no kubectl at {KUBECTL} (the project's machines come with kubectl v1.32)"))
}

/// What the routes share: the store, the switches, and the stop signal of the current run.
pub(crate) struct Shared {
    store: Arc<Store>,
    exec_forbidden: AtomicBool,
    port: AtomicU16,
    stop: watch::Sender<bool>,
    /// Every request's method and path with query, in order (for tests that check what
    /// kubectl asked).
    requests: Mutex<Vec<String>>,
    /// Pods (namespace, name) deleted as soon as the next list has been read from the store:
    /// a deletion made between a client's list and the start of its watch.
    after_list: Mutex<Vec<(String, String)>>,
}

/// The stand-in API server. Dropping it stops it.
pub struct KubeApi {
    shared: Arc<Shared>,
    port: u16,
    dir: tempfile::TempDir,
    serving: Option<tokio::task::JoinHandle<()>>,
}

impl KubeApi {
    /// Binds 127.0.0.1:0, writes the kubeconfig and serves.
    pub async fn start() -> Result<KubeApi> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("bind the stand-in")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            store: Arc::new(Store::default()),
            exec_forbidden: AtomicBool::new(false),
            port: AtomicU16::new(port),
            stop: watch::channel(false).0,
            requests: Mutex::new(Vec::new()),
            after_list: Mutex::new(Vec::new()),
        });
        let dir = tempfile::Builder::new().prefix("kube-standin").tempdir()?;
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: standin\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: standin\n  context:\n    cluster: standin\n    user: {USER}\n    namespace: default\n\
             current-context: standin\nusers:\n- name: {USER}\n  user:\n    token: {TOKEN}\n"
        );
        std::fs::write(dir.path().join("kubeconfig"), config)?;
        let mut api = KubeApi { shared, port, dir, serving: None };
        api.serve(listener);
        Ok(api)
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        self.shared.stop.send_replace(false);
        let app = server::router(self.shared.clone());
        let mut stop = self.shared.stop_rx();
        self.serving = Some(tokio::spawn(async move {
            let shutdown = async move { stopped(&mut stop).await };
            if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                eprintln!("[kube stand-in] serve: {e}");
            }
        }));
    }

    /// Stops serving: the port refuses, open watches end, running execs are killed. The store
    /// is kept for [`KubeApi::restart`].
    pub async fn stop(&mut self) -> Result<()> {
        self.shared.stop.send_replace(true);
        if let Some(task) = self.serving.take() {
            tokio::time::timeout(STOP_TIMEOUT, task).await.context("the stand-in did not stop")??;
        }
        Ok(())
    }

    /// Serves again on the same port.
    pub async fn restart(&mut self) -> Result<()> {
        if self.serving.is_some() {
            bail!("the stand-in is serving");
        }
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await.with_context(|| format!("bind 127.0.0.1:{} again", self.port))?;
        self.serve(listener);
        Ok(())
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The kubeconfig file (`server: http://127.0.0.1:PORT`, a token user).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The pods.
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// Adds or replaces a pod (watchers get ADDED or MODIFIED).
    pub fn put(&self, pod: StandinPod) -> u64 {
        self.shared.store.put(pod)
    }

    /// Deletes a pod (watchers get DELETED); false when there was none.
    pub fn delete(&self, namespace: &str, name: &str) -> bool {
        self.shared.store.delete(namespace, name)
    }

    /// Deletes the pod right after the next list (not a watch) is read from the store, before
    /// its answer is sent: the list has it, and its DELETED event comes after the list's
    /// resource version, so only a watch started from that version sees it go.
    pub fn delete_after_next_list(&self, namespace: &str, name: &str) {
        self.shared.after_list.lock().unwrap_or_else(|e| e.into_inner()).push((namespace.into(), name.into()));
    }

    /// While set, every exec is answered 403 Forbidden with a Status, as RBAC does.
    pub fn forbid_exec(&self, forbidden: bool) {
        self.shared.exec_forbidden.store(forbidden, Ordering::Relaxed);
    }

    /// The requests served so far (`METHOD /path?query`).
    pub fn requests(&self) -> Vec<String> {
        self.shared.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The real kubectl with this server's kubeconfig and a discovery cache of its own
    /// (`--kubeconfig FILE --cache-dir DIR`), stdin closed, output piped.
    pub fn kubectl(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(KUBECTL);
        c.arg("--kubeconfig").arg(self.kubeconfig()).arg("--cache-dir").arg(self.dir.path().join("cache"));
        c.env_remove("KUBECONFIG").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        c
    }
}

/// Returns once the stop signal is set (never, if its sender is gone unset).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    // No borrow is held across an await (a watch borrow is not Send).
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
        if let Some(task) = self.serving.take() {
            task.abort();
        }
    }
}
