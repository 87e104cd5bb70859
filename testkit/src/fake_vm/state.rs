//! The fake VM's configuration and shared state: what it was told to be, what it has seen, and
//! the debugger-visible state (suspend counts, event requests) a real VM would keep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::super::ddm::HeloModern;
use super::super::wire::{Chunk, Packet, DEFAULT_MAX_PACKET_LEN};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeThread {
    /// JDWP ThreadID (8 bytes on the wire).
    pub id: u64,
    /// VM-local id used in THCR/THST.
    pub ddm_id: u32,
    pub name: String,
    pub daemon: bool,
}

impl FakeThread {
    pub fn new(id: u64, name: &str) -> FakeThread {
        FakeThread { id, ddm_id: id as u32, name: name.to_string(), daemon: false }
    }
}

/// Which DDM request layouts a DDM-aware fake VM takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DdmLayout {
    /// What later Dalvik and ART take: an empty THST request answered with one status in
    /// the real layout; FEAT, HPGC and the others known.
    Modern,
    /// The design document to the letter: THST carries `u4 interval` (an empty one is
    /// answered with FAIL) and status is pushed in the document's layout every interval;
    /// chunk types the document does not define (FEAT, HPGC, ...) get an empty reply.
    Document,
}

/// What a DDM-aware fake VM does with DBGD (no Android VM implemented it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbgdReply {
    Empty,
    NoReply,
}

#[derive(Clone, Debug)]
pub struct FakeVmConfig {
    pub pid: u32,
    pub app_name: String,
    /// VirtualMachine.Version vmName.
    pub vm_name: String,
    /// VirtualMachine.Version description (None: one naming the fake and `vm_name`).
    pub version_description: Option<String>,
    /// HELO vm ident.
    pub vm_ident: String,
    /// false: every 0xC7 command gets error 99 (a HotSpot that survives it).
    pub ddm_aware: bool,
    pub threads: Vec<FakeThread>,
    /// Delay before the reply to a (set, cmd) is sent, to force out-of-order replies.
    pub reply_delay: HashMap<(u8, u8), Duration>,
    pub dbgd_reply: DbgdReply,
    /// ART's early path: a DDM command whose answer is empty gets no reply at all.
    pub silent_empty_ddm: bool,
    /// Send an APNM DDM command before echoing the handshake (as ART may).
    pub early_apnm: bool,
    /// Send Event.Composite VM_START with this suspend policy right after the first
    /// connection's handshake (HotSpot with suspend=y uses 2 = ALL); applies the suspension.
    pub startup_event: Option<u8>,
    pub helo_modern: Option<HeloModern>,
    /// How many of the modern HELO fields to send (0..=6).
    pub helo_modern_fields: usize,
    pub features: Vec<String>,
    /// Like HotSpot: a closed connection clears event requests and suspensions.
    pub reset_on_disconnect: bool,
    pub max_packet_len: usize,
    pub handshake_timeout: Duration,
    pub layout: DdmLayout,
    /// A broken (or hostile) VM: every reply is sent twice.
    pub duplicate_replies: bool,
    /// EventRequest.Clear is answered with this error code instead of NONE (a VM whose reply
    /// an early answer cannot foresee).
    pub clear_error: Option<u16>,
}

impl Default for FakeVmConfig {
    fn default() -> Self {
        FakeVmConfig {
            pid: 4242,
            app_name: "com.example.fake".into(),
            vm_name: "Dalvik".into(),
            version_description: None,
            vm_ident: "Dalvik v2.1.0 (fake)".into(),
            ddm_aware: true,
            threads: vec![
                FakeThread::new(0x1001, "main"),
                FakeThread { daemon: true, ..FakeThread::new(0x1002, "Signal Catcher") },
                FakeThread { daemon: true, ..FakeThread::new(0x1003, "HeapTaskDaemon") },
            ],
            reply_delay: HashMap::new(),
            dbgd_reply: DbgdReply::Empty,
            silent_empty_ddm: false,
            early_apnm: false,
            startup_event: None,
            helo_modern: None,
            helo_modern_fields: 6,
            features: vec!["method-trace-profiling".into(), "hprof-heap-dump".into(), "view-hierarchy".into()],
            reset_on_disconnect: true,
            max_packet_len: DEFAULT_MAX_PACKET_LEN,
            handshake_timeout: Duration::from_secs(10),
            layout: DdmLayout::Modern,
            duplicate_replies: false,
            clear_error: None,
        }
    }
}

