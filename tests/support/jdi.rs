//! IDE-like debuggers made of JDI (`jdi/Debugger.java`, compiled here with javac) and the
//! debuggee they share (`jdi/Shared.java`). Each debugger is a `Console`: the test types
//! commands and waits for the lines it prints (see the header of Debugger.java).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use tokio::process::Command;

use super::console::Console;
use super::java::{javac, JavaApp};

pub const DEBUGGER_JAVA: &str = include_str!("jdi/Debugger.java");
pub const SHARED_JAVA: &str = include_str!("jdi/Shared.java");

/// JVMs and debuggers on a busy 2-core machine can be slow to start.
pub const SLOW: Duration = Duration::from_secs(60);

/// The compiled JDI debugger, reusable for several debuggers.
pub struct JdiProgram {
    dir: tempfile::TempDir,
}

impl JdiProgram {
    pub async fn compile() -> Result<JdiProgram> {
        let dir = tempfile::tempdir()?;
        javac(dir.path(), &[("Debugger.java", DEBUGGER_JAVA)]).await?;
        Ok(JdiProgram { dir })
    }

    /// Starts a debugger (on the system JDK) attaching to 127.0.0.1:`port`; `name` is for
    /// messages. Returns once it printed "attached".
    pub async fn attach(&self, name: &str, port: u16) -> Result<Console> {
        let mut cmd = Command::new("java");
        cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(self.dir.path())
            .args(["Debugger", "127.0.0.1", &port.to_string()]);
        let mut c = Console::spawn(cmd, &format!("JDI debugger {name}"))?;
        c.expect("attached", SLOW).await?;
        Ok(c)
    }
}

/// Starts `Shared` under `java` with the JDWP agent listening; it exits when `stop_file` in
/// its folder appears (see `stop`).
pub async fn start_shared(java: &Path) -> Result<JavaApp> {
    let app = JavaApp::launch(java, &[("Shared.java", SHARED_JAVA)], "Shared", &["{dir}/stop"], false).await?;
    app.wait_for_output("Shared started", SLOW).await?;
    Ok(app)
}

/// Makes `Shared` exit by itself (its next round sees the file).
pub fn stop(app: &JavaApp) -> Result<()> {
    std::fs::write(app.dir().join("stop"), b"")?;
    Ok(())
}

/// Types `line` and waits for the answer it prints.
pub async fn command(dbg: &mut Console, line: &str, answer: &str) -> Result<()> {
    dbg.send(line).await?;
    dbg.expect(answer, SLOW).await?;
    Ok(())
}
