//! One connected period of a VM session: the loop that relays between the VM and its
//! debuggers until the connection drops, is reset on purpose, or the daemon stops (the
//! actor in `actor` reconnects around it).
//!
//! The loop reads and writes every socket (the VM's and each attached debugger's, see
//! `debuggers`) in one `select!` using only cancel-safe calls (`read_buf`, `write_buf`,
//! readiness polls, `recv`), so a packet costs one wake-up of one task and several queued
//! packets leave in one write.

use std::future::{poll_fn, Future};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use tokio_util::codec::Decoder;

use super::actor::{Ended, Session, OUT_HIGH_WATER, TICK};
use super::loss::Loss;
use crate::transport::open::Connected;
use super::connection::Connection;
use super::debugger_io::{DebuggerEvent, DEBUGGER_HIGH_WATER};
use super::handle::{SessionMsg, VmState};
use super::wake_gate::WakeGate;

/// How long a stopping session may spend undoing what its debugger left on the VM.
const SHUTDOWN_CLEANUP: Duration = Duration::from_millis(1500);

impl Session {
    /// Starts a new VM connection: what belonged to the previous one is dropped whole, and
    /// what outlives connections forgets its part of it.
    fn new_connection(&mut self) {
        self.vm = Connection::default();
        self.held.clear();
        let near = self.near_cache_wanted();
        self.near.new_connection(near);
        if self.local_stops_wanted() {
            self.vm.stops = Some(super::local_stops::LocalStops::start(super::local_stops::LOCAL_LIMITS, &mut self.vm.out));
        }
        for w in &mut self.thread_watchers {
            w.restart();
        }
    }

