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

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::copy;
use super::found::found_jvm;
use super::link::{self, Dial, LinkState as NearState, NearLink};
use super::ready::Ready;
use super::netwatch::NetChanges;
use super::restart::{self, Check, Unusable, FIRST_CHECK_WAIT, MAX_CHECK_WAIT};
use super::sockets::Sockets;
use super::ssh::{self, FarUnusable};
use super::timing::{retry_plan, Backoff, Retry, RESTART_AFTER};
use crate::far::handshake::{protocols, PROTOCOL, PROTOCOL_MIN};
use crate::remote::host::{HostConfig, HostReport, LinkState, Probe, RemoteVm, FIRST_BACKOFF, MAX_BACKOFF};
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
    Never,
    /// When a compatible jdwpmux runs on the host; else through ssh forwards.
    #[default]
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
    /// How long the far side is asked to hold the VM connections through a cut, in seconds.
    pub hold_secs: u32,
    /// When the host has none that can be used, copy this binary there (`--far-copy`).
    pub copy: bool,
    /// Ask the far side for a stop's gathered answers (unless `--near-cache never`).
    pub gather: bool,
    /// Take the far side over from another `serve` of the login connected to it
    /// (`--far-take-over`).
    pub take_over: bool,
}

/// The hold asked of the far side by default (`--far-hold`): a dropped Wi-Fi, a VPN that
/// reconnects, a laptop carried to another room.
pub const DEFAULT_HOLD_SECS: u32 = 300;

impl Default for FarChoice {
    fn default() -> Self {
        FarChoice { mode: FarMode::Auto, path: "jdwpmux".into(), hold_secs: DEFAULT_HOLD_SECS, copy: false, gather: true, take_over: false }
    }
}

/// The one line a host where the far side cannot be used is said in: why, and what would
/// make it usable (the copy is offered only when it was not asked for).
pub fn fallback_line(label: &str, why: &FarUnusable, far: &FarChoice) -> String {
    let ours = env!("CARGO_PKG_VERSION");
    let path = &far.path;
    match why {
        FarUnusable::Version { version, protocols: theirs, running } => {
            let fix = match running {
                Some(pid) => format!("stop it there (kill {pid}; it ends by itself after its hold when unused) and install jdwpmux {ours} on {label}"),
                None => format!("install jdwpmux {ours} on {label} where `ssh {label} {path}` finds it (or name it with --far-path)"),
            };
            format!(
                "jdwpmux on {label} ({version}) speaks far-side protocol {}, this one ({ours}) speaks {}: its VMs are reached through ssh forwards; {fix}, or use --far never",
                protocols(*theirs.start(), *theirs.end()),
                protocols(PROTOCOL_MIN, PROTOCOL)
            )
        }
        FarUnusable::Refused(text) => format!(
            "jdwpmux on {label} refused this one ({text}): its VMs are reached through ssh forwards; install jdwpmux {ours} on {label} (or name it with --far-path), or use --far never"
        ),
        _ => {
            let copy = if far.copy { "" } else { ", or let serve copy this one there with --far-copy" };
            format!(
                "jdwpmux on {label} cannot be used ({why}); its VMs are reached through ssh forwards. To use it, install jdwpmux {ours} on {label} where `ssh {label} {path}` finds it, or name it with --far-path{copy}"
            )
        }
    }
}

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

