//! One `--ssh` host served through jdwpmux on it (`--far auto|always`): the ssh master as
//! today, the far side started through it, its socket forwarded, a near link over that, and
//! a local socket per listed VM. What it knows goes out as the `HostReport` a scan of the host
//! gives, with the same keys and sockets, so the daemon follows it the same way. When the
//! master is lost the near link holds every channel and tries again; the master is made
//! again, the far side found running, its socket forwarded again, and the link resumes.
//!
//! With `auto`, a host where the far side cannot be used (not there, another protocol) is
//! served as today through ssh forwards, with one INFO line saying why and how to change it.
//!
//! A far side can end while the master stays up (killed, crashed): when the near link goes
//! down, its start is run again through the master, and `restart` judges the answer. A new
//! far side is said in one WARN line naming the host; the link then finds its session gone
//! and closes the VM connections it held (their debuggers are closed, as when a VM goes), and
//! the new far side's list serves the VMs again on their ports.

use std::path::PathBuf;
use std::time::Duration;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::found::found_jvm;
use super::link::{self, Dial, LinkState as NearState, NearLink};
use super::sockets::Sockets;
use super::restart::{self, Check, Unusable, FIRST_CHECK_WAIT, MAX_CHECK_WAIT};
use super::ssh::{self, FarUnusable};
use super::netwatch::NetChanges;
use super::timing::{retry_plan, Backoff, Retry, RESTART_AFTER};
use crate::remote::host::{HostConfig, HostReport, LinkState, RemoteVm, FIRST_BACKOFF, MAX_BACKOFF};
use crate::remote::link::Link;
use crate::remote::naming::Names;
use crate::remote::status::HostTable;

/// How long the one scan round that tells the login's uid may take.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(20);

/// When `serve --ssh` uses jdwpmux on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FarMode {
    /// Never: VMs are reached through ssh forwards.
    #[default]
    Never,
    /// When a compatible jdwpmux runs on the host; else through ssh forwards.
    Auto,
    /// Always: a host without a usable jdwpmux is retried, never reached another way.
    Always,
}

impl std::fmt::Display for FarMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FarMode::Never => "never",
            FarMode::Auto => "auto",
            FarMode::Always => "always",
        })
    }
}

/// How the far side is used for every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FarChoice {
    pub mode: FarMode,
    /// The jdwpmux to run on the host: a name its PATH finds, or a path.
    pub path: String,
}

impl Default for FarChoice {
    fn default() -> Self {
        FarChoice { mode: FarMode::Never, path: "jdwpmux".into() }
    }
}

/// The one line a host where the far side cannot be used is said in.
pub fn fallback_line(label: &str, why: &FarUnusable, path: &str) -> String {
    format!(
        "jdwpmux on {label} cannot be used ({why}); its VMs are reached through ssh forwards. To use it, install jdwpmux {} on {label} where `ssh {label} {path}` finds it, or name it with --far-path",
        env!("CARGO_PKG_VERSION")
    )
}

/// Runs one host through its far side until `cancel` (or, with `auto` and no usable far side,
/// as `remote::host::run` does).
pub async fn run(cfg: HostConfig, far: FarChoice, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    // The host's row in `list` and on the page follows what this task reports.
    let mirror = tokio::spawn(mirror_rows(cfg.label.clone(), report.subscribe(), rows.clone()));
    serve_host(cfg, far, report, rows, cancel).await;
    mirror.abort();
}

