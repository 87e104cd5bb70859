//! Pods followed through this user's own kubectl (`serve --kube NAMESPACE[:SELECTOR]`): per
//! `--kube`, a list (`kubectl get --raw /api/v1/namespaces/NS/pods?labelSelector=SEL`: the
//! API server's own, with its resource version), then a watch from that version (`kubectl get
//! --raw '...pods?watch=1&resourceVersion=RV'`: nothing changed between the two is missed), read into `remote::kube::hosts`'s table; each running container
//! of each running pod is served as an `--exec` host (`kubectl exec -i -n NS POD -c C --`)
//! while the table says, its JVMs keyed by the pod's workload slot so that a rollout's new
//! pod takes the ports of the pod it replaces. When kubectl ends (the API server down, the
//! watch expired) the list and the watch are run again after a backoff, the `--kube` row
//! saying why meanwhile; a fresh list ends the hosts of pods gone while no watch ran. A
//! container whose far side lists no JVM for a while is put to rest (`remote::kube::rest`):
//! its exec ended, its row saying so, looked at again every few minutes.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::runtime_vms::SharedDir;
use super::Spawner;
use crate::remote::exec::tail::Tail;
use crate::remote::exec::ExecSpec;
use crate::remote::status::LinkState;
use crate::remote::kube::hosts::{Change, Host, PodHosts};
use crate::remote::kube::pod::{self, WatchEvent, MAX_LIST_BYTES};
use crate::remote::kube::rest::{Rest, LOOK_AGAIN};
use crate::remote::kube::watch::{Piece, Splitter};
use crate::remote::kube::KubeSpec;
use crate::remote::near::timing::Backoff;
use crate::remote::status::{HostRow, HostState};

/// The command run: this user's kubectl, found on PATH.
pub const KUBECTL: &str = "kubectl";
/// How long the list may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);
/// Waits before the list and watch are run again: 1 s doubling to 30 s.
const FIRST_WAIT: Duration = Duration::from_secs(1);
const MAX_WAIT: Duration = Duration::from_secs(30);
/// A watch that ran this long was healthy: the next failure waits from the start again.
const HEALTHY: Duration = Duration::from_secs(60);
/// What kubectl may print on stderr for a list that is kept.
const MAX_STDERR: usize = 16 * 1024;
/// How often the served hosts' rows are looked at (for containers with no JVM).
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// Starts following each `--kube`.
pub(super) fn start(spawner: &Spawner, dir: SharedDir) {
    for (i, spec) in spawner.settings.kube.iter().enumerate() {
        let f = Follower { spawner: spawner.clone(), spec: spec.clone(), index: i, dir: dir.clone(), table: PodHosts::default(), hosts: HashMap::new(), rest: Rest::default(), resting: HashMap::new(), next: 0 };
        let span = tracing::info_span!("kube", pods = %spec);
        spawner.tracker.spawn(tracing::Instrument::instrument(f.run(), span));
    }
}

struct Follower {
    spawner: Spawner,
    spec: KubeSpec,
    /// Which `--kube` it is (its hosts' file prefix).
    index: usize,
    dir: SharedDir,
    table: PodHosts,
    /// Each served host and its token, by its label.
    hosts: HashMap<String, (Host, CancellationToken)>,
    rest: Rest,
    /// The hosts put to rest (no JVM in their container), by label.
    resting: HashMap<String, Host>,
    /// Numbers the hosts' files.
    next: u32,
}

/// How one run of the watch ended.
enum Ended {
    Cancelled,
    /// kubectl ended (or printed what is not a watch): why, and how long it ran.
    Ended(String, Duration),
}

impl Follower {
    /// The `--kube` row's name: `kube:NS[:SELECTOR]`.
    fn row(&self) -> String {
        format!("kube:{}", self.spec)
    }

    fn args(&self, more: &[&str]) -> Vec<String> {
        let mut a = self.spec.kubectl_args(self.spawner.settings.kube_context.as_deref());
        a.insert(0, "pods".into());
        a.insert(0, "get".into());
        a.extend(more.iter().map(|s| s.to_string()));
        a
    }

