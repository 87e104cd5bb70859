//! One `--exec` host: the jdwpmux to run in the container found (or copied in:
//! `exec::start`), a near link whose every connection is a run of the exec command
//! (`exec::pipe`), and its VMs published as an `--ssh` host's are (the same keys, sockets and
//! rows, `through_far::publish`), shown where they run (`exec::spec::place`). The exec
//! dropping is a cut like any other: the link runs the command again and resumes the
//! session the far side held.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::remote::exec::pipe::ExecDial;
use crate::remote::exec::spec::ExecSpec;
use crate::remote::exec::start::{self, NotStarted};
use crate::remote::exec::tail::Tail;
use crate::remote::far_choice::FarChoice;
use crate::remote::through_far::{follow_release, mirror_rows, publish};
use crate::remote::near::link::{self, Dial, LinkState as NearState};
use crate::remote::near::sockets::Sockets;
use crate::remote::near::timing::Backoff;
use crate::remote::host::{HostConfig, HostReport};
use crate::remote::naming::Names;
use crate::remote::status::{HostTable, LinkState};

/// Waits before the exec is tried again after it failed: 1 s doubling to 30 s.
const FIRST_WAIT: Duration = Duration::from_secs(1);
const MAX_WAIT: Duration = Duration::from_secs(30);
/// How often a container where no jdwpmux can be used is asked again (an image rolled out
/// with jdwpmux in it, a pod replaced).
const UNUSABLE_WAIT: Duration = Duration::from_secs(60);

/// Serves one `--exec` host until `cancel`.
pub async fn run(cfg: HostConfig, spec: ExecSpec, far: FarChoice, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    let span = tracing::info_span!("exec", host = %spec.name);
    let _ = tokio::spawn(tracing::Instrument::instrument(serve(cfg, spec, far, report, rows, cancel), span)).await;
}

async fn serve(cfg: HostConfig, spec: ExecSpec, far: FarChoice, report: watch::Sender<HostReport>, rows: Arc<HostTable>, cancel: CancellationToken) {
    let mirror = tokio::spawn(mirror_rows(cfg.label.clone(), report.subscribe(), rows.clone()));
    // The jdwpmux found there is used until it is gone (a container made again under its
    // name has none of what was copied into the one before): then it is looked for again.
    while let Some(path) = find(&spec, &far, &report, &cancel).await {
        match run_link(&cfg, &spec, &far, &report, &rows, &cancel, &path).await {
            LinkEnd::Stopped => break,
            LinkEnd::FarGone => info!("jdwpmux is no longer at {path} in {} (the container was made again?): looking for it again", spec.name),
        }
    }
    mirror.abort();
}

/// How serving through one jdwpmux in the container ended.
enum LinkEnd {
    Stopped,
    /// The exec found no program at its path: the container is not the one it was copied to.
    FarGone,
}

/// The jdwpmux to run in the container, tried until found (None: cancelled).
async fn find(spec: &ExecSpec, far: &FarChoice, report: &watch::Sender<HostReport>, cancel: &CancellationToken) -> Option<String> {
    let mut backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
    let mut said: Option<String> = None;
    loop {
        let found = tokio::select! {
            f = start::find(spec, far) => f,
            _ = cancel.cancelled() => return None,
        };
        let (text, wait) = match found {
            Ok(path) => return Some(path),
            Err(NotStarted::Exec(text)) => (text, backoff.next_wait()),
            Err(NotStarted::Unusable(text)) => (text, UNUSABLE_WAIT),
        };
        if said.as_deref() != Some(&text) {
            warn!("{}: {text}; trying again in {} s", spec.name, wait.as_secs());
            said = Some(text.clone());
        } else {
            debug!("{}: {text}; trying again", spec.name);
        }
        report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: false });
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return None,
        }
    }
}

