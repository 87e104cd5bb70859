//! Who may use a debugger port from this machine: the rule that judges a connecting socket by
//! the user it belongs to (`--allow-user`). Pure; `sock_owner` finds the socket's owner.
//!
//! JDWP has no authentication, so whoever reaches a debugger port runs code in the VM (and,
//! for a VM on an ssh host, on that host as its user). A loopback port is reachable by every
//! user of the machine, so a loopback peer is let in only when its socket belongs to the
//! daemon's own user (or to a user named with `--allow-user`). A peer whose owner cannot be
//! told is refused: the rule fails closed.

use std::fmt;
use std::str::FromStr;

/// One `--allow-user` value, as written: `any`, a user name, or a numeric uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowUser {
    /// Every local user.
    Any,
    Uid(u32),
    Name(String),
}

impl FromStr for AllowUser {
    type Err = String;
    fn from_str(s: &str) -> Result<AllowUser, String> {
        if s == "any" {
            return Ok(AllowUser::Any);
        }
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().map(AllowUser::Uid).map_err(|_| format!("{s:?}: not a uid (0 to {})", u32::MAX));
        }
        // What useradd and the login tools accept, and nothing that could be an option.
        let ok = !s.is_empty()
            && !s.starts_with('-')
            && s.len() <= 256
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'$' | b'@'));
        if ok {
            Ok(AllowUser::Name(s.to_string()))
        } else {
            Err(format!("{s:?}: expected a user name, a uid, or `any`"))
        }
    }
}

impl fmt::Display for AllowUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllowUser::Any => f.write_str("any"),
            AllowUser::Uid(u) => write!(f, "{u}"),
            AllowUser::Name(n) => f.write_str(n),
        }
    }
}

/// `--allow-user` values with names turned into uids, as the daemon uses them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedUsers {
    /// `--allow-user any`: every local user.
    pub any: bool,
    pub uids: Vec<u32>,
}

impl AllowedUsers {
    /// Resolves names with `uid_of`; an unknown name is an error naming it.
    pub fn resolve(values: &[AllowUser], uid_of: impl Fn(&str) -> Option<u32>) -> Result<AllowedUsers, String> {
        let mut out = AllowedUsers::default();
        for v in values {
            match v {
                AllowUser::Any => out.any = true,
                AllowUser::Uid(u) => out.uids.push(*u),
                AllowUser::Name(n) => out.uids.push(uid_of(n).ok_or_else(|| n.clone())?),
            }
        }
        Ok(out)
    }

    fn allows(&self, uid: u32) -> bool {
        self.any || self.uids.contains(&uid)
    }
}

/// What the lookup found of the connecting socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// An open socket of this uid.
    Uid(u32),
    /// Found, but no process holds it any more (closed after connecting): nobody is there
    /// to debug, and once such a socket turns into a TIME_WAIT entry the kernel reports
    /// uid 0 for it, which says nothing of who connected.
    Orphaned,
    /// No socket on this machine (in this network namespace) has that address pair.
    NotFound,
    /// The lookup failed.
    Unknown(String),
}

/// Why a peer was let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The daemon's own user.
    OwnUser,
    /// Another user named by `--allow-user` (or `any`).
    AllowedUser(u32),
    /// Every local user is allowed: the owner was not looked up.
    AnyUser,
    /// A peer on another machine (a non-loopback listener): judged by `--allow` alone.
    Remote,
}

/// Why a peer was turned away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    OtherUser { uid: u32 },
    Orphaned,
    NotFound,
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept(Accepted),
    Refuse(Refused),
}

/// Whether a peer's owner must be looked up at all: not when every user is allowed.
pub fn needs_lookup(allowed: &AllowedUsers) -> bool {
    !allowed.any
}