    pub(super) async fn run_connected(&mut self, c: Connected) -> Ended {
        self.new_connection();
        self.set_state(VmState::Identifying);
        let Connected { mut stream, inbuf: mut input, early } = c;
        self.look_up_process(&stream);
        self.vm.tap = self.cfg.capture.as_ref().map(|h| {
            let id = crate::capture::tap::next_conn_id();
            // A Unix socket (an ssh link's forward) has no address: the capture shows a
            // loopback one of its own, a port per connection.
            let local = stream.local_addr().unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 1024 + (id % 60_000) as u16)));
            let mut t = crate::capture::tap::Tap::open(h, id, &self.cfg.name, crate::capture::Leg::Vm, local, self.cfg.addr);
            t.handshakes();
            t
        });
        for p in early {
            self.on_vm_packet(p).await;
        }
        // What came after the handshake goes through the stop relay like every later read.
        let mut raw = bytes::BytesMut::new();
        if let Some(stops) = self.vm.stops.as_mut() {
            let after_handshake = input.split();
            stops.vm_sent(&after_handshake, &mut self.vm.out, &mut input);
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
                match self.vm.codec.decode(&mut input) {
                    Ok(Some(frame)) => {
                        if self.vm.tap.is_some() || self.recent.is_some() || super::packet_log::wanted() {
                            self.record_from_vm(&frame);
                        }
                        self.on_vm_frame(frame).await
                    }
                    // The stop relay may have let bytes go as the session wrote (a stop's
                    // reading ended by what it wrote, or its deadline): read them too.
                    Ok(None) if self.vm.stops.as_mut().is_some_and(|s| s.take_pending(&mut input)) => continue,
                    Ok(None) => break,
                    Err(e) => return self.lost(format!("bad packet from the VM: {e}")).await,
                }
            }
            for a in self.debuggers.iter_mut() {
                a.io.flush_now();
            }
            // Commands go to the VM in this turn too, not in one more turn of the `select!`
            // (which polls every branch). A write error is left to the `select!` branch.
            if !self.vm.out.is_empty() {
                if let Ok(n @ 1..) = wr.try_write(&self.vm.out) {
                    bytes::Buf::advance(&mut self.vm.out, n);
                    crate::park::wrote_to(vm_fd);
                }
            }
            if self.vm.leaving.resetting() && self.vm.out.is_empty() {
                self.fail_pending().await;
                self.close_debuggers("the VM connection was reset");
                if shutdown_by.is_some() {
                    return Ended::Shutdown;
                }
                return Ended::Reset;
            }
            // Shutting down: stay until the departed debugger's clean-up is done and written.
            if let Some(deadline) = shutdown_by {
                if (!self.vm.leaving.cleaning_up() && self.vm.out.is_empty()) || Instant::now() >= deadline {
                    return Ended::Shutdown;
                }
            }
            // With the stop relay, reads land in `raw` and reach `input` through it.
            let target = if self.vm.stops.is_some() { &mut raw } else { &mut input };
            target.reserve(pacing.size_for(self.vm.codec.body_left()));
            let offered = target.capacity() - target.len();
            let taking_debugger = self.vm.out.len() < OUT_HIGH_WATER;
            // A debugger that reads slowly holds the VM back (bounded by its stall timeout).
            let reading_vm = self.debuggers.max_queued() < DEBUGGER_HIGH_WATER;
            // An idle VM has no timers to run: no tick, so a thousand of them cost nothing.
            let timers = self.has_timers() || shutdown_by.is_some();
            if !self.vm.ids.is_empty() {
                crate::park::in_flight(self.vm.ids.len());
            }
            let rx = &mut self.rx;
            let event = tokio::select! {
                r = poll_fn(|cx| vm_gate.poll(cx, |cx| tokio_util::io::poll_read_buf(std::pin::Pin::new(&mut rd), cx, &mut *target))), if reading_vm => Event::Read(r),
                r = wr.write_buf(&mut self.vm.out), if !self.vm.out.is_empty() => Event::Wrote(r),
                (conn, e) = self.debuggers.next_event(taking_debugger) => Event::Debugger(conn, e),
                m = poll_fn(|cx| control_gate.poll(cx, |cx| rx.poll_recv(cx))) => Event::Control(m),
                _ = tick.tick(), if timers => Event::Tick,
                _ = poll_fn(|cx| cancel_gate.poll(cx, |cx| cancelled.as_mut().poll(cx))), if shutdown_by.is_none() => Event::Cancel,
            };
            match event {
                Event::Read(Ok(0)) => {
                    let why = match self.vm.codec.decode_eof(&mut input) {
                        Err(e) => format!("the VM closed the connection: {e}"),
                        Ok(_) => "the VM closed the connection".to_string(),
                    };
                    return self.lost(why).await;
                }
                Event::Read(Ok(n)) => {
                    if let Some(stops) = self.vm.stops.as_mut() {
                        stops.vm_sent(&raw, &mut self.vm.out, &mut input);
                        raw.clear();
                    }
                    if pacing.after_read(n, offered) {
                        tokio::task::yield_now().await;
                    }
                }
                Event::Read(Err(e)) => return self.lost(format!("read from the VM failed: {e}")).await,
                Event::Wrote(Ok(_)) => crate::park::wrote_to(vm_fd),
                Event::Wrote(Err(e)) => return self.lost(format!("write to the VM failed: {e}")).await,
                Event::Debugger(conn, e) => self.on_debugger_event(conn, e).await,
                Event::Control(m) => self.on_control(m),
                Event::Tick => {
                    if let Some(stops) = self.vm.stops.as_mut() {
                        stops.tick(std::time::Instant::now(), &mut self.vm.out);
                    }
                    self.on_tick().await
                }
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
        let loss = self.local_loss(&why);
        self.dialect.vm_went_away();
        // Whatever answers at the address next may be another process (a JVM restarted on
        // the same port): its pid and app are looked up, or said by DDM, again. A VM whose
        // discovery says who it is stays that one meanwhile.
        let (pid, app) = match &self.cfg.located {
            Some(l) => {
                let l = l.borrow();
                (l.pid, l.app.clone())
            }
            None => (None, None),
        };
        self.status.send_modify(|s| {
            s.pid = pid;
            s.app = app;
        });
        self.fail_pending().await;
        self.expire_ddm_waiters(true);
        let closing = match self.ssh_host() {
            Some(host) => format!("the VM connection through the ssh link to {host} was lost"),
            None => "the VM connection was lost".to_string(),
        };
        self.close_debuggers(&closing);
        Ended::Lost(why, loss)
    }

    /// The loss of a JVM's connection on this machine, whose pid /proc can tell about: not
    /// one through ssh or adb, nor a DDM VM (its pid is the device's).
    fn local_loss(&self, why: &str) -> Option<Loss> {
        let remote = self.ssh_host().is_some() || self.cfg.adb.is_some() || self.cfg.android || self.dialect.android.is_some();
        if remote || self.vm.ddm_aware == Some(true) {
            return None;
        }
        let s = self.status.borrow();
        Some(Loss { why: why.to_string(), pid: s.pid?, app: s.app.clone(), at: tokio::time::Instant::now() })
    }

    /// Whether anything waits on a deadline (requests, attaches, clean-up, viewers).
    fn has_timers(&self) -> bool {
        !self.vm.purposes.is_empty()
            || !self.waiting.is_empty()
            || self.vm.leaving.cleaning_up()
            || !self.ddm_waiters.is_empty()
            || !self.thread_watchers.is_empty()
            || self.held.unlogged()
            || self.debuggers.max_queued() >= DEBUGGER_HIGH_WATER
            || self.vm.upstream.is_some()
            || self.vm.stops.as_ref().is_some_and(|s| s.holding())
    }
}

/// What woke the loop.
enum Event {
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
    Debugger(u64, DebuggerEvent),
    Control(Option<SessionMsg>),
    Tick,
    Cancel,
}
