//! Running the proxy for tests: in-process through `jdwpmux::start`, on ephemeral ports,
//! and helpers to wait for conditions with generous deadlines (never fixed sleeps).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Result};
use jdwpmux::registry::VmInfo;
use jdwpmux::settings::{DdmMode, Settings};
use jdwpmux::Daemon;

/// Deadline for anything that should happen "soon" on a loaded 2-core machine.
pub const SOON: Duration = Duration::from_secs(20);

pub struct Proxy {
    pub daemon: Option<Daemon>,
}

impl Proxy {
    pub async fn start(vms: &[SocketAddr], ddm: DdmMode) -> Proxy {
        Self::with(Self::settings(vms, ddm)).await
    }

    /// The settings `start` uses: these VMs, ephemeral ports, everything else by default,
    /// except `--max-debuggers` when JDWPMUX_TEST_MAX_DEBUGGERS says (.ci/run runs the
    /// single-debugger tests again with 1, the behaviour of a plain JDWP agent).
    pub fn settings(vms: &[SocketAddr], ddm: DdmMode) -> Settings {
        let max_debuggers = std::env::var("JDWPMUX_TEST_MAX_DEBUGGERS").ok().and_then(|v| v.parse().ok());
        Settings {
            vms: vms.to_vec(),
            base_port: 0,
            current_port: 0,
            ddm,
            max_debuggers: max_debuggers.unwrap_or(Settings::default().max_debuggers),
            ..Settings::default()
        }
    }

    pub async fn with(settings: Settings) -> Proxy {
        // The proxy's log, captured with the test's output: shown when a test fails.
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
            .try_init();
        match jdwpmux::start(settings).await {
            Ok(d) => Proxy { daemon: Some(d) },
            Err(e) => panic!("proxy failed to start: {e}"),
        }
    }

    fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("daemon running")
    }

    pub fn current_addr(&self) -> SocketAddr {
        self.daemon().current_addr
    }

    pub fn list(&self) -> Vec<VmInfo> {
        self.daemon().registry.list()
    }

    /// Waits until VM `index` (in order of --vm) is ready with a bound port; returns its info.
    pub async fn ready(&self, index: usize) -> VmInfo {
        let mut found = None;
        wait_until("VM ready", || {
            let l = self.list();
            let v = l.get(index).cloned();
            // Stopped is ready too: a debugger holds a suspension (`VmState::shown`).
            let ok = v.as_ref().is_some_and(|v| matches!(v.status.state, jdwpmux::session::VmState::Ready | jdwpmux::session::VmState::Stopped) && v.debugger_port.is_some());
            if ok {
                found = v;
            }
            ok
        })
        .await
        .unwrap();
        found.unwrap()
    }

    /// The debugger port of VM `index`, once ready.
    pub async fn vm_port(&self, index: usize) -> SocketAddr {
        let info = self.ready(index).await;
        SocketAddr::from(([127, 0, 0, 1], info.debugger_port.unwrap()))
    }

    /// The session handle of VM `index` (in order of --vm), once ready.
    pub async fn handle(&self, index: usize) -> jdwpmux::session::VmHandle {
        let info = self.ready(index).await;
        self.daemon().registry.get(info.id).expect("VM registered").handle
    }

    /// How full VM `index`'s session tables are.
    pub async fn tables(&self, index: usize) -> jdwpmux::session::TableSizes {
        self.handle(index).await.tables().await.expect("session running")
    }

    /// The features a DDM-aware VM lists (the proxy's own FEAT request).
    pub async fn ddm_features(&self, index: usize) -> Vec<String> {
        use jdwpmux::ddm::{Chunk, ChunkType};
        let h = self.handle(index).await;
        let chunks = jdwpmux::session::Completion::Chunks;
        let a = h.ddm(vec![Chunk::FeatRequest], vec![ChunkType::FEAT], chunks, SOON).await.expect("FEAT answered");
        a.state.features.unwrap_or_default()
    }

    pub async fn stop(mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown(Duration::from_secs(5)).await;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(d) = &self.daemon {
            d.cancel_token().cancel();
        }
    }
}

/// Polls `cond` every 20 ms until it holds or `SOON` passes.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) -> Result<()> {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        if cond() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `f` under the `SOON` deadline.
pub async fn soon<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(SOON, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out: {what}"),
    }
}
