//! Who is on the other end of a loopback VM connection: the pid and main class of a local
//! JVM, read from /proc. HotSpot does not say its pid over JDWP (only DDM VMs do), but
//! people select VMs by pid and app name, so the proxy looks it up for local VMs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::discovery::jvms::cmdline;
use crate::discovery::jvms::net::hex_addr;

/// Upper bound on processes examined, so a huge process table cannot stall a lookup.
const MAX_PROCS: usize = 100_000;
/// Least time between two scans of /proc: a thousand VMs found at once share scans
/// instead of each walking every process's file descriptors.
const RESCAN_GAP: Duration = Duration::from_millis(200);

/// Socket inode -> pid, from the last scan of /proc.
static SOCKETS: Mutex<Option<(Instant, HashMap<u64, u32>)>> = Mutex::new(None);

/// The pid owning the TCP socket whose local end is `vm` and remote end is `proxy`.
/// Lookups are serialised (callers run on blocking threads) and share one scan.
pub fn pid_of(vm: SocketAddr, proxy: SocketAddr) -> Option<u32> {
    if !vm.ip().is_loopback() {
        return None;
    }
    let inode = socket_inode(Path::new("/proc/net/tcp"), vm, proxy)
        .or_else(|| socket_inode(Path::new("/proc/net/tcp6"), vm, proxy))?;
    let mut cache = SOCKETS.lock().ok()?;
    if let Some((at, map)) = cache.as_ref() {
        if let Some(pid) = map.get(&inode) {
            return Some(*pid);
        }
        // The socket is newer than the scan: rescan, but at most once per RESCAN_GAP, so a
        // burst of new VMs waits for one shared scan instead of each making its own.
        let age = at.elapsed();
        if age < RESCAN_GAP {
            std::thread::sleep(RESCAN_GAP - age);
        }
    }
    let map = scan_sockets();
    let pid = map.get(&inode).copied();
    *cache = Some((Instant::now(), map));
    pid
}

type Job = Box<dyn FnOnce() + Send>;

/// One worker thread does every lookup in turn: a thousand VMs found at once queue up
/// behind shared scans instead of starting a thousand blocking threads.
static WORKER: OnceLock<Mutex<std::sync::mpsc::Sender<Job>>> = OnceLock::new();

/// Finds the pid and app name of a local VM on the lookup thread, then calls `done`.
pub fn look_up(vm: SocketAddr, proxy: SocketAddr, done: impl FnOnce(Option<u32>, Option<String>) + Send + 'static) {
    let job: Job = Box::new(move || {
        let pid = pid_of(vm, proxy);
        done(pid, pid.and_then(java_app_name));
    });
    let worker = WORKER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("jdwpmux-pid-lookup".into()).spawn(move || {
            while let Ok(job) = rx.recv() {
                job();
            }
        });
        if spawned.is_err() {
            tracing::warn!("cannot start the pid lookup thread; local pids stay unknown");
        }
        Mutex::new(tx)
    });
    if let Ok(tx) = worker.lock() {
        let _ = tx.send(job);
    }
}

/// Every socket inode held by a process we can see.
fn scan_sockets() -> HashMap<u64, u32> {
    let mut map = HashMap::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return map };
    for entry in procs.take(MAX_PROCS).flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else { continue };
            let link = link.to_string_lossy();
            if let Some(inode) = link.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                if let Ok(inode) = inode.parse() {
                    map.insert(inode, pid);
                }
            }
        }
    }
    map
}

/// Finds the inode of the socket `local` <-> `remote` in a /proc/net/tcp table.
fn socket_inode(table: &Path, local: SocketAddr, remote: SocketAddr) -> Option<u64> {
    let text = std::fs::read_to_string(table).ok()?;
    let (want_local, want_remote) = (hex_addr(local), hex_addr(remote));
    text.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, inode) = (f.get(1)?, f.get(2)?, f.get(9)?);
        (l.eq_ignore_ascii_case(&want_local) && r.eq_ignore_ascii_case(&want_remote)).then(|| inode.parse().ok())?
    })
}

/// A readable app name from a JVM's command line: the main class, the jar, or the module's
/// main class. None for anything that is not a `java` launcher.
pub fn java_app_name(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    main_of(&args)
}

fn main_of(args: &[String]) -> Option<String> {
    cmdline::parse(args).main.map(|m| m.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn main_class_from_command_lines() {
        assert_eq!(main_of(&args("java -agentlib:jdwp=x -cp . Main")).as_deref(), Some("Main"));
        assert_eq!(main_of(&args("java -Xmx1g -jar /opt/app/server.jar --port 1")).as_deref(), Some("server.jar"));
        assert_eq!(main_of(&args("java --module-path m -m app/com.example.Main")).as_deref(), Some("com.example.Main"));
        assert_eq!(main_of(&args("java -version")), None);
    }

    #[test]
    fn finds_our_own_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let vm = server.local_addr().unwrap();
        let proxy = client.local_addr().unwrap();
        assert_eq!(pid_of(vm, proxy), Some(std::process::id()));
    }
}