/// Copies each report's link state, and the JVM count of a list from the far side, into
/// the host's row.
pub(super) async fn mirror_rows(label: String, mut rx: watch::Receiver<HostReport>, rows: Arc<HostTable>) {
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
fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Puts the near link's release of a cut session in the host's report, so the VMs' rows say
/// so while the host stays cut (the link said it in its WARN line and closed their
/// debuggers); taken out when the link is up again. The link keeps the hold's clock, not
/// this task: it runs while the master is being made again, and the link knows when the far
/// side was last heard.
pub(super) async fn follow_release(mut state: watch::Receiver<NearState>, report: watch::Sender<HostReport>, label: String) {
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

/// The note of a VM that jdwpmux on its host let go when the hold ran out.
pub fn released_note(label: &str, hold_secs: u64) -> String {
    format!("released (the hold ran out): the link to {label} was down past jdwpmux's hold there ({hold_secs} s, --far-hold); the VM runs on, its debuggers were closed")
}

/// How serving a host through its far side ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The daemon stops.
    Stopped,
    /// With `auto`, the far side refused this near side: the host goes on through forwards.
    Forwards,
}

async fn serve_host(cfg: &HostConfig, far: &FarChoice, report: &watch::Sender<HostReport>, rows: &HostTable, first: Option<(Link, Ready)>, cancel: &CancellationToken) -> Ended {
    let control = cfg.dir.join(format!("{}.ctl", cfg.prefix));
    let local = ssh::local_socket(&cfg.dir, &cfg.prefix);
    let regular = Retry { connect_timeout: cfg.ssh.connect_timeout, first: FIRST_BACKOFF, max: MAX_BACKOFF, on_network_change: false };
    let mut backoff = Backoff::new(regular.first, regular.max);
    let mut names = Names::default();
    let mut first = first;
    // Made with the first far side reached; kept across lost masters.
    let mut near: Option<(NearLink, Sockets)> = None;
    // What the far side the near link speaks to said when it was started or found.
    let mut spoke_to: Option<Ready> = None;
    // The hold granted last, said when it is not the one asked for.
    let mut granted: Option<u32> = None;
    // The login's uid, learnt with the first master: a master made again is the same login.
    let mut login: Option<u32> = None;
    // When the master was lost with a far side holding this near side's session, and the
    // hold it granted: until then the link is tried promptly (`timing::retry_plan`).
    let mut lost_at: Option<Instant> = None;
    // A cut now being ridden out: when it began and the tries made since. Said once when it
    // begins and once when it ends; the tries between are debug lines.
    let mut cut: Option<(Instant, u32)> = None;
    let mut hold = Duration::ZERO;
    let mut retry = Retrying { change_said: false, for_change: false, said: None, net: NetChanges::open().map_err(|e| debug!(host = %cfg.label, "no network change notices ({e}); a cut host is tried again on timers alone")).ok() };
    // The near link has been up once: a cut after that is a cut, not an unusable far side.
    let mut ever_up = false;
    // Another serve took the far side over from this one: said once, then this one waits.
    let mut taken_over = false;
    loop {
        let plan = retry_plan(lost_at.map(|t| t.elapsed()), hold, regular);
        let (mut master, mut ready) = match first.take() {
            Some(found) => found,
            None => match reach_again(cfg, far, report, phase(near.is_none(), cut.is_some()), plan, &mut retry, cancel).await {
                Reached::Yes(found) => *found,
                Reached::No => {
                    if let Some((_, tries)) = &mut cut {
                        *tries += 1;
                    }
                    if !pause(&mut backoff, plan, &mut retry, &cfg.label, cancel).await {
                        return end(near).await;
                    }
                    continue;
                }
                Reached::Again => continue,
                Reached::Gone(why) => {
                    info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, far));
                    end(near).await;
                    return Ended::Forwards;
                }
                Reached::Stopped => return end(near).await,
            },
        };
        // The login's uid comes with a scan's answer: one round tells it (the far side lists
        // the JVMs of the user it runs as, the login's, keyed here as a scan keys them). The
        // first link made with `auto` has had its round, beside the look for the far side.
        if login.is_none() {
            login = match master.scan.view().uid {
                Some(uid) => Some(uid),
                None => match master.scan.round(LOGIN_TIMEOUT).await {
                    Ok(_) => master.scan.view().uid,
                    Err(e) => {
                        debug!(host = %cfg.label, "no scan round to learn the login's uid: {e}");
                        None
                    }
                },
            };
        }
        match cut.take() {
            Some((since, tries)) => info!(
                host = %cfg.label, socket = %ready.socket.display(), already = ready.already,
                "the ssh link to {} is back after {:.1} s and {} tries; using jdwpmux there", cfg.label, since.elapsed().as_secs_f64(), tries + 1
            ),
            None => info!(host = %cfg.label, socket = %ready.socket.display(), version = %ready.version, already = ready.already, hold_s = far.hold_secs, "using jdwpmux on {}", cfg.label),
        }
        // The far side the link spoke to may have ended while the master was down (killed,
        // or its hold ran out): said here, the link finds its session gone by itself.
        if let (Some(before), Some(_)) = (&spoke_to, &near) {
            if let Check::Restarted { was, now, .. } = restart::judge(before, &ready) {
                warn!(host = %cfg.label, "{}", restart_line(&cfg.label, was, now, !ready.already, std::mem::take(&mut taken_over)));
            }
        }
        backoff = Backoff::new(regular.first, regular.max);
        retry.said = None;
        if let Some((nl, _)) = &near {
            nl.retry_now();
        }
        let (nl, mut sockets) = near.take().unwrap_or_else(|| {
            let nl = link::start(Dial::Unix(local.clone()), link::Config { host: cfg.label.clone(), hold_secs: far.hold_secs, gather: far.gather, take_over: far.take_over, ..link::Config::default() });
            rows.put_link(&cfg.label, nl.squeezed());
            // Ends with the link's task.
            tokio::spawn(follow_release(nl.state(), report.clone(), cfg.label.clone()));
            let sockets = Sockets::new(nl.clone());
            (nl, sockets)
        });
        let mut vms = nl.vms();
        let mut state = nl.state();
        vms.mark_changed();
        state.mark_changed();
        // The near link has been up on this master: its VM list is the far side's word.
        let mut answered = false;
        // A far side that runs but does not answer was said (once an outage), and how many
        // checks in a row found it running while the link was down.
        let mut silent_said = false;
        let mut same_checks = 0u32;
        // While the link is down with the master up: when to ask whether the far side runs.
        let mut check_at: Option<Instant> = None;
        let mut checks = Backoff::new(FIRST_CHECK_WAIT, MAX_CHECK_WAIT);
        let why = loop {
            tokio::select! {
                changed = vms.changed() => {
                    if changed.is_err() {
                        break Lost::Link("the near link ended".to_string());
                    }
                    let listed = vms.borrow_and_update().clone();
                    // A list is the far side's word only once it has answered: before, the
                    // host would show `up` with "no JVM with a JDWP agent" while what was
                    // started there does not answer at all.
                    if answered {
                        publish(cfg, &mut names, &mut sockets, login, &listed, None, report);
                        // The far side sends its list after each of its scans: the host's
                        // last scan is its own, not when its list last changed.
                        let jvms = report.borrow().vms.len();
                        rows.update(&cfg.label, |r| r.scanned(jvms, now_ms()));
                    }
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        break Lost::Link("the near link ended".to_string());
                    }
                    let now = state.borrow_and_update().clone();
                    match now {
                        NearState::Refused(text) => break Lost::Refused(text),
                        // It started, but what listens there does not speak as a far side
                        // (another program, a broken or hostile one): with auto, served as
                        // if there were none; else said once while the link tries again.
                        NearState::Down { why } if !ever_up => {
                            let why = FarUnusable::Failed(format!("what was started there does not answer as a far side: {why}"));
                            if far.mode == FarMode::Auto {
                                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, far));
                                end(Some((nl, sockets))).await;
                                master.close().await;
                                return Ended::Forwards;
                            }
                            say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
                            report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
                        }
                        NearState::Down { .. } | NearState::Released { .. } => {
                            check_at.get_or_insert_with(Instant::now);
                        }
                        NearState::Up { hold_secs, .. } => {
                            ever_up = true;
                            answered = true;
                            same_checks = 0;
                            if std::mem::take(&mut silent_said) {
                                info!(host = %cfg.label, "jdwpmux on {} answers again", cfg.label);
                            }
                            let listed = vms.borrow().clone();
                            publish(cfg, &mut names, &mut sockets, login, &listed, None, report);
                            hold = Duration::from_secs(u64::from(hold_secs));
                            check_at = None;
                            checks.reset();
                            if granted != Some(hold_secs) {
                                granted = Some(hold_secs);
                                if let Some(line) = hold_line(&cfg.label, far.hold_secs, hold_secs) {
                                    warn!(host = %cfg.label, "{line}");
                                }
                            }
                        }
                        // It answered as a far side: from now on a link down is a far side to
                        // find again (the other serve may stop it), not one that never worked.
                        NearState::Busy(text) => {
                            ever_up = true;
                            // After a take-over, the far side's refusals that follow are the
                            // wait that line announced.
                            if taken_over {
                                debug!(host = %cfg.label, "jdwpmux on {} still serves the other serve: {text}", cfg.label);
                            } else {
                                say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} will not take this serve: {text}; this one waits for it", cfg.label));
                            }
                            report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: false });
                        }
                        NearState::TakenOver(text) => {
                            ever_up = true;
                            taken_over = true;
                            warn!(host = %cfg.label, "{}", taken_over_line(&cfg.label, &text));
                            report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: false });
                        }
                        NearState::Connecting | NearState::Ended => {}
                    }
                }
                _ = sleep_until(check_at), if check_at.is_some() => {
                    let started = tokio::select! {
                        r = copy::start(&cfg.ssh, &control, &cfg.dest, &cfg.label, &far.path, far.copy) => r,
                        _ = cancel.cancelled() => {
                            end(Some((nl, sockets))).await;
                            master.close().await;
                            return Ended::Stopped;
                        }
                    };
                    check_at = Some(Instant::now() + checks.next_wait());
                    match started {
                        Ok(now) => match restart::judge(&ready, &now) {
                            // It runs and the master is up, yet its stream was lost: it is
                            // stuck (stopped, or too busy to answer). Said once an outage, at
                            // the second check in a row (the first often runs while the link
                            // is still reconnecting after a master made again).
                            Check::Same => {
                                same_checks += 1;
                                let down = !matches!(&*state.borrow(), NearState::Up { .. });
                                if same_checks >= 2 && down && !silent_said {
                                    silent_said = true;
                                    let why = match &*state.borrow() {
                                        NearState::Down { why } => why.clone(),
                                        _ => "its session was let go".to_string(),
                                    };
                                    let line = silent_line(&cfg.label, ready.pid, &why);
                                    warn!(host = %cfg.label, "{line}");
                                    report.send_modify(|r| r.link = LinkState::Down { reason: line, refused: false });
                                } else {
                                    debug!(host = %cfg.label, "jdwpmux on {} still runs; the link tries again", cfg.label);
                                }
                            }
                            Check::Restarted { was, now: pid, forward } => {
                                warn!(host = %cfg.label, "{}", restart_line(&cfg.label, was, pid, !now.already, std::mem::take(&mut taken_over)));
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
                                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, far));
                                end(Some((nl, sockets))).await;
                                master.close().await;
                                return Ended::Forwards;
                            }
                            Unusable::TryLater => say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} cannot be started again: {why}", cfg.label)),
                        },
                    }
                }
                _ = master.ended() => break Lost::Link(master.last_words().unwrap_or_else(|| "ssh exited".into())),
                _ = cancel.cancelled() => {
                    end(Some((nl, sockets))).await;
                    master.close().await;
                    return Ended::Stopped;
                }
            }
        };
        let why = match why {
            Lost::Link(why) => why,
            Lost::Refused(text) => {
                // The link's task has ended: the next far side gets a new one.
                drop(sockets);
                nl.shutdown().await;
                master.close().await;
                if far.mode == FarMode::Auto {
                    info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &FarUnusable::Refused(text), far));
                    return Ended::Forwards;
                }
                say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} refused this one: {text}", cfg.label));
                report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: false });
                if !pause(&mut backoff, regular, &mut retry, &cfg.label, cancel).await {
                    return Ended::Stopped;
                }
                continue;
            }
        };
        near = Some((nl, sockets));
        spoke_to = Some(ready);
        lost_at = Some(Instant::now());
        cut = Some((Instant::now(), 0));
        retry.change_said = false;
        // Changes while the link was up are no news now.
        if let Some(n) = &mut retry.net {
            n.forget();
        }
        // The near link keeps the channels and tries again by itself; the master and the
        // forward are made again here, promptly while the far side holds the session.
        warn!(host = %cfg.label, reason = %why, "lost the ssh link to {}; its VMs are held by jdwpmux there; reconnecting", cfg.label);
        report.send_modify(|r| r.link = LinkState::Down { reason: why, refused: false });
        master.close().await;
        let plan = retry_plan(Some(Duration::ZERO), hold, regular);
        if !pause(&mut backoff, plan, &mut retry, &cfg.label, cancel).await {
            return end(near).await;
        }
    }
}

