//! Drives the real `jdb`: attach to HOST:PORT, type lines, wait for text with deadlines.
//! jdb prompts look like `> ` and `main[1] `; a breakpoint prints
//! `Breakpoint hit: "thread=main", Main.tick(), line=5 bci=0`.

use std::process::ExitStatus;

use anyhow::Result;
use tokio::process::Command;

use super::console::Console;

/// A running `jdb`: a `Console` that quits with `quit`.
pub struct Jdb(Console);

impl Jdb {
    /// Spawns `jdb -attach HOST:PORT` (stdout and stderr merged into one buffer). Does not
    /// wait: follow with e.g. `expect("Initializing jdb", ..)` or `expect("VM Started", ..)`.
    pub async fn attach(host_port: &str) -> Result<Jdb> {
        Self::attach_as(&[], host_port).await
    }

    /// `attach`, run under `prefix` (`setpriv ... --`: as another user) from `/`, which every
    /// user may enter (a test's own folder may be closed to others).
    pub async fn attach_as(prefix: &[String], host_port: &str) -> Result<Jdb> {
        let args = ["jdb", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-attach", host_port];
        let mut words = prefix.iter().map(String::as_str).chain(args);
        let mut cmd = Command::new(words.next().unwrap_or("jdb"));
        cmd.args(words).current_dir("/");
        Ok(Jdb(Console::spawn(cmd, "jdb")?))
    }

    /// Sends `quit` and waits for jdb to exit (killing it if it does not).
    pub async fn quit(&mut self) -> Result<ExitStatus> {
        self.0.quit_with("quit").await
    }
}

impl std::ops::Deref for Jdb {
    type Target = Console;
    fn deref(&self) -> &Console {
        &self.0
    }
}

impl std::ops::DerefMut for Jdb {
    fn deref_mut(&mut self) -> &mut Console {
        &mut self.0
    }
}
