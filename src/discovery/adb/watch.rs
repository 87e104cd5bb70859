//! The "scan device" watcher: follows `host:track-devices`, runs one `track-jdwp` task per
//! online device, and turns list changes into `AdbEvent`s. One session task owns all pid sets
//! and is the only sender of events, so events come out in a single consistent order; device
//! tasks only report raw lists to it. When the server goes away every known VM is reported
//! removed, then `ServerDown`; reconnection backs off from `BACKOFF_MIN` to `BACKOFF_MAX`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{diff_pids, parse_devices, parse_pids, AdbServer, MessageReader, Wanted};

/// First delay before reconnecting (server or one device's `track-jdwp`).
pub const BACKOFF_MIN: Duration = Duration::from_millis(500);
/// Longest delay between reconnection attempts; the delay doubles up to this.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Devices followed at once; further ones are ignored (with one warning per session).
pub const MAX_DEVICES: usize = 64;
/// Pids kept per device; a longer list is cut (with a warning), never grown without bound.
pub const MAX_PIDS_PER_DEVICE: usize = 4096;
/// Pending pid-list reports from device tasks to the session.
const UPDATE_QUEUE: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdbEvent {
    VmAdded {
        serial: String,
        pid: u32,
    },
    VmRemoved {
        serial: String,
        pid: u32,
    },
    /// The server connection failed or dropped (after the VmRemoved events of its VMs).
    ServerDown(String),
    /// `host:track-devices` was accepted (again).
    ServerUp,
}

