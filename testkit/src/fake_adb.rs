//! A fake adb server for integration tests, on 127.0.0.1:0. It speaks the host side of the
//! adb protocol well enough for jdwpmux and for the real `adb` client (`adb -P PORT devices`,
//! `adb -P PORT -s SERIAL jdwp`): host:version, host:devices[-l], host:track-devices, the
//! transport switches (host:transport:*, host:tport:*), and on a device track-jdwp, jdwp and
//! jdwp:PID, the last relayed to a TCP address standing in for the VM. Port forwards
//! (`adb forward tcp:0 jdwp:PID`) listen on loopback and relay the same way, and
//! host:list-forward lists them. Devices and their pids are changed from the test; streaming
//! services re-send their list on every change.
//! Independent of the jdwpmux crate.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The server version adb clients since platform-tools 28 expect (0x29); on a mismatch the
/// client would try to kill and restart the server.
pub const FAKE_ADB_VERSION: u32 = 41;
/// Longest request accepted (the real server also limits requests to a few KiB).
const MAX_REQUEST: usize = 4096;
/// Transport requests that pick "the only device" (of a kind; the fake has just one kind).
const ANY_TRANSPORT: [&str; 6] = [
    "host:transport-any",
    "host:transport-usb",
    "host:transport-local",
    "host:tport:any",
    "host:tport:usb",
    "host:tport:local",
];
/// Requests kept for `requests()`.
const MAX_LOGGED: usize = 10_000;

#[derive(Default)]
struct Device {
    state: String,
    transport_id: u64,
    pids: BTreeSet<u32>,
    vms: BTreeMap<u32, SocketAddr>,
}

#[derive(Default)]
struct State {
    devices: BTreeMap<String, Device>,
    /// (serial, local, remote) as host:list-forward prints them.
    forwards: Vec<(String, String, String)>,
    next_transport_id: u64,
    version: u32,
    requests: Vec<String>,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped after every change; streaming services wait on it.
    changed: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.send_modify(|g| *g += 1);
    }
}

pub struct FakeAdb {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: Mutex<Option<JoinHandle<()>>>,
    forward_listeners: Mutex<Vec<JoinHandle<()>>>,
}

