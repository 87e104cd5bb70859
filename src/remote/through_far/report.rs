//! What a host served through its far side reports: the far side's list as the report a
//! scan gives (same keys and sockets), the host's row following the report, and the release
//! of a cut session while the host stays cut.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use super::released_note;
use crate::remote::near::found::found_jvm;
use crate::remote::near::link::LinkState as NearState;
use crate::remote::near::sockets::Sockets;
use crate::remote::host::{HostConfig, HostReport, RemoteVm};
use crate::remote::naming::Names;
use crate::remote::status::{HostTable, LinkState};

/// Copies each report's link state, and the JVM count of a list from the far side, into
/// the host's row.
pub(in crate::remote) async fn mirror_rows(label: String, mut rx: watch::Receiver<HostReport>, rows: Arc<HostTable>) {
    while rx.changed().await.is_ok() {
        let (link, jvms) = {
            let r = rx.borrow_and_update();
            (r.link.clone(), r.vms.len())
        };
        let up = link == LinkState::Up;
        let now_ms = now_ms();
        rows.update(&label, |r| {
            let r = r.with_link(&link);
            if up {
                r.scanned(jvms, now_ms)
            } else {
                r
            }
        });
    }
}

/// Milliseconds since the epoch, as host rows keep their last scan.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Puts the near link's release of a cut session in the host's report, so the VMs' rows say
/// so while the host stays cut (the link said it in its WARN line and closed their
/// debuggers); taken out when the link is up again. The link keeps the hold's clock, not
/// this task: it runs while the master is being made again, and the link knows when the far
/// side was last heard.
pub(in crate::remote) async fn follow_release(mut state: watch::Receiver<NearState>, report: watch::Sender<HostReport>, label: String) {
    while state.changed().await.is_ok() {
        let now = state.borrow_and_update().clone();
        match now {
            NearState::Released { hold_secs } => report.send_modify(|r| r.released = Some(released_note(&label, hold_secs))),
            NearState::Up { .. } => {
                report.send_if_modified(|r| r.released.take().is_some());
            }
            _ => {}
        }
    }
}

/// The far side's list as the host's report: each VM keyed and socketed as a scan would,
/// its socket listening for channels.
/// `place`: where the far side runs, for JVMs it sees as its own host's (an `--exec` container's).
pub(in crate::remote) fn publish(cfg: &HostConfig, names: &mut Names, sockets: &mut Sockets, login: Option<u32>, listed: &[crate::remote::protocol::frame::VmInfo], place: Option<&crate::discovery::jvms::Place>, report: &watch::Sender<HostReport>) {
    // The far side runs as the login and lists what that user may take; --other-users here
    // cannot widen it (the far side decides on its host), only a known login narrows it.
    let mine = |f: &crate::discovery::jvms::FoundJvm| cfg.other_users || login.is_none() || f.runs_as(login);
    // The exec's command names the container better than jdwpmux inside it can (it sees
    // itself as a container named by its id, or as a host): a name read from the command
    // wins; the bare `--exec` name only stands in for no place at all.
    let placed = |mut f: crate::discovery::jvms::FoundJvm| {
        use crate::discovery::jvms::Place;
        match (place, &f.place) {
            (Some(p @ Place::Reported(_)), Place::Host) => f.place = p.clone(),
            (Some(Place::Reported(_)), _) | (None, _) => {}
            (Some(p), Place::Host | Place::Container { .. } | Place::Pod { .. } | Place::Reported(_)) => f.place = p.clone(),
            (Some(_), Place::Netns { .. }) => {}
        }
        f
    };
    let (found, keys): (Vec<_>, Vec<u32>) = listed.iter().map(|v| (placed(found_jvm(v, login)), v.key)).filter(|(f, _)| mine(f)).unzip();
    let named = names.name(cfg.key_name(), &cfg.dir, &cfg.prefix, login, &found);
    let mut vms = Vec::new();
    let mut keep: Vec<PathBuf> = Vec::new();
    for ((f, key), n) in found.into_iter().zip(keys).zip(named) {
        let Some(n) = n else { continue };
        let forwarded = matches!(f.reach, crate::discovery::jvms::Reach::At(_)) && sockets.set(&n.socket, key);
        keep.push(n.socket.clone());
        vms.push(RemoteVm { key: n.key, socket: n.socket, found: f, login, forwarded });
    }
    sockets.retain(&keep);
    report.send_if_modified(|r| {
        let new = HostReport { link: LinkState::Up, vms, adb: None, released: None };
        let changed = *r != new;
        *r = new;
        changed
    });
}