    async fn run(mut self) {
        let cancel = self.spawner.cancel.clone();
        let row = self.row();
        let shown = format!("{KUBECTL} {}", shell_words::join(self.args(&["--watch"])));
        self.spawner.registry.hosts.put(HostRow::new(&row, &shown));
        info!("following the pods of `{shown}`");
        let mut backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
        let mut said: Option<String> = None;
        loop {
            let why = tokio::select! {
                listed = self.list() => match listed {
                    Ok((pods, rv)) => {
                        let n = pods.len();
                        debug!(pods = n, "listed");
                        self.mark_busy();
                        let changes = self.table.listed(pods);
                        self.apply(changes);
                        self.row_up();
                        if said.take().is_some() {
                            info!("kubectl answers again for {}", self.spec);
                        }
                        match self.watch(&rv).await {
                            Ended::Cancelled => break,
                            Ended::Ended(why, ran) => {
                                if ran >= HEALTHY {
                                    backoff.reset();
                                }
                                why
                            }
                        }
                    }
                    Err(why) => why,
                },
                _ = cancel.cancelled() => break,
            };
            let wait = backoff.next_wait();
            if said.as_deref() != Some(&why) {
                warn!("pods of {}: {why}; trying again in {} s", self.spec, wait.as_secs());
                said = Some(why.clone());
            }
            self.spawner.registry.hosts.update(&row, |r| r.with_link(&LinkState::Down { reason: why, refused: false }));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => break,
            }
        }
        for (_, (_, token)) in self.hosts.drain() {
            token.cancel();
        }
    }

    /// The `--kube` row after kubectl answered: up (its JVM count is set by `look`).
    fn row_up(&self) {
        self.spawner.registry.hosts.update(&self.row(), |r| r.with_link(&LinkState::Up));
    }

    fn kubectl(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(KUBECTL);
        cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
        cmd
    }

    /// Every pod selected now, and the list's resource version.
    async fn list(&self) -> Result<(Vec<pod::Pod>, String), String> {
        let args = self.spec.list_args(self.spawner.settings.kube_context.as_deref());
        let out = match tokio::time::timeout(LIST_TIMEOUT, crate::remote::ssh::start_far::bounded_output(self.kubectl(&args), MAX_LIST_BYTES)).await {
            Err(_) => return Err(format!("`{KUBECTL} get pods` did not answer within {} s", LIST_TIMEOUT.as_secs())),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return Err(format!("no {KUBECTL} command on PATH")),
            Ok(Err(e)) => return Err(format!("cannot run {KUBECTL}: {e}")),
            Ok(Ok(o)) => o,
        };
        if out.status != Some(0) {
            let mut tail = Tail::default();
            tail.push(&out.stderr[..out.stderr.len().min(MAX_STDERR)]);
            return Err(tail.said().unwrap_or_else(|| format!("`{KUBECTL} get pods` exited with {:?}", out.status)));
        }
        pod::parse_list(&out.stdout).map_err(|e| format!("kubectl's pod list was not read: {e}"))
    }

    /// Runs the watch from the list's resource version `rv` until kubectl ends or the daemon
    /// does.
    async fn watch(&mut self, rv: &str) -> Ended {
        let began = Instant::now();
        let args = self.spec.watch_args(self.spawner.settings.kube_context.as_deref(), rv);
        let mut cmd = self.kubectl(&args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return Ended::Ended(format!("cannot run {KUBECTL}: {e}"), began.elapsed()),
        };
        let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
            return Ended::Ended("no pipes to kubectl".into(), began.elapsed());
        };
        let cancel = self.spawner.cancel.clone();
        let mut split = Splitter::default();
        let mut tail = Tail::default();
        let (mut buf, mut ebuf) = (vec![0u8; 64 * 1024], vec![0u8; 4096]);
        let mut err_open = true;
        let mut look = tokio::time::interval(LOOK_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let cancelled = loop {
            tokio::select! {
                _ = look.tick() => self.look(),
                n = out.read(&mut buf) => match n {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => {
                        for piece in split.feed(&buf[..n]) {
                            match piece {
                                Piece::Object(bytes) => match WatchEvent::parse(&bytes) {
                                    // The API server ends the watch after an ERROR event (410 Gone: the
                                    // version is too old); the list is run again then.
                                    Ok(WatchEvent::Error { code, reason, message }) => debug!(code, reason, message, "the watch says it ends"),
                                    Ok(ev) => {
                                        self.mark_busy();
                                        let changes = self.table.event(ev);
                                        self.apply(changes);
                                        self.row_up();
                                    }
                                    Err(e) => debug!("a watch event not read: {e}"),
                                },
                                Piece::TooLarge => debug!("a watch event over {} bytes skipped", pod::MAX_EVENT_BYTES),
                                Piece::Stray(_) => {}
                            }
                        }
                    }
                },
                n = err.read(&mut ebuf), if err_open => match n {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => tail.push(&ebuf[..n]),
                },
                _ = cancel.cancelled() => break true,
            }
        };
        if cancelled {
            let _ = child.kill().await;
            return Ended::Cancelled;
        }
        // Its last words, then its exit.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Ok(n) = err.read(&mut ebuf).await {
                if n == 0 {
                    break;
                }
                tail.push(&ebuf[..n]);
            }
        })
        .await;
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        if status.is_err() {
            let _ = child.kill().await;
        }
        let said = tail.said().unwrap_or_else(|| "kubectl's watch ended".into());
        Ended::Ended(said, began.elapsed())
    }

    /// Tells the table which pods have a debugger attached to one of their JVMs now.
    fn mark_busy(&mut self) {
        let busy: std::collections::HashSet<String> = self.spawner.registry.list().into_iter().filter(|v| !v.status.debuggers.is_empty()).map(|v| v.host).collect();
        self.table.set_busy(|h| busy.contains(&h.label()));
    }

    fn apply(&mut self, changes: Vec<Change>) {
        for c in changes {
            match c {
                Change::Stop(h, why) => {
                    let label = h.label();
                    self.rest.forget(&label);
                    if let Some((_, token)) = self.hosts.remove(&label) {
                        info!("pod {}/{} ({}): {why}: its JVMs are no longer served through it", h.namespace, h.pod, h.container);
                        token.cancel();
                        self.spawner.registry.hosts.remove(&label);
                    } else if self.resting.remove(&label).is_some() {
                        self.spawner.registry.hosts.remove(&label);
                    }
                }
                Change::Start(h) => {
                    let label = h.label();
                    self.rest.forget(&label);
                    if self.resting.remove(&label).is_some() {
                        self.spawner.registry.hosts.remove(&label);
                    }
                    self.start_host(&h);
                }
            }
        }
    }

    /// Puts to rest the served containers that have listed no JVM for a while, and serves
    /// again those whose rest is over.
    fn look(&mut self) {
        let now = Instant::now();
        let rows = self.spawner.registry.hosts.rows();
        let idle = |label: &str| rows.iter().find(|r| r.host == label).is_some_and(|r| r.state == HostState::Up && r.jvms == 0 && r.last_scan_ms.is_some());
        let seen: Vec<(String, bool)> = self.hosts.keys().map(|l| (l.clone(), idle(l))).collect();
        for label in self.rest.served(now, seen.iter().map(|(l, i)| (l.as_str(), *i))) {
            let Some((h, token)) = self.hosts.remove(&label) else { continue };
            token.cancel();
            info!("pod {}/{} ({}): no JVM with a JDWP agent in it: its exec is ended, and it is looked at again every {} s", h.namespace, h.pod, h.container, LOOK_AGAIN.as_secs());
            let last = rows.iter().find(|r| r.host == label).cloned();
            self.spawner.registry.hosts.remove(&label);
            let mut row = last.unwrap_or_else(|| HostRow::new(&label, ""));
            row.note = Some(format!("{}: looked at again every {} s", crate::remote::status::NO_JVM, LOOK_AGAIN.as_secs()));
            self.spawner.registry.hosts.put(row);
            self.resting.insert(label, h);
        }
        // The --kube row counts the JVMs its pods' rows list.
        let jvms: usize = rows.iter().filter(|r| self.hosts.contains_key(&r.host)).map(|r| r.jvms).sum();
        self.spawner.registry.hosts.update(&self.row(), |mut r| {
            r.jvms = jvms;
            r
        });
        for label in self.rest.due(now) {
            if let Some(h) = self.resting.remove(&label) {
                debug!("pod {label}: looked at again");
                self.spawner.registry.hosts.remove(&label);
                self.start_host(&h);
            }
        }
    }

    /// Serves one container of a pod as an exec host of its own.
    fn start_host(&mut self, h: &Host) {
        let label = h.label();
        if self.spawner.registry.hosts.rows().iter().any(|r| r.host == label) {
            warn!("pod {label} is not reached through kubectl: a host of that name is served already (--ssh, --exec or another --kube)");
            return;
        }
        let Some(dir) = self.dir() else { return };
        let Ok(dest) = h.pod.parse() else { return };
        let spec = exec_spec(h, self.spawner.settings.kube_context.as_deref());
        let s = &self.spawner.settings;
        let cfg = crate::remote::HostConfig {
            dest,
            label: label.clone(),
            dir,
            prefix: format!("k{}.{}", self.index, self.next),
            ssh: s.ssh_options.clone(),
            interval: s.ssh_interval,
            other_users: s.other_users,
            keyed_as: Some(h.key.clone()),
        };
        self.next += 1;
        info!("reaching the JVMs of pod {}/{} (container {}) through `{}`", h.namespace, h.pod, h.container, spec.text);
        let token = self.spawner.cancel.child_token();
        super::remote_vms::start_one_exec(&self.spawner, cfg, spec, s.far.clone(), token.clone());
        self.hosts.insert(label, (h.clone(), token));
    }

    /// The private folder of the links' sockets, made now if no host made it before.
    fn dir(&self) -> Option<std::path::PathBuf> {
        super::runtime_vms::private_dir(&self.dir, &self.spawner, "pods cannot be reached")
    }
}