/// Serves the container through the jdwpmux at `path` there until cancelled, or until the
/// exec finds no program at that path.
#[allow(clippy::too_many_arguments)]
async fn run_link(cfg: &HostConfig, spec: &ExecSpec, far: &FarChoice, report: &watch::Sender<HostReport>, rows: &Arc<HostTable>, cancel: &CancellationToken, path: &str) -> LinkEnd {
    info!(path = %path, "serving {} through `{}` with jdwpmux at {path} there", spec.name, crate::safe_text::shown(&spec.text));
    let tail = Arc::new(Mutex::new(Tail::default()));
    let (ready_tx, mut ready_rx) = watch::channel(None);
    let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dial = Arc::new(ExecDial { name: spec.name.clone(), argv: spec.with(&[path, "far", "--attach"]), tail: tail.clone(), ready: ready_tx, far_gone: gone.clone() });
    let nl = link::start(Dial::Exec(dial), link::Config { host: spec.name.clone(), hold_secs: far.hold_secs, gather: far.gather, ..link::Config::default() });
    rows.put_link(&cfg.label, nl.figures());
    let release = tokio::spawn(follow_release(nl.state(), report.clone(), cfg.label.clone()));
    let mut sockets = Sockets::new(nl.clone());
    let mut names = Names::default();
    let place = spec.place();
    let (mut vms, mut state) = (nl.vms(), nl.state());
    // The far side each run of the exec reached: a new pid is one that was started again
    // (killed, or its hold ran out), said once; the link finds its session gone by itself.
    let mut far_pid: Option<u32> = None;
    let mut end = LinkEnd::Stopped;
    loop {
        tokio::select! {
            changed = ready_rx.changed() => {
                if changed.is_err() {
                    break;
                }
                let pid = ready_rx.borrow_and_update().as_ref().and_then(|r| r.pid);
                if let (Some(was), Some(now)) = (far_pid, pid) {
                    if was != now {
                        warn!("jdwpmux in {} is another one now (pid {was} there before, {now} now): the VM connections it held are gone", spec.name);
                    }
                }
                far_pid = pid.or(far_pid);
            }
            changed = vms.changed() => {
                if changed.is_err() {
                    break;
                }
                let listed = vms.borrow_and_update().clone();
                publish(cfg, &mut names, &mut sockets, None, &listed, Some(&place), report);
            }
            changed = state.changed() => {
                if changed.is_err() {
                    break;
                }
                let now = state.borrow_and_update().clone();
                match now {
                    NearState::Up { connections, resumed, .. } => {
                        if connections > 1 {
                            info!(resumed, "the exec to {} is back (connection {connections})", spec.name);
                        }
                        report.send_modify(|r| r.link = LinkState::Up);
                    }
                    // The link's reason, with the exec's own last words where it said any.
                    // jdwpmux there serves another serve: the exec works, it waits.
                    NearState::Busy(why) | NearState::TakenOver(why) => {
                        report.send_modify(|r| r.link = LinkState::Busy { reason: why });
                    }
                    NearState::Down { why, .. } => {
                        let reason = down_reason(&why, tail.lock().ok().and_then(|t| t.said()));
                        report.send_modify(|r| r.link = LinkState::Down { reason, refused: false });
                        if gone.swap(false, std::sync::atomic::Ordering::Relaxed) {
                            end = LinkEnd::FarGone;
                            break;
                        }
                    }
                    NearState::Refused(text) => {
                        warn!("jdwpmux in {} refused this one: {text}", spec.name);
                        report.send_modify(|r| r.link = LinkState::Down { reason: text, refused: true });
                    }
                    NearState::Released { .. } | NearState::Connecting | NearState::Ended => {}
                }
            }
            _ = cancel.cancelled() => break,
        }
    }
    drop(sockets);
    nl.shutdown().await;
    release.abort();
    end
}

/// What a down exec host's row says: the link's reason, then what the exec printed on
/// stderr when that adds anything.
pub fn down_reason(why: &str, said: Option<String>) -> String {
    match said {
        Some(s) if !why.contains(&s) => format!("{why} (the exec said: {s})"),
        _ => why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exec_words_join_the_reason_once() {
        assert_eq!(down_reason("the far side closed the stream", None), "the far side closed the stream");
        assert_eq!(
            down_reason("the far side closed the stream", Some("Error: no such container c".into())),
            "the far side closed the stream (the exec said: Error: no such container c)"
        );
        assert_eq!(down_reason("the exec exited with 125: Error: no such container c", Some("Error: no such container c".into())), "the exec exited with 125: Error: no such container c");
    }
}
