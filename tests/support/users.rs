//! Real local users made for a test with useradd, removed (userdel) when dropped, also when
//! the test fails; and commands run as them with setpriv.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether the tests run as root, the only user who can make users and act as them.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A user that exists while this value lives.
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl TestUser {
    /// Makes a user with its own group, no home and no login shell. The name is unique to
    /// this test process (`tag` tells a test's users apart); a leftover of an earlier run
    /// with the same process id is removed first.
    pub fn create(tag: &str) -> TestUser {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("jmx{tag}{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        assert!(name.len() <= 32, "{name}: too long for a user name");
        let add = || Command::new("useradd").args(["--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", &name]).output();
        let mut out = add().expect("run useradd");
        if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("exists") {
            let _ = Command::new("userdel").arg(&name).output();
            out = add().expect("run useradd");
        }
        assert!(out.status.success(), "useradd {name}: {}", String::from_utf8_lossy(&out.stderr));
        let id = |flag: &str| -> u32 {
            let out = Command::new("id").args([flag, &name]).output().expect("run id");
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("id {flag} {name}: {out:?}"))
        };
        TestUser { uid: id("-u"), gid: id("-g"), name }
    }

    /// setpriv's arguments that run what follows as this user, with its group only.
    pub fn setpriv(&self) -> Vec<String> {
        vec![
            "setpriv".into(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".into(),
            "--".into(),
        ]
    }

    /// A command that runs `program` as this user, from `/` (a test's folder may be closed
    /// to others).
    pub fn command(&self, program: &str) -> Command {
        let p = self.setpriv();
        let mut c = Command::new(&p[0]);
        c.args(&p[1..]).arg(program).current_dir("/");
        c
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        // The test has stopped every process it ran as the user (userdel refuses otherwise).
        let out = Command::new("userdel").arg(&self.name).output();
        if !matches!(&out, Ok(o) if o.status.success()) {
            eprintln!("userdel {}: {out:?}", self.name);
        }
    }
}
