//! The real HotSpot debuggee: `Main` loads N generated tiny classes (for AllClasses) and
//! keeps a 4 MiB byte[] in the static field `Big.data` (for ArrayReference.GetValues),
//! compiled with javac into a tempdir and run with the JDWP agent on an explicit free port
//! (with address=127.0.0.1:0 HotSpot would pick a new port after every detach). The classes
//! are compiled once and any number of JVMs can run them, also inside a test host's network
//! namespace on a port of that namespace, and with a small heap (the `remote` section). A
//! "stepper" thread loops in `Work.spin` while `Work.go` is set (by the IDE workload) and
//! sleeps otherwise.
//!
//! The agent prints "Listening for transport dt_socket at address: PORT" each time it
//! listens, i.e. once at start and once after every debugger leaves; counting those lines
//! tells when the JVM is free for the next run without a probe connection.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::procs::{free_port, Proc};

/// Size of `Big.data`, filled with `(byte) i` (see `jdwp_ops::pattern_byte`).
pub const BIG_ARRAY_LEN: u32 = 4 << 20;
pub const BIG_CLASS_SIG: &str = "LBig;";
pub const BIG_FIELD: &str = "data";
const LISTEN_LINE: &str = "Listening for transport dt_socket at address:";
const READY_LINE: &str = "bench debuggee ready";

const MAIN_JAVA: &str = r#"public class Main {
    static final int POOL = 30;
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        for (int i = 0; i < n; i++) {
            Class.forName("C" + i);
        }
        byte[] d = new byte[Big.LEN];
        for (int i = 0; i < d.length; i++) {
            d[i] = (byte) i;
        }
        Big.data = d;
        Walk walk = new Walk("walker");
        Thread stepper = new Thread(() -> {
            long s = 1;
            while (true) {
                if (Work.go) {
                    s = Work.spin(s);
                } else if (Walk.go) {
                    s = walk.run(s);
                } else {
                    try { Thread.sleep(20); } catch (InterruptedException e) { return; }
                }
            }
        }, "stepper");
        stepper.setDaemon(true);
        stepper.start();
        // A server's idle pool: the threads an IDE's threads view lists at every stop.
        Object idle = new Object();
        for (int i = 1; i <= POOL; i++) {
            Thread t = new Thread(() -> {
                synchronized (idle) {
                    try { idle.wait(); } catch (InterruptedException e) { return; }
                }
            }, "pool-1-thread-" + i);
            t.setDaemon(true);
            t.start();
        }
        System.out.println("bench debuggee ready " + n);
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }
}
"#;

/// Where the IDE workload steps: one line after another for as long as `go` is set.
const WORK_JAVA: &str = "class Work {
    static volatile boolean go;
    static long spin(long seed) {
        long a = seed, b = 0, c = 0;
        while (go) {
            a = a * 31 + 7;
            b = a ^ (a >>> 3);
            c = b + c;
            seed = c & 0xffff;
        }
        return seed;
    }
}
";

/// Where the `far` section's IDE steps: an object with fields (a string, arrays) whose method
/// has locals of each kind, in a class with statics, as the variables view of an IDE shows.
const WALK_JAVA: &str = "class Walk {
    static volatile boolean go;
    static String label = \"walk\";
    static int[] counts = new int[64];
    static long rounds;
    final String name;
    final long[] history = new long[256];
    final Object[] items = { \"first\", \"second\", null };
    int at;
    Walk(String name) { this.name = name; }
    long run(long seed) {
        long a = seed;
        String note = name;
        int[] local = counts;
        while (go) {
            a = a * 31 + 7; // the breakpoint's line
            history[at & 255] = a;
            at++;
            local[at & 63]++;
            note = label;
            rounds++;
        }
        return a + note.length();
    }
}
";

/// The line of `Walk.run` where the `far` section's IDE stops first (1-based, in the
/// generated source file).
pub fn walk_breakpoint_line() -> usize {
    classes_java(0).lines().position(|l| l.contains("// the breakpoint's line")).map_or(0, |i| i + 1)
}

/// The line of `Main` where the stepper thread sleeps while nothing is set (1-based, run
/// every 20 ms): where jdb stops first to set `Walk.go` (jdb evaluates only in a thread's
/// frame).
pub fn idle_line() -> usize {
    MAIN_JAVA.lines().position(|l| l.contains("Thread.sleep(20)")).map_or(0, |i| i + 1)
}

/// `Big`, `Work`, `Walk` and `n` empty classes `C0..C{n-1}` in one source file.
fn classes_java(n: usize) -> String {
    let mut s = format!("class Big {{ static final int LEN = {BIG_ARRAY_LEN}; static byte[] data; }}\n{WORK_JAVA}{WALK_JAVA}");
    for i in 0..n {
        s.push_str(&format!("class C{i} {{}}\n"));
    }
    s
}

/// The debuggee's classes, compiled once; any number of JVMs can run them.
pub struct Debuggee {
    dir: tempfile::TempDir,
    classes: usize,
    /// The class run and its arguments (`Main` and the class count, unless `program`).
    main: String,
    args: Vec<String>,
}

