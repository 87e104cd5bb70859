//! The VM session actor: one task per VM that owns the VM socket, the id table, the sharing
//! tables and the state of every attached debugger. It connects (and reconnects with
//! backoff), identifies the VM, probes DDM, then relays until the connection drops or the
//! daemon stops.
//!
//! The task also serves the attached debuggers' sockets (see `debuggers`). It reads and
//! writes every socket in one `select!` loop using only cancel-safe calls (`read_buf`,
//! `write_buf`, readiness polls, `recv`), so a packet costs one wake-up of one task and
//! several queued packets leave in one write.

use std::collections::{HashMap, VecDeque};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn, Instrument};

use super::config::SessionConfig;
use super::connect::{self, ConnectError, Connected};
use super::ddm_types::{ThreadWatcher, Waiter};
use super::debugger_io::{DebuggerEvent, DEBUGGER_HIGH_WATER};
use super::debuggers::Debuggers;
use super::handle::{AttachError, DebuggerLink, SessionMsg, VmHandle, VmState, VmStatus, CONTROL_CHANNEL};
use super::ids::IdTable;
use super::purpose::{LateSizes, Purpose};
use super::sharing::Sharing;
use super::wake_gate::WakeGate;
use crate::jdwp::codec::{JdwpCodec, MAX_PACKET_LEN};
use crate::jdwp::events::IdSizes;
use crate::jdwp::Packet;

/// Bytes queued for the VM above which the session stops taking debugger packets.
pub(super) const OUT_HIGH_WATER: usize = 1024 * 1024;
/// Events held while no debugger is attached (count and bytes); beyond, they are dropped.
pub const MAX_HELD_EVENTS: usize = 32;
pub const MAX_HELD_EVENT_BYTES: usize = 1024 * 1024;
/// How long a stopping session may spend undoing what its debugger left on the VM.
const SHUTDOWN_CLEANUP: Duration = Duration::from_millis(1500);
/// How often timers (request expiry, attach deadlines) are checked.
/// With a thousand VMs every session's tick adds up, so it is not faster than it must be.
const TICK: Duration = Duration::from_millis(500);

/// Why a connected period ended.
pub(super) enum Ended {
    /// The daemon is stopping.
    Shutdown,
    /// The connection was dropped on purpose (a non-DDM VM lost its debugger): reconnect now.
    Reset,
    /// The VM went away or broke the protocol.
    Lost(String),
}

/// Where the body of a large VM packet goes.
pub(super) struct VmStream {
    /// The debuggers it goes to (connection numbers).
    pub to: Vec<u64>,
    /// For packets the proxy reads itself: the header, a bounded prefix, and the purpose.
    pub collect: Option<(crate::jdwp::Header, Vec<u8>, Option<Purpose>)>,
}

pub(super) struct PendingAttach {
    pub link: DebuggerLink,
    pub reply: oneshot::Sender<Result<(), AttachError>>,
    pub deadline: Instant,
    /// It came while as many debuggers as allowed were attached (this one among them): it is
    /// refused unless one leaves within `BUSY_GRACE` (a debugger that quits and reattaches).
    pub busy_with: Option<SocketAddr>,
}

/// How long a newcomer waits for an attached debugger that may be leaving.
pub const BUSY_GRACE: Duration = Duration::from_secs(1);

