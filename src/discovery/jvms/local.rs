//! The same records `scan.sh` prints, read from this machine's /proc directly: the local scan
//! costs no process, and goes through the same parsing as a remote host's output.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::holder::Holder;
use super::place;
use super::view::Request;
use super::wire::write_record;

/// Processes looked at in one round at most.
const MAX_PROCS: usize = 100_000;

/// A round's first step: the scanner's uid, its TCP table, and the network namespace of every
/// process whose command line mentions a JDWP agent or whose environment holds
/// `JAVA_TOOL_OPTIONS` / `JDK_JAVA_OPTIONS`.
pub fn scan(nonce: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let uid = rustix::process::geteuid().as_raw();
    write_record(&mut out, "id", "-", uid.to_string().as_bytes(), nonce);
    write_record(&mut out, "tcp", "-", &tcp_tables(Path::new("/proc/net")), nonce);
    let mut ns = link_line("/proc/self/ns/net") + &link_line("/proc/self/ns/pid") + &net_seen_line("self");
    if let Ok(dir) = fs::read_dir("/proc") {
        for entry in dir.take(MAX_PROCS).flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else { continue };
            let base = entry.path();
            let cmdline = fs::read(base.join("cmdline")).unwrap_or_default();
            let candidate = contains(&cmdline, b"jdwp") || {
                let env = fs::read(base.join("environ")).unwrap_or_default();
                contains(&env, b"JAVA_TOOL_OPTIONS") || contains(&env, b"JDK_JAVA_OPTIONS")
            };
            if candidate {
                let net = link_line(&format!("/proc/{pid}/ns/net"));
                // Another user's process, to a user: its namespace links cannot be read.
                ns.push_str(&if net.is_empty() { net_seen_line(pid) } else { net });
                ns.push_str(&link_line(&format!("/proc/{pid}/ns/pid")));
            }
        }
    }
    write_record(&mut out, "ns", "-", ns.as_bytes(), nonce);
    out
}

/// The records one request asks for.
pub fn request(r: &Request, nonce: &str) -> Vec<u8> {
    let mut out = Vec::new();
    if r.command == "jdwpmux_proc" {
        host_places(&mut out, nonce);
    }
    for pid in &r.pids {
        let base = format!("/proc/{pid}");
        if !Path::new(&base).is_dir() {
            continue;
        }
        let arg = pid.to_string();
        match r.command {
            "jdwpmux_proc" => {
                let uid = fs::read_to_string(format!("{base}/status"))
                    .ok()
                    .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Uid:").and_then(|v| v.split_whitespace().next().map(str::to_string))))
                    .unwrap_or_default();
                let user = user_name(&uid).unwrap_or_default();
                write_record(&mut out, "proc", &arg, format!("{uid} {user}").as_bytes(), nonce);
                write_record(&mut out, "cmdline", &arg, &fs::read(format!("{base}/cmdline")).unwrap_or_default(), nonce);
                let env = fs::read(format!("{base}/environ")).unwrap_or_default();
                let kept: Vec<&[u8]> = env
                    .split(|b| *b == 0)
                    .filter(|e| ENV_KEPT.iter().any(|k| e.starts_with(k)))
                    .collect();
                write_record(&mut out, "environ", &arg, &kept.join(&b'\n'), nonce);
                let cgroup = fs::read_to_string(format!("{base}/cgroup")).unwrap_or_default();
                write_record(&mut out, "cgroup", &arg, cgroup.as_bytes(), nonce);
                ancestors(&mut out, *pid, &arg, nonce);
                if let Some(id) = place::docker_id(&cgroup) {
                    let config = fs::read(format!("/var/lib/docker/containers/{id}/config.v2.json")).unwrap_or_default();
                    write_record(&mut out, "docker", &arg, &config, nonce);
                }
            }
            "jdwpmux_fd" => {
                let mut text = String::new();
                if let Ok(dir) = fs::read_dir(format!("{base}/fd")) {
                    for fd in dir.flatten() {
                        if let Ok(target) = fs::read_link(fd.path()) {
                            text.push_str(&format!("{} -> {}\n", fd.file_name().to_string_lossy(), target.to_string_lossy()));
                        }
                    }
                }
                write_record(&mut out, "fd", &arg, text.as_bytes(), nonce);
            }
            "jdwpmux_threads" => {
                let mut text = String::new();
                if let Ok(dir) = fs::read_dir(format!("{base}/task")) {
                    for t in dir.flatten() {
                        text.push_str(&fs::read_to_string(t.path().join("comm")).unwrap_or_default());
                    }
                }
                write_record(&mut out, "threads", &arg, text.as_bytes(), nonce);
            }
            "jdwpmux_net" => {
                write_record(&mut out, "nettcp", &arg, &tcp_tables(Path::new(&format!("{base}/net"))), nonce);
                write_record(&mut out, "fib", &arg, &fs::read(format!("{base}/net/fib_trie")).unwrap_or_default(), nonce);
            }
            _ => {}
        }
    }
    out
}

