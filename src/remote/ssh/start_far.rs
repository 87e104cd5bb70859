//! Reaching a far side through a host's ssh master: `jdwpmux far --detach` run through the
//! master (no new authentication), its ready line read, and a forward of the master from a
//! local socket to the far side's. The command lines are pure and tested; the runs are thin.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::remote::protocol::ready::{self, Ready};
use crate::remote::protocol::hello::{agree, PROTOCOL, PROTOCOL_MIN};
use crate::remote::ssh::path::{expanded_path, forward_socket, SshPathError};
use crate::remote::{Destination, SshOptions};

/// How long starting the far side (or finding it running) may take.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an `ssh -O forward` may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the far side on a host cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FarUnusable {
    #[error("{0} was not found on the host")]
    NotFound(String),
    #[error("{0}")]
    Failed(String),
    /// Its ready line names protocols this jdwpmux does not speak; `running`: the pid of a far
    /// side that was running already (a new jdwpmux installed there finds it and says so).
    #[error("jdwpmux {version} there speaks far-side protocol {}, this jdwpmux ({ours}) speaks {}", crate::remote::protocol::ready::said(.protocols), crate::remote::protocol::hello::protocols(PROTOCOL_MIN, PROTOCOL), ours = env!("CARGO_PKG_VERSION"))]
    Version { version: String, protocols: std::ops::RangeInclusive<u16>, running: Option<u32> },
    /// It refused this near side's hello (another protocol): its own words.
    #[error("{0}")]
    Refused(String),
    /// None there could be used (`first`), and this binary was not copied there (--far-copy).
    #[error("{first}; this jdwpmux was not copied there: {why}")]
    NotCopied { first: String, why: String },
}

/// `ssh [-F CFG] -S CONTROL -o ControlMaster=no -o BatchMode=yes -T -- DEST 'PATH' far --detach`:
/// a command through the running master. The remote side hands it to a shell, so the path is
/// quoted for one.
pub fn start_command(ssh: &SshOptions, control: &Path, dest: &Destination, far_path: &str, beside: bool) -> Result<Vec<OsString>, SshPathError> {
    master_command(ssh, control, dest, &start_script(far_path, beside, REMOTE_LIMIT))
}

/// How long the start may run on the host before everything it started there is killed:
/// less than `START_TIMEOUT`, so the host has cleaned up by the time this side gives up.
pub const REMOTE_LIMIT: Duration = Duration::from_secs(18);

/// The host's shell command that starts the far side: `sh -c SCRIPT`, so a login shell that
/// is not a POSIX one (csh, fish) runs it too. sshd runs the session as the leader of a
/// session and process group of its own (`setsid`), and the script and what it starts are
/// in that group (read from /proc, the group's number is the script's own pid when the login
/// shell handed it over with `exec`): a watchdog in the background kills the whole group
/// once the start has run `limit` (a far-side command that never answers, and whatever it
/// started, ends there), and ends itself, killing nothing, as soon as the start has exited
/// (what a start that answered left running is its own: a process it was starting in a
/// session of its own may not have left the group yet). The far side
/// proper is not in that group (it makes a session of its own), so a start that answered
/// leaves only it running. Without this, killing the ssh client here left `sh -c ... far
/// --detach` and its child on the host for every try. And as soon as this side gives the
/// start up (`serve` stopped, or the start printed too much), the group is killed too: the
/// session's stdin, which this side holds open while it waits (`start`), reaches its end
/// when the ssh client here is gone, and a reader of it kills the group if the start still
/// runs then. `beside`: in the folder of this protocol beside a far side of another (`far
/// --beside`).
pub fn start_script(far_path: &str, beside: bool, limit: Duration) -> String {
    let script = format!(
        "pg=$(cut -d' ' -f5 /proc/$$/stat 2>/dev/null); [ -n \"$pg\" ] || pg=$$; \
         (i=0; while [ $i -lt {n} ] && kill -0 $$ 2>/dev/null; do sleep 1; i=$((i+1)); done; [ $i -lt {n} ] || kill -KILL -$pg) </dev/null >/dev/null 2>&1 & \
         exec 3<&0; (cat <&3 >/dev/null 2>&1; kill -0 $$ 2>/dev/null && kill -KILL -$pg) >/dev/null 2>&1 & \
         exec {path} far --detach{beside} 3<&- </dev/null",
        n = limit.as_secs(),
        path = shell_quote(far_path),
        beside = if beside { " --beside" } else { "" }
    );
    format!("sh -c {}", shell_quote(&script))
}