pub(super) struct Session {
    pub cfg: SessionConfig,
    pub rx: mpsc::Receiver<SessionMsg>,
    pub status: watch::Sender<VmStatus>,
    pub cancel: CancellationToken,
    // Per connection:
    pub ids: IdTable,
    pub purposes: HashMap<u32, Purpose>,
    pub out: BytesMut,
    pub codec: JdwpCodec,
    pub vm_stream: Option<VmStream>,
    pub ready: bool,
    pub ddm_aware: Option<bool>,
    /// The VM's id sizes, from the proxy's IDSizes or a debugger's.
    pub id_sizes: Option<IdSizes>,
    /// Whether the proxy asked IDSizes on a debugger's first EventRequest.Set (the sizes were
    /// still unknown: an Android VM is identified with HELO alone), and whether that is answered.
    pub late_sizes: LateSizes,
    pub identify_pending: usize,
    /// The Version reply said Android: reconnect once the IDSizes reply is in too.
    pub android_by_version: bool,
    pub held: VecDeque<Packet>,
    pub held_bytes: usize,
    /// Events dropped past the bound since the session started (never reset).
    pub held_dropped: u64,
    /// How many of those the log has already reported.
    pub held_dropped_logged: u64,
    /// Replies from the VM to ids with no outstanding request (see `vm_side`).
    pub stray_replies: u64,
    pub reset_requested: bool,
    pub cleanup_pending: usize,
    pub cleanup_deadline: Option<Instant>,
    /// Who owns which event request, suspension and pin.
    pub sharing: Sharing,
    /// Events kept back, in the VM's order, until the Sets in flight say whose they are.
    pub deferred_events: VecDeque<Packet>,
    /// A debugger whose large command is being streamed to the VM: nothing else may be
    /// written to the VM until its end, so whole packets wait in `vm_deferred`.
    pub vm_upstream: Option<u64>,
    /// When that command last moved.
    pub vm_upstream_progress: Instant,
    pub vm_deferred: Vec<(bytes::Bytes, Option<u32>)>,
    // Across connections:
    pub debuggers: Debuggers,
    pub waiting: Vec<PendingAttach>,
    pub ddm_state: crate::ddm::ClientData,
    pub ddm_waiters: Vec<Waiter>,
    pub thread_watchers: Vec<ThreadWatcher>,
    pub threads_on: bool,
    /// Summaries of recent packets, kept while a page watches the VM (see `observe`).
    pub recent: Option<std::sync::Arc<super::recent::RecentPackets>>,
    /// Capture of the VM leg of the current connection.
    pub tap: Option<crate::capture::tap::Tap>,
    /// Where closing debugger connections finish flushing.
    pub tracker: tokio_util::task::TaskTracker,
    /// Traffic figures since the session started (`jdwpmux stats`).
    pub stats: crate::stats::TrafficStats,
    /// How to talk to this VM: THST form, Android over TCP, DDM requests in flight
    /// (`dialect`, `ddm_commands`, `android_tcp`).
    pub dialect: super::dialect::VmDialect,
}

/// Starts a session task for one VM and returns its handle.
/// `initial` is a connection already made (by the scanner, whose probe completed the
/// handshake: closing it would make the VM print "Debugger failed to attach").
pub fn spawn(
    cfg: SessionConfig,
    initial: Option<Connected>,
    cancel: CancellationToken,
    tracker: &tokio_util::task::TaskTracker,
) -> VmHandle {
    let (tx, rx) = mpsc::channel(CONTROL_CHANNEL);
    let (status, status_rx) = watch::channel(VmStatus::default());
    let span = tracing::info_span!("vm", vm = %cfg.name);
    let session = Session {
        cfg,
        rx,
        status,
        cancel,
        ids: IdTable::default(),
        purposes: HashMap::new(),
        out: BytesMut::new(),
        codec: JdwpCodec::default(),
        vm_stream: None,
        ready: false,
        ddm_aware: None,
        id_sizes: None,
        late_sizes: LateSizes::NotAsked,
        identify_pending: 0,
        android_by_version: false,
        held: VecDeque::new(),
        held_bytes: 0,
        held_dropped: 0,
        held_dropped_logged: 0,
        stray_replies: 0,
        reset_requested: false,
        cleanup_pending: 0,
        cleanup_deadline: None,
        sharing: Sharing::default(),
        deferred_events: VecDeque::new(),
        vm_upstream: None,
        vm_upstream_progress: Instant::now(),
        vm_deferred: Vec::new(),
        debuggers: Debuggers::default(),
        waiting: Vec::new(),
        ddm_state: Default::default(),
        ddm_waiters: Vec::new(),
        thread_watchers: Vec::new(),
        threads_on: false,
        recent: None,
        tap: None,
        tracker: tracker.clone(),
        stats: crate::stats::TrafficStats::live(),
        dialect: Default::default(),
    };
    tracker.spawn(session.run(initial).instrument(span));
    VmHandle { tx, status: status_rx }
}

/// Reconnect delays: fast at first (HotSpot listens again within milliseconds after a
/// debugger leaves), then backing off to a steady retry.
const BACKOFF_MS: [u64; 9] = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