/// Copies each report's link state, and the JVM count of a list from the far side, into
/// the host's row.
async fn mirror_rows(label: String, mut rx: watch::Receiver<HostReport>, rows: Arc<HostTable>) {
    while rx.changed().await.is_ok() {
        let (link, jvms) = {
            let r = rx.borrow_and_update();
            (r.link.clone(), r.vms.len())
        };
        let up = link == LinkState::Up;
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
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

async fn serve_host(cfg: HostConfig, far: FarChoice, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    let control = cfg.dir.join(format!("{}.ctl", cfg.prefix));
    let local = ssh::local_socket(&cfg.dir, &cfg.prefix);
    let regular = Retry { connect_timeout: cfg.ssh.connect_timeout, first: FIRST_BACKOFF, max: MAX_BACKOFF, on_network_change: false };
    let mut backoff = Backoff::new(regular.first, regular.max);
    let mut names = Names::default();
    // Made with the first far side reached; kept across lost masters.
    let mut near: Option<(NearLink, Sockets)> = None;
    // What the far side the near link speaks to said when it was started or found.
    let mut spoke_to: Option<super::ready::Ready> = None;
    // The last failure said at WARN: the same one again, while retrying, goes to DEBUG.
    let mut said: Option<String> = None;
    // The login's uid, learnt with the first master: a master made again is the same login.
    let mut login: Option<u32> = None;
    // When the master was lost with a far side holding this near side's session, and the
    // hold it granted: until then the link is tried promptly (`timing::retry_plan`).
    let mut lost_at: Option<Instant> = None;
    let mut hold = Duration::ZERO;
    // The network changes seen in this outage were said (at INFO once, then at DEBUG).
    let mut change_said = false;
    // The attempt under way was made again for a change of the network.
    let mut for_change = false;
    let mut net = match NetChanges::open() {
        Ok(n) => Some(n),
        Err(e) => {
            debug!(host = %cfg.label, "no network change notices ({e}); a cut host is tried again on timers alone");
            None
        }
    };
    loop {
        if near.is_none() {
            report.send_modify(|r| r.link = LinkState::Connecting);
        }
        let plan = retry_plan(lost_at.map(|t| t.elapsed()), hold, regular);
        let ssh = crate::remote::SshOptions { connect_timeout: plan.connect_timeout, ..cfg.ssh.clone() };
        let limit = ssh.connect_timeout + Duration::from_secs(20);
        let opened = {
            let open = Link::open(&ssh, &cfg.dest, &control, limit);
            tokio::pin!(open);
            let started = Instant::now();
            loop {
                tokio::select! {
                    l = &mut open => break Some(l),
                    // An attempt whose connect may have gone into the cut is made again at once;
                    // a younger one is left to finish (its SYN is sent again after 1 s anyway), and
                    // so is one made again for a change, so a machine whose network changes often
                    // (containers, VPNs) still gets its attempts through.
                    _ = network_changed(&mut net, plan.on_network_change && !for_change) => if started.elapsed() >= RESTART_AFTER {
                        for_change = true;
                        say_change(&mut change_said, &cfg.label);
                        break None;
                    },
                    _ = cancel.cancelled() => return end(near).await,
                }
            }
        };
        let Some(opened) = opened else { continue };
        for_change = false;
        let mut master = match opened {
            Ok(l) => l,
            Err(failure) => {
                let text = failure.to_string();
                say_once(&mut said, &cfg.label, text.clone());
                report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: !failure.transient() });
                if !pause(&mut backoff, plan, &mut net, &mut change_said, &cfg.label, &cancel).await {
                    return end(near).await;
                }
                continue;
            }
        };
        // The login's uid comes with a scan's answer: one round tells it (the far side lists
        // the JVMs of the user it runs as, the login's, keyed here as a scan keys them).
        if login.is_none() {
            login = match master.scan.round(LOGIN_TIMEOUT).await {
                Ok(_) => master.scan.view().uid,
                Err(e) => {
                    debug!(host = %cfg.label, "no scan round to learn the login's uid: {e}");
                    None
                }
            };
        }
        let reached = match ssh::start(&cfg.ssh, &control, &cfg.dest, &far.path).await {
            Ok(ready) => ssh::forward(&cfg.ssh, &control, &cfg.dest, &local, &ready.socket).await.map(|()| ready).map_err(FarUnusable::Failed),
            Err(e) => Err(e),
        };
        let mut ready = match reached {
            Ok(r) => r,
            // Never reached, or gone for good since (see `restart::on_unusable`).
            Err(why) if far.mode == FarMode::Auto && (near.is_none() || restart::on_unusable(far.mode, &why) == Unusable::FallBack) => {
                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, &far.path));
                end(near).await;
                master.close().await;
                return crate::remote::host::run(cfg, report, rows, cancel).await;
            }
            Err(why) => {
                say_once(&mut said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
                report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
                master.close().await;
                if !pause(&mut backoff, plan, &mut net, &mut change_said, &cfg.label, &cancel).await {
                    return end(near).await;
                }
                continue;
            }
        };
        info!(host = %cfg.label, socket = %ready.socket.display(), version = %ready.version, already = ready.already, "using jdwpmux on {}", cfg.label);
        // The far side the link spoke to may have ended while the master was down (killed,
        // or its hold ran out): said here, the link finds its session gone by itself.
        if let (Some(before), Some(_)) = (&spoke_to, &near) {
            if let Check::Restarted { was, now, .. } = restart::judge(before, &ready) {
                warn!(host = %cfg.label, "{}", restart::restarted_line(&cfg.label, was, now, !ready.already));
            }
        }
        backoff = Backoff::new(regular.first, regular.max);
        said = None;
        if let Some((nl, _)) = &near {
            nl.retry_now();
        }
        let (nl, mut sockets) = near.take().unwrap_or_else(|| {
            let nl = link::start(Dial::Unix(local.clone()), link::Config { host: cfg.label.clone(), ..link::Config::default() });
            let sockets = Sockets::new(nl.clone());
            (nl, sockets)
        });
        let mut vms = nl.vms();
        let mut state = nl.state();
        vms.mark_changed();
        // While the link is down with the master up: when to ask whether the far side runs.
        let mut check_at: Option<tokio::time::Instant> = None;
        let mut checks = Backoff::new(FIRST_CHECK_WAIT, MAX_CHECK_WAIT);
        state.mark_changed();
        let why = loop {
            tokio::select! {
                changed = vms.changed() => {
                    if changed.is_err() {
                        break "the near link ended".to_string();
                    }
                    let listed = vms.borrow_and_update().clone();
                    publish(&cfg, &mut names, &mut sockets, login, &listed, &report);
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        break "the near link ended".to_string();
                    }
                    match &*state.borrow_and_update() {
                        NearState::Refused(text) => break format!("the far side refused this jdwpmux: {text}"),
                        NearState::Down { .. } => {
                            check_at.get_or_insert_with(tokio::time::Instant::now);
                        }
                        NearState::Up { hold_secs, .. } => {
                            hold = Duration::from_secs(u64::from(*hold_secs));
                            check_at = None;
                            checks.reset();
                        }
                        NearState::Connecting | NearState::Ended => {}
                    }
                }
                _ = sleep_until(check_at), if check_at.is_some() => {
                    let started = tokio::select! {
                        r = ssh::start(&cfg.ssh, &control, &cfg.dest, &far.path) => r,
                        _ = cancel.cancelled() => {
                            end(Some((nl, sockets))).await;
                            master.close().await;
                            return;
                        }
                    };
                    check_at = Some(tokio::time::Instant::now() + checks.next_wait());
                    match started {
                        Ok(now) => match restart::judge(&ready, &now) {
                            Check::Same => debug!(host = %cfg.label, "jdwpmux on {} still runs; the link tries again", cfg.label),
                            Check::Restarted { was, now: pid, forward } => {
                                warn!(host = %cfg.label, "{}", restart::restarted_line(&cfg.label, was, pid, !now.already));
                                if forward {
                                    if let Err(e) = ssh::forward(&cfg.ssh, &control, &cfg.dest, &local, &now.socket).await {
                                        debug!(host = %cfg.label, "forwarding to the new far side: {e}; trying again");
                                    }
                                }
                                ready = now;
                                nl.retry_now();
                            }
                        },
                        Err(why) => match restart::on_unusable(far.mode, &why) {
                            Unusable::FallBack => {
                                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, &far.path));
                                end(Some((nl, sockets))).await;
                                master.close().await;
                                return crate::remote::host::run(cfg, report, rows, cancel).await;
                            }
                            Unusable::TryLater => say_once(&mut said, &cfg.label, format!("jdwpmux on {} cannot be started again: {why}", cfg.label)),
                        },
                    }
                }
                _ = master.ended() => break master.last_words().unwrap_or_else(|| "ssh exited".into()),
                _ = cancel.cancelled() => {
                    end(Some((nl, sockets))).await;
                    master.close().await;
                    return;
                }
            }
        };
        near = Some((nl, sockets));
        spoke_to = Some(ready);
        lost_at = Some(Instant::now());
        change_said = false;
        // Changes while the link was up are no news now.
        if let Some(n) = &mut net {
            n.forget();
        }
        // The near link keeps the channels and tries again by itself; the master and the
        // forward are made again here, promptly while the far side holds the session.
        warn!(host = %cfg.label, reason = %why, "lost the ssh link to {}; its VMs are held by jdwpmux there; reconnecting", cfg.label);
        report.send_modify(|r| r.link = LinkState::Down { reason: why, refused: false });
        master.close().await;
        let plan = retry_plan(Some(Duration::ZERO), hold, regular);
        if !pause(&mut backoff, plan, &mut net, &mut change_said, &cfg.label, &cancel).await {
            return end(near).await;
        }
    }
}

