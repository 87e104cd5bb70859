//! The VM session actor: one task per VM that owns the VM socket and the state of every
//! attached debugger. It connects (and reconnects with backoff), identifies the VM, probes
//! DDM, then relays until the connection drops or the daemon stops. Each connected period is
//! the relay loop in `relay_loop`; this file holds the actor's state (`Session`), its start,
//! and its life across connections.
//!
//! The state is a few layers, each owning its own: the VM connection of the moment
//! (`connection`: ids, purposes, sharing tables, leaving and settling), made fresh on each
//! connect; the near answers (`near_layer`); the events held for the next debugger
//! (`held_events`); the attached debuggers and their sockets (`debuggers`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn, Instrument};

use super::loss::{process_runs, Loss, Say, Since};

use super::config::SessionConfig;
use crate::transport::open::{self as connect, ConnectError, Connected};
use super::connection::Connection;
use crate::transport::{Endpoint, Stream};
use super::ddm_types::{ThreadWatcher, Waiter};
use super::debuggers::Debuggers;
use super::handle::{AttachError, DebuggerLink, SessionMsg, VmHandle, VmState, VmStatus, CONTROL_CHANNEL};
use super::held_events::HeldEvents;
use super::near_layer::NearAnswers;
use crate::jdwp::events::IdSizes;

/// Bytes queued for the VM above which the session stops taking debugger packets.
pub(super) const OUT_HIGH_WATER: usize = 1024 * 1024;
/// How often timers (request expiry, attach deadlines) are checked.
/// With a thousand VMs every session's tick adds up, so it is not faster than it must be.
pub(super) const TICK: Duration = Duration::from_millis(500);

/// Why a connected period ended.
pub(super) enum Ended {
    /// The daemon is stopping.
    Shutdown,
    /// The connection was dropped on purpose (a non-DDM VM lost its debugger): reconnect now.
    Reset,
    /// The VM went away or broke the protocol; a local process's loss is held until it is
    /// known whether the process exited (`loss`).
    Lost(String, Option<super::loss::Loss>),
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
    /// What belongs to the VM connection of the moment, made anew on each connect.
    pub vm: Connection,
    // Across connections (those with a part per connection are told of a new one in
    // `run_connected`):
    /// The VM's id sizes, from the proxy's IDSizes or a debugger's (kept across connections
    /// until the next connection's reply).
    pub id_sizes: Option<IdSizes>,
    /// Events that came while no debugger was attached, for the next one.
    pub held: HeldEvents,
    /// Replies from the VM to ids with no outstanding request (see `vm_side`).
    pub stray_replies: u64,
    /// The near answers: the cache, a stop's gathered answers, early answers (`near_layer`).
    pub near: NearAnswers,
    pub debuggers: Debuggers,
    pub waiting: Vec<PendingAttach>,
    pub ddm_waiters: Vec<Waiter>,
    pub thread_watchers: Vec<ThreadWatcher>,
    /// Summaries of recent packets, kept while a page watches the VM (see `observe`).
    pub recent: Option<std::sync::Arc<super::recent::RecentPackets>>,
    /// Where closing debugger connections finish flushing.
    pub tracker: tokio_util::task::TaskTracker,
    /// Traffic figures since the session started (`jdwpmux stats`).
    pub stats: crate::stats::TrafficStats,
    /// How to talk to this VM: THST form, Android over TCP, DDM requests in flight
    /// (`dialect`, `ddm_commands`, `android_tcp`).
    pub dialect: super::dialect::VmDialect,
    /// Whether the VM was ever reached, and since when it is known (`arrival`).
    pub arrival: super::arrival::Arrival,
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
    // Who the VM is, as its discovery saw it, is shown from the start (not only once it is
    // connected): the log line naming the current VM and `list` name the app at once.
    let known = cfg.located.as_ref().map(|l| {
        let l = l.borrow();
        VmStatus { pid: l.pid, app: l.app.clone(), ..VmStatus::default() }
    });
    let (status, status_rx) = watch::channel(known.unwrap_or_default());
    let span = tracing::info_span!("vm", vm = %cfg.name);
    let session = Session {
        cfg,
        rx,
        status,
        cancel,
        vm: Connection::default(),
        id_sizes: None,
        held: HeldEvents::default(),
        stray_replies: 0,
        near: NearAnswers::default(),
        debuggers: Debuggers::default(),
        waiting: Vec::new(),
        ddm_waiters: Vec::new(),
        thread_watchers: Vec::new(),
        recent: None,
        tracker: tracker.clone(),
        stats: crate::stats::TrafficStats::live(),
        dialect: Default::default(),
        arrival: super::arrival::Arrival::new(Instant::now()),
    };
    tracker.spawn(session.run(initial).instrument(span));
    VmHandle { tx, status: status_rx }
}