impl Session {
    async fn run(mut self, mut initial: Option<Connected>) {
        let mut attempt = 0usize;
        let mut last_error: Option<String> = None;
        // After dropping a connection on purpose the VM refuses for a few milliseconds
        // while it resets; that is expected and not worth a warning.
        let mut quiet_until: Option<Instant> = None;
        loop {
            if self.cancel.is_cancelled() {
                break;
            }
            let cancel = self.cancel.clone();
            let connected = match initial.take() {
                Some(c) => Ok(c),
                None => tokio::select! {
                    r = self.open() => r,
                    _ = cancel.cancelled() => break,
                },
            };
            match connected {
                Ok(c) => {
                    attempt = 0;
                    last_error = None;
                    info!(addr = %self.cfg.addr, "connected to the VM");
                    match self.run_connected(c).await {
                        Ended::Shutdown => {
                            self.set_state(VmState::Unreachable);
                            break;
                        }
                        Ended::Reset => {
                            debug!("dropped the VM connection so the VM forgets its debugger");
                            self.set_state(VmState::Reconnecting);
                            quiet_until = Some(Instant::now() + Duration::from_secs(2));
                            continue;
                        }
                        Ended::Lost(why) => {
                            warn!(reason = %why, "lost the VM connection; reconnecting");
                            self.set_state(VmState::Reconnecting);
                            quiet_until = None;
                        }
                    }
                }
                Err(e) => {
                    let text = match &e {
                        ConnectError::Refused => format!(
                            "{e}: is the VM running, with -agentlib:jdwp=transport=dt_socket,server=y,address={}?",
                            self.cfg.addr
                        ),
                        _ => e.to_string(),
                    };
                    if quiet_until.is_some_and(|t| Instant::now() < t) {
                        debug!(error = %text, "VM not back yet");
                    } else if last_error.as_deref() != Some(text.as_str()) {
                        warn!(error = %text, "VM not reachable; retrying");
                        last_error = Some(text);
                    }
                    // Refused right after we dropped the connection on purpose: someone else
                    // may have taken the VM's single debugger slot; it is not gone.
                    let after_reset = quiet_until.is_some();
                    if attempt >= 3 && !(after_reset && matches!(e, ConnectError::Refused)) {
                        self.set_state(VmState::Unreachable);
                    }
                }
            }
            let delay = Duration::from_millis(BACKOFF_MS[attempt.min(BACKOFF_MS.len() - 1)]).min(self.cfg.max_backoff);
            attempt += 1;
            if !self.idle_for(delay).await {
                break;
            }
        }
        self.close_debuggers("the VM session ended");
        // A discovered VM whose session ends (its process left) leaves `list`.
        self.set_state(VmState::Unreachable);
        for p in self.waiting.drain(..) {
            let _ = p.reply.send(Err(AttachError::Gone));
        }
        debug!("session ended");
    }