/// `kubectl exec -i [--context C] -n NS POD -c CONTAINER --`, named by the pod (the exec
/// first: the place its rows show is read from that shape).
pub(crate) fn exec_spec(h: &Host, context: Option<&str>) -> ExecSpec {
    let mut words: Vec<String> = [KUBECTL, "exec", "-i"].map(String::from).to_vec();
    if let Some(c) = context {
        words.extend(["--context".to_string(), c.to_string()]);
    }
    words.extend(["-n", &h.namespace, &h.pod, "-c", &h.container, "--"].map(String::from));
    ExecSpec { name: h.label(), text: shell_words::join(&words), words, compose: None, several: h.several }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_container_is_reached_by_kubectl_exec_and_shown_as_the_pod() {
        let h = Host { namespace: "shop".into(), pod: "orders-5f7c9-x8k2p".into(), uid: "u".into(), container: "app".into(), several: false, key: "kube:shop/deploy/orders/0/app".into(), restarts: 0 };
        let spec = exec_spec(&h, Some("prod"));
        assert_eq!(spec.words, ["kubectl", "exec", "-i", "--context", "prod", "-n", "shop", "orders-5f7c9-x8k2p", "-c", "app", "--"]);
        assert_eq!(spec.name, "shop/orders-5f7c9-x8k2p");
        assert_eq!(spec.place().to_string(), "pod shop/orders-5f7c9-x8k2p");
        assert_eq!(exec_spec(&h, None).text, "kubectl exec -i -n shop orders-5f7c9-x8k2p -c app --");
    }

    #[test]
    fn a_container_of_a_pod_with_several_is_shown_with_the_pod() {
        let h = Host { namespace: "shop".into(), pod: "orders-5f7c9-x8k2p".into(), uid: "u".into(), container: "app".into(), several: true, key: "kube:shop/deploy/orders/0/app".into(), restarts: 0 };
        let spec = exec_spec(&h, None);
        assert_eq!(spec.name, "shop/orders-5f7c9-x8k2p/app");
        assert_eq!(spec.words[spec.words.len() - 3..], ["-c", "app", "--"]);
        assert_eq!(spec.place().to_string(), "pod shop/orders-5f7c9-x8k2p (app)");
    }
}