/// Who holds a JVM's agent, as this machine's /proc tells: None when it is this process
/// (jdwpmux's own connection); else, for a debugger on this machine, its process name, pid
/// and user (the process where its fds can be read: every process for root, the daemon
/// user's own otherwise), and its address.
pub fn describe_holder(h: &Holder) -> Option<String> {
    let Some((uid, inode)) = h.socket else {
        return Some(format!("a debugger at {}", h.addr));
    };
    let link = format!("socket:[{inode}]");
    let holds = |pid: &str| {
        fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| d.flatten().any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == link.as_str())))
    };
    if holds("self") {
        return None;
    }
    let user = user_name(&uid.to_string()).unwrap_or_else(|| format!("uid {uid}"));
    let pids = fs::read_dir("/proc").into_iter().flatten().flatten().take(MAX_PROCS).filter_map(|e| e.file_name().into_string().ok());
    let process = pids.filter(|p| p.bytes().all(|b| b.is_ascii_digit())).find(|p| holds(p));
    Some(match process {
        Some(pid) => {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            // Any user names their processes: shown as text, never as terminal controls.
            let comm = super::cmdline::printable(comm.trim_end_matches('\n'));
            format!("{comm} (pid {pid}, user {user}) at {}", h.addr)
        }
        None => format!("a process of user {user} at {}", h.addr),
    })
}

/// Environment entries a `proc` request reads: the JDWP options, and what names a container.
const ENV_KEPT: &[&[u8]] = &[b"JAVA_TOOL_OPTIONS=", b"JDK_JAVA_OPTIONS=", b"container=", b"HOSTNAME="];

/// The `pods` and `netns` records: what names a pod (`/var/log/pods`, `/var/log/containers`)
/// and a network namespace (`/run/netns`) on this host.
fn host_places(out: &mut Vec<u8>, nonce: &str) {
    let names = |dir: &str| -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir).into_iter().flatten().flatten().take(place::MAX_HOST_ENTRIES).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        n.sort();
        n
    };
    let mut pods = String::new();
    for (folder, list) in [("pods", names("/var/log/pods")), ("containers", names("/var/log/containers"))] {
        for n in list {
            pods.push_str(&format!("{folder}/{n}\n"));
        }
    }
    write_record(out, "pods", "-", pods.as_bytes(), nonce);
    let mut netns = String::new();
    for n in names("/run/netns") {
        // A bind mount of the namespace: its inode is the namespace's.
        if let Ok(m) = fs::metadata(format!("/run/netns/{n}")) {
            netns.push_str(&format!("{} /run/netns/{n}\n", m.ino()));
        }
    }
    write_record(out, "netns", "-", netns.as_bytes(), nonce);
}

/// A `parent` record for each of `pid`'s ancestors up to `place::MAX_ANCESTORS`, its parent's
/// first; init (pid 1) and what is above it are no container's.
fn ancestors(out: &mut Vec<u8>, pid: u32, arg: &str, nonce: &str) {
    let mut at = pid;
    for _ in 0..place::MAX_ANCESTORS {
        let ppid = fs::read_to_string(format!("/proc/{at}/status"))
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("PPid:").and_then(|v| v.trim().parse::<u32>().ok())));
        let Some(ppid) = ppid.filter(|p| *p > 1) else { break };
        write_record(out, "parent", arg, &fs::read(format!("/proc/{ppid}/cmdline")).unwrap_or_default(), nonce);
        at = ppid;
    }
}

fn tcp_tables(dir: &Path) -> Vec<u8> {
    let mut t = fs::read(dir.join("tcp")).unwrap_or_default();
    t.extend(fs::read(dir.join("tcp6")).unwrap_or_default());
    t
}

/// `/proc/WHO/ns/nettcp -> nettcp:[INODE]`: the inode of WHO's `net/tcp`, which each network
/// namespace has one of and anyone may stat (see `view::ProcView::net_seen`).
fn net_seen_line(who: &str) -> String {
    match fs::metadata(format!("/proc/{who}/net/tcp")) {
        Ok(m) => format!("/proc/{who}/ns/nettcp -> nettcp:[{}]\n", m.ino()),
        Err(_) => String::new(),
    }
}

/// `PATH -> TARGET` for a symbolic link, as `ls -l` ends its line.
fn link_line(path: &str) -> String {
    match fs::read_link(path) {
        Ok(t) => format!("{path} -> {}\n", t.to_string_lossy()),
        Err(_) => String::new(),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    super::wire::find(hay, needle).is_some()
}

/// The name /etc/passwd gives a uid.
fn user_name(uid: &str) -> Option<String> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        (f.nth(1)? == uid).then(|| name.to_string())
    })
}
