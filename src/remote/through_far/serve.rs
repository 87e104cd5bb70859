//! The task's loop over one far side: the master made (again), the near link started once
//! and followed (its VM list published, its state said and reported), the far side's start
//! run again while the link is down to find it stuck or restarted, and what a lost master,
//! a refusal or the daemon's stop then does.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::lines::{fallback_line, hold_line, restart_line, silence_line, silent_line, taken_over_line};
use super::reach::{pause, phase, reach_again, say_once, Reached, Retrying};
use super::report::{follow_release, now_ms, publish};
use crate::remote::far_choice::{FarChoice, FarMode};
use crate::remote::copy;
use crate::remote::near::link::{self, Dial, LinkState as NearState, NearLink};
use crate::remote::near::netwatch::NetChanges;
use crate::remote::protocol::ready::Ready;
use crate::remote::through_far::restart::{self, Check, Unusable, FIRST_CHECK_WAIT, MAX_CHECK_WAIT};
use crate::remote::near::sockets::Sockets;
use crate::remote::ssh::start_far::{self as ssh, FarUnusable};
use crate::remote::near::timing::{retry_plan, Backoff, Retry};
use crate::remote::host::{HostConfig, HostReport, FIRST_BACKOFF, MAX_BACKOFF};
use crate::remote::ssh::master::Link;
use crate::remote::naming::Names;
use crate::remote::status::{HostTable, LinkState};

/// How long the one scan round that tells the login's uid may take.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(20);

/// How serving a host through its far side ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// The daemon stops.
    Stopped,
    /// With `auto`, the far side refused this near side: the host goes on through forwards.
    Forwards,
}

pub(super) async fn serve_host(cfg: &HostConfig, far: &FarChoice, report: &watch::Sender<HostReport>, rows: &HostTable, first: Option<(Link, Ready)>, cancel: &CancellationToken) -> Ended {
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
    // This outage of the link was said (a WARN, the host row down): by the near link's
    // silence or by the master's end, whichever came first, so the host row never says `up`
    // while its VMs are said held or released, and "held" is never said after "let go".
    let mut cut_said = false;
    // When the link fell silent with the master up, for the line that says it is back (a
    // lost master says its own).
    let mut silent_since: Option<Instant> = None;
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
            rows.put_link(&cfg.label, nl.figures());
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
                        NearState::Down { why, .. } if !ever_up => {
                            let why = FarUnusable::Failed(format!("what was started there does not answer as a far side: {why}"));
                            if far.mode == FarMode::Auto {
                                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, far));
                                end(Some((nl, sockets))).await;
                                end_unanswering(cfg, &control, &ready).await;
                                master.close().await;
                                return Ended::Forwards;
                            }
                            say_once(&mut retry.said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
                            report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
                        }
                        NearState::Down { .. } | NearState::Released { .. } => {
                            check_at.get_or_insert_with(Instant::now);
                            match &now {
                                // Silence, where the master has not noticed the cut yet:
                                // said now, before the hold can run out.
                                NearState::Down { why, silent: true } if !cut_said => {
                                    cut_said = true;
                                    silent_since = Some(Instant::now());
                                    let line = silence_line(&cfg.label, why);
                                    warn!(host = %cfg.label, "{line}");
                                    report.send_modify(|r| r.link = LinkState::Down { reason: line, refused: false });
                                }
                                // The link let the VMs go (said in its own line) while this
                                // master still stands: the host is not `up` beside VMs
                                // said released.
                                NearState::Released { hold_secs } if !cut_said => {
                                    cut_said = true;
                                    let reason = format!("nothing heard from jdwpmux on {} for its hold ({hold_secs} s)", cfg.label);
                                    report.send_modify(|r| r.link = LinkState::Down { reason, refused: false });
                                }
                                _ => {}
                            }
                        }
                        NearState::Up { hold_secs, .. } => {
                            ever_up = true;
                            // A silence the master never noticed (its end says the rest).
                            cut_said = false;
                            if let Some(since) = silent_since.take() {
                                info!(host = %cfg.label, "the link to jdwpmux on {} is back after {:.1} s", cfg.label, since.elapsed().as_secs_f64());
                            }
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
                            report.send_modify(|r| r.link = LinkState::Busy { reason: text });
                        }
                        NearState::TakenOver(text) => {
                            ever_up = true;
                            taken_over = true;
                            warn!(host = %cfg.label, "{}", taken_over_line(&cfg.label, &text));
                            report.send_modify(|r| r.link = LinkState::Busy { reason: text });
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
                                        NearState::Down { why, .. } => why.clone(),
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
                    // What this serve started there and never spoke to as a far side has
                    // no goodbye to end it: it ends with this serve.
                    if !ever_up {
                        end_unanswering(cfg, &control, &ready).await;
                    }
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
        silent_since = None;
        if std::mem::replace(&mut cut_said, true) {
            // Said already when the link fell silent: the master's end is its detail.
            info!(host = %cfg.label, reason = %why, "lost the ssh link to {} too; reconnecting", cfg.label);
        } else {
            warn!(host = %cfg.label, reason = %why, "lost the ssh link to {}; its VMs are held by jdwpmux there; reconnecting", cfg.label);
            report.send_modify(|r| r.link = LinkState::Down { reason: why, refused: false });
        }
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

/// Waits until `at` (for ever when None).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// The daemon stops: the far side is told, so it ends at once instead of holding the VMs.
/// Ends what this serve started on the host that does not answer as a far side (garbage, a
/// flood, a frame too long, or nothing yet): closing its stream ends no process, and it
/// runs detached there. Only what this serve started (not a far side found running, which
/// may be another serve's), and only while its pid still runs as a far side
/// (`start_far::end_script`).
async fn end_unanswering(cfg: &HostConfig, control: &std::path::Path, ready: &Ready) {
    let Some(pid) = ready.pid.filter(|_| !ready.already) else { return };
    match ssh::end_unusable(&cfg.ssh, control, &cfg.dest, pid).await {
        Ok(()) => debug!(host = %cfg.label, pid, "ended what was started there as a far side"),
        Err(e) => info!(host = %cfg.label, pid, "could not end what was started there as a far side: {e}"),
    }
}

async fn end(near: Option<(NearLink, Sockets)>) -> Ended {
    if let Some((link, sockets)) = near {
        drop(sockets);
        link.shutdown().await;
    }
    Ended::Stopped
}
