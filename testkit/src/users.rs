//! Other users of this machine for tests: a real account made with `useradd` (a name of the
//! test's own, no home, no login shell; or, for ssh logins, a home of its own and `sh`), and
//! the prefix that runs a command as it (`setpriv`). The account (and its home) is removed on
//! drop, also when the test fails. Needs root, as CI runs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};

static NEXT: AtomicU32 = AtomicU32::new(1);

/// Whether the tests run as root, the only user who can make users and act as them.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// An account made for one test.
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Its home folder, when it has one (removed with the account).
    pub home: Option<PathBuf>,
}

impl TestUser {
    /// A new account named after `tag`, this test process and a counter.
    pub fn create(tag: &str) -> Result<TestUser> {
        Self::make(tag, false)
    }

    /// An account that can log in through ssh with a key: a home folder of its own (mode
    /// 0700, under /home), `sh` as its shell, and no password (`*`: not locked, which sshd
    /// without PAM would refuse, and no password either).
    pub fn with_home(tag: &str) -> Result<TestUser> {
        Self::make(tag, true)
    }

    /// An account with a home (as `with_home`) that is a member of the `docker` group: its
    /// `docker` CLI talks to the default socket (0660 root:docker). Run commands as it with
    /// [`TestUser::command_with_groups`]: the plain `prefix` clears supplementary groups.
    pub fn docker_member(tag: &str) -> Result<TestUser> {
        let user = Self::make(tag, true)?;
        run(&["usermod", "--append", "--groups", "docker", &user.name])?;
        Ok(user)
    }

    fn make(tag: &str, home: bool) -> Result<TestUser> {
        if !is_root() {
            bail!("making test users needs root (useradd); CI runs as root");
        }
        let tag: String = tag.chars().filter(char::is_ascii_lowercase).take(8).collect();
        let name = format!("jm{tag}{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        if home {
            run(&["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", "--password", "*", &name])?;
        } else {
            run(&["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", &name])?;
        }
        // From here on the account exists: drop removes it whatever comes next.
        let mut user = TestUser { name, uid: 0, gid: 0, home: None };
        if home {
            let dir = run(&["getent", "passwd", &user.name])?.trim().split(':').nth(5).map(PathBuf::from).context("a home in passwd")?;
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
            user.home = Some(dir);
        }
        let id = |flag: &str| -> Result<u32> { run(&["id", flag, &user.name])?.trim().parse().context("id prints a number") };
        (user.uid, user.gid) = (id("-u")?, id("-g")?);
        Ok(user)
    }

    /// A command that runs `program` as this user, from `/` (a test's folder may be closed
    /// to others).
    pub fn command(&self, program: &str) -> Command {
        let p = self.prefix();
        let mut c = Command::new(&p[0]);
        c.args(&p[1..]).arg(program).current_dir("/");
        c
    }

    /// A command that runs `program` as this user with its supplementary groups (`docker`,
    /// for a `docker_member`), from `/`, in a fresh login's environment.
    pub fn command_with_groups(&self, program: &str) -> Command {
        let p = self.prefix_with_groups();
        let mut c = Command::new(&p[0]);
        c.args(&p[1..]).arg(program).current_dir("/");
        c
    }

    /// The words that run a command as this user with the groups /etc/group gives it
    /// (`setpriv --init-groups`), in the environment of a fresh login for it (HOME, USER,
    /// PATH...).
    pub fn prefix_with_groups(&self) -> Vec<String> {
        vec![
            "setpriv".into(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--init-groups".into(),
            "--reset-env".into(),
            "--".into(),
        ]
    }

    /// The words that run a command as this user (its uid, its group, no others, the
    /// environment of a fresh login for it).
    pub fn prefix(&self) -> Vec<String> {
        vec![
            "setpriv".into(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".into(),
            "--reset-env".into(),
            "--".into(),
        ]
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        // Tests hold their user longer than the processes they run as it (declared first);
        // --force removes the account even if one of them is still exiting.
        let mut args = vec!["userdel", "--force"];
        if self.home.is_some() {
            args.push("--remove");
        }
        args.push(&self.name);
        if let Err(e) = run(&args) {
            eprintln!("could not remove test user {}: {e:#}", self.name);
        }
        // userdel leaves a home it could not remove whole; so that nothing stays behind.
        if let Some(home) = self.home.as_ref().filter(|h| h.exists()) {
            let _ = std::fs::remove_dir_all(home);
        }
    }
}

fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().with_context(|| format!("run {args:?}"))?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