impl Debuggee {
    /// The folder its classes are run from (on every JVM's command line: a run's marker).
    pub fn out_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("out")
    }

    /// Compiles `Main`, `Big`, `Work` and `classes` generated classes with javac.
    pub fn compile(classes: usize) -> Result<Arc<Debuggee>> {
        let dir = tempfile::tempdir().context("tempdir")?;
        let src = dir.path();
        std::fs::write(src.join("Main.java"), MAIN_JAVA)?;
        std::fs::write(src.join("Gen.java"), classes_java(classes))?;
        let out = Command::new("javac")
            .arg("-g")
            .arg("-d")
            .arg(src.join("out"))
            .arg(src.join("Main.java"))
            .arg(src.join("Gen.java"))
            .stdin(Stdio::null())
            .output()
            .context("run javac (is a JDK installed?)")?;
        if !out.status.success() {
            bail!("javac failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        Ok(Arc::new(Debuggee { dir, classes, main: "Main".into(), args: vec![classes.to_string()] }))
    }

    /// Another program: `class` from `source` (it prints the ready line once it is ready),
    /// run with `args`; with its locals' tables, as a debugger's variables view needs.
    pub fn program(class: &str, source: &str, args: &[String]) -> Result<Arc<Debuggee>> {
        let dir = tempfile::tempdir().context("tempdir")?;
        let file = dir.path().join(format!("{class}.java"));
        std::fs::write(&file, source)?;
        let out = Command::new("javac").arg("-g").arg("-d").arg(dir.path().join("out")).arg(&file).stdin(Stdio::null()).output().context("run javac (is a JDK installed?)")?;
        if !out.status.success() {
            bail!("javac {class}.java failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        Ok(Arc::new(Debuggee { dir, classes: 0, main: class.into(), args: args.to_vec() }))
    }
}

/// How a JVM is run.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Runs java under this command (e.g. `ip netns exec NS`: on a test host); the pid
    /// stays java's as long as the prefix execs it.
    pub prefix: Vec<String>,
    /// The agent's port on 127.0.0.1 (of the JVM's network namespace); 0: a free port here.
    pub port: u16,
    /// A small heap and the client compiler only: many idle JVMs on one machine.
    pub small: bool,
}

pub struct Jvm {
    proc: Proc,
    pub port: u16,
    listens: Arc<AtomicUsize>,
    ready: Arc<AtomicBool>,
    /// Debugger sessions that ended (each makes the agent listen once more).
    sessions: usize,
    _prog: Arc<Debuggee>,
}

impl Jvm {
    /// Compiles and starts the debuggee; returns when it has loaded its classes and listens.
    pub fn start(classes: usize) -> Result<Jvm> {
        let mut jvm = Jvm::launch(&Debuggee::compile(classes)?, &Launch::default())?;
        jvm.wait_ready(Duration::from_secs(120))?;
        Ok(jvm)
    }

    /// Starts a JVM of `prog`; returns when it has loaded its classes and listens.
    pub fn launch(prog: &Arc<Debuggee>, how: &Launch) -> Result<Jvm> {
        let port = if how.port == 0 { free_port()? } else { how.port };
        let mut cmd = match how.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = crate::procs::command(first);
                c.args(rest).arg("java");
                c
            }
            None => crate::procs::command("java"),
        };
        if how.small {
            cmd.args(["-XX:+UseSerialGC", "-Xmx32m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]);
        } else {
            cmd.args(["-XX:+UseSerialGC", "-Xmx256m", "-Xss512k"]);
        }
        cmd.arg(format!("-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{port}"))
            .arg("-cp")
            .arg(prog.dir.path().join("out"))
            .arg(&prog.main)
            .args(&prog.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut proc = Proc::spawn("java", &mut cmd)?;
        let stdout = proc.take_stdout().context("java stdout")?;
        let listens = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let (l, r) = (listens.clone(), ready.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains(LISTEN_LINE) {
                    l.fetch_add(1, Ordering::SeqCst);
                } else if line.contains(READY_LINE) {
                    r.store(true, Ordering::SeqCst);
                }
            }
        });
        Ok(Jvm { proc, port, listens, ready, sessions: 0, _prog: prog.clone() })
    }

    /// Waits until the JVM has loaded its classes and its agent listens (JVMs started one
    /// after another with [`Jvm::launch`] come up side by side).
    pub fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while !(self.ready.load(Ordering::SeqCst) && self.listens.load(Ordering::SeqCst) >= 1) {
            if let Some(st) = self.proc.exited() {
                bail!("java exited at start: {st} (port {} taken?)", self.port);
            }
            if Instant::now() > deadline {
                bail!("the debuggee did not get ready within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// False once the JVM has exited (something else may kill it on a shared machine).
    pub fn alive(&mut self) -> bool {
        self.proc.exited().is_none()
    }

    /// Waits until the agent listens again after every session so far has ended.
    pub fn wait_free(&mut self, limit: Duration) -> Result<()> {
        let want = self.sessions + 1;
        let deadline = Instant::now() + limit;
        while self.listens.load(Ordering::SeqCst) < want {
            if let Some(st) = self.proc.exited() {
                bail!("the JVM exited: {st}");
            }
            if Instant::now() > deadline {
                // Re-align with what the agent said, so one lost count fails one run only.
                let have = self.listens.load(Ordering::SeqCst);
                self.sessions = have.saturating_sub(1);
                bail!("the JVM did not listen again within {limit:?} ({have} of {want} listens)");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Records that one debugger connection to the agent has ended (or will end).
    pub fn session_ended(&mut self) {
        self.sessions += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_sources() {
        let s = classes_java(3);
        assert!(s.contains("class C0 {}") && s.contains("class C2 {}") && !s.contains("class C3 "));
        assert!(s.contains(&format!("LEN = {BIG_ARRAY_LEN}")));
        assert!(MAIN_JAVA.contains(READY_LINE));
        assert!(MAIN_JAVA.lines().nth(idle_line() - 1).is_some_and(|l| l.contains("Thread.sleep(20)")));
        let line = walk_breakpoint_line();
        assert!(s.lines().nth(line - 1).is_some_and(|l| l.trim_start().starts_with("a = a * 31 + 7;")), "line {line}");
    }
}
