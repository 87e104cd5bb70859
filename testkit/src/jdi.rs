//! IDE-like debuggers made of JDI (`jdi/Debugger.java`, compiled here with javac) and the
//! debuggee they share (`jdi/Shared.java`). Each debugger is a `Console`: the test types
//! commands and waits for the lines it prints (see the header of Debugger.java).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::process::Command;

use super::console::Console;
use super::java::{javac, JavaApp};

pub const DEBUGGER_JAVA: &str = include_str!("jdi/Debugger.java");
pub const SHARED_JAVA: &str = include_str!("jdi/Shared.java");
/// How every JDI program here attaches (`Jdi.attach`): compiled beside each one.
pub const JDI_JAVA: &str = include_str!("jdi/Jdi.java");

/// Compiles JDI programs (`sources`: file name, text) with `Jdi.java` into `dir`.
pub async fn javac_jdi(dir: &Path, sources: &[(&str, &str)]) -> Result<()> {
    let mut all = sources.to_vec();
    all.push(("Jdi.java", JDI_JAVA));
    javac(dir, &all).await
}

/// [`javac_jdi`], from code without a runtime (the benchmark's JDI programs).
pub fn javac_jdi_blocking(dir: &Path, sources: &[(&str, &str)]) -> Result<()> {
    super::java::blocking(javac_jdi(dir, sources))
}

/// JVMs and debuggers on a busy 2-core machine can be slow to start.
pub const SLOW: Duration = Duration::from_secs(60);

/// The compiled JDI debugger, reusable for several debuggers.
pub struct JdiProgram {
    dir: tempfile::TempDir,
}

impl JdiProgram {
    pub async fn compile() -> Result<JdiProgram> {
        let dir = tempfile::tempdir()?;
        javac_jdi(dir.path(), &[("Debugger.java", DEBUGGER_JAVA)]).await?;
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

pub const LEDGER_JAVA: &str = include_str!("jdi/Ledger.java");
pub const STEPPER_JAVA: &str = include_str!("jdi/Stepper.java");

/// A JDI implementation for `Stepper`: the JDK's own (IntelliJ, NetBeans, VS Code's Java
/// debugger and jdb use it) or Eclipse's (org.eclipse.jdi, which Eclipse's debugger uses).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Jdi {
    Jdk,
    Eclipse,
}

/// Eclipse's JDI as Debian ships it (libeclipse-jdt-debug-java), and the OSGi jar its
/// messages need.
pub const ECLIPSE_JDI_JARS: [&str; 2] = ["/usr/share/java/eclipse-jdt-debug.jar", "/usr/share/java/eclipse-osgi.jar"];

/// The IDE-shaped stepping session of `jdi/Stepper.java`, compiled once, run as often as
/// wanted against `Ledger` (`jdi/Ledger.java`).
pub struct Stepper {
    dir: tempfile::TempDir,
}

impl Stepper {
    pub async fn compile() -> Result<Stepper> {
        let dir = tempfile::tempdir()?;
        javac_jdi(dir.path(), &[("Stepper.java", STEPPER_JAVA)]).await?;
        Ok(Stepper { dir })
    }

    /// Lets every user read the compiled program (its folder is the test's, 0700), for a
    /// session run as another user.
    pub fn open_to_all(&self) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755))?;
        Ok(())
    }

    /// Runs one session (under `prefix`: e.g. inside a test host) against 127.0.0.1:`port`
    /// with the breakpoint's and steps' suspend policy `policy` ("all" or "thread"); what it
    /// printed, once it said "done" and exited.
    pub async fn run(&self, prefix: &[String], port: u16, policy: &str, steps: u32) -> Result<String> {
        self.run_on(Jdi::Jdk, prefix, port, policy, steps).await
    }

    /// As `run`, on the JDI implementation `jdi`.
    pub async fn run_on(&self, jdi: Jdi, prefix: &[String], port: u16, policy: &str, steps: u32) -> Result<String> {
        let mut class_path = self.dir.path().display().to_string();
        let mut java = vec!["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];
        if jdi == Jdi::Eclipse {
            for jar in ECLIPSE_JDI_JARS {
                anyhow::ensure!(Path::new(jar).is_file(), "{jar} is missing: install libeclipse-jdt-debug-java (./test.sh does)");
                class_path = format!("{class_path}:{jar}");
            }
            java.push("-Djdi.manager=org.eclipse.jdi.internal.VirtualMachineManagerImpl");
        }
        java.push("-cp");
        let mut words = prefix.iter().map(String::as_str).chain(java);
        let mut cmd = Command::new(words.next().unwrap_or("java"));
        cmd.args(words).arg(class_path).args(["Stepper", "127.0.0.1", &port.to_string(), policy, &steps.to_string()]);
        let run = cmd.stdin(std::process::Stdio::null()).kill_on_drop(true).output();
        let out = tokio::time::timeout(Duration::from_secs(180), run).await.context("the stepping session did not end within 180 s")??;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || !text.ends_with("done\n") {
            anyhow::bail!("the stepping session failed ({}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        Ok(text)
    }
}