impl FakeVmConfig {
    /// A non-DDM VM named like HotSpot that answers DDM with error 99.
    pub fn hotspot_like() -> FakeVmConfig {
        FakeVmConfig { ddm_aware: false, vm_name: "OpenJDK 64-Bit Server VM".into(), ..Default::default() }
    }

    /// A DDM-aware VM that follows the design document's chunk layouts.
    pub fn document() -> FakeVmConfig {
        FakeVmConfig { layout: DdmLayout::Document, ..Default::default() }
    }

    pub fn with_reply_delay(mut self, set: u8, cmd: u8, delay: Duration) -> FakeVmConfig {
        self.reply_delay.insert((set, cmd), delay);
        self
    }

    pub fn with_modern_helo(mut self, fields: usize) -> FakeVmConfig {
        self.helo_modern = Some(HeloModern {
            user_id: 0,
            abi: "arm64-v8a".into(),
            jvm_flags: String::new(),
            native_debuggable: false,
            package_name: self.app_name.clone(),
            boot_stage: *b"A_GO",
        });
        self.helo_modern_fields = fields;
        self
    }
}

/// An EventRequest.Set the fake VM accepted and has not cleared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRequestRecord {
    pub kind: u8,
    pub id: u32,
    pub suspend_policy: u8,
    /// Raw `u4 modifiers, ...` bytes as received.
    pub modifiers: Vec<u8>,
}

/// An HPSG/NHSG request (`u1 when, u1 what`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapRequest {
    pub ty: [u8; 4],
    pub when: u8,
    pub what: u8,
}

pub(super) enum Out {
    Bytes(Vec<u8>),
    Close,
}

/// One accepted debugger connection; VM-originated packet ids are per connection.
pub(super) struct Conn {
    pub id: u64,
    pub tx: UnboundedSender<Out>,
    ddm_ids: AtomicU32,
    event_ids: AtomicU32,
    /// The task pushing THST every interval (document layout), if any.
    pub pusher: Mutex<Option<AbortHandle>>,
}

impl Conn {
    pub fn new(id: u64, tx: UnboundedSender<Out>) -> Conn {
        Conn { id, tx, ddm_ids: AtomicU32::new(0x8000_0001), event_ids: AtomicU32::new(1), pusher: Mutex::new(None) }
    }

    pub fn next_ddm_id(&self) -> u32 {
        self.ddm_ids.fetch_add(1, Ordering::Relaxed)
    }

    pub fn next_event_id(&self) -> u32 {
        self.event_ids.fetch_add(1, Ordering::Relaxed)
    }

    /// False when the connection's writer is gone.
    pub fn send(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(Out::Bytes(bytes)).is_ok()
    }

    pub fn ddm_packet(&self, chunks: &[Chunk]) -> Packet {
        Packet::ddm(self.next_ddm_id(), chunks)
    }

    pub fn close(&self) {
        let _ = self.tx.send(Out::Close);
    }
}

#[derive(Default)]
pub(super) struct VmState {
    pub received: Vec<Packet>,
    /// The connection (1, 2, ... in order of acceptance) each of `received` came on.
    pub received_on: Vec<u64>,
    /// DDM chunk types answered with FAIL (code, message) instead of being handled.
    pub fail_chunks: HashMap<[u8; 4], (u32, String)>,
    /// The interval of every THST request (None: an empty one).
    pub thst_requests: Vec<Option<u32>>,
    /// The interval at which status is pushed now (document layout), 0 = off.
    pub thst_interval: u32,
    pub forbidden: Vec<Packet>,
    pub protocol_errors: Vec<String>,
    pub vm_suspend: u32,
    /// Parallel to `config.threads`.
    pub thread_suspend: Vec<u32>,
    pub event_requests: Vec<EventRequestRecord>,
    pub next_request_id: u32,
    pub dbgd_count: u32,
    pub helo_count: u32,
    pub gc_count: u32,
    pub connections_accepted: u32,
    pub connections_refused: u32,
    pub heap_requests: Vec<HeapRequest>,
    pub hpif_when: u8,
    pub hpsg: (u8, u8),
    pub nhsg: (u8, u8),
    pub exit_status: Option<u32>,
    /// THST states set by the test (DDM thread id -> state), over the defaults.
    pub thread_states: HashMap<u32, u8>,
    /// ObjectReference.DisableCollection count per object (EnableCollection takes one).
    pub pins: HashMap<u64, u32>,
    pub current: Option<Arc<Conn>>,
    pub next_conn_id: u64,
    pub startup_event_sent: bool,
    pub tasks: Vec<AbortHandle>,
    pub stopped: bool,
}

