//! An in-repo, DDM-aware fake VM that behaves like a JDWP VM server, plus the controls and
//! observations tests use: inject events/chunks/raw bytes, drop the connection, and read back
//! what it received, its suspend counts, event requests and connection counts. For load
//! (many VMs, 200 MiB regions, THST floods) the lean ones of [`lean`] record nothing.

mod conn;
mod ddm;
mod document;
mod jdwp;
pub mod lean;
pub mod lean_wire;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::net::TcpListener;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::wire::{Chunk, Packet};
use state::Shared;

pub use ddm::{heap_info, thst_entries, HEAP_ALLOCATED, HEAP_MAX, HEAP_OBJECTS, HEAP_SIZE};
pub use state::{DbgdReply, DdmLayout, EventRequestRecord, FakeThread, FakeVmConfig, HeapRequest};

pub struct FakeVm {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: AbortHandle,
}

impl FakeVm {
    /// Listens on 127.0.0.1:0 and serves on the current tokio runtime (panics if it cannot
    /// bind, which only a broken test machine does).
    pub async fn start(config: FakeVmConfig) -> FakeVm {
        match Self::try_start(config).await {
            Ok(vm) => vm,
            Err(e) => panic!("fake VM failed to start: {e:#}"),
        }
    }

    pub async fn try_start(config: FakeVmConfig) -> Result<FakeVm> {
        Self::try_start_on(config, 0).await
    }