/// Why the far side is no longer served through this master.
enum Lost {
    /// The master (or the near link) is gone: made again, the link resumes.
    Link(String),
    /// The far side refused this near side (another protocol).
    Refused(String),
}

enum Reached {
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
struct Retrying {
    /// The network changes seen in this outage were said (at INFO once, then at DEBUG).
    change_said: bool,
    /// The attempt under way was made again for a change of the network.
    for_change: bool,
    net: Option<NetChanges>,
    /// The last failure said at WARN: the same one again, while retrying, goes to DEBUG.
    said: Option<String>,
}

/// The phase of a host with (or without) a near link and a cut under way.
fn phase(no_link: bool, in_cut: bool) -> Phase {
    match (no_link, in_cut) {
        (true, _) => Phase::First,
        (false, true) => Phase::Cut,
        (false, false) => Phase::Other,
    }
}

/// Where the host stands when its master is made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No near link yet: the host shows `connecting`.
    First,
    /// A cut is being ridden out: its tries are not news (it was said when it began).
    Cut,
    /// Anything else (a refusal, a far side gone): failures are said once.
    Other,
}

/// Makes the master again, and starts (or finds) the far side through it and forwards its
/// socket.
async fn reach_again(cfg: &HostConfig, far: &FarChoice, report: &watch::Sender<HostReport>, phase: Phase, plan: Retry, retry: &mut Retrying, cancel: &CancellationToken) -> Reached {
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

/// The line a restarted far side is said in: after a take-over, this serve held nothing
/// there, and the line must not say its VM connections were closed now.
fn restart_line(label: &str, was: Option<u32>, now: Option<u32>, by_us: bool, taken_over: bool) -> String {
    if taken_over {
        restart::restarted_after_take_over_line(label, was, now, by_us)
    } else {
        restart::restarted_line(label, was, now, by_us)
    }
}

/// The one line said when jdwpmux on a host still runs (its start found it, same process)
/// and the master is up, but its stream was lost: it is stopped or stuck. Before, nothing
/// was said and the host stayed `up`.
pub fn silent_line(label: &str, pid: Option<u32>, why: &str) -> String {
    let pid = pid.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    format!("jdwpmux on {label} ({pid}) runs but does not answer ({why}): it may be stopped or stuck there; its VMs stay held for the hold while this serve tries again")
}

/// The one line a serve whose far side another serve took over says: what it lost, and that
/// it waits without taking it back.
pub fn taken_over_line(label: &str, text: &str) -> String {
    format!(
        "jdwpmux on {label}: {text}; the VM connections this serve held there were closed, and their debuggers; this serve waits and serves {label} again once that one stops (it does not take it back)"
    )
}

/// What is said when the far side grants another hold than the one asked (its own limit,
/// or an older far side's rule); None when it granted what was asked.
pub fn hold_line(label: &str, asked: u32, granted: u32) -> Option<String> {
    (asked != granted).then(|| {
        format!("jdwpmux on {label} holds the VM connections through a cut for {granted} s, not the {asked} s asked (--far-hold): its limit")
    })
}

/// The far side's list as the host's report: each VM keyed and socketed as a scan would,
/// its socket listening for channels.
/// `place`: where the far side runs, for JVMs it sees as its own host's (an `--exec` container's).
pub(super) fn publish(cfg: &HostConfig, names: &mut Names, sockets: &mut Sockets, login: Option<u32>, listed: &[crate::farlink::frame::VmInfo], place: Option<&crate::discovery::jvms::Place>, report: &watch::Sender<HostReport>) {
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
        let new = HostReport { link: LinkState::Up, vms, adb: None, released: None };
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
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Waits the backoff (cut short by a change of the network when `plan` says so); false
/// when the daemon stops meanwhile.
async fn pause(backoff: &mut Backoff, plan: Retry, retry: &mut Retrying, label: &str, cancel: &CancellationToken) -> bool {
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

/// The daemon stops: the far side is told, so it ends at once instead of holding the VMs.
async fn end(near: Option<(NearLink, Sockets)>) -> Ended {
    if let Some((link, sockets)) = near {
        drop(sockets);
        link.shutdown().await;
    }
    Ended::Stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_line_says_why_and_what_to_do() {
        let far = FarChoice::default();
        let line = fallback_line("box", &FarUnusable::NotFound("jdwpmux".into()), &far);
        assert!(line.starts_with("jdwpmux on box cannot be used (jdwpmux was not found on the host); its VMs are reached through ssh forwards."), "{line}");
        assert!(line.contains(&format!("install jdwpmux {} on box", env!("CARGO_PKG_VERSION"))), "{line}");
        assert!(line.ends_with("or name it with --far-path, or let serve copy this one there with --far-copy"), "{line}");
    }

    #[test]
    fn with_far_copy_the_line_says_why_it_was_not_copied_and_offers_no_copy() {
        let far = FarChoice { copy: true, ..FarChoice::default() };
        let why = FarUnusable::NotCopied { first: "jdwpmux was not found on the host".into(), why: "it runs Linux on aarch64, this jdwpmux is built for linux on x86_64".into() };
        let line = fallback_line("box", &why, &far);
        assert!(
            line.starts_with("jdwpmux on box cannot be used (jdwpmux was not found on the host; this jdwpmux was not copied there: it runs Linux on aarch64, this jdwpmux is built for linux on x86_64); its VMs are reached through ssh forwards."),
            "{line}"
        );
        assert!(line.ends_with("--far-path") && !line.contains("--far-copy"), "{line}");
    }

    #[test]
    fn another_version_is_said_with_both_sides_versions_and_protocols() {
        let ours = env!("CARGO_PKG_VERSION");
        let other = FarUnusable::Version { version: "9.9.9".into(), protocols: 8..=9, running: None };
        let line = fallback_line("box", &other, &FarChoice::default());
        assert_eq!(
            line,
            format!("jdwpmux on box (9.9.9) speaks far-side protocol 8..9, this one ({ours}) speaks 2..6: its VMs are reached through ssh forwards; install jdwpmux {ours} on box where `ssh box jdwpmux` finds it (or name it with --far-path), or use --far never")
        );
        // One already running there is found by any jdwpmux installed after it: it must go.
        let running = FarUnusable::Version { version: "0.0.1".into(), protocols: 1..=1, running: Some(77) };
        let line = fallback_line("box", &running, &FarChoice::default());
        assert!(line.contains("speaks far-side protocol 1, ") && line.contains("stop it there (kill 77;") && line.ends_with("or use --far never"), "{line}");
        let refused = fallback_line("box", &FarUnusable::Refused("speaks 9 only".into()), &FarChoice::default());
        assert!(refused.starts_with("jdwpmux on box refused this one (speaks 9 only): its VMs are reached through ssh forwards;"), "{refused}");
    }

    #[test]
    fn the_serve_taken_over_says_what_it_lost_and_that_it_waits() {
        let text = crate::far::handshake::taken_over_text("0.1.0 (laptop pid 42)");
        assert_eq!(
            taken_over_line("box", &text),
            "jdwpmux on box: another serve took this far side over (jdwpmux 0.1.0 (laptop pid 42)); the VM connections this serve held there were closed, and their debuggers; this serve waits and serves box again once that one stops (it does not take it back)"
        );
    }

    #[test]
    fn a_far_side_that_runs_and_does_not_answer_is_said_as_that() {
        assert_eq!(
            silent_line("box", Some(41), "nothing heard from the far side for 20s"),
            "jdwpmux on box (pid 41) runs but does not answer (nothing heard from the far side for 20s): it may be stopped or stuck there; its VMs stay held for the hold while this serve tries again"
        );
    }

    #[test]
    fn a_hold_other_than_asked_is_said() {
        assert_eq!(hold_line("box", 300, 300), None);
        let line = hold_line("box", 200_000, 86_400).unwrap();
        assert_eq!(line, "jdwpmux on box holds the VM connections through a cut for 86400 s, not the 200000 s asked (--far-hold): its limit");
    }

    #[test]
    fn auto_is_the_default() {
        let far = FarChoice::default();
        assert_eq!((far.mode, far.path.as_str(), far.hold_secs), (FarMode::Auto, "jdwpmux", DEFAULT_HOLD_SECS));
    }
}
