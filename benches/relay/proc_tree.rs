//! Groups of processes and the CPU time they use, from /proc/PID/stat: a daemon with its
//! child processes (its ssh master, short-lived `ssh -O` requests), or every process of a test
//! host's network namespace (sshd, the session, its shell and what the shell runs). A
//! process's own time (utime+stime) plus what its children used once it waited for them
//! (cutime+cstime) counts short-lived helpers too: a `grep` the scan's shell ran between two
//! snapshots shows in the shell's cutime at the second.

use std::collections::HashMap;

/// What /proc/PID/stat says of one process (times in clock ticks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    pub comm: String,
    pub ppid: u32,
    /// utime + stime.
    pub own: u64,
    /// cutime + cstime: children it has waited for.
    pub reaped: u64,
}

pub fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    // After the name: field 3 (state) first; ppid is field 4, utime..cstime fields 14-17.
    let f = testkit::process::parse_stat_fields(text)?;
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(Stat { pid, comm, ppid: u32::try_from(num(1)?).ok()?, own: num(11)? + num(12)?, reaped: num(13)? + num(14)? })
}

pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process's pid.
fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// The processes whose parent is `pid` (this kernel may lack /proc/PID/task/*/children, so
/// every process's stat is read).
pub fn children(pid: u32) -> Vec<Stat> {
    all_pids().into_iter().filter_map(stat).filter(|s| s.ppid == pid).collect()
}

/// `pid` and its children.
pub fn with_children(pid: u32) -> Vec<Stat> {
    let mut v: Vec<Stat> = stat(pid).into_iter().collect();
    v.extend(children(pid));
    v
}

/// The inode of a namespace link's target: `net:[4026532281]`.
pub fn parse_ns_link(link: &str) -> Option<u64> {
    link.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// The processes in network namespace `name` (made with `ip netns add`), as `ip netns pids`
/// finds them but without running it: those whose /proc/PID/ns/net is the namespace.
pub fn netns_members(name: &str) -> Vec<Stat> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(format!("/run/netns/{name}")) else { return Vec::new() };
    let ino = meta.ino();
    all_pids()
        .into_iter()
        .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/net")).ok().and_then(|l| parse_ns_link(&l.to_string_lossy())) == Some(ino))
        .filter_map(stat)
        .collect()
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|t| *t > 0).unwrap_or(100)
}

/// The CPU ticks of a group of processes at one moment, own and reaped, per process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupTicks(HashMap<u32, u64>);

impl GroupTicks {
    pub fn of(stats: &[Stat]) -> GroupTicks {
        GroupTicks(stats.iter().map(|s| (s.pid, s.own + s.reaped)).collect())
    }

    /// Ticks the group used since `earlier`: per process now, what it has more than then (all
    /// of it for a process that started since). A process that ended and was waited for by
    /// another of the group moved its time into that one's `reaped`; one waited for outside
    /// the group is not counted for its part since `earlier`.
    pub fn since(&self, earlier: &GroupTicks) -> u64 {
        self.0.iter().map(|(pid, t)| t.saturating_sub(earlier.0.get(pid).copied().unwrap_or(0))).sum()
    }

    /// As [`GroupTicks::since`], summed per command name (`comms`: the names of the pids
    /// now), largest first.
    pub fn since_by_name(&self, earlier: &GroupTicks, comms: &[Stat]) -> Vec<(String, u64)> {
        let mut by: HashMap<String, u64> = HashMap::new();
        for (pid, t) in &self.0 {
            let name = comms.iter().find(|s| s.pid == *pid).map_or("?", |s| s.comm.as_str());
            *by.entry(name.to_string()).or_default() += t.saturating_sub(earlier.0.get(pid).copied().unwrap_or(0));
        }
        let mut v: Vec<(String, u64)> = by.into_iter().filter(|(_, t)| *t > 0).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let line = "4242 (ssh -O (x)) S 4000 4242 4000 0 -1 4194560 500 0 0 0 12 7 3 5 20 0 1 0 100 1000 200";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.pid, s.comm.as_str(), s.ppid, s.own, s.reaped), (4242, "ssh -O (x)", 4000, 19, 8));
        assert!(parse_stat("4242 (ssh) S 1").is_none());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn namespace_links() {
        assert_eq!(parse_ns_link("net:[4026532281]"), Some(4026532281));
        assert_eq!(parse_ns_link("pid:[4026532281]"), None);
        assert_eq!(parse_ns_link("net:[x]"), None);
    }

    fn st(pid: u32, own: u64, reaped: u64) -> Stat {
        Stat { pid, comm: "x".into(), ppid: 1, own, reaped }
    }

    #[test]
    fn group_time_follows_children_that_come_and_go() {
        let before = GroupTicks::of(&[st(10, 100, 0), st(11, 5, 0), st(12, 40, 0)]);
        // 11 ended and 10 waited for it (its 5 + 3 more moved to 10's reaped); 13 is new;
        // 12 used 2 more.
        let after = GroupTicks::of(&[st(10, 104, 8), st(12, 42, 0), st(13, 6, 0)]);
        assert_eq!(after.since(&before), 12 + 2 + 6);
        assert_eq!(after.len(), 3);
        let names = [Stat { comm: "sh".into(), ..st(10, 0, 0) }, Stat { comm: "sshd".into(), ..st(12, 0, 0) }, Stat { comm: "sshd".into(), ..st(13, 0, 0) }];
        assert_eq!(after.since_by_name(&before, &names), [("sh".to_string(), 12), ("sshd".to_string(), 8)]);
        assert_eq!(before.since(&before), 0);
    }

    #[test]
    fn this_process_and_its_children_are_found() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let found = children(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.iter().any(|s| s.pid == child.id() && s.comm == "sleep"), "{found:?}");
        assert_eq!(with_children(me)[0].pid, me);
        assert!(ticks_per_s() >= 100);
        assert!(netns_members("no-such-namespace-here").is_empty());
    }
}