/// Judges a peer that `--allow` has let through. `loopback`: the peer's address is a
/// loopback one, so the peer is on this machine and its socket must be found. A
/// non-loopback peer may be on another machine (its socket is then not found here, and
/// `--allow` decided); when its socket is found here, it is judged by its owner too.
pub fn judge(loopback: bool, owner: &Owner, daemon_uid: u32, allowed: &AllowedUsers) -> Verdict {
    if allowed.any {
        return Verdict::Accept(Accepted::AnyUser);
    }
    match owner {
        Owner::Uid(u) if *u == daemon_uid => Verdict::Accept(Accepted::OwnUser),
        Owner::Uid(u) if allowed.allows(*u) => Verdict::Accept(Accepted::AllowedUser(*u)),
        Owner::Uid(u) => Verdict::Refuse(Refused::OtherUser { uid: *u }),
        Owner::NotFound if !loopback => Verdict::Accept(Accepted::Remote),
        Owner::NotFound => Verdict::Refuse(Refused::NotFound),
        Owner::Orphaned => Verdict::Refuse(Refused::Orphaned),
        Owner::Unknown(e) => Verdict::Refuse(Refused::Unknown(e.clone())),
    }
}

impl Refused {
    /// The log line's text; `name_of` gives a uid's user name where one is known.
    pub fn describe(&self, daemon_uid: u32, name_of: impl Fn(u32) -> Option<String>) -> String {
        let who = |u: u32| match name_of(u) {
            Some(n) => format!("uid {u} ({n})"),
            None => format!("uid {u}"),
        };
        match self {
            Refused::OtherUser { uid } => format!(
                "refused a debugger: its socket belongs to {}, not to the daemon's {} (--allow-user lets other users in)",
                who(*uid),
                who(daemon_uid)
            ),
            Refused::Orphaned => "refused a debugger: its socket's owner cannot be told (no process holds it any more)".into(),
            Refused::NotFound => "refused a debugger: its socket's owner cannot be told (no socket on this machine has its address)".into(),
            Refused::Unknown(e) => format!("refused a debugger: its socket's owner cannot be told ({e})"),
        }
    }
}

/// Counts refusals per owner so that another user who connects in a loop cannot fill the
/// log: the 1st, 2nd, 4th, 8th... refusal of each is logged, with the count so far.
#[derive(Debug, Default)]
pub struct RefusalLog {
    /// Per refused uid (None: owner not told). Bounded by the machine's users.
    counts: std::sync::Mutex<std::collections::HashMap<Option<u32>, u64>>,
}