    /// Connects and handshakes, answering control messages meanwhile.
    async fn open(&mut self) -> Result<Connected, ConnectError> {
        let t = self.cfg.timeouts;
        let addr = self.cfg.addr;
        let adb = self.cfg.adb.clone();
        let lookup = self.forward_lookup();
        let fut = async move {
            let forward = match &lookup {
                Some(l) => l.find(addr).await,
                None => None,
            };
            let s = match adb {
                None => connect::connect_tcp(addr, t.connect).await?,
                Some(a) => {
                    let s = a.server.open_jdwp(&a.serial, a.pid).await.map_err(|e| ConnectError::Adb(e.to_string()))?;
                    let _ = s.set_nodelay(true);
                    s
                }
            };
            let c = connect::handshake(s, t.handshake).await?;
            Ok((c, lookup.map(|_| forward)))
        };
        tokio::pin!(fut);
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                r = &mut fut => {
                    let (c, forward) = r?;
                    if let Some(found) = forward {
                        self.note_forward(found);
                    }
                    return Ok(c);
                }
                m = self.rx.recv() => self.on_control(m),
                _ = tick.tick() => self.expire_waiting(),
            }
        }
    }

    /// Waits `delay` while answering control messages; false when shutting down.
    async fn idle_for(&mut self, delay: Duration) -> bool {
        let until = Instant::now() + delay;
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return true,
                _ = self.cancel.cancelled() => return false,
                m = self.rx.recv() => self.on_control(m),
                _ = tick.tick() => self.expire_waiting(),
            }
        }
    }

    pub(super) fn set_state(&self, state: VmState) {
        self.status.send_if_modified(|s| {
            let changed = s.state != state;
            s.state = state;
            changed
        });
    }

    pub(super) fn on_control(&mut self, msg: Option<SessionMsg>) {
        match msg {
            Some(SessionMsg::Attach { link, reply }) => self.on_attach(link, reply),
            Some(SessionMsg::Ddm(req)) => self.on_ddm_request(req),
            Some(SessionMsg::WatchThreads { interval, tx }) => self.on_watch_threads(interval, tx),
            Some(SessionMsg::WatchPackets { reply }) => self.on_watch_packets(reply),
            Some(SessionMsg::Tables(reply)) => {
                let _ = reply.send(self.table_sizes());
            }
            Some(SessionMsg::Stats { reply }) => drop(reply.send(self.stats_report())),
            // Every handle is gone: nothing can attach any more; the token still ends us.
            None => {}
        }
    }

    fn reset_connection_state(&mut self) {
        self.tap = None;
        self.ids = IdTable::default();
        self.purposes.clear();
        self.out.clear();
        self.codec = JdwpCodec::new(MAX_PACKET_LEN, crate::jdwp::codec::DEFAULT_STREAM_OVER);
        self.vm_stream = None;
        self.ready = false;
        self.ddm_aware = None;
        self.identify_pending = 0;
        self.android_by_version = false;
        self.late_sizes = LateSizes::NotAsked;
        self.held.clear();
        self.held_bytes = 0;
        self.reset_requested = false;
        self.cleanup_pending = 0;
        self.cleanup_deadline = None;
        self.sharing = Sharing::default();
        self.deferred_events.clear();
        self.vm_upstream = None;
        self.vm_deferred.clear();
        self.ddm_state = Default::default();
        self.threads_on = false;
        for w in &mut self.thread_watchers {
            w.restart();
        }
    }

    async fn run_connected(&mut self, c: Connected) -> Ended {
        self.reset_connection_state();
        self.set_state(VmState::Identifying);
        let Connected { mut stream, inbuf: mut input, early } = c;
        self.look_up_local_process(&stream);
        self.tap = self.cfg.capture.as_ref().map(|h| {
            let local = stream.local_addr().unwrap_or(self.cfg.addr);
            let id = crate::capture::tap::next_conn_id();
            let mut t = crate::capture::tap::Tap::open(h, id, &self.cfg.name, crate::capture::Leg::Vm, local, self.cfg.addr);
            t.handshakes();
            t
        });
        for p in early {
            self.on_vm_packet(p).await;
        }
        self.start_identify();
        let vm_fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
        let (mut rd, mut wr) = stream.split();
        let mut tick = tokio::time::interval(TICK);
        let mut shutdown_by: Option<Instant> = None;
        let mut pacing = super::vm_reads::ReadPacing::default();
        // Made once: a `cancelled()` future made anew in every turn of the loop registers
        // with the token's lock and leaves it again each time.
        let cancelled = self.cancel.clone().cancelled_owned();
        tokio::pin!(cancelled);
        // The VM socket, the control channel and the cancellation are polled only after
        // their own wake-ups (debuggers' sockets likewise, in `DebuggerIo`).
        let (vm_gate, control_gate, cancel_gate) = (WakeGate::default(), WakeGate::default(), WakeGate::default());
        loop {
            // Route everything already buffered before waiting again.
            self.route_debugger_input().await;
            loop {
                match self.codec.decode(&mut input) {
                    Ok(Some(frame)) => {
                        if self.tap.is_some() || self.recent.is_some() || super::packet_log::wanted() {
                            self.record_from_vm(&frame);
                        }
                        self.on_vm_frame(frame).await
                    }
                    Ok(None) => break,
                    Err(e) => return self.lost(format!("bad packet from the VM: {e}")).await,
                }
            }
            for a in self.debuggers.iter_mut() {
                a.io.flush_now();
            }
            // Commands go to the VM in this turn too, not in one more turn of the `select!`
            // (which polls every branch). A write error is left to the `select!` branch.
            if !self.out.is_empty() {
                if let Ok(n @ 1..) = wr.as_ref().try_write(&self.out) {
                    bytes::Buf::advance(&mut self.out, n);
                    crate::park::wrote_to(vm_fd);
                }
            }
            if self.reset_requested && self.out.is_empty() {
                self.fail_pending().await;
                self.close_debuggers("the VM connection was reset");
                if shutdown_by.is_some() {
                    return Ended::Shutdown;
                }
                return Ended::Reset;
            }
            // Shutting down: stay until the departed debugger's clean-up is done and written.
            if let Some(deadline) = shutdown_by {
                if (!self.cleaning_up() && self.out.is_empty()) || Instant::now() >= deadline {
                    return Ended::Shutdown;
                }
            }
            input.reserve(pacing.size_for(self.codec.body_left()));
            let offered = input.capacity() - input.len();
            let taking_debugger = self.out.len() < OUT_HIGH_WATER;
            // A debugger that reads slowly holds the VM back (bounded by its stall timeout).
            let reading_vm = self.debuggers.max_queued() < DEBUGGER_HIGH_WATER;
            // An idle VM has no timers to run: no tick, so a thousand of them cost nothing.
            let timers = self.has_timers() || shutdown_by.is_some();
            if !self.ids.is_empty() {
                crate::park::in_flight(self.ids.len());
            }
            let rx = &mut self.rx;
            let event = tokio::select! {
                r = poll_fn(|cx| vm_gate.poll(cx, |cx| tokio_util::io::poll_read_buf(std::pin::Pin::new(&mut rd), cx, &mut input))), if reading_vm => Event::Read(r),
                r = wr.write_buf(&mut self.out), if !self.out.is_empty() => Event::Wrote(r),
                (conn, e) = self.debuggers.next_event(taking_debugger) => Event::Debugger(conn, e),
                m = poll_fn(|cx| control_gate.poll(cx, |cx| rx.poll_recv(cx))) => Event::Control(m),
                _ = tick.tick(), if timers => Event::Tick,
                _ = poll_fn(|cx| cancel_gate.poll(cx, |cx| cancelled.as_mut().poll(cx))), if shutdown_by.is_none() => Event::Cancel,
            };
            match event {
                Event::Read(Ok(0)) => {
                    let why = match self.codec.decode_eof(&mut input) {
                        Err(e) => format!("the VM closed the connection: {e}"),
                        Ok(_) => "the VM closed the connection".to_string(),
                    };
                    return self.lost(why).await;
                }
                Event::Read(Ok(n)) => {
                    if pacing.after_read(n, offered) {
                        tokio::task::yield_now().await;
                    }
                }
                Event::Read(Err(e)) => return self.lost(format!("read from the VM failed: {e}")).await,
                Event::Wrote(Ok(_)) => crate::park::wrote_to(vm_fd),
                Event::Wrote(Err(e)) => return self.lost(format!("write to the VM failed: {e}")).await,
                Event::Debugger(conn, e) => self.on_debugger_event(conn, e).await,
                Event::Control(m) => self.on_control(m),
                Event::Tick => self.on_tick().await,
                Event::Cancel => {
                    // Detach cleanly (DBGD and the clean-up on a DDM-aware VM), bounded so a
                    // silent VM never holds the daemon's exit.
                    self.detach_for_shutdown().await;
                    shutdown_by = Some(Instant::now() + SHUTDOWN_CLEANUP);
                }
            }
        }
    }

    async fn lost(&mut self, why: String) -> Ended {
        self.dialect.vm_went_away();
        // Whatever answers at the address next may be another process (a JVM restarted on
        // the same port): its pid and app are looked up, or said by DDM, again.
        self.status.send_modify(|s| {
            s.pid = None;
            s.app = None;
        });
        self.fail_pending().await;
        self.expire_ddm_waiters(true);
        self.close_debuggers("the VM connection was lost");
        Ended::Lost(why)
    }

    /// Closes every attached debugger's connection (the VM connection is gone or reset).
    fn close_debuggers(&mut self, why: &str) {
        for a in self.debuggers.drain() {
            self.stats.debugger_left(a.conn);
            a.io.close(why, &self.tracker);
        }
        self.publish_debuggers();
    }

    fn table_sizes(&self) -> super::handle::TableSizes {
        super::handle::TableSizes {
            outstanding: self.ids.len(),
            debuggers: self.debuggers.len(),
            event_requests: self.sharing.owners.len(),
            holds: self.sharing.holds.len(),
            pins: self.sharing.pins.len(),
            deferred_events: self.deferred_events.len(),
            held_events: self.held.len(),
            held_dropped: self.held_dropped,
        }
    }

    /// Whether anything waits on a deadline (requests, attaches, clean-up, viewers).
    fn has_timers(&self) -> bool {
        !self.purposes.is_empty()
            || !self.waiting.is_empty()
            || self.cleaning_up()
            || !self.ddm_waiters.is_empty()
            || !self.thread_watchers.is_empty()
            || self.held_dropped > self.held_dropped_logged
            || self.debuggers.max_queued() >= DEBUGGER_HIGH_WATER
            || self.vm_upstream.is_some()
    }

}

enum Event {
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
    Debugger(u64, DebuggerEvent),
    Control(Option<SessionMsg>),
    Tick,
    Cancel,
}
