//! One `--ssh` host served through jdwpmux on it (`--far auto|always`): the ssh master as
//! today, the far side started through it, its socket forwarded, a near link over that, and
//! a local socket per listed VM. What it knows goes out as the `HostReport` a scan of the host
//! gives, with the same keys and sockets, so the daemon follows it the same way. When the
//! master is lost the near link holds every channel and tries again; the master is made
//! again, the far side found running, its socket forwarded again, and the link resumes.
//!
//! With `auto`, a host where the far side cannot be used (not there, another protocol) is
//! served as today through ssh forwards, with one INFO line saying why and how to change it.

use std::path::PathBuf;
use std::time::Duration;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::copy;
use super::found::found_jvm;
use super::link::{self, Dial, LinkState as NearState, NearLink};
use super::sockets::Sockets;
use super::ssh::{self, FarUnusable};
use super::timing::Backoff;
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
    /// When the host has none that can be used, copy this binary there (`--far-copy`).
    pub copy: bool,
}

impl Default for FarChoice {
    fn default() -> Self {
        FarChoice { mode: FarMode::Never, path: "jdwpmux".into(), copy: false }
    }
}

/// The one line a host where the far side cannot be used is said in: why, and what would
/// make it usable (the copy is offered only when it was not asked for).
pub fn fallback_line(label: &str, why: &FarUnusable, far: &FarChoice) -> String {
    let copy = if far.copy { "" } else { ", or let serve copy this one there with --far-copy" };
    format!(
        "jdwpmux on {label} cannot be used ({why}); its VMs are reached through ssh forwards. To use it, install jdwpmux {} on {label} where `ssh {label} {}` finds it, or name it with --far-path{copy}",
        env!("CARGO_PKG_VERSION"),
        far.path
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
    let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
    let mut names = Names::default();
    // Made with the first far side reached; kept across lost masters.
    let mut near: Option<(NearLink, Sockets)> = None;
    // The last failure said at WARN: the same one again, while retrying, goes to DEBUG.
    let mut said: Option<String> = None;
    // The near link has been up once: a cut after that is a cut, not an unusable far side.
    let mut ever_up = false;
    loop {
        if near.is_none() {
            report.send_modify(|r| r.link = LinkState::Connecting);
        }
        let limit = cfg.ssh.connect_timeout + Duration::from_secs(20);
        let opened = tokio::select! {
            l = Link::open(&cfg.ssh, &cfg.dest, &control, limit) => l,
            _ = cancel.cancelled() => return end(near).await,
        };
        let mut master = match opened {
            Ok(l) => l,
            Err(failure) => {
                let text = failure.to_string();
                say_once(&mut said, &cfg.label, text.clone());
                report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: !failure.transient() });
                if !pause(&mut backoff, &cancel).await {
                    return end(near).await;
                }
                continue;
            }
        };
        // The login's uid comes with a scan's answer: one round tells it (the far side lists
        // the JVMs of the user it runs as, the login's, keyed here as a scan keys them).
        let login = match master.scan.round(LOGIN_TIMEOUT).await {
            Ok(_) => master.scan.view().uid,
            Err(e) => {
                debug!(host = %cfg.label, "no scan round to learn the login's uid: {e}");
                None
            }
        };
        let reached = match copy::start(&cfg.ssh, &control, &cfg.dest, &cfg.label, &far.path, far.copy).await {
            Ok(ready) => ssh::forward(&cfg.ssh, &control, &cfg.dest, &local, &ready.socket).await.map(|()| ready).map_err(FarUnusable::Failed),
            Err(e) => Err(e),
        };
        let ready = match reached {
            Ok(r) => r,
            Err(why) if far.mode == FarMode::Auto && near.is_none() => {
                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, &far));
                master.close().await;
                return crate::remote::host::run(cfg, report, rows, cancel).await;
            }
            Err(why) => {
                say_once(&mut said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
                report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
                master.close().await;
                if !pause(&mut backoff, &cancel).await {
                    return end(near).await;
                }
                continue;
            }
        };
        info!(host = %cfg.label, socket = %ready.socket.display(), version = %ready.version, already = ready.already, "using jdwpmux on {}", cfg.label);
        backoff.reset();
        said = None;
        if let Some((nl, _)) = &near {
            nl.retry_now();
        }
        let (nl, mut sockets) = near.take().unwrap_or_else(|| {
            let nl = link::start(Dial::Unix(local.clone()), link::Config::default());
            let sockets = Sockets::new(nl.clone());
            (nl, sockets)
        });
        let mut vms = nl.vms();
        let mut state = nl.state();
        vms.mark_changed();
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
                    let now = state.borrow_and_update().clone();
                    match now {
                        NearState::Refused(text) => break format!("the far side refused this jdwpmux: {text}"),
                        NearState::Up { .. } => ever_up = true,
                        // It started, but what listens there does not speak as a far side
                        // (another program, a broken or hostile one): with auto, served as
                        // if there were none; else said once while the link tries again.
                        NearState::Down { why } if !ever_up => {
                            let why = FarUnusable::Failed(format!("what was started there does not answer as a far side: {why}"));
                            if far.mode == FarMode::Auto {
                                info!(host = %cfg.label, "{}", fallback_line(&cfg.label, &why, &far));
                                end(Some((nl, sockets))).await;
                                master.close().await;
                                return crate::remote::host::run(cfg, report, rows, cancel).await;
                            }
                            say_once(&mut said, &cfg.label, format!("jdwpmux on {} cannot be used: {why}", cfg.label));
                            report.send_modify(|r| r.link = LinkState::Down { reason: why.to_string(), refused: false });
                        }
                        _ => {}
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
        // The near link keeps the channels and tries again by itself; the master and the
        // forward are made again here.
        warn!(host = %cfg.label, reason = %why, "lost the ssh link to {}; its VMs are held by jdwpmux there; reconnecting", cfg.label);
        report.send_modify(|r| r.link = LinkState::Down { reason: why, refused: false });
        master.close().await;
        if !pause(&mut backoff, &cancel).await {
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

/// Waits the backoff; false when the daemon stops meanwhile.
async fn pause(backoff: &mut Backoff, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(backoff.next_wait()) => true,
        _ = cancel.cancelled() => false,
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
}