/// `ssh [-F CFG] -S CONTROL -o ControlMaster=no -o BatchMode=yes -T -- DEST REMOTE`: the
/// command line `remote` (for the host's shell) run through the running master.
pub fn master_command(ssh: &SshOptions, control: &Path, dest: &Destination, remote: &str) -> Result<Vec<OsString>, SshPathError> {
    let mut a = base(ssh);
    a.extend(["-S".into(), expanded_path(control)?, "-o".into(), "ControlMaster=no".into(), "-o".into(), "BatchMode=yes".into(), "-T".into()]);
    a.extend(["--".into(), dest.dest.clone().into(), remote.into()]);
    Ok(a)
}

/// `ssh [-F CFG] -S CONTROL -o BatchMode=yes -O forward|cancel -L LOCAL:REMOTE -- DEST`: the
/// master forwards the local Unix socket to the far side's.
pub fn forward_command(ssh: &SshOptions, control: &Path, dest: &Destination, local: &Path, remote: &Path, cancel: bool) -> Result<Vec<OsString>, SshPathError> {
    let mut a = base(ssh);
    a.extend(["-S".into(), expanded_path(control)?, "-o".into(), "BatchMode=yes".into(), "-O".into(), if cancel { "cancel" } else { "forward" }.into()]);
    let mut spec = forward_socket(local)?;
    spec.push(":");
    spec.push(forward_socket(remote)?);
    a.extend(["-L".into(), spec, "--".into(), dest.dest.clone().into()]);
    Ok(a)
}

fn base(ssh: &SshOptions) -> Vec<OsString> {
    let mut a = Vec::new();
    if let Some(f) = &ssh.config {
        a.push("-F".into());
        a.push(f.into());
    }
    a
}

/// `s` as one word for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the start printed and how it exited, judged: the ready line, or why not.
pub fn judge_start(status: Option<i32>, stdout: &str, stderr: &str, far_path: &str) -> Result<Ready, FarUnusable> {
    // 127: the shell found no such command (126: found, not runnable).
    if status == Some(127) {
        return Err(FarUnusable::NotFound(far_path.to_string()));
    }
    let line = stdout.lines().find(|l| l.starts_with("jdwpmux far: "));
    match line.map(ready::parse) {
        Some(Ok(r)) if agree(*r.protocols.start(), *r.protocols.end()).is_none() => {
            Err(FarUnusable::Version { running: r.pid.filter(|_| r.already), version: r.version, protocols: r.protocols })
        }
        Some(Ok(r)) if status == Some(0) => Ok(r),
        _ => {
            let said = stderr.lines().chain(stdout.lines()).map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("nothing");
            let said: String = said.chars().take(300).collect();
            let how = status.map_or_else(|| "was ended by a signal".to_string(), |c| format!("exited with {c}"));
            Err(FarUnusable::Failed(format!("{far_path} far --detach {how}: {said}")))
        }
    }
}

/// The most the far side's start may print on each of stdout and stderr: its answer is one
/// line. A command that prints more is not a far side, and is ended there.
pub const MAX_START_OUTPUT: usize = 64 * 1024;