/// Says a held loss once its line is known (see `loss`): one INFO line when its process
/// exited, else the loss's WARN line.
fn say_loss(held: &mut Option<Loss>, since: Since, exited: &mut bool) {
    let Some(loss) = held.as_ref() else { return };
    match loss.judge(since, process_runs(loss.pid), Instant::now()) {
        Say::Wait => return,
        Say::Exited(line) => {
            info!(reason = %loss.why, "{line}");
            *exited = true;
        }
        Say::Lost => warn!(reason = %loss.why, "lost the VM connection; reconnecting"),
    }
    *held = None;
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
        // A local process's lost connection not said yet, and whether it was said exited.
        let (mut held_loss, mut exited): (Option<Loss>, bool) = (None, false);
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
                    exited = false;
                    say_loss(&mut held_loss, Since::Reconnected, &mut exited);
                    self.arrival.connected();
                    debug!(addr = %self.cfg.addr, "connected to the VM");
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
                        Ended::Lost(why, _) if self.ssh_host().is_some() => {
                            // Through ssh: the host's link line or its discovery says why
                            // (the link is down, the JVM is gone), once for all its VMs.
                            debug!(reason = %why, "lost the VM connection; reconnecting");
                            self.set_state(VmState::Reconnecting);
                            quiet_until = None;
                        }
                        Ended::Lost(why, loss) => {
                            match &loss {
                                Some(l) => debug!(reason = %why, pid = l.pid, "lost the VM connection; is its process exiting?"),
                                None => warn!(reason = %why, "lost the VM connection; reconnecting"),
                            }
                            held_loss = loss;
                            self.set_state(VmState::Reconnecting);
                            quiet_until = None;
                        }
                    }
                }
                Err(e) if self.busy_with().is_some() => {
                    let who = self.busy_with().unwrap_or_default();
                    if last_error.as_deref() != Some(who.as_str()) {
                        debug!(error = %e, held_by = %who, "another debugger holds the VM's agent; connecting when it leaves");
                        last_error = Some(who);
                    }
                    self.set_state(VmState::Busy);
                    // Never connected yet: who it is comes from its discovery alone.
                    self.on_relocated();
                }
                Err(e) => {
                    say_loss(&mut held_loss, Since::Refused, &mut exited);
                    let text = match (&e, self.ssh_host()) {
                        (ConnectError::Refused, None) => format!(
                            "{e}: is the VM running, with -agentlib:jdwp=transport=dt_socket,server=y,address={}?",
                            self.cfg.addr
                        ),
                        (ConnectError::Refused, Some(host)) => {
                            format!("{e} through the ssh link to {host}: is the link up, and the VM running with address={}?", self.cfg.addr)
                        }
                        _ => e.to_string(),
                    };
                    let starting = self.arrival.starting(Instant::now());
                    if quiet_until.is_some_and(|t| Instant::now() < t) {
                        debug!(error = %text, "VM not back yet");
                    } else if starting {
                        debug!(error = %text, "VM not listening yet; its agent may still be starting");
                    } else if exited || held_loss.is_some() {
                        // Its process exited (said once), or may be exiting (said soon).
                        debug!(error = %text, "VM not reachable; retrying");
                    } else if self.ssh_host().is_some() {
                        // Its host's link line (a WARN once for all its VMs) or its discovery
                        // says why: a link down makes every VM of the host unreachable at once.
                        debug!(error = %text, "VM not reachable; retrying");
                    } else if last_error.as_deref() != Some(text.as_str()) {
                        warn!(error = %text, "VM not reachable; retrying");
                        last_error = Some(text);
                    }
                    // Refused right after we dropped the connection on purpose: someone else
                    // may have taken the VM's single debugger slot; it is not gone.
                    let after_reset = quiet_until.is_some();
                    if attempt >= 3 && !starting && !(after_reset && matches!(e, ConnectError::Refused)) {
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
        say_loss(&mut held_loss, Since::Ending, &mut exited);
        self.close_debuggers("the VM session ended");
        // A discovered VM whose session ends (its process left) leaves `list`.
        self.set_state(VmState::Unreachable);
        for p in self.waiting.drain(..) {
            let _ = p.reply.send(Err(AttachError::Gone));
        }
        debug!("session ended");
    }

    /// Who holds the VM's agent, when its discovery says another debugger does.
    fn busy_with(&self) -> Option<String> {
        self.cfg.located.as_ref().and_then(|l| l.borrow().busy.clone())
    }

    /// Connects and handshakes, answering control messages meanwhile.
    async fn open(&mut self) -> Result<Connected, ConnectError> {
        let t = self.cfg.timeouts;
        let endpoint = match &self.cfg.located {
            Some(l) => l.borrow().endpoint.clone(),
            None => Endpoint::Tcp(self.cfg.addr),
        };
        let adb = self.cfg.adb.clone();
        let lookup = self.forward_lookup();
        let fut = async move {
            let forward = match (&lookup, &endpoint) {
                (Some(l), Endpoint::Tcp(addr)) => l.find(*addr).await,
                _ => None,
            };
            let s: Stream = match (adb, &endpoint) {
                (Some(a), _) => a.server.open_jdwp(&a.serial, a.pid).await.map_err(|e| ConnectError::Adb(e.to_string()))?,
                (None, Endpoint::Unix(path)) => connect::connect_unix(path, t.connect).await?,
                (None, tcp) => connect::connect_agent(tcp, t.connect).await?.into(),
            };
            let unix = matches!(s, Stream::Unix(_));
            let c = match connect::handshake(s, t.handshake).await {
                // Through an ssh link, nothing listening at the far end closes the connection.
                Err(ConnectError::Closed) if unix => return Err(ConnectError::Refused),
                r => r?,
            };
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
            Some(SessionMsg::Relocated) => self.on_relocated(),
            // Every handle is gone: nothing can attach any more; the token still ends us.
            None => {}
        }
    }

    /// Closes every attached debugger's connection (the VM connection is gone or reset).
    pub(super) fn close_debuggers(&mut self, why: &str) {
        for a in self.debuggers.drain() {
            self.stats.debugger_left(a.conn);
            a.io.close(why, &self.tracker);
        }
        self.publish_debuggers();
    }

    fn table_sizes(&self) -> super::handle::TableSizes {
        super::handle::TableSizes {
            outstanding: self.vm.ids.len(),
            debuggers: self.debuggers.len(),
            event_requests: self.vm.sharing.owners.len(),
            holds: self.vm.sharing.holds.len(),
            pins: self.vm.sharing.pins.len(),
            deferred_events: self.vm.deferred_events.len(),
            held_events: self.held.len(),
            held_dropped: self.held.dropped(),
            near_answers: self.near.cache.len(),
            near_pending: self.near.cache.pending(),
        }
    }
}
