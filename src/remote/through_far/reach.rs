//! Making a host's master again and reaching the far side through it (started or found, its
//! socket forwarded), what a failed try says (once, then at DEBUG), and the waits between
//! tries, cut short by a change of this machine's network while the far side holds.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::reach_far;
use crate::remote::far_choice::{FarChoice, FarMode};
use crate::remote::near::netwatch::NetChanges;
use crate::remote::protocol::ready::Ready;
use crate::remote::through_far::restart::{self, Unusable};
use crate::remote::ssh::start_far::FarUnusable;
use crate::remote::near::timing::{Backoff, Retry, RESTART_AFTER};
use crate::remote::host::{HostConfig, HostReport};
use crate::remote::status::LinkState;
use crate::remote::ssh::master::Link;

pub(super) enum Reached {
    Yes(Box<(Link, Ready)>),
    /// Said and reported; tried again after the backoff.
    No,
    /// The attempt was cut short by a change of the network: tried again at once.
    Again,
    /// With `auto`, the far side is gone for good (see `restart::on_unusable`): forwards.
    Gone(FarUnusable),
    Stopped,
}

/// How a cut host is being tried again: the network's changes and whether they were said.
pub(super) struct Retrying {
    /// The network changes seen in this outage were said (at INFO once, then at DEBUG).
    pub(super) change_said: bool,
    /// The attempt under way was made again for a change of the network.
    pub(super) for_change: bool,
    pub(super) net: Option<NetChanges>,
    /// The last failure said at WARN: the same one again, while retrying, goes to DEBUG.
    pub(super) said: Option<String>,
}

/// The phase of a host with (or without) a near link and a cut under way.
pub(super) fn phase(no_link: bool, in_cut: bool) -> Phase {
    match (no_link, in_cut) {
        (true, _) => Phase::First,
        (false, true) => Phase::Cut,
        (false, false) => Phase::Other,
    }
}

/// Where the host stands when its master is made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// No near link yet: the host shows `connecting`.
    First,
    /// A cut is being ridden out: its tries are not news (it was said when it began).
    Cut,
    /// Anything else (a refusal, a far side gone): failures are said once.
    Other,
}

/// Makes the master again, and starts (or finds) the far side through it and forwards its
/// socket.
pub(super) async fn reach_again(cfg: &HostConfig, far: &FarChoice, report: &watch::Sender<HostReport>, phase: Phase, plan: Retry, retry: &mut Retrying, cancel: &CancellationToken) -> Reached {
    let control = cfg.dir.join(format!("{}.ctl", cfg.prefix));
    let control = control.as_path();
    if phase == Phase::First {
        report.send_modify(|r| r.link = LinkState::Connecting);
    }
    let ssh = crate::remote::SshOptions { connect_timeout: plan.connect_timeout, ..cfg.ssh.clone() };
    let limit = ssh.connect_timeout + Duration::from_secs(20);
    let opened = {
        let open = Link::open(&ssh, &cfg.dest, control, limit);
        tokio::pin!(open);
        let started = Instant::now();
        loop {
            tokio::select! {
                l = &mut open => break l,
                // An attempt whose connect may have gone into the cut is made again at once;
                // a younger one is left to finish (its SYN is sent again after 1 s anyway), and
                // so is one made again for a change, so a machine whose network changes often
                // (containers, VPNs) still gets its attempts through.
                _ = network_changed(&mut retry.net, plan.on_network_change && !retry.for_change) => if started.elapsed() >= RESTART_AFTER {
                    retry.for_change = true;
                    say_change(&mut retry.change_said, &cfg.label);
                    return Reached::Again;
                },
                _ = cancel.cancelled() => return Reached::Stopped,
            }
        }
    };
    retry.for_change = false;
    let master = match opened {
        Ok(l) => l,
        Err(failure) => {
            let text = failure.to_string();
            if phase == Phase::Cut {
                // The cut was said when it began; its tries are not news.
                debug!(host = %cfg.label, "{text}; trying again");
            } else {
                say_once(&mut retry.said, &cfg.label, text.clone());
            }
            report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: !failure.transient() });
            return Reached::No;
        }
    };
    match reach_far(cfg, far).await {
        Ok(ready) => Reached::Yes(Box::new((master, ready))),
        // Never reached, or gone for good since.
        Err(why) if far.mode == FarMode::Auto && restart::on_unusable(far.mode, &why) == Unusable::FallBack => {
            master.close().await;
            Reached::Gone(why)
        }
        Err(why) => {
            say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
            report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
            master.close().await;
            Reached::No
        }
    }
}

/// Says why the host is not served, at WARN the first time, at DEBUG while it stays so.
pub(super) fn say_once(said: &mut Option<String>, label: &str, text: String) {
    if said.as_deref() == Some(text.as_str()) {
        debug!(host = %label, "{text}; trying again");
    } else {
        warn!(host = %label, "{text}; trying again");
        *said = Some(text);
    }
}

/// Waits the backoff (cut short by a change of the network when `plan` says so); false
/// when the daemon stops meanwhile.
pub(super) async fn pause(backoff: &mut Backoff, plan: Retry, retry: &mut Retrying, label: &str, cancel: &CancellationToken) -> bool {
    // Waits made while the far side held the session are short; once its hold has run out,
    // the regular ones take over from their start.
    if backoff.max() != plan.max {
        *backoff = Backoff::new(plan.first, plan.max);
    }
    tokio::select! {
        _ = tokio::time::sleep(backoff.next_wait()) => true,
        _ = network_changed(&mut retry.net, plan.on_network_change) => {
            say_change(&mut retry.change_said, label);
            true
        }
        _ = cancel.cancelled() => false,
    }
}

/// A change of the network cut a wait or an attempt short: said at INFO once an outage (a
/// busy machine's network changes often: containers, VPNs), then at DEBUG.
fn say_change(said: &mut bool, label: &str) {
    if *said {
        debug!(host = %label, "the network changed: trying {label} again now");
    } else {
        info!(host = %label, "the network changed: trying {label} again now");
        *said = true;
    }
}

/// The next change of this machine's network, when `wanted` and notices can be had.
async fn network_changed(net: &mut Option<NetChanges>, wanted: bool) {
    match net {
        Some(n) if wanted => n.changed().await,
        _ => std::future::pending().await,
    }
}