impl FakeAdb {
    pub async fn start() -> Result<FakeAdb> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("binding the fake adb server")?;
        Self::serve_on(listener)
    }

    /// A fake adb server listening on 127.0.0.1:5037 of network namespace `netns` (a test
    /// host); the VMs it leads to may be anywhere.
    pub async fn start_in_netns(netns: &str) -> Result<FakeAdb> {
        let listener = super::testnet::bind_in_netns(netns, "127.0.0.1:5037".parse()?)?;
        Self::serve_on(TcpListener::from_std(listener)?)
    }

    fn serve_on(listener: TcpListener) -> Result<FakeAdb> {
        let addr = listener.local_addr()?;
        let state = State { version: FAKE_ADB_VERSION, next_transport_id: 1, ..State::default() };
        let shared = Arc::new(Shared { state: Mutex::new(state), changed: watch::channel(0).0 });
        let server = tokio::spawn(serve(listener, shared.clone()));
        Ok(FakeAdb { addr, shared, server: Mutex::new(Some(server)), forward_listeners: Mutex::new(Vec::new()) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Adds a device in state "device" (or sets an existing one back to "device").
    pub fn add_device(&self, serial: &str) {
        self.set_device_state(serial, "device");
    }

    /// Adds or changes a device with any state string ("offline", "unauthorized", ...).
    pub fn set_device_state(&self, serial: &str, state: &str) {
        self.shared.update(|s| {
            let next_id = &mut s.next_transport_id;
            let new = || Device { transport_id: std::mem::replace(next_id, *next_id + 1), ..Device::default() };
            s.devices.entry(serial.to_owned()).or_insert_with(new).state = state.to_owned();
        });
    }

    /// Removes a device; its track-jdwp streams and relayed VM connections close.
    pub fn remove_device(&self, serial: &str) {
        self.shared.update(|s| {
            s.devices.remove(serial);
        });
    }

    /// Sets the debuggable pids of a device (no-op for an unknown device). Relays to pids no
    /// longer listed close, as if the VM died.
    pub fn set_pids(&self, serial: &str, pids: &[u32]) {
        self.shared.update(|s| match s.devices.get_mut(serial) {
            Some(d) => d.pids = pids.iter().copied().collect(),
            None => eprintln!("fake_adb: set_pids on unknown device {serial:?}"),
        });
    }

    /// Makes `jdwp:PID` on `serial` connect to `vm`; also lists `pid` if it was not.
    pub fn set_vm(&self, serial: &str, pid: u32, vm: SocketAddr) {
        self.shared.update(|s| match s.devices.get_mut(serial) {
            Some(d) => {
                d.pids.insert(pid);
                d.vms.insert(pid, vm);
            }
            None => eprintln!("fake_adb: set_vm on unknown device {serial:?}"),
        });
    }

    /// `adb forward tcp:0 jdwp:PID`: listens on a loopback port that leads to the VM of `pid`
    /// on `serial` (as `jdwp:PID` does), lists it in host:list-forward, and returns it.
    pub async fn forward_jdwp(&self, serial: &str, pid: u32) -> Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("binding a forward")?;
        let local = listener.local_addr()?;
        self.add_forward_entry(serial, &format!("tcp:{}", local.port()), &format!("jdwp:{pid}"));
        let (shared, serial) = (self.shared.clone(), serial.to_owned());
        let task = tokio::spawn(async move {
            let mut conns = JoinSet::new();
            while let Ok((sock, _)) = listener.accept().await {
                let (shared, serial) = (shared.clone(), serial.clone());
                conns.spawn(async move {
                    // A forward is a raw stream: no OKAY, and a close when the VM is not there.
                    if let Ok((pid, vm)) = connect_vm(&shared, &serial, &pid.to_string()).await {
                        pipe(sock, vm, &shared, &serial, pid).await;
                    }
                });
            }
        });
        self.forward_listeners.lock().unwrap_or_else(|e| e.into_inner()).push(task);
        Ok(local)
    }

    /// Lists a forward in host:list-forward without listening for it.
    pub fn add_forward_entry(&self, serial: &str, local: &str, remote: &str) {
        self.shared.update(|s| s.forwards.push((serial.to_owned(), local.to_owned(), remote.to_owned())));
    }

    /// The version `host:version` reports (default `FAKE_ADB_VERSION`).
    pub fn set_version(&self, version: u32) {
        self.shared.update(|s| s.version = version);
    }

    /// Every request received so far, in order (service text without the length prefix).
    pub fn requests(&self) -> Vec<String> {
        self.shared.lock().requests.clone()
    }

    fn server_slot(&self) -> MutexGuard<'_, Option<JoinHandle<()>>> {
        self.server.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops listening and drops every open connection; devices and pids are kept.
    pub async fn stop(&self) {
        let handle = self.server_slot().take();
        if let Some(h) = handle {
            h.abort();
            let _ = h.await;
        }
    }

    /// Listens again on the same address after `stop`.
    pub async fn restart(&self) -> Result<()> {
        self.stop().await;
        let listener = TcpListener::bind(self.addr).await.with_context(|| format!("re-binding {}", self.addr))?;
        let server = tokio::spawn(serve(listener, self.shared.clone()));
        *self.server_slot() = Some(server);
        Ok(())
    }
}

impl Drop for FakeAdb {
    fn drop(&mut self) {
        if let Some(h) = self.server_slot().take() {
            h.abort();
        }
        for h in self.forward_listeners.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            h.abort();
        }
    }
}