/// The far side's list as the host's report: each VM keyed and socketed as a scan would,
/// its socket listening for channels.
fn publish(cfg: &HostConfig, names: &mut Names, sockets: &mut Sockets, login: Option<u32>, listed: &[crate::farlink::frame::VmInfo], report: &watch::Sender<HostReport>) {
    // The far side runs as the login and lists what that user may take; --other-users here
    // cannot widen it (the far side decides on its host), only a known login narrows it.
    let mine = |f: &crate::discovery::jvms::FoundJvm| cfg.other_users || login.is_none() || f.runs_as(login);
    let (found, keys): (Vec<_>, Vec<u32>) = listed.iter().map(|v| (found_jvm(v, login), v.key)).filter(|(f, _)| mine(f)).unzip();
    let named = names.name(&cfg.label, &cfg.dir, &cfg.prefix, login, &found);
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
        let new = HostReport { link: LinkState::Up, vms, adb: None };
        let changed = *r != new;
        *r = new;
        changed
    });
}

/// Says why the host is not served, at WARN the first time, at DEBUG while it stays so.
fn say_once(said: &mut Option<String>, label: &str, text: String) {
    if said.as_deref() == Some(text.as_str()) {
        debug!(host = %label, "{text}; trying again");
    } else {
        warn!(host = %label, "{text}; trying again");
        *said = Some(text);
    }
}

