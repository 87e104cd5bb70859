//! Which VM the current-VM port (8700) leads to, and, when none, why: what `list`, the log
//! and a debugger closed on that port are told.
//!
//! The rules:
//! - **Nothing selected**: the newest VM that can be reached (the one whose process started
//!   last, else the first found). A VM that cannot be reached (a container's JVM nobody here
//!   may enter, a `--vm` address nothing answers on) is never current: a debugger on 8700
//!   would only be closed. While every VM listed is such a one, no VM is current.
//! - **A selection** (`jdwpmux select`, the page, or `--select` once it names one VM) is the
//!   VM it named then, not its words: that registry entry, which keeps its id while its VM is
//!   away and when it comes back under its key (a JVM restarted on its port, an app with a
//!   new pid). So a VM that appears later under the same name never takes it over, and the
//!   words are never resolved again to "none" or "ambiguous" behind the user's back. While
//!   the selected VM is away no VM is current, and `list` says which one is awaited.
//! - **`--select` before it names a VM** is resolved as VMs appear; when it names several,
//!   that is said once (the log's WARN and `list`), and no VM is current until `jdwpmux
//!   select` picks one.
//!
//! The state is what was chosen; everything else is read from the entries when asked.

use std::fmt;

use std::sync::atomic::Ordering;

use tracing::{info, warn};

use super::{describe, Registry, SelectError, VmEntry, VmId};
use crate::session::{VmState, VmStatus};

/// Why the current-VM port leads to no VM now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCurrent {
    /// No VM has been found (yet).
    NoneFound,
    /// VMs are listed, but none of them can be reached now.
    NoneReachable,
    /// `--select` names no VM yet.
    NotYet { selector: String },
    /// `--select` names several VMs.
    Ambiguous { selector: String, candidates: Vec<String> },
    /// The selected VM is away (its entry stays selected for its return).
    Away { vm: String },
}

impl fmt::Display for NoCurrent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoCurrent::NoneFound => f.write_str("no VM found yet"),
            NoCurrent::NoneReachable => f.write_str("the VMs found cannot be reached now (`jdwpmux list` says why)"),
            NoCurrent::NotYet { selector } => write!(f, "--select {selector:?} names no VM yet"),
            NoCurrent::Ambiguous { selector, candidates } => {
                write!(f, "--select {selector:?} is ambiguous: it matches {}; `jdwpmux select` picks one", candidates.join(", "))
            }
            NoCurrent::Away { vm } => write!(f, "the selected VM ({vm}) is away; it is current again when it returns (`jdwpmux select` picks another)"),
        }
    }
}

/// What was chosen, and what the log last said of it.
#[derive(Debug, Default)]
pub(super) struct Selection {
    /// The user's words (`--select`, or the last `select`); None: the newest VM leads.
    pub selector: Option<String>,
    /// The entry they named: current while present.
    pub pinned: Option<VmId>,
    /// What the log last said (`announce`), so that each change is said once.
    pub said: Option<Said>,
}

/// What a log line said of the current VM, compared to say a change once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Said {
    Vm(VmId),
    /// Why none, by kind and words (an ambiguity that gains a candidate is not said again).
    None(&'static str, Option<String>),
}

impl Said {
    pub fn of(now: &Result<VmId, NoCurrent>) -> Said {
        match now {
            Ok(id) => Said::Vm(*id),
            Err(NoCurrent::NoneFound) => Said::None("none found", None),
            Err(NoCurrent::NoneReachable) => Said::None("none reachable", None),
            Err(NoCurrent::NotYet { selector }) => Said::None("not yet", Some(selector.clone())),
            Err(NoCurrent::Ambiguous { selector, .. }) => Said::None("ambiguous", Some(selector.clone())),
            Err(NoCurrent::Away { vm }) => Said::None("away", Some(vm.clone())),
        }
    }
}

/// Whether a VM can be led to now: not one whose session says it cannot be reached.
pub(super) fn reachable(s: &VmStatus) -> bool {
    s.state != VmState::Unreachable
}

