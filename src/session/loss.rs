//! How a lost VM connection is said. A JVM that exits (normally, or killed) closes its
//! agent's socket and then refuses every reconnect: that is one INFO line, "Main (pid 17442)
//! exited", not a WARN for the loss and another for each refusal. Whether the process is
//! gone is known only a moment after the socket closed (the JVM closes it while it shuts
//! down), so the loss is held unsaid until its process is seen gone, the VM is reached
//! again, or a short wait runs out; then it is said as before. Pure: the actor asks, with
//! the time and whether the process still runs, and logs what it is told.

use std::time::Duration;

use tokio::time::Instant;

/// How long a lost connection of a live local process waits to be said, in case the
/// process is on its way out.
pub const EXIT_WAIT: Duration = Duration::from_secs(2);

/// A lost connection not said yet, of a local process whose pid is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// Why the connection ended (its reason, as the loss line gives it).
    pub why: String,
    pub pid: u32,
    /// The process's app name, when known.
    pub app: Option<String>,
    pub at: Instant,
}

/// What the actor says of a held loss, given what just happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// Nothing yet: keep holding it.
    Wait,
    /// The process is gone: one INFO line; the refusals that follow are not warnings.
    Exited(String),
    /// The VM's connection was lost and the process lives on (or reconnected): the loss's
    /// WARN line as before.
    Lost,
}

/// What happened since the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// A reconnect failed.
    Refused,
    /// The VM was reached again.
    Reconnected,
    /// The session is ending (its discovery let the VM go).
    Ending,
}

impl Loss {
    /// The line for this loss, once its process is `alive` or not at `now` after `since`.
    pub fn judge(&self, since: Since, alive: bool, now: Instant) -> Say {
        match (alive, since) {
            (false, _) => Say::Exited(self.exited_line()),
            (true, Since::Refused) if now.duration_since(self.at) < EXIT_WAIT => Say::Wait,
            (true, _) => Say::Lost,
        }
    }

    fn exited_line(&self) -> String {
        match &self.app {
            Some(app) => format!("{app} (pid {}) exited", self.pid),
            None => format!("process {} exited", self.pid),
        }
    }
}

/// Whether process `pid` runs: it has a /proc entry and is not a zombie.
pub fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis (the command may hold any).
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_some_and(|s| s != "Z" && s != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(app: Option<&str>) -> Loss {
        Loss { why: "the VM closed the connection".into(), pid: 17442, app: app.map(String::from), at: Instant::now() }
    }

    #[test]
    fn the_table() {
        let l = loss(Some("Main"));
        let soon = l.at + Duration::from_millis(50);
        let late = l.at + EXIT_WAIT;
        let exited = Say::Exited("Main (pid 17442) exited".into());
        let rows = [
            // (since, alive, when, said)
            (Since::Refused, false, soon, exited.clone()),
            (Since::Reconnected, false, soon, exited.clone()),
            (Since::Ending, false, late, exited.clone()),
            (Since::Refused, true, soon, Say::Wait),
            (Since::Refused, true, late, Say::Lost),
            (Since::Reconnected, true, soon, Say::Lost),
            (Since::Ending, true, soon, Say::Lost),
        ];
        for (since, alive, when, said) in rows {
            assert_eq!(l.judge(since, alive, when), said, "{since:?} alive={alive}");
        }
    }

    #[test]
    fn a_process_without_a_name_is_said_by_its_pid() {
        let l = loss(None);
        assert_eq!(l.judge(Since::Refused, false, l.at), Say::Exited("process 17442 exited".into()));
    }

    #[test]
    fn this_process_runs_and_a_pid_that_cannot_be_does_not() {
        assert!(process_runs(std::process::id()));
        assert!(!process_runs(u32::MAX));
    }
}