/// Starts the far side on the host (or finds it running) through the master.
pub async fn start(ssh: &SshOptions, control: &Path, dest: &Destination, far_path: &str, beside: bool) -> Result<Ready, FarUnusable> {
    let args = start_command(ssh, control, dest, far_path, beside).map_err(|e| FarUnusable::Failed(e.to_string()))?;
    let mut cmd = Command::new(&ssh.program);
    // Held open while the start runs: its end tells the host's script to end what it
    // started (`start_script`).
    cmd.args(args).stdin(Stdio::piped()).kill_on_drop(true);
    let began = tokio::time::Instant::now();
    let out = match tokio::time::timeout(START_TIMEOUT, bounded_output(cmd, MAX_START_OUTPUT)).await {
        Err(_) => return Err(FarUnusable::Failed(format!("{far_path} far --detach did not answer within {START_TIMEOUT:?}"))),
        Ok(Err(e)) => return Err(FarUnusable::Failed(format!("cannot run {}: {e}", ssh.program.display()))),
        Ok(Ok(o)) => o,
    };
    if out.cut {
        let first: String = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").chars().take(120).collect();
        return Err(FarUnusable::Failed(format!(
            "{far_path} far --detach printed more than {} KiB, which no far side does (it began: {first:?}); it was ended",
            MAX_START_OUTPUT / 1024
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The host's watchdog ended it (ssh then says 255 and nothing): said as what it was.
    if began.elapsed() >= REMOTE_LIMIT && !stdout.lines().any(|l| l.starts_with("jdwpmux far: ")) {
        return Err(FarUnusable::Failed(format!("{far_path} far --detach did not answer within {REMOTE_LIMIT:?}; it was ended on the host, with what it started")));
    }
    judge_start(out.status, &stdout, &String::from_utf8_lossy(&out.stderr), far_path)
}

/// How long the other stream of a command killed for printing too much is still read.
const KILLED_GRACE: Duration = Duration::from_secs(1);

/// What a command printed, each stream kept to a bound.
pub(crate) struct Bounded {
    /// Its exit code (None: ended by a signal, or by us when it printed too much).
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// It printed more than the bound on either stream, and was killed.
    pub cut: bool,
}

/// Runs `cmd`, reading its stdout and stderr up to `max` bytes each; a command that prints
/// more is killed, so what it prints never costs more than `2 * max` here.
pub(crate) async fn bounded_output(mut cmd: Command, max: usize) -> std::io::Result<Bounded> {
    use tokio::io::AsyncReadExt;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other("no pipes to the command"));
    };
    // One byte past the bound says that it went past it.
    let read = |pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>| async move {
        let mut kept = Vec::new();
        let _ = pipe.take(max as u64 + 1).read_to_end(&mut kept).await;
        kept
    };
    let (out_f, err_f) = (read(Box::new(out)), read(Box::new(err)));
    tokio::pin!(out_f, err_f);
    let (mut stdout, mut stderr) = (None::<Vec<u8>>, None::<Vec<u8>>);
    // The first stream past its bound ends the command. The other one closes with it, unless
    // a process it started holds it open: that one is given a moment, then left.
    let mut killed: Option<tokio::time::Instant> = None;
    while stdout.is_none() || stderr.is_none() {
        let grace = killed.map(|t| t + KILLED_GRACE);
        tokio::select! {
            v = &mut out_f, if stdout.is_none() => stdout = Some(v),
            v = &mut err_f, if stderr.is_none() => stderr = Some(v),
            _ = async { if let Some(g) = grace { tokio::time::sleep_until(g).await } }, if grace.is_some() => break,
        }
        if killed.is_none() && stdout.iter().chain(stderr.iter()).any(|v| v.len() > max) {
            let _ = child.start_kill();
            killed = Some(tokio::time::Instant::now());
        }
    }
    let (mut stdout, mut stderr) = (stdout.unwrap_or_default(), stderr.unwrap_or_default());
    let cut = stdout.len() > max || stderr.len() > max;
    stdout.truncate(max);
    stderr.truncate(max);
    let status = child.wait().await?.code().filter(|_| !cut);
    Ok(Bounded { status, stdout, stderr, cut })
}

/// Has the master forward `local` to the far side's socket `remote` (a stale `local` is
/// removed first: the master would not bind it).
pub async fn forward(ssh: &SshOptions, control: &Path, dest: &Destination, local: &Path, remote: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(local);
    let args = forward_command(ssh, control, dest, local, remote, false).map_err(|e| e.to_string())?;
    let out = Command::new(&ssh.program).args(args).stdin(Stdio::null()).kill_on_drop(true).output();
    match tokio::time::timeout(CONTROL_TIMEOUT, out).await {
        Err(_) => Err(format!("ssh -O forward did not answer within {CONTROL_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(o)) if o.status.success() => {
            crate::remote::ssh::master::owner_only(local);
            Ok(())
        }
        Ok(Ok(o)) => Err(String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("failed").to_string()),
    }
}

/// The host's shell command that ends a far side this side started and found unusable (it
/// does not answer as a far side: garbage, a flood, a frame too long), so nothing of it stays
/// on the host once this side gives it up: the process named by its ready line, only while
/// that pid still runs as a far side (`... far --OPTIONS`: its start, or the detached far
/// side), TERM, then KILL a second later. A pid that names anything else is left alone.
pub fn end_script(pid: u32) -> String {
    format!("sh -c {}", shell_quote(&end_script_body(pid)))
}

/// `end_script`'s script itself.
fn end_script_body(pid: u32) -> String {
    format!(
        "p={pid}; c=\" $(tr '\\0' ' ' </proc/$p/cmdline 2>/dev/null)\"; \
         case \"$c\" in *' far --'*) kill -TERM $p 2>/dev/null; i=0; \
         while [ $i -lt 10 ] && kill -0 $p 2>/dev/null; do sleep 0.1; i=$((i+1)); done; kill -KILL $p 2>/dev/null;; esac; true"
    )
}

/// Ends a far side found unusable (`end_script`) through the host's master; what could not
/// be done is returned to be logged.
pub async fn end_unusable(ssh: &SshOptions, control: &Path, dest: &Destination, pid: u32) -> Result<(), String> {
    let args = master_command(ssh, control, dest, &end_script(pid)).map_err(|e| e.to_string())?;
    let out = Command::new(&ssh.program).args(args).stdin(Stdio::null()).kill_on_drop(true).output();
    match tokio::time::timeout(CONTROL_TIMEOUT, out).await {
        Err(_) => Err(format!("ending it did not answer within {CONTROL_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(o)) if o.status.success() => Ok(()),
        Ok(Ok(o)) => Err(String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("failed").to_string()),
    }
}

/// The local socket a host's far side is forwarded to.
pub fn local_socket(dir: &Path, prefix: &str) -> PathBuf {
    dir.join(format!("{prefix}.far.sock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]).stdin(Stdio::null()).kill_on_drop(true);
        c
    }

    #[tokio::test]
    async fn a_start_that_floods_is_cut_at_the_bound_and_ended() {
        // 200 MB on stdout, or on stderr while stdout says nothing: read to the bound only.
        for script in ["yes garbage | head -c 200000000", "yes garbage | head -c 200000000 >&2; sleep 60"] {
            let t = std::time::Instant::now();
            let out = bounded_output(sh(script), MAX_START_OUTPUT).await.unwrap();
            assert!(out.cut && out.status.is_none(), "{script}");
            assert!(out.stdout.len() <= MAX_START_OUTPUT && out.stderr.len() <= MAX_START_OUTPUT, "{script}");
            assert!(t.elapsed() < Duration::from_secs(10), "{script}: ended, not waited out ({:?})", t.elapsed());
        }
        let out = bounded_output(sh("echo 'jdwpmux far: ready'; echo said >&2; exit 3"), MAX_START_OUTPUT).await.unwrap();
        assert_eq!((out.cut, out.status, out.stdout.as_slice(), out.stderr.as_slice()), (false, Some(3), &b"jdwpmux far: ready\n"[..], &b"said\n"[..]));
    }

    /// The end script kills a process whose command line is a far side's start, and leaves
    /// any other alone (a ready line may name any pid).
    #[tokio::test]
    async fn the_end_script_kills_only_a_far_sides_start() {
        // A process whose argv reads `... far --detach`, as the start script runs the far side.
        let mut looks_far = Command::new("python3");
        looks_far.args(["-c", "import time; time.sleep(300)", "far", "--detach"]).kill_on_drop(true);
        let mut other = Command::new("sleep");
        other.arg("300").kill_on_drop(true);
        let mut a = looks_far.spawn().unwrap();
        let mut b = other.spawn().unwrap();
        let (pa, pb) = (a.id().unwrap(), b.id().unwrap());
        // `python3` may be a chain of execs (a pyenv shim: env, bash, pyenv, then python),
        // and while one is under way the process's command line reads empty: wait until
        // python itself runs, as a ready line's pid names a far side that already runs.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !std::fs::read_link(format!("/proc/{pa}/exe")).is_ok_and(|e| e.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python"))) {
            assert!(std::time::Instant::now() < deadline, "python never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for pid in [pa, pb] {
            let st = sh(&end_script_body(pid)).status().await.unwrap();
            assert!(st.success());
        }
        let ended = tokio::time::timeout(Duration::from_secs(10), a.wait()).await.expect("the far side's start was ended").unwrap();
        assert!(!ended.success());
        assert!(b.try_wait().unwrap().is_none(), "another process was killed");
        b.kill().await.unwrap();
    }

    fn words(a: &[OsString]) -> Vec<String> {
        a.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn command_lines() {
        let ssh = SshOptions { config: Some("/cfg".into()), ..SshOptions::default() };
        let dest: Destination = "box".parse().unwrap();
        let start = start_command(&ssh, Path::new("/d/h0.ctl"), &dest, "/opt/jdwp mux/jdwpmux", false).unwrap();
        assert_eq!(
            words(&start),
            ["-F", "/cfg", "-S", "/d/h0.ctl", "-o", "ControlMaster=no", "-o", "BatchMode=yes", "-T", "--", "box", &start_script("/opt/jdwp mux/jdwpmux", false, REMOTE_LIMIT)]
        );
        let fwd = forward_command(&ssh, Path::new("/d/h0.ctl"), &dest, Path::new("/d/h0.far.sock"), Path::new("/run/user/1/jdwpmux-far/far.sock"), false).unwrap();
        assert_eq!(words(&fwd), ["-F", "/cfg", "-S", "/d/h0.ctl", "-o", "BatchMode=yes", "-O", "forward", "-L", "/d/h0.far.sock:/run/user/1/jdwpmux-far/far.sock", "--", "box"]);
        assert!(forward_command(&ssh, Path::new("/d/h0.ctl"), &dest, Path::new("/d/h0.far.sock"), Path::new("/x/%h"), true).is_ok_and(|a| words(&a).contains(&"cancel".to_string())));
    }

    /// The start as a host's sshd runs it (a session of its own, `setsid`): a command that
    /// never answers is killed with what it started once the limit has run; one that answers
    /// leaves its watchdog behind for a second at most, and its detached child untouched.
    #[tokio::test]
    async fn the_start_script_leaves_nothing_of_a_start_that_never_answers() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mark = format!("jdwpmux-start-test-{}", std::process::id());
        let never = dir.path().join("never");
        std::fs::write(&never, format!("#!/bin/sh\nsh -c 'sleep 300; : {mark}-never'\n")).unwrap();
        let answers = dir.path().join("answers");
        // Its child makes a session of its own, as the far side does: it must survive.
        std::fs::write(&answers, format!("#!/bin/sh\nsetsid sh -c 'sleep 30; : {mark}-kept' </dev/null >/dev/null 2>&1 &\necho ready\n")).unwrap();
        for p in [&never, &answers] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Its stdin held open, as `start` holds the ssh client's.
        let run_for = |path: &Path, limit: Duration| {
            let mut c = Command::new("setsid");
            c.args(["-w", "sh", "-c", &start_script(&path.display().to_string(), false, limit)]).stdin(Stdio::piped()).kill_on_drop(true);
            c
        };
        let run = |path: &Path| run_for(path, Duration::from_secs(2));
        // The processes whose command line holds `m` (the test's folder, or a mark).
        let with = |m: &str| -> Vec<i32> {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| {
                    let e = e.ok()?;
                    let pid = e.file_name().to_str()?.parse().ok()?;
                    let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                    String::from_utf8_lossy(&cmd).contains(m).then_some(pid)
                })
                .collect()
        };
        let folder = dir.path().display().to_string();
        let gone = |marks: Vec<String>| async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let left: Vec<i32> = marks.iter().flat_map(|m| with(m)).collect();
                if left.is_empty() {
                    return;
                }
                assert!(std::time::Instant::now() < deadline, "left running: {left:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let t = std::time::Instant::now();
        let out = bounded_output(run(&never), MAX_START_OUTPUT).await.unwrap();
        assert!(out.status.is_none() && t.elapsed() < Duration::from_secs(10), "killed at the limit: {:?} after {:?}", out.status, t.elapsed());
        gone(vec![folder.clone(), format!("{mark}-never")]).await;
        // Given up here long before its limit (the ssh client gone: the end of its stdin):
        // killed there at once, with what it started.
        let mut given_up = run_for(&never, Duration::from_secs(60)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while with(&format!("{mark}-never")).is_empty() {
            assert!(std::time::Instant::now() < deadline, "the start never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let t = std::time::Instant::now();
        drop(given_up.stdin.take());
        gone(vec![folder.clone(), format!("{mark}-never")]).await;
        assert!(t.elapsed() < Duration::from_secs(10), "ended {:?} after its stdin did", t.elapsed());
        let _ = given_up.wait().await;
        let out = bounded_output(run(&answers), MAX_START_OUTPUT).await.unwrap();
        assert_eq!((out.status, out.stdout.as_slice()), (Some(0), &b"ready\n"[..]));
        gone(vec![folder]).await;
        // Its `sh -c` (and, for a moment, the child it forks before that becomes `sleep`).
        let kept = with(&format!("{mark}-kept"));
        assert!(!kept.is_empty(), "the detached child runs on");
        for pid in kept {
            // SAFETY: kill on the test's own descendant, found by its mark, and on the group
            // it leads (its session's: the `sleep` with it).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("jdwpmux"), "jdwpmux");
        assert_eq!(shell_quote("/usr/bin/jdwpmux"), "/usr/bin/jdwpmux");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's;rm"), r"'it'\''s;rm'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn what_a_start_says() {
        let line = crate::remote::protocol::ready::ready_line(Path::new("/run/far/far.sock"), Some(9), false);
        assert_eq!(judge_start(Some(0), &format!("{line}\n"), "", "jdwpmux").map(|r| r.socket), Ok(PathBuf::from("/run/far/far.sock")));
        assert_eq!(judge_start(Some(127), "", "sh: 1: jdwpmux: not found", "jdwpmux"), Err(FarUnusable::NotFound("jdwpmux".into())));
        let other = "jdwpmux far: listening on /run/far/far.sock (pid 9, protocol 7, jdwpmux 9.0.0)";
        assert_eq!(judge_start(Some(0), other, "", "jdwpmux"), Err(FarUnusable::Version { version: "9.0.0".into(), protocols: 7..=7, running: None }));
        let running = "jdwpmux far: already running on /run/far/far.sock (pid 9, protocol 1, jdwpmux 0.0.9)";
        assert_eq!(judge_start(Some(0), running, "", "jdwpmux"), Err(FarUnusable::Version { version: "0.0.9".into(), protocols: 1..=1, running: Some(9) }));
        let several = format!("jdwpmux far: listening on /run/far/far.sock (pid 9, protocol 1..{}, jdwpmux 9.0.0)", PROTOCOL + 1);
        assert!(judge_start(Some(0), &several, "", "jdwpmux").is_ok(), "a far side that speaks ours among others is used");
        let older = "jdwpmux far: listening on /run/far/far.sock (pid 9, protocol 2, jdwpmux 0.1.0)";
        assert!(judge_start(Some(0), older, "", "jdwpmux").is_ok(), "a far side of protocol 2 is used (without gathered answers)");
        let e = judge_start(Some(2), "", "error: unrecognized subcommand 'far'\n", "jdwpmux").unwrap_err();
        assert_eq!(e.to_string(), "jdwpmux far --detach exited with 2: error: unrecognized subcommand 'far'");
        assert!(judge_start(None, "", "", "jdwpmux").unwrap_err().to_string().contains("ended by a signal"));
    }
}