/// The VM the current-VM port leads to when nothing was selected: the one whose process
/// started last, among those whose start is known (a JVM on this machine; of two started in
/// the same clock tick, the one found later); when none is known (VMs behind adb, on other
/// hosts), the first one found. Only VMs that can be reached.
pub(super) fn newest(rows: &[(VmEntry, VmStatus)]) -> Result<VmId, NoCurrent> {
    let best = rows.iter().filter(|(_, s)| reachable(s)).max_by_key(|(e, _)| match e.started {
        Some(t) => (true, t, e.id),
        None => (false, 0, VmId::MAX - e.id),
    });
    match best {
        Some((e, _)) => Ok(e.id),
        None if rows.is_empty() => Err(NoCurrent::NoneFound),
        None => Err(NoCurrent::NoneReachable),
    }
}

/// The pinned entry, when it is listed now; else why not (its description, for `Away`).
pub(super) fn pinned(entry: Option<&VmEntry>) -> Result<VmId, NoCurrent> {
    match entry {
        Some(e) if e.present() => Ok(e.id),
        Some(e) => Err(NoCurrent::Away { vm: describe(e, &e.handle.status()) }),
        None => Err(NoCurrent::NoneFound),
    }
}

/// The line the log says when the current VM changed to `now` (None: nothing worth a line,
/// as "none found yet" at start). `by_selection`: a selection chose it.
pub(super) fn line(now: &Result<VmId, NoCurrent>, vm: Option<&(VmEntry, VmStatus)>, by_selection: Option<&str>) -> Option<(bool, String)> {
    match (now, vm) {
        (Ok(_), Some((e, s))) => {
            let why = match by_selection {
                Some(sel) => format!("the selection {sel:?}"),
                None if e.started.is_some() => "the most recently started JVM".into(),
                None => "the first VM found".into(),
            };
            Some((false, format!("the current VM is {}: {why} (`jdwpmux select` picks another)", describe(e, s))))
        }
        (Ok(_), None) | (Err(NoCurrent::NoneFound | NoCurrent::NotYet { .. }), _) => None,
        (Err(why @ NoCurrent::Ambiguous { .. }), _) => Some((true, format!("no current VM: {why}"))),
        (Err(why), _) => Some((false, format!("no current VM: {why}"))),
    }
}

/// The selection and the current VM, as the registry keeps them.
impl Registry {
    /// Sets the current VM by selector, after checking it names exactly one VM now that can
    /// be reached: that VM stays current (`current`).
    pub fn select(&self, selector: &str) -> Result<VmId, SelectError> {
        let id = self.resolve(selector)?;
        if let Ok(mut s) = self.selection.lock() {
            s.selector = Some(selector.to_string());
            s.pinned = Some(id);
            // Said by whoever selected (the control socket's line, the page's).
            s.said = Some(Said::Vm(id));
        }
        Ok(id)
    }

    /// Keeps a selector even if it names no VM yet (`--select` at start): resolved as VMs
    /// appear, until it names one.
    pub fn select_later(&self, selector: &str) {
        if let Ok(mut s) = self.selection.lock() {
            s.selector = Some(selector.to_string());
            s.pinned = None;
        }
    }

    /// The current VM (`current` module's rules).
    pub fn current(&self) -> Option<VmEntry> {
        self.current_or_why().ok()
    }

    /// The current VM, or why the current-VM port leads to none now.
    pub fn current_or_why(&self) -> Result<VmEntry, NoCurrent> {
        let id = self.current_id()?;
        self.get(id).ok_or(NoCurrent::NoneFound)
    }

    fn current_id(&self) -> Result<VmId, NoCurrent> {
        let Ok(mut sel) = self.selection.lock() else { return Err(NoCurrent::NoneFound) };
        match (sel.pinned, sel.selector.clone()) {
            (Some(id), _) => pinned(self.get(id).as_ref()),
            (None, Some(selector)) => match self.resolve(&selector) {
                Ok(id) => {
                    sel.pinned = Some(id);
                    Ok(id)
                }
                Err(SelectError::Ambiguous { selector, candidates }) => Err(NoCurrent::Ambiguous { selector, candidates }),
                Err(SelectError::Unknown { selector, .. } | SelectError::Unreachable { selector, .. }) => Err(NoCurrent::NotYet { selector }),
            },
            (None, None) => {
                drop(sel);
                newest(&self.rows())
            }
        }
    }