/// Runs until `cancel` fires or the receiver of `tx` is dropped. Never returns an error:
/// failures become `ServerDown` and retries. A server that is lost is logged once per loss:
/// as a warning when it was named (`wanted`), else at INFO when it had answered before and
/// at DEBUG when it never did (the usual server of a machine without adb).
pub async fn watch(server: AdbServer, wanted: Wanted, tx: mpsc::Sender<AdbEvent>, cancel: CancellationToken) {
    let mut backoff = Backoff::default();
    let mut link: Option<bool> = None; // None until the first attempt tells us.
    loop {
        let reason = match run_session(server.clone(), &tx, &cancel, &mut link, &mut backoff).await {
            SessionEnd::Stop => return,
            SessionEnd::Dropped(reason) => reason,
        };
        if link != Some(false) {
            let (addr, min, max) = (&server, BACKOFF_MIN, BACKOFF_MAX);
            match (wanted, link) {
                (Wanted::Named, _) => warn!(%addr, "adb server unavailable: {reason}; retrying every {min:?}..{max:?}"),
                (Wanted::ByDefault, Some(true)) => info!(%addr, "adb server unavailable: {reason}; retrying every {min:?}..{max:?}"),
                (Wanted::ByDefault, _) => debug!(%addr, "adb server unavailable: {reason}; retrying every {min:?}..{max:?}"),
            }
            link = Some(false);
            if !emit(&tx, &cancel, AdbEvent::ServerDown(reason)).await {
                return;
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

enum SessionEnd {
    Stop,
    Dropped(String),
}

/// A device in the latest list, with the tracking task and pids while it is online.
struct Slot {
    state: String,
    tracker: Option<(u64, CancellationToken)>,
    pids: BTreeSet<u32>,
}

/// What a device task reports: its generation (to drop reports of a superseded task), and
/// either a fresh pid list or `None` when its `track-jdwp` stream was lost.
struct Update {
    generation: u64,
    serial: String,
    pids: Option<BTreeSet<u32>>,
}

struct Session<'a> {
    server: AdbServer,
    tx: &'a mpsc::Sender<AdbEvent>,
    cancel: &'a CancellationToken,
    token: CancellationToken,
    updates: mpsc::Sender<Update>,
    slots: BTreeMap<String, Slot>,
    next_generation: u64,
    warned_too_many: bool,
}

async fn run_session(
    server: AdbServer,
    tx: &mpsc::Sender<AdbEvent>,
    cancel: &CancellationToken,
    link: &mut Option<bool>,
    backoff: &mut Backoff,
) -> SessionEnd {
    let stream = tokio::select! {
        _ = cancel.cancelled() => return SessionEnd::Stop,
        r = server.request("host:track-devices") => match r {
            Ok(s) => s,
            Err(e) => return SessionEnd::Dropped(e.to_string()),
        },
    };
    if *link != Some(true) {
        info!(addr = %server, "adb server is up; tracking devices");
        *link = Some(true);
    }
    if !emit(tx, cancel, AdbEvent::ServerUp).await {
        return SessionEnd::Stop;
    }
    let (mut s, mut update_rx) = Session::new(server.clone(), tx, cancel);
    // Device tasks end with the session however it ends, including this future being dropped.
    let _stop_devices = s.token.clone().drop_guard();
    let mut reader = MessageReader::new(stream);
    let reason = loop {
        tokio::select! {
            _ = cancel.cancelled() => return SessionEnd::Stop,
            msg = reader.next_message() => match msg {
                Ok(Some(list)) => match parse_devices(&list) {
                    Ok(devices) => {
                        backoff.reset();
                        let list = devices.into_iter().map(|d| (d.serial, d.state)).collect();
                        if !s.apply_devices(list).await {
                            return SessionEnd::Stop;
                        }
                    }
                    // One odd list is not worth dropping every VM; the next list supersedes it.
                    Err(e) => warn!(addr = %server, "ignoring device list: {e}"),
                },
                Ok(None) => break "the adb server closed the device tracking connection".to_owned(),
                Err(e) => break e.to_string(),
            },
            Some(u) = update_rx.recv() => {
                if !s.apply_update(u).await {
                    return SessionEnd::Stop;
                }
            }
        }
    };
    s.token.cancel();
    let serials: Vec<String> = s.slots.keys().cloned().collect();
    for serial in serials {
        if !s.set_pids(&serial, BTreeSet::new()).await {
            return SessionEnd::Stop;
        }
    }
    SessionEnd::Dropped(reason)
}

impl<'a> Session<'a> {
    fn new(
        server: AdbServer,
        tx: &'a mpsc::Sender<AdbEvent>,
        cancel: &'a CancellationToken,
    ) -> (Self, mpsc::Receiver<Update>) {
        let (updates, update_rx) = mpsc::channel(UPDATE_QUEUE);
        let token = cancel.child_token();
        let slots = BTreeMap::new();
        let s = Session { server, tx, cancel, token, updates, slots, next_generation: 0, warned_too_many: false };
        (s, update_rx)
    }

    /// Applies a new device list. Returns false when events can no longer be delivered.
    async fn apply_devices(&mut self, list: Vec<(String, String)>) -> bool {
        let mut next: BTreeMap<String, String> = BTreeMap::new();
        for (serial, state) in list {
            if next.len() >= MAX_DEVICES && !next.contains_key(&serial) {
                if !self.warned_too_many {
                    warn!("more than {MAX_DEVICES} devices; ignoring {serial} and any further ones");
                    self.warned_too_many = true;
                }
                continue;
            }
            next.insert(serial, state);
        }
        // Devices gone, or no longer online: stop their tracker and drop their VMs.
        let old: Vec<String> = self.slots.keys().cloned().collect();
        for serial in old {
            let new_state = next.get(&serial).cloned();
            let online = new_state.as_deref() == Some(super::ONLINE_STATE);
            let Some(slot) = self.slots.get_mut(&serial) else { continue };
            if new_state.as_deref() != Some(slot.state.as_str()) {
                info!(%serial, "device {} -> {}", slot.state, new_state.as_deref().unwrap_or("gone"));
            }
            if !online {
                if let Some((_, t)) = slot.tracker.take() {
                    t.cancel();
                }
                if !self.set_pids(&serial, BTreeSet::new()).await {
                    return false;
                }
            }
            match new_state {
                Some(state) => {
                    if let Some(slot) = self.slots.get_mut(&serial) {
                        slot.state = state;
                    }
                }
                None => {
                    self.slots.remove(&serial);
                }
            }
        }
        // New devices, and online devices without a tracker: start one.
        for (serial, state) in next {
            let online = state == super::ONLINE_STATE;
            let slot = self.slots.entry(serial.clone()).or_insert_with(|| {
                info!(%serial, "device appeared ({state})");
                Slot { state: state.clone(), tracker: None, pids: BTreeSet::new() }
            });
            if online && slot.tracker.is_none() {
                self.next_generation += 1;
                let generation = self.next_generation;
                let token = self.token.child_token();
                slot.tracker = Some((generation, token.clone()));
                let task = track_device(self.server.clone(), serial, generation, self.updates.clone(), token);
                tokio::spawn(task);
            }
        }
        true
    }

    async fn apply_update(&mut self, u: Update) -> bool {
        let current = self.slots.get(&u.serial).and_then(|s| s.tracker.as_ref()).map(|(g, _)| *g);
        if current != Some(u.generation) {
            return true; // from a tracker that was already stopped
        }
        let mut pids = u.pids.unwrap_or_default();
        if pids.len() > MAX_PIDS_PER_DEVICE {
            warn!(serial = %u.serial, "{} debuggable pids; keeping the first {MAX_PIDS_PER_DEVICE}", pids.len());
            pids = pids.into_iter().take(MAX_PIDS_PER_DEVICE).collect();
        }
        self.set_pids(&u.serial, pids).await
    }

    /// Sets the pid set of `serial` to `new`, emitting removals then additions.
    async fn set_pids(&mut self, serial: &str, new: BTreeSet<u32>) -> bool {
        let Some(slot) = self.slots.get_mut(serial) else { return true };
        let diff = diff_pids(&slot.pids, &new);
        slot.pids = new;
        for pid in diff.removed {
            if !emit(self.tx, self.cancel, AdbEvent::VmRemoved { serial: serial.to_owned(), pid }).await {
                return false;
            }
        }
        for pid in diff.added {
            if !emit(self.tx, self.cancel, AdbEvent::VmAdded { serial: serial.to_owned(), pid }).await {
                return false;
            }
        }
        true
    }
}

/// Follows `track-jdwp` of one device until `token` fires, reconnecting with backoff while the
/// device stays online. Logs when a list first arrives and when following fails, not every
/// attempt (`tracking`: None at first, then whether the last state logged was good).
async fn track_device(
    server: AdbServer,
    serial: String,
    generation: u64,
    updates: mpsc::Sender<Update>,
    token: CancellationToken,
) {
    let mut backoff = Backoff::default();
    let mut tracking: Option<bool> = None;
    let send = |pids: Option<BTreeSet<u32>>| {
        let u = Update { generation, serial: serial.clone(), pids };
        let (updates, token) = (updates.clone(), token.clone());
        async move {
            tokio::select! {
                _ = token.cancelled() => false,
                r = updates.send(u) => r.is_ok(),
            }
        }
    };
    loop {
        let opened = tokio::select! {
            _ = token.cancelled() => return,
            r = server.open_transport(&serial, "track-jdwp") => r,
        };
        let reason = match opened {
            Ok(stream) => {
                let mut reader = MessageReader::new(stream);
                let reason = loop {
                    let msg = tokio::select! {
                        _ = token.cancelled() => return,
                        m = reader.next_message() => m,
                    };
                    match msg.and_then(|m| m.map(|m| parse_pids(&m)).transpose()) {
                        Ok(Some(pids)) => {
                            backoff.reset();
                            if tracking != Some(true) {
                                info!(%serial, "tracking debuggable VMs");
                                tracking = Some(true);
                            }
                            if !send(Some(pids)).await {
                                return;
                            }
                        }
                        Ok(None) => break "track-jdwp connection closed".to_owned(),
                        Err(e) => break e.to_string(),
                    }
                };
                if !send(None).await {
                    return;
                }
                reason
            }
            Err(e) => e.to_string(),
        };
        if tracking != Some(false) {
            // Usually the device is going away and its list entry follows; hence not a warning.
            info!(%serial, "VM list unavailable ({reason}); retrying while the device is listed");
            tracking = Some(false);
        }
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// Sends one event unless cancelled; false when the watcher should stop.
async fn emit(tx: &mpsc::Sender<AdbEvent>, cancel: &CancellationToken, ev: AdbEvent) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => false,
        r = tx.send(ev) => r.is_ok(),
    }
}

/// Doubling delay between `BACKOFF_MIN` and `BACKOFF_MAX`.
#[derive(Debug, Default)]
struct Backoff {
    current: Option<Duration>,
}

impl Backoff {
    fn next_delay(&mut self) -> Duration {
        let d = match self.current {
            None => BACKOFF_MIN,
            Some(d) => (d * 2).min(BACKOFF_MAX),
        };
        self.current = Some(d);
        d
    }

    fn reset(&mut self) {
        self.current = None;
    }
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
