//! What a killed test process left behind: each test process's own folder, swept by the next one,
//! and the mounts under it undone before it is removed.

// What the containers module imports (std, anyhow, the JVM launcher) and its other parts.
use super::*;

/// `/tmp/jmpod-PID`: short on purpose (conmon and runc put sockets under the runroot, and a
/// Unix socket's path holds at most 107 bytes), and named by pid so that the next test
/// process can tell a dead one's leftovers from a live one's (`sweep_stale`).
pub(super) fn process_dir() -> Result<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static MADE: Mutex<()> = Mutex::new(());
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    let _one = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    sweep_stale();
    let dir = std::env::temp_dir().join(format!("jmpod-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    // Readable by rootless test users: the image's root folder lies inside.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    // Static values are never dropped: the folder goes when the process exits normally
    // (the test harness ends with exit(3), which runs atexit handlers, also after failed
    // tests). A killed process's folder is swept by the next test process.
    extern "C" fn at_exit() {
        if let Some(d) = DIR.get() {
            remove_process_dir(d);
        }
    }
    // SAFETY: registers a plain function with no arguments; it runs once, at exit.
    unsafe { libc::atexit(at_exit) };
    Ok(DIR.get_or_init(|| dir))
}

/// Removes a process folder: first every engine's containers (a killed process's may still
/// run), then the folder, unless something is still mounted inside it.
pub(super) fn remove_process_dir(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let conf = e.path().join("containers.conf");
            // A test host's engine: its containers died with the host's pid namespace, and
            // the pids its state holds are that namespace's, never to be signalled here.
            if e.path().join(ON_TEST_HOST).exists() {
                remove_unmounted(&e.path());
            } else if conf.exists() {
                // Its drop removes its containers, then its folder.
                drop(Engine { dir: e.path(), user: None, owns_dir: true, on_host: None });
            }
        }
    }
    remove_unmounted(dir);
}

/// What test processes that are gone (killed before their drops and atexit ran) left: their
/// folders with any containers still running, and their rootless users with the pause
/// process and containers those still run.
pub(super) fn sweep_stale() {
    let dead = |pid: u32| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.strip_prefix("jmpod-").and_then(|p| p.parse::<u32>().ok()).is_some_and(dead) {
                remove_process_dir(&e.path());
            }
        }
    }
    // Test users are `jm<letters><pid>x<n>` (users.rs); only those whose home holds a
    // configuration of ours are rootless engines' users.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        let (Some(name), Some(uid), Some(home)) = (f.first(), f.get(2).and_then(|u| u.parse::<u32>().ok()), f.get(5)) else { continue };
        let Some(rest) = name.strip_prefix("jm") else { continue };
        let digits: String = rest.trim_start_matches(|c: char| c.is_ascii_lowercase()).chars().take_while(char::is_ascii_digit).collect();
        if digits.parse::<u32>().is_ok_and(dead) && Path::new(home).join("podman/containers.conf").exists() {
            kill_uid(uid);
            let _ = run_tool(&["userdel", "--force", "--remove", name]);
        }
    }
}

/// Mount points at or under `dir`, deepest first (from /proc/self/mountinfo; octal escapes
/// of spaces and the like undone).
pub(super) fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mount)
        .filter(|p| p.starts_with(dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    found
}

pub(super) fn unescape_mount(s: &str) -> PathBuf {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// Deletes `dir` only once nothing is mounted under it: Podman mounts a tmpfs per container
/// (userdata/shm) and undoes it on `rm`; one a crash left is detached first. Deleting through
/// a mount would delete whatever is mounted there, so a mount that will not go leaves the
/// folder in place, with a line saying so.
pub(super) fn remove_unmounted(dir: &Path) {
    for m in mounts_under(dir) {
        let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(m.as_os_str())).unwrap_or_default();
        // SAFETY: a NUL-terminated path; MNT_DETACH touches no memory of ours.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    let left = mounts_under(dir);
    if !left.is_empty() {
        eprintln!("not removing {}: still mounted: {left:?}", dir.display());
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(dir) {
        eprintln!("could not remove {}: {e}", dir.display());
    }
}

// ---------------------------------------------------------------------------------------
// The JDK image.