/// Waits until `at` (for ever when None).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Waits the backoff (cut short by a change of the network when `plan` says so); false
/// when the daemon stops meanwhile.
async fn pause(backoff: &mut Backoff, plan: Retry, net: &mut Option<NetChanges>, said: &mut bool, label: &str, cancel: &CancellationToken) -> bool {
    // Waits made while the far side held the session are short; once its hold has run out,
    // the regular ones take over from their start.
    if backoff.max() != plan.max {
        *backoff = Backoff::new(plan.first, plan.max);
    }
    tokio::select! {
        _ = tokio::time::sleep(backoff.next_wait()) => true,
        _ = network_changed(net, plan.on_network_change) => {
            say_change(said, label);
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

/// The daemon stops: the far side is told, so it ends at once instead of holding the VMs.
async fn end(near: Option<(NearLink, Sockets)>) {
    if let Some((link, sockets)) = near {
        drop(sockets);
        link.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_line_says_why_and_what_to_do() {
        let line = fallback_line("box", &FarUnusable::NotFound("jdwpmux".into()), "jdwpmux");
        assert!(line.starts_with("jdwpmux on box cannot be used (jdwpmux was not found on the host); its VMs are reached through ssh forwards."), "{line}");
        assert!(line.contains(&format!("install jdwpmux {} on box", env!("CARGO_PKG_VERSION"))) && line.ends_with("--far-path"), "{line}");
    }
}
