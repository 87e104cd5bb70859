//! Unit tests of the watcher's bookkeeping: backoff, and how device lists and pid reports turn
//! into VM events (device tasks run against a closed port, so only the session logic is seen).

use super::*;

fn set(pids: &[u32]) -> BTreeSet<u32> {
    pids.iter().copied().collect()
}

fn list(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries.iter().map(|(s, st)| (s.to_string(), st.to_string())).collect()
}

/// An address where nothing listens: the device tasks' connections are refused.
fn closed_port() -> AdbServer {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let addr = l.local_addr().expect("local addr");
    drop(l);
    AdbServer::new(addr)
}

fn drain(rx: &mut mpsc::Receiver<AdbEvent>) -> Vec<AdbEvent> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev);
    }
    out
}

fn added(serial: &str, pid: u32) -> AdbEvent {
    AdbEvent::VmAdded { serial: serial.into(), pid }
}

fn removed(serial: &str, pid: u32) -> AdbEvent {
    AdbEvent::VmRemoved { serial: serial.into(), pid }
}

fn generation(s: &Session<'_>, serial: &str) -> Option<u64> {
    s.slots.get(serial).and_then(|slot| slot.tracker.as_ref()).map(|(g, _)| *g)
}

fn update(generation: Option<u64>, serial: &str, pids: Option<&[u32]>) -> Update {
    Update { generation: generation.unwrap_or(u64::MAX), serial: serial.into(), pids: pids.map(set) }
}

#[test]
fn backoff_doubles_caps_and_resets() {
    let mut b = Backoff::default();
    let got: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
    assert_eq!(got, vec![500, 1000, 2000, 4000, 5000, 5000]);
    b.reset();
    assert_eq!(b.next_delay(), BACKOFF_MIN);
}

#[tokio::test]
async fn devices_and_pid_lists_become_events() {
    let (tx, mut rx) = mpsc::channel(64);
    let cancel = CancellationToken::new();
    let (mut s, _updates) = Session::new(closed_port(), &tx, &cancel);

    assert!(s.apply_devices(list(&[("a", "device"), ("b", "offline")])).await);
    let gen_a = generation(&s, "a");
    assert!(gen_a.is_some(), "online device gets a tracker");
    assert_eq!(generation(&s, "b"), None, "offline device gets none");
    assert_eq!(drain(&mut rx), vec![]);

    assert!(s.apply_update(update(gen_a, "a", Some(&[20, 10]))).await);
    assert_eq!(drain(&mut rx), vec![added("a", 10), added("a", 20)]);

    // A report from a superseded tracker changes nothing.
    assert!(s.apply_update(update(Some(999), "a", Some(&[]))).await);
    assert_eq!(drain(&mut rx), vec![]);

    assert!(s.apply_update(update(gen_a, "a", Some(&[20, 30]))).await);
    assert_eq!(drain(&mut rx), vec![removed("a", 10), added("a", 30)]);

    // track-jdwp lost: its VMs are gone until a new list arrives.
    assert!(s.apply_update(update(gen_a, "a", None)).await);
    assert_eq!(drain(&mut rx), vec![removed("a", 20), removed("a", 30)]);
    assert!(s.apply_update(update(gen_a, "a", Some(&[20]))).await);
    assert_eq!(drain(&mut rx), vec![added("a", 20)]);

    // a goes offline, b comes online.
    let a_token = s.slots.get("a").and_then(|slot| slot.tracker.as_ref()).map(|(_, t)| t.clone());
    assert!(s.apply_devices(list(&[("a", "offline"), ("b", "device")])).await);
    assert_eq!(drain(&mut rx), vec![removed("a", 20)]);
    assert!(a_token.is_some_and(|t| t.is_cancelled()), "tracker of an offline device is stopped");
    assert_eq!(generation(&s, "a"), None);
    let gen_b = generation(&s, "b");
    assert!(gen_b.is_some() && gen_b != gen_a);

    // A late report of a's old tracker is ignored.
    assert!(s.apply_update(update(gen_a, "a", Some(&[1]))).await);
    assert_eq!(drain(&mut rx), vec![]);

    assert!(s.apply_update(update(gen_b, "b", Some(&[5]))).await);
    assert_eq!(drain(&mut rx), vec![added("b", 5)]);
    assert!(s.apply_devices(list(&[])).await);
    assert_eq!(drain(&mut rx), vec![removed("b", 5)]);
    assert!(s.slots.is_empty());
    cancel.cancel();
}

#[tokio::test]
async fn lists_are_capped() {
    let (tx, mut rx) = mpsc::channel(MAX_PIDS_PER_DEVICE + 16);
    let cancel = CancellationToken::new();
    let (mut s, _updates) = Session::new(closed_port(), &tx, &cancel);

    let many: Vec<(String, String)> = (0..MAX_DEVICES + 3).map(|i| (format!("d{i:03}"), "offline".into())).collect();
    assert!(s.apply_devices(many).await);
    assert_eq!(s.slots.len(), MAX_DEVICES);

    assert!(s.apply_devices(list(&[("x", "device")])).await);
    let pids: Vec<u32> = (1..=(MAX_PIDS_PER_DEVICE as u32 + 10)).collect();
    assert!(s.apply_update(update(generation(&s, "x"), "x", Some(&pids))).await);
    let events = drain(&mut rx);
    assert_eq!(events.len(), MAX_PIDS_PER_DEVICE);
    assert_eq!(events.last(), Some(&added("x", MAX_PIDS_PER_DEVICE as u32)));
    cancel.cancel();
}

#[tokio::test]
async fn closed_receiver_stops_the_session() {
    let (tx, rx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    let (mut s, _updates) = Session::new(closed_port(), &tx, &cancel);
    assert!(s.apply_devices(list(&[("a", "device")])).await);
    drop(rx);
    assert!(!s.apply_update(update(generation(&s, "a"), "a", Some(&[7]))).await);
    cancel.cancel();
}