    /// Says in one line which VM the current-VM port leads to, or why none, when that changed
    /// since it was last said: called once the discoveries have taken in what they found,
    /// so that a round finding several JVMs says it once.
    pub fn announce_current(&self) {
        let now = self.current_id();
        let said = Said::of(&now);
        let by_selection = {
            let Ok(mut s) = self.selection.lock() else { return };
            if s.said.as_ref() == Some(&said) {
                return;
            }
            s.said = Some(said);
            s.selector.clone()
        };
        let vm = now.as_ref().ok().and_then(|id| self.get(*id)).map(|e| {
            let s = e.handle.status();
            (e, s)
        });
        match line(&now, vm.as_ref(), by_selection.as_deref()) {
            Some((true, text)) => warn!("{text}"),
            Some((false, text)) => info!("{text}"),
            None => {}
        }
    }

    /// Remembers the current-VM port (`list` names it).
    pub fn set_current_port(&self, port: u16) {
        self.current_port.store(port, Ordering::Relaxed);
    }

    /// What `list` says under its rows of the current-VM port: its number, and why it leads
    /// to no VM now (None while one is current).
    pub fn current_port_info(&self) -> (Option<u16>, Option<String>) {
        let port = Some(self.current_port.load(Ordering::Relaxed)).filter(|p| *p != 0);
        (port, self.current_or_why().err().map(|why| why.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Source;
    use crate::session::VmHandle;
    use std::net::SocketAddr;

    fn row(id: VmId, state: VmState, started: Option<u64>) -> (VmEntry, VmStatus) {
        let addr = SocketAddr::from(([127, 0, 0, 1], 8000 + id as u16));
        let status = VmStatus { app: Some(format!("App{id}")), pid: Some(100 + id), state, ..VmStatus::default() };
        let e = VmEntry {
            id,
            key: addr.to_string(),
            name: addr.to_string(),
            addr,
            source: Source::Cli,
            wanted_port: 0,
            port: None,
            handle: VmHandle::fixed(status.clone()),
            host: None,
            held: false,
            note: None,
            process: None,
            started,
            print: None,
        };
        (e, status)
    }

    #[test]
    fn the_newest_reachable_leads_and_an_unreachable_one_never() {
        let rows = [row(0, VmState::Ready, Some(100)), row(1, VmState::Unreachable, Some(900)), row(2, VmState::Connecting, None)];
        assert_eq!(newest(&rows), Ok(0));
        assert_eq!(newest(&rows[1..]), Ok(2), "one still connecting may be reached");
        assert_eq!(newest(&rows[1..2]), Err(NoCurrent::NoneReachable));
        assert_eq!(newest(&[]), Err(NoCurrent::NoneFound));
    }

    #[test]
    fn each_reason_is_said_once_by_kind_and_words() {
        let a = Err(NoCurrent::Ambiguous { selector: "Main".into(), candidates: vec!["a".into(), "b".into()] });
        let more = Err(NoCurrent::Ambiguous { selector: "Main".into(), candidates: vec!["a".into(), "b".into(), "c".into()] });
        assert_eq!(Said::of(&a), Said::of(&more));
        assert_ne!(Said::of(&a), Said::of(&Err(NoCurrent::Ambiguous { selector: "Other".into(), candidates: vec![] })));
        let (warn, text) = line(&a, None, None).unwrap();
        assert!(warn && text.contains("\"Main\" is ambiguous: it matches a, b"), "{text}");
        assert_eq!(line(&Err(NoCurrent::NoneFound), None, None), None);
        let (warn, text) = line(&Err(NoCurrent::NoneReachable), None, None).unwrap();
        assert!(!warn && text.contains("cannot be reached"), "{text}");
        let r = row(3, VmState::Ready, Some(5));
        let (_, text) = line(&Ok(3), Some(&r), None).unwrap();
        assert_eq!(text, "the current VM is 127.0.0.1:8003 App3 pid 103: the most recently started JVM (`jdwpmux select` picks another)");
        let (_, text) = line(&Ok(3), Some(&r), Some("App3")).unwrap();
        assert!(text.contains("the selection \"App3\""), "{text}");
    }
}