    /// Like `try_start`, on a given loopback port (a VM that appears where a scan looks).
    pub async fn try_start_on(config: FakeVmConfig, port: u16) -> Result<FakeVm> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.context("bind fake VM")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(config));
        let accept = tokio::spawn(conn::accept_loop(listener, shared.clone())).abort_handle();
        Ok(FakeVm { shared, addr, accept })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn config(&self) -> &FakeVmConfig {
        &self.shared.cfg
    }

    pub fn is_connected(&self) -> bool {
        self.shared.current().is_some()
    }

    fn conn(&self) -> Result<Arc<state::Conn>> {
        match self.shared.current() {
            Some(c) => Ok(c),
            None => bail!("fake VM has no debugger connection"),
        }
    }

    /// Sends Event.Composite with one event and applies its suspend policy (ALL suspends every
    /// thread, EVENT_THREAD that thread) as a VM posting it would. Returns the packet id.
    pub fn send_event_composite(&self, suspend_policy: u8, kind: u8, request_id: u32, thread_id: u64) -> Result<u32> {
        let c = self.conn()?;
        Ok(conn::send_event(&self.shared, &c, suspend_policy, kind, request_id, thread_id))
    }

    /// Sends one Event.Composite of several `(kind, request id, thread)` events; the policy
    /// is applied once. Returns the packet id.
    pub fn send_events(&self, suspend_policy: u8, events: &[(u8, u32, u64)]) -> Result<u32> {
        let c = self.conn()?;
        Ok(conn::send_events(&self.shared, &c, suspend_policy, events))
    }

    /// Sends one V->H DDM command holding `chunks`; returns its packet id (0x80000001 up).
    pub fn send_ddm<T: AsRef<[u8]>>(&self, chunks: &[([u8; 4], T)]) -> Result<u32> {
        let cs: Vec<Chunk> = chunks.iter().map(|(t, d)| Chunk::new(t, d.as_ref().to_vec())).collect();
        self.send_ddm_chunks(&cs)
    }

    pub fn send_ddm_chunks(&self, chunks: &[Chunk]) -> Result<u32> {
        let c = self.conn()?;
        let p = c.ddm_packet(chunks);
        c.send(p.encode());
        Ok(p.id)
    }

    pub fn send_packet(&self, p: &Packet) -> Result<()> {
        self.send_raw(p.encode())
    }

    /// Writes bytes as they are (malformed DDM, zlib bombs, truncated packets).
    pub fn send_raw(&self, bytes: impl Into<Vec<u8>>) -> Result<()> {
        if !self.conn()?.send(bytes.into()) {
            bail!("fake VM connection is closing");
        }
        Ok(())
    }

    /// Closes the current connection (after anything already queued). False if none.
    pub fn drop_connection(&self) -> bool {
        match self.shared.current() {
            Some(c) => {
                c.close();
                true
            }
            None => false,
        }
    }

    /// Every packet received after a handshake, across connections, in order.
    pub fn received(&self) -> Vec<Packet> {
        self.shared.read(|s| s.received.clone())
    }

    pub fn received_commands(&self, set: u8, cmd: u8) -> Vec<Packet> {
        self.shared.read(|s| s.received.iter().filter(|p| p.is_command(set, cmd)).cloned().collect())
    }

    /// Every chunk of every well-formed DDM command received.
    pub fn received_chunks(&self) -> Vec<Chunk> {
        self.received().iter().filter(|p| p.is_ddm()).filter_map(|p| p.chunks().ok()).flatten().collect()
    }

    /// Every packet received, with the connection it came on (1, 2, ... in order).
    pub fn received_by_connection(&self) -> Vec<(u64, Packet)> {
        self.shared.read(|s| s.received_on.iter().copied().zip(s.received.iter().cloned()).collect())
    }

    pub fn clear_received(&self) {
        self.shared.with(|s| {
            s.received.clear();
            s.received_on.clear();
        });
    }

    /// Answers every DDM chunk of type `ty` with FAIL `code` and `message` from now on
    /// (`None` goes back to handling it).
    pub fn fail_chunks_of(&self, ty: &[u8; 4], fail: Option<(u32, &str)>) {
        self.shared.with(|s| match fail {
            Some((code, msg)) => s.fail_chunks.insert(*ty, (code, msg.to_string())),
            None => s.fail_chunks.remove(ty),
        });
    }

    /// The interval of every THST request received (None: an empty request).
    pub fn thst_requests(&self) -> Vec<Option<u32>> {
        self.shared.read(|s| s.thst_requests.clone())
    }

    /// The interval status is pushed at now (document layout), 0 when off.
    pub fn thst_interval(&self) -> u32 {
        self.shared.read(|s| s.thst_interval)
    }

    /// Waits until `pred` holds (re-checked on every state change and every 50 ms).
    pub async fn wait_for(&self, mut pred: impl FnMut(&FakeVm) -> bool, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if pred(self) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                bail!("fake VM: condition not met within {timeout:?}");
            }
            let nap = (deadline - now).min(Duration::from_millis(50));
            let _ = tokio::time::timeout(nap, notified).await;
        }
    }

    /// Waits for a received packet matching `pred` (already received ones count).
    pub async fn wait_for_packet(&self, mut pred: impl FnMut(&Packet) -> bool, timeout: Duration) -> Result<Packet> {
        let mut found = None;
        self.wait_for(
            |vm| {
                found = vm.shared.read(|s| s.received.iter().find(|p| pred(p)).cloned());
                found.is_some()
            },
            timeout,
        )
        .await?;
        found.context("packet vanished")
    }

    /// VM-wide suspend count (VM.Suspend / events with policy ALL, minus VM.Resume).
    pub fn suspend_count(&self) -> u32 {
        self.shared.read(|s| s.vm_suspend)
    }

    pub fn thread_suspend_count(&self, thread_id: u64) -> Option<u32> {
        let idx = self.shared.thread_index(thread_id)?;
        self.shared.read(|s| s.thread_suspend.get(idx).copied())
    }

    /// `(thread id, suspend count)` for every configured thread.
    pub fn thread_suspend_counts(&self) -> Vec<(u64, u32)> {
        let ids: Vec<u64> = self.shared.cfg.threads.iter().map(|t| t.id).collect();
        self.shared.read(|s| ids.iter().copied().zip(s.thread_suspend.iter().copied()).collect())
    }

    /// True if the VM-wide count or any thread's count is above zero.
    pub fn any_suspended(&self) -> bool {
        self.shared.read(|s| s.vm_suspend > 0 || s.thread_suspend.iter().any(|c| *c > 0))
    }

    /// Objects whose collection is disabled, with their DisableCollection counts.
    pub fn pins(&self) -> std::collections::HashMap<u64, u32> {
        self.shared.read(|s| s.pins.clone())
    }

    pub fn event_requests(&self) -> Vec<EventRequestRecord> {
        self.shared.read(|s| s.event_requests.clone())
    }

    pub fn dbgd_count(&self) -> u32 {
        self.shared.read(|s| s.dbgd_count)
    }

    pub fn helo_count(&self) -> u32 {
        self.shared.read(|s| s.helo_count)
    }

    pub fn gc_count(&self) -> u32 {
        self.shared.read(|s| s.gc_count)
    }

    pub fn heap_requests(&self) -> Vec<HeapRequest> {
        self.shared.read(|s| s.heap_requests.clone())
    }

    /// The state THST reports for a thread from now on (by its DDM thread id).
    pub fn set_thread_state(&self, ddm_id: u32, state: u8) {
        self.shared.with(|s| s.thread_states.insert(ddm_id, state));
    }

    /// The status of an EXIT chunk received, if any.
    pub fn exit_status(&self) -> Option<u32> {
        self.shared.read(|s| s.exit_status)
    }

    /// Connections served (handshake attempted), not counting refused ones.
    pub fn connections_accepted(&self) -> u32 {
        self.shared.read(|s| s.connections_accepted)
    }

    /// Connections closed at once because another one was open.
    pub fn connections_refused(&self) -> u32 {
        self.shared.read(|s| s.connections_refused)
    }

    /// Packets with set >= 0x80 (other than 0xC7), cmd 0 or cmd >= 0x80: they crash HotSpot.
    pub fn forbidden(&self) -> Vec<Packet> {
        self.shared.read(|s| s.forbidden.clone())
    }

    /// Bad handshakes, bad lengths, replies from the debugger side (each closed the connection).
    pub fn protocol_errors(&self) -> Vec<String> {
        self.shared.read(|s| s.protocol_errors.clone())
    }

    /// Stops listening and closes every connection. Also done on Drop.
    pub fn stop(&self) {
        self.accept.abort();
        let (current, tasks) = self.shared.with(|s| {
            s.stopped = true;
            (s.current.take(), std::mem::take(&mut s.tasks))
        });
        if let Some(c) = current {
            c.close();
        }
        tasks.iter().for_each(|t| t.abort());
    }
}

impl Drop for FakeVm {
    fn drop(&mut self) {
        self.stop();
    }
}