impl VmState {
    pub fn suspend_all(&mut self) {
        self.vm_suspend += 1;
        self.thread_suspend.iter_mut().for_each(|c| *c += 1);
    }

    /// VM.Resume: never below 0; only threads with a count > 0 are decremented.
    pub fn resume_all(&mut self) {
        self.vm_suspend = self.vm_suspend.saturating_sub(1);
        self.thread_suspend.iter_mut().for_each(|c| *c = c.saturating_sub(1));
    }

    /// Applies an event's suspend policy as the VM would when it posts the event.
    pub fn apply_policy(&mut self, policy: u8, thread_index: Option<usize>) {
        match (policy, thread_index) {
            (2, _) => self.suspend_all(),
            (1, Some(i)) => {
                if let Some(c) = self.thread_suspend.get_mut(i) {
                    *c += 1;
                }
            }
            _ => {}
        }
    }

    /// What Dispose and (HotSpot-like) disconnects do: release everything a debugger held.
    pub fn reset_debugger(&mut self) {
        self.vm_suspend = 0;
        self.thread_suspend.iter_mut().for_each(|c| *c = 0);
        self.event_requests.clear();
        self.pins.clear();
    }
}

pub(super) struct Shared {
    pub cfg: FakeVmConfig,
    state: Mutex<VmState>,
    pub changed: Notify,
}

impl Shared {
    pub fn new(cfg: FakeVmConfig) -> Shared {
        let state = VmState { thread_suspend: vec![0; cfg.threads.len()], next_request_id: 1, ..Default::default() };
        Shared { cfg, state: Mutex::new(state), changed: Notify::new() }
    }

    fn lock(&self) -> MutexGuard<'_, VmState> {
        // A panicking test thread must not make every later accessor panic too.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the state (never across an await) without waking `wait_for` callers.
    pub fn read<R>(&self, f: impl FnOnce(&VmState) -> R) -> R {
        f(&self.lock())
    }

    /// Mutates the state (never across an await) and wakes `wait_for` callers.
    pub fn with<R>(&self, f: impl FnOnce(&mut VmState) -> R) -> R {
        let r = f(&mut self.lock());
        self.changed.notify_waiters();
        r
    }

    pub fn thread_index(&self, id: u64) -> Option<usize> {
        self.cfg.threads.iter().position(|t| t.id == id)
    }

    pub fn current(&self) -> Option<Arc<Conn>> {
        self.lock().current.clone()
    }

    /// Frees the connection slot (first, so a reconnect right after the peer sees EOF is
    /// accepted) and resets per-debugger state.
    pub fn end_conn(&self, conn_id: u64) {
        let reset = self.cfg.reset_on_disconnect;
        self.with(|s| {
            if s.current.as_ref().map(|c| c.id) == Some(conn_id) {
                s.current = None;
                // Pushes end with the connection.
                s.thst_interval = 0;
                if reset {
                    s.reset_debugger();
                    s.hpif_when = 0;
                    s.hpsg = (0, 0);
                    s.nhsg = (0, 0);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(s: &VmState) -> (u32, Vec<u32>) {
        (s.vm_suspend, s.thread_suspend.clone())
    }

    #[test]
    fn suspend_bookkeeping_matches_a_real_vm() {
        type Step = fn(&mut VmState);
        type Want = (u32, Vec<u32>);
        let table: [(&str, Step, Want); 6] = [
            ("vm suspend", |s| s.suspend_all(), (1, vec![1, 1])),
            ("event thread policy", |s| s.apply_policy(1, Some(1)), (1, vec![1, 2])),
            ("vm resume", |s| s.resume_all(), (0, vec![0, 1])),
            ("vm resume floors at 0", |s| s.resume_all(), (0, vec![0, 0])),
            ("policy all", |s| s.apply_policy(2, None), (1, vec![1, 1])),
            ("reset", |s| s.reset_debugger(), (0, vec![0, 0])),
        ];
        let mut s = VmState { thread_suspend: vec![0, 0], ..Default::default() };
        for (what, step, want) in table {
            step(&mut s);
            assert_eq!(counts(&s), want, "{what}");
        }
    }
}
