//! A host's row in `list` and on the page: how its link is (connecting, up, down with why,
//! refused with what to do), how many JVMs its last scan found, and when that was. The
//! host's task writes it; `list` and the page read a copy. The state of a host's link
//! (`LinkState`) is here too: every way in reports it, and the row is made from it.

use std::sync::Mutex;

use tokio::sync::watch;

use serde::{Deserialize, Serialize};

use crate::remote::protocol::figures::LinkFigures;

/// What `list` shows of an up host whose scan found nothing to debug.
pub const NO_JVM: &str = "no JVM with a JDWP agent";

/// The state of a host's link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Connecting,
    Up,
    /// Down, with why, and whether it is retried soon.
    Down { reason: String, refused: bool },
    /// The link is up, but jdwpmux there serves another serve (taken over, or busy): its
    /// words. Waited on; not a link that is down.
    Busy { reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostState {
    Connecting,
    Up,
    /// Lost or not made; tried again soon.
    Down,
    /// A login or host key ssh refused: tried again when the user fixed it.
    Refused,
    /// The link is up; jdwpmux there serves another serve.
    Busy,
}

impl std::fmt::Display for HostState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostState::Connecting => "connecting",
            HostState::Up => "up",
            HostState::Down => "down",
            HostState::Refused => "refused",
            HostState::Busy => "busy",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRow {
    /// The name `list` shows for it (and its VMs' `host`).
    pub host: String,
    /// What ssh is given (`user@name`, an alias of the ssh config).
    pub dest: String,
    pub state: HostState,
    /// Why it is down or refused, and what to do (ssh's words and the fix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// JVMs with a JDWP agent its last scan found (and jdwpmux takes).
    pub jvms: usize,
    /// When its last scan ended (ms since the epoch), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_ms: Option<u64>,
    /// A word for a host that is up and runs nothing to debug ([`NO_JVM`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl HostRow {
    pub fn new(host: &str, dest: &str) -> HostRow {
        HostRow { host: host.into(), dest: dest.into(), state: HostState::Connecting, reason: None, jvms: 0, last_scan_ms: None, note: None }
    }

    /// The row after the link became `link` (the count and time of the last scan stay).
    pub fn with_link(mut self, link: &LinkState) -> HostRow {
        (self.state, self.reason) = match link {
            LinkState::Connecting => (HostState::Connecting, None),
            LinkState::Up => (HostState::Up, None),
            LinkState::Down { reason, refused: false } => (HostState::Down, Some(reason.clone())),
            LinkState::Down { reason, refused: true } => (HostState::Refused, Some(reason.clone())),
            LinkState::Busy { reason } => (HostState::Busy, Some(reason.clone())),
        };
        self.note = self.note_now();
        self
    }

    /// The row after a scan (the link is up) found `jvms` at `now_ms`.
    pub fn scanned(mut self, jvms: usize, now_ms: u64) -> HostRow {
        self.state = HostState::Up;
        self.reason = None;
        self.jvms = jvms;
        self.last_scan_ms = Some(now_ms);
        self.note = self.note_now();
        self
    }

    fn note_now(&self) -> Option<String> {
        (self.state == HostState::Up && self.jvms == 0 && self.last_scan_ms.is_some()).then(|| NO_JVM.to_string())
    }
}

/// Every `--ssh` host's row, in the order they were given, and the figures of each far link
/// (a host served through jdwpmux on it): its Data frames and its replay buffer.
#[derive(Debug, Default)]
pub struct HostTable {
    rows: Mutex<Vec<HostRow>>,
    /// By host, in the order the links were made: what each link publishes
    /// (`NearLink::figures`); the last figures stay after a link ends.
    links: Mutex<Vec<(String, watch::Receiver<LinkFigures>)>>,
}

impl HostTable {
    /// Puts `row` in place of the row of its host (or after the others).
    pub fn put(&self, row: HostRow) {
        let Ok(mut rows) = self.rows.lock() else { return };
        match rows.iter_mut().find(|r| r.host == row.host) {
            Some(r) => *r = row,
            None => rows.push(row),
        }
    }

    /// Changes the row of `host`, if it has one.
    pub fn update(&self, host: &str, f: impl FnOnce(HostRow) -> HostRow) {
        let Ok(mut rows) = self.rows.lock() else { return };
        if let Some(r) = rows.iter_mut().find(|r| r.host == host) {
            *r = f(r.clone());
        }
    }

    /// Takes the row of `host` away (a host served no more).
    pub fn remove(&self, host: &str) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.retain(|r| r.host != host);
        }
    }

    pub fn rows(&self) -> Vec<HostRow> {
        self.rows.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The far link of `host` is the one `counts` comes from (in place of one before).
    pub fn put_link(&self, host: &str, counts: watch::Receiver<LinkFigures>) {
        let Ok(mut links) = self.links.lock() else { return };
        match links.iter_mut().find(|(h, _)| h == host) {
            Some(l) => l.1 = counts,
            None => links.push((host.to_string(), counts)),
        }
    }

    /// Each far link's Data frames so far and its replay buffer, by host.
    pub fn links(&self) -> Vec<(String, LinkFigures)> {
        self.links.lock().map(|l| l.iter().map(|(h, rx)| (h.clone(), *rx.borrow())).collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_follows_its_link_and_scans() {
        let r = HostRow::new("far", "deploy@far");
        assert_eq!((r.state, r.note.as_deref()), (HostState::Connecting, None));
        let up = r.with_link(&LinkState::Up);
        assert_eq!((up.state, up.note.as_deref()), (HostState::Up, None), "no word before the first scan");
        let empty = up.scanned(0, 5);
        assert_eq!((empty.state, empty.jvms, empty.last_scan_ms, empty.note.as_deref()), (HostState::Up, 0, Some(5), Some(NO_JVM)));
        let two = empty.scanned(2, 9);
        assert_eq!((two.jvms, two.note.as_deref()), (2, None));
        let down = two.with_link(&LinkState::Down { reason: "no route to host".into(), refused: false });
        assert_eq!((down.state, down.reason.as_deref(), down.jvms, down.last_scan_ms), (HostState::Down, Some("no route to host"), 2, Some(9)));
        let refused = down.with_link(&LinkState::Down { reason: "connect once with `ssh far`".into(), refused: true });
        assert_eq!(refused.state, HostState::Refused);
        assert_eq!(refused.with_link(&LinkState::Connecting).reason, None);
    }

    #[test]
    fn a_hosts_link_figures_are_its_last_links() {
        let t = HostTable::default();
        assert!(t.links().is_empty());
        let (tx, rx) = watch::channel(LinkFigures::default());
        t.put_link("far", rx);
        let mut c = LinkFigures::default();
        c.squeezed.received.data(40_000, Some(2_000));
        c.replay.note(9_000, 3);
        tx.send_replace(c);
        drop(tx);
        assert_eq!(t.links(), [("far".to_string(), c)], "kept after the link ended");
        let (_tx, rx) = watch::channel(LinkFigures::default());
        t.put_link("far", rx);
        assert_eq!(t.links(), [("far".to_string(), LinkFigures::default())], "a new link in place of the old");
    }

    #[test]
    fn the_table_keeps_the_given_order() {
        let t = HostTable::default();
        t.put(HostRow::new("b", "b"));
        t.put(HostRow::new("a", "a"));
        t.update("b", |r| r.scanned(1, 1));
        t.update("nobody", |r| r.scanned(1, 1));
        let rows = t.rows();
        assert_eq!(rows.iter().map(|r| (r.host.as_str(), r.jvms)).collect::<Vec<_>>(), [("b", 1), ("a", 0)]);
        let json = serde_json::to_value(&rows[1]).unwrap();
        assert_eq!(json, serde_json::json!({"host": "a", "dest": "a", "state": "connecting", "jvms": 0}));
    }
}