impl RefusalLog {
    /// Counts one refusal; returns the count when this one is to be logged.
    pub fn count(&self, r: &Refused) -> Option<u64> {
        let key = match r {
            Refused::OtherUser { uid } => Some(*uid),
            _ => None,
        };
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = counts.entry(key).or_insert(0);
        *n += 1;
        n.is_power_of_two().then_some(*n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAEMON: u32 = 1000;

    fn users(any: bool, uids: &[u32]) -> AllowedUsers {
        AllowedUsers { any, uids: uids.to_vec() }
    }

    #[test]
    fn the_rule_as_a_table() {
        use Accepted as A;
        use Refused as R;
        let none = users(false, &[]);
        let alice = users(false, &[1001]);
        let any = users(true, &[]);
        let failed = Owner::Unknown("netlink: EPERM".into());
        let cases: Vec<(bool, Owner, &AllowedUsers, Verdict)> = vec![
            (true, Owner::Uid(DAEMON), &none, Verdict::Accept(A::OwnUser)),
            (true, Owner::Uid(1001), &none, Verdict::Refuse(R::OtherUser { uid: 1001 })),
            (true, Owner::Uid(0), &none, Verdict::Refuse(R::OtherUser { uid: 0 })),
            (true, Owner::Uid(1001), &alice, Verdict::Accept(A::AllowedUser(1001))),
            (true, Owner::Uid(1002), &alice, Verdict::Refuse(R::OtherUser { uid: 1002 })),
            (true, Owner::Uid(DAEMON), &alice, Verdict::Accept(A::OwnUser)),
            (true, Owner::Uid(1002), &any, Verdict::Accept(A::AnyUser)),
            (true, Owner::NotFound, &any, Verdict::Accept(A::AnyUser)),
            // Fails closed on loopback.
            (true, Owner::NotFound, &none, Verdict::Refuse(R::NotFound)),
            (true, Owner::Orphaned, &none, Verdict::Refuse(R::Orphaned)),
            (true, Owner::Orphaned, &alice, Verdict::Refuse(R::Orphaned)),
            (true, failed.clone(), &alice, Verdict::Refuse(R::Unknown("netlink: EPERM".into()))),
            // A non-loopback peer: another machine's (not found here) is left to --allow,
            // one on this machine is judged like a loopback one.
            (false, Owner::NotFound, &none, Verdict::Accept(A::Remote)),
            (false, Owner::Uid(DAEMON), &none, Verdict::Accept(A::OwnUser)),
            (false, Owner::Uid(1001), &none, Verdict::Refuse(R::OtherUser { uid: 1001 })),
            (false, Owner::Orphaned, &none, Verdict::Refuse(R::Orphaned)),
            (false, failed, &none, Verdict::Refuse(R::Unknown("netlink: EPERM".into()))),
        ];
        for (loopback, owner, allowed, want) in cases {
            assert_eq!(judge(loopback, &owner, DAEMON, allowed), want, "{loopback} {owner:?} {allowed:?}");
        }
        // A root daemon lets in root's own sockets only.
        assert_eq!(judge(true, &Owner::Uid(0), 0, &none), Verdict::Accept(A::OwnUser));
        assert_eq!(judge(true, &Owner::Uid(DAEMON), 0, &none), Verdict::Refuse(R::OtherUser { uid: DAEMON }));
        assert!(needs_lookup(&none) && needs_lookup(&alice) && !needs_lookup(&any));
    }

    #[test]
    fn allow_user_values() {
        assert_eq!("any".parse(), Ok(AllowUser::Any));
        assert_eq!("1001".parse(), Ok(AllowUser::Uid(1001)));
        assert_eq!("0".parse(), Ok(AllowUser::Uid(0)));
        assert_eq!("alice".parse(), Ok(AllowUser::Name("alice".into())));
        assert_eq!("build_bot-2.x$".parse(), Ok(AllowUser::Name("build_bot-2.x$".into())));
        for bad in ["", "-alice", "a b", "4294967296", "al:ice", "a\nb", "al/ice"] {
            assert!(bad.parse::<AllowUser>().is_err(), "{bad:?}");
        }
        for v in ["any", "1001", "alice"] {
            assert_eq!(v.parse::<AllowUser>().unwrap().to_string(), v);
        }
    }

    #[test]
    fn names_resolve_to_uids_and_an_unknown_name_is_an_error() {
        let uid_of = |n: &str| (n == "alice").then_some(1001);
        let vals = [AllowUser::Name("alice".into()), AllowUser::Uid(7)];
        assert_eq!(AllowedUsers::resolve(&vals, uid_of), Ok(users(false, &[1001, 7])));
        assert_eq!(AllowedUsers::resolve(&[AllowUser::Any], uid_of), Ok(users(true, &[])));
        assert_eq!(AllowedUsers::resolve(&[AllowUser::Name("mallory".into())], uid_of), Err("mallory".into()));
    }

    #[test]
    fn refusals_are_logged_at_powers_of_two_per_owner() {
        let log = RefusalLog::default();
        let logged: Vec<u64> = (0..100).filter_map(|_| log.count(&Refused::OtherUser { uid: 1001 })).collect();
        assert_eq!(logged, [1, 2, 4, 8, 16, 32, 64]);
        // Each owner counts on its own; all unknown owners share one count.
        assert_eq!(log.count(&Refused::OtherUser { uid: 1002 }), Some(1));
        assert_eq!(log.count(&Refused::NotFound), Some(1));
        assert_eq!(log.count(&Refused::Orphaned), Some(2));
        assert_eq!(log.count(&Refused::Unknown("x".into())), None);
    }

    #[test]
    fn refusals_name_the_uid_and_the_user_when_known() {
        let name_of = |u: u32| (u == 1001).then(|| "alice".to_string());
        let line = Refused::OtherUser { uid: 1001 }.describe(0, name_of);
        assert!(line.contains("uid 1001 (alice)") && line.contains("daemon's uid 0") && line.contains("--allow-user"), "{line}");
        let line = Refused::OtherUser { uid: 1002 }.describe(0, name_of);
        assert!(line.contains("uid 1002,"), "{line}");
        for r in [Refused::Orphaned, Refused::NotFound, Refused::Unknown("EPERM".into())] {
            assert!(r.describe(0, name_of).contains("owner cannot be told"), "{r:?}");
        }
    }
}