/// The accept loop. Connection tasks live in a JoinSet owned here, so aborting this task
/// aborts (and closes) every connection too.
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((sock, _)) => {
                    conns.spawn(handle(sock, shared.clone()));
                }
                Err(e) => {
                    eprintln!("fake_adb: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

fn msg(payload: &str) -> Vec<u8> {
    let mut out = format!("{:04x}", payload.len()).into_bytes();
    out.extend_from_slice(payload.as_bytes());
    out
}

fn fail(reason: &str) -> Vec<u8> {
    [&b"FAIL"[..], &msg(reason)].concat()
}

fn okay_msg(payload: &str) -> Vec<u8> {
    [&b"OKAY"[..], &msg(payload)].concat()
}

/// One request, or None on EOF or a malformed prefix (logged).
async fn read_request(sock: &mut TcpStream) -> Option<String> {
    let mut head = [0u8; 4];
    sock.read_exact(&mut head).await.ok()?;
    let len = std::str::from_utf8(&head).ok().and_then(|h| usize::from_str_radix(h, 16).ok());
    let Some(len) = len.filter(|l| *l <= MAX_REQUEST) else {
        eprintln!("fake_adb: bad request prefix {:?}", String::from_utf8_lossy(&head));
        return None;
    };
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body).await.ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

async fn handle(mut sock: TcpStream, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    // The device chosen by a transport request, for the device service that follows.
    let mut device: Option<String> = None;
    while let Some(req) = read_request(&mut sock).await {
        {
            let mut s = shared.lock();
            if s.requests.len() < MAX_LOGGED {
                s.requests.push(req.clone());
            }
        }
        let reply = match (device.as_deref(), req.as_str()) {
            (_, "host:version") => okay_msg(&format!("{:04x}", shared.lock().version)),
            (_, "host:kill") => b"OKAY".to_vec(),
            (_, "host:features") => okay_msg("shell_v2,cmd"),
            (_, "host:devices") => okay_msg(&device_list(&shared, false)),
            (_, "host:devices-l") => okay_msg(&device_list(&shared, true)),
            (_, "host:list-forward") => okay_msg(&forward_list(&shared)),
            (_, "host:track-devices") => {
                return stream_lists(sock, &shared, true, || Some(device_list(&shared, false))).await
            }
            (_, r) if r.starts_with("host:transport") || r.starts_with("host:tport:") => {
                match select_device(&shared, r) {
                    Ok((serial, id)) => {
                        let mut out = b"OKAY".to_vec();
                        if r.starts_with("host:tport:") {
                            out.extend_from_slice(&id.to_le_bytes());
                        }
                        if sock.write_all(&out).await.is_err() {
                            return;
                        }
                        device = Some(serial);
                        continue;
                    }
                    Err(reason) => fail(&reason),
                }
            }
            (Some(serial), "track-jdwp") => {
                return stream_lists(sock, &shared, true, || pid_text(&shared, serial)).await
            }
            (Some(serial), "jdwp") => return stream_lists(sock, &shared, false, || pid_text(&shared, serial)).await,
            (Some(serial), r) if r.starts_with("jdwp:") => return relay(sock, &shared, serial, &r[5..]).await,
            (_, r) => {
                eprintln!("fake_adb: unknown request {r:?} (device selected: {device:?})");
                fail(&format!("unknown service '{r}'"))
            }
        };
        // One-shot answers end the connection, as with the real server.
        let _ = sock.write_all(&reply).await;
        let _ = sock.shutdown().await;
        return;
    }
}

fn device_list(shared: &Shared, long: bool) -> String {
    let s = shared.lock();
    let line = |(serial, d): (&String, &Device)| match long {
        true => {
            format!("{serial:<22} {} product:fake model:FakeAdb device:fake transport_id:{}\n", d.state, d.transport_id)
        }
        false => format!("{serial}\t{}\n", d.state),
    };
    s.devices.iter().map(line).collect()
}

fn forward_list(shared: &Shared) -> String {
    shared.lock().forwards.iter().map(|(serial, local, remote)| format!("{serial} {local} {remote}\n")).collect()
}

/// Resolves a transport request to an online device: (serial, transport id) or a FAIL reason.
fn select_device(shared: &Shared, req: &str) -> Result<(String, u64), String> {
    let s = shared.lock();
    let by_serial = req.strip_prefix("host:transport:").or_else(|| req.strip_prefix("host:tport:serial:"));
    let by_id = req.strip_prefix("host:transport-id:").or_else(|| req.strip_prefix("host:tport:transport-id:"));
    let found: Vec<(&String, &Device)> = if let Some(serial) = by_serial {
        s.devices.iter().filter(|(k, _)| k.as_str() == serial).collect()
    } else if let Some(id) = by_id {
        let id = id.parse::<u64>().map_err(|_| format!("bad transport id '{id}'"))?;
        s.devices.iter().filter(|(_, d)| d.transport_id == id).collect()
    } else if ANY_TRANSPORT.contains(&req) {
        s.devices.iter().collect()
    } else {
        eprintln!("fake_adb: unknown transport request {req:?}");
        return Err(format!("unknown transport request '{req}'"));
    };
    match found.as_slice() {
        [] if by_serial.is_some() || by_id.is_some() => {
            Err(format!("device '{}' not found", by_serial.or(by_id).unwrap_or_default()))
        }
        [] => Err("no devices/emulators found".to_owned()),
        [(serial, d)] if d.state == "device" => Ok(((*serial).clone(), d.transport_id)),
        [(_, d)] => Err(format!("device {}", d.state)),
        _ => Err("more than one device/emulator".to_owned()),
    }
}

/// Waits for the next change; false when the peer closed its side or the server is gone.
async fn next_change(sock: &mut TcpStream, rx: &mut watch::Receiver<u64>) -> bool {
    let mut byte = [0u8; 1];
    tokio::select! {
        r = rx.changed() => r.is_ok(),
        r = sock.read(&mut byte) => matches!(r, Ok(n) if n > 0),
    }
}

/// The pid list of an online device as text, or None once the device is gone or not online.
fn pid_text(shared: &Shared, serial: &str) -> Option<String> {
    let s = shared.lock();
    let d = s.devices.get(serial).filter(|d| d.state == "device")?;
    Some(d.pids.iter().map(|p| format!("{p}\n")).collect())
}

/// Streams the list `render` gives (None ends the stream): sent at once after OKAY, then
/// again on every change that alters it. `framed` adds the 4-hex-digit length prefix
/// (track-devices, track-jdwp); `jdwp` sends raw text, which is what `adb jdwp` prints.
async fn stream_lists(mut sock: TcpStream, shared: &Shared, framed: bool, render: impl Fn() -> Option<String>) {
    let mut rx = shared.changed.subscribe();
    if sock.write_all(b"OKAY").await.is_err() {
        return;
    }
    let mut last: Option<String> = None;
    while let Some(text) = render() {
        if last.as_ref() != Some(&text) {
            let bytes = if framed { msg(&text) } else { text.clone().into_bytes() };
            if sock.write_all(&bytes).await.is_err() {
                return;
            }
            last = Some(text);
        }
        if !next_change(&mut sock, &mut rx).await {
            return;
        }
    }
}

/// `jdwp:PID`: connect to the VM registered for the pid and relay bytes both ways, until
/// either side closes or the device or pid disappears.
async fn relay(mut sock: TcpStream, shared: &Shared, serial: &str, pid_text: &str) {
    let (pid, vm) = match connect_vm(shared, serial, pid_text).await {
        Ok(c) => c,
        Err(reason) => {
            let _ = sock.write_all(&fail(&reason)).await;
            return;
        }
    };
    if sock.write_all(b"OKAY").await.is_err() {
        return;
    }
    pipe(sock, vm, shared, serial, pid).await;
}

/// Connects to the VM standing in for `pid` on `serial`, or says why not.
async fn connect_vm(shared: &Shared, serial: &str, pid_text: &str) -> Result<(u32, TcpStream), String> {
    let target = match pid_text.parse::<u32>() {
        Err(_) => Err(format!("bad pid '{pid_text}'")),
        Ok(pid) => match shared.lock().devices.get(serial) {
            None => Err(format!("device '{serial}' not found")),
            Some(d) if !d.pids.contains(&pid) => Err(format!("no debuggable process {pid}")),
            Some(d) => d.vms.get(&pid).map(|a| (pid, *a)).ok_or_else(|| format!("no VM address set for pid {pid}")),
        },
    };
    let (pid, addr) = target?;
    let vm = TcpStream::connect(addr).await.map_err(|e| format!("cannot connect to VM at {addr}: {e}"))?;
    let _ = vm.set_nodelay(true);
    Ok((pid, vm))
}

/// Relays bytes both ways until either side closes or the device or pid disappears.
async fn pipe(mut sock: TcpStream, mut vm: TcpStream, shared: &Shared, serial: &str, pid: u32) {
    let mut rx = shared.changed.subscribe();
    let still_there = || {
        let s = shared.lock();
        s.devices.get(serial).is_some_and(|d| d.state == "device" && d.pids.contains(&pid))
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut sock, &mut vm) => {}
        _ = async {
            while rx.changed().await.is_ok() {
                if !still_there() {
                    break;
                }
            }
        } => {}
    }
}
