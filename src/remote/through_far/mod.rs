//! One `--ssh` host served through jdwpmux on it (`--far auto|always`): the ssh master as
//! today, the far side started through it, its socket forwarded, a near link over that, and
//! a local socket per listed VM. What it knows goes out as the `HostReport` a scan of the host
//! gives, with the same keys and sockets, so the daemon follows it the same way. When the
//! master is lost the near link holds every channel and tries again; the master is made
//! again, the far side found running, its socket forwarded again, and the link resumes.
//!
//! With `auto` (the default), the host starts as `remote::host` runs it, and the first ssh
//! link made looks for the far side with one command through the master: found, the link
//! is handed over here; not found (not there, another protocol), the host is served through
//! ssh forwards on that same link, with one INFO line saying why and how to change it, so a
//! host without jdwpmux costs one command more than before. A far side that refuses this
//! near side at its hello later sends the host to forwards too.
//!
//! A far side can end while the master stays up (killed, crashed): when the near link goes
//! down, its start is run again through the master, and `restart` judges the answer. A new
//! far side is said in one WARN line naming the host; the link then finds its session gone
//! and closes the VM connections it held (their debuggers are closed, as when a VM goes), and
//! the new far side's list serves the VMs again on their ports.
//!
//! While the far side holds this near side's session after a cut, the master is tried again
//! promptly (short connect timeouts and waits, and at once on a change of this machine's
//! network: `timing::retry_plan`, `netwatch`).
//!
//! - `serve`: the task's loop over one far side: the master made, the link followed, the
//!   far side checked while the link is down.
//! - `reach`: making the master again and reaching the far side through it, and the waits
//!   between tries (cut short by a change of the network).
//! - `report`: the far side's list as the host's report, and the host's row following it.
//! - `lines`: the lines said of a far side that cannot be used, restarted, silent, taken
//!   over, or holding for another time than asked. Pure.
//! - `restart`: whether the far side still runs when the link goes down, and what then. Pure.

mod lines;
mod reach;
pub mod restart;
mod report;
mod serve;

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::remote::copy;
use crate::remote::far_choice::{FarChoice, FarMode};
use crate::remote::protocol::ready::Ready;
use crate::remote::ssh::start_far::{self as ssh, FarUnusable};
use crate::remote::host::{HostConfig, HostReport, Probe};
use crate::remote::status::HostTable;
pub use lines::{fallback_line, hold_line, released_note, silent_line, taken_over_line};
pub(in crate::remote) use report::{follow_release, mirror_rows, publish};
use serve::{serve_host, Ended};

/// Runs one host through its far side until `cancel`. With `auto`, the first ssh link made
/// looks for the far side (one command through the master); without a usable one, the host
/// is served as `remote::host::run` serves it, on that same link.
pub async fn run(cfg: HostConfig, far: FarChoice, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    let mut first = None;
    if far.mode == FarMode::Auto {
        let (c, f) = (cfg.clone(), far.clone());
        let look: Probe<Ready> = Box::new(move || Box::pin(async move { look_for_far(&c, &f).await }));
        match crate::remote::host::run_probing(&cfg, &report, &rows, &cancel, Some(look)).await {
            Some(found) => first = Some(found),
            None => return,
        }
    }
    // The host's row in `list` and on the page follows what this task reports.
    let mirror = tokio::spawn(mirror_rows(cfg.label.clone(), report.subscribe(), rows.clone()));
    let ended = serve_host(&cfg, &far, &report, &rows, first, &cancel).await;
    mirror.abort();
    if ended == Ended::Forwards {
        crate::remote::host::run(cfg, report, rows, cancel).await;
    }
}

/// Starts (or finds) the far side through the master and forwards its socket; None, said in
/// the fallback line, when it cannot be used.
async fn look_for_far(cfg: &HostConfig, far: &FarChoice) -> Option<Ready> {
    match reach_far(cfg, far).await {
        Ok(ready) => Some(ready),
        Err(why) => {
            info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, far));
            None
        }
    }
}

async fn reach_far(cfg: &HostConfig, far: &FarChoice) -> Result<Ready, FarUnusable> {
    let control = cfg.dir.join(format!("{}.ctl", cfg.prefix));
    let ready = copy::start(&cfg.ssh, &control, &cfg.dest, &cfg.label, &far.path, far.copy).await?;
    ssh::forward(&cfg.ssh, &control, &cfg.dest, &ssh::local_socket(&cfg.dir, &cfg.prefix), &ready.socket).await.map_err(FarUnusable::Failed)?;
    Ok(ready)
}
