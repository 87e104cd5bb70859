//! Helpers for the capture tests: settings with a capture, the real binary (`decode`, and a
//! `serve` child that can be sent SIGINT), capture lines as packets, and tshark.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use jdwpmux::settings::{CaptureSettings, DdmMode, Settings};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");
/// Generous: tshark and the binary start slowly on a loaded 2-core machine.
pub const SLOW: Duration = Duration::from_secs(90);

/// In-process proxy settings on ephemeral ports, capturing to `path` (format from the name).
pub fn capture_settings(vms: &[SocketAddr], path: &Path) -> Settings {
    Settings {
        capture: Some(CaptureSettings {
            path: path.to_path_buf(),
            format: None,
            max_bytes: None,
            snaplen: jdwpmux::capture::DEFAULT_SNAPLEN,
        }),
        ..crate::harness::Proxy::settings(vms, DdmMode::Auto)
    }
}

/// Fails (never skips) when tshark is missing: ./test.sh installs it.
pub fn require_tshark() {
    let ok = Command::new("tshark")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "tshark is needed to check captures with Wireshark's JDWP dissector: \
         install it (apt-get install tshark; ./test.sh does)"
    );
}

/// Runs a short-lived command with a deadline; kills it if it overruns.
/// Returns (exit code, stdout, stderr).
pub async fn run(cmd: &mut tokio::process::Command) -> (i32, String, String) {
    cmd.stdin(Stdio::null()).kill_on_drop(true);
    let out = match tokio::time::timeout(SLOW, cmd.output()).await {
        Ok(r) => r.unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}")),
        Err(_) => panic!("{cmd:?} did not finish within {SLOW:?}"),
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// `jdwpmux decode FILE [--json]` through the real binary; asserts it succeeds quietly.
pub async fn decode(path: &Path, json: bool) -> String {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("decode").arg(path);
    if json {
        cmd.arg("--json");
    }
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "jdwpmux decode {} failed: {err}", path.display());
    assert!(err.is_empty(), "decode wrote to stderr: {err}");
    assert!(!out.contains("# warning"), "decode warned:\n{out}");
    out
}

/// Every line as JSON (each must parse).
pub fn json_lines(text: &str) -> Vec<Value> {
    let lines: Vec<Value> = text
        .lines()
        .enumerate()
        .map(|(n, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {l}", n + 1)))
        .collect();
    assert!(!lines.is_empty(), "no lines");
    lines
}

/// One packet line of a capture (the file's own JSON lines or `decode --json`).
#[derive(Debug, Clone)]
pub struct Pkt {
    pub conn: u64,
    /// "debugger" or "vm".
    pub leg: String,
    pub to_server: bool,
    pub id: u32,
    pub orig_id: Option<u32>,
    pub reply: bool,
    /// (command set, command) of a command.
    pub set_cmd: Option<(u8, u8)>,
    /// The command's name; for a reply the name of what it answers, if known.
    pub command: Option<String>,
    pub latency_us: Option<u64>,
    pub truncated: bool,
    pub chunks: Vec<Value>,
}

impl Pkt {
    pub fn is_cmd(&self, leg: &str, to_server: bool) -> bool {
        !self.reply && self.leg == leg && self.to_server == to_server
    }

    pub fn is_reply(&self, leg: &str, to_server: bool) -> bool {
        self.reply && self.leg == leg && self.to_server == to_server
    }

    pub fn chunk_types(&self) -> Vec<String> {
        self.chunks.iter().filter_map(|c| c["type"].as_str().map(str::to_string)).collect()
    }
}

fn num<T: TryFrom<u64>>(v: &Value, key: &str) -> Option<T> {
    v.get(key).and_then(Value::as_u64).and_then(|n| T::try_from(n).ok())
}

/// The packet lines among `lines`, in order.
pub fn packets(lines: &[Value]) -> Vec<Pkt> {
    let mut out = Vec::new();
    for v in lines.iter().filter(|v| v["kind"] == "packet") {
        let reply = v["reply"].as_bool().unwrap_or_else(|| panic!("packet without reply: {v}"));
        let set_cmd = match (reply, num::<u8>(v, "cmd_set"), num::<u8>(v, "cmd")) {
            (false, Some(s), Some(c)) => Some((s, c)),
            (false, ..) => panic!("command without cmd_set/cmd: {v}"),
            _ => None,
        };
        out.push(Pkt {
            conn: num(&v["conn"], "id").unwrap_or_else(|| panic!("no conn.id: {v}")),
            leg: v["conn"]["leg"].as_str().unwrap_or_else(|| panic!("no conn.leg: {v}")).to_string(),
            to_server: match v["dir"].as_str() {
                Some("to_server") => true,
                Some("to_client") => false,
                _ => panic!("bad dir: {v}"),
            },
            id: num(v, "id").unwrap_or_else(|| panic!("no id: {v}")),
            orig_id: num(v, "orig_id"),
            reply,
            set_cmd,
            command: v["command"].as_str().map(str::to_string),
            latency_us: num(v, "latency_us"),
            truncated: v["truncated"].as_bool().unwrap_or(false),
            chunks: v["chunks"].as_array().cloned().unwrap_or_default(),
        });
    }
    out
}

/// Every connection opened in the capture is closed in it too (the file was flushed at
/// shutdown, not cut off).
pub fn assert_opens_are_closed(lines: &[Value]) {
    let ids = |kind: &str| -> HashSet<u64> {
        lines.iter().filter(|v| v["kind"] == kind).filter_map(|v| v["conn"]["id"].as_u64()).collect()
    };
    let (opened, closed) = (ids("open"), ids("close"));
    assert!(!opened.is_empty(), "no open records");
    assert_eq!(opened, closed, "connections opened vs closed in the capture");
}

/// (leg, to_server, id, reply, command) for comparing two readings of a capture.
pub type Key = (String, bool, u32, bool, Option<(u8, u8)>);

pub fn key(p: &Pkt) -> Key {
    (p.leg.clone(), p.to_server, p.id, p.reply, p.set_cmd)
}

fn field_num(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// What tshark's JDWP dissector finds in `file` when told that `dbg_port` (the proxy's
/// debugger port) and `vm_port` (the VM) carry JDWP: one key per PDU.
pub async fn tshark_packets(file: &Path, dbg_port: u16, vm_port: u16) -> Vec<Key> {
    let mut cmd = tokio::process::Command::new("tshark");
    cmd.arg("-r").arg(file);
    cmd.args(["-d", &format!("tcp.port=={dbg_port},jdwp"), "-d", &format!("tcp.port=={vm_port},jdwp")]);
    cmd.args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in ["tcp.srcport", "tcp.dstport", "jdwp.id", "jdwp.flags", "jdwp.commandset", "jdwp.command"] {
        cmd.args(["-e", f]);
    }
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "tshark failed: {err}");
    let mut keys = Vec::new();
    for line in out.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let col = |i: usize| cols.get(i).copied().unwrap_or("");
        if col(2).is_empty() {
            continue; // TCP control, handshake, or a segment of a longer PDU
        }
        // Every record is its own TCP segment, so a frame carries at most one PDU.
        assert!(!col(2).contains(','), "several JDWP PDUs in one frame: {line}");
        let (src, dst) = (field_num(col(0)), field_num(col(1)));
        let port = |p: u16| Some(u32::from(p));
        let (leg, to_server) = if dst == port(dbg_port) {
            ("debugger", true)
        } else if src == port(dbg_port) {
            ("debugger", false)
        } else if dst == port(vm_port) {
            ("vm", true)
        } else if src == port(vm_port) {
            ("vm", false)
        } else {
            panic!("a JDWP frame on neither port: {line}");
        };
        let id = field_num(col(2)).unwrap_or_else(|| panic!("bad jdwp.id: {line}"));
        let flags = field_num(col(3)).unwrap_or_else(|| panic!("bad jdwp.flags: {line}"));
        let reply = flags & 0x80 != 0;
        let set_cmd = if reply {
            None
        } else {
            let n = |i| field_num(col(i)).and_then(|v| u8::try_from(v).ok());
            Some((
                n(4).unwrap_or_else(|| panic!("no commandset: {line}")),
                n(5).unwrap_or_else(|| panic!("no command: {line}")),
            ))
        };
        keys.push((leg.to_string(), to_server, id, reply, set_cmd));
    }
    keys
}

/// Frames tshark flags as malformed (a bad reassembly or a bad dissection).
pub async fn tshark_malformed(file: &Path, ports: &[u16]) -> String {
    let mut cmd = tokio::process::Command::new("tshark");
    cmd.arg("-r").arg(file);
    for p in ports {
        cmd.args(["-d", &format!("tcp.port=={p},jdwp")]);
    }
    cmd.args(["-Y", "_ws.malformed || jdwp.hlen.invalid || jdwp.flags.invalid"]);
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "tshark failed: {err}");
    out
}

/// A `jdwpmux serve` child on ephemeral ports with its log in a file; killed on drop.
pub struct Serve {
    child: Child,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Serve {
    pub fn start(args: &[&str]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        let child = Command::new(BIN)
            .arg("serve")
            .args(["--base-port", "0", "--current-port", "0", "--no-scan", "--no-proc", "--control"])
            .arg(dir.path().join("control.sock"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Serve { child, log, _dir: dir }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for a log line containing `needle`.
    pub async fn wait_log(&mut self, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + SLOW;
        loop {
            if let Some(line) = self.log_text().lines().find(|l| l.contains(needle)) {
                return line.to_string();
            }
            let exited = self.child.try_wait().ok().flatten();
            assert!(exited.is_none(), "serve exited ({exited:?}) without {needle:?}:\n{}", self.log_text());
            assert!(tokio::time::Instant::now() < deadline, "no {needle:?} in the log:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Log lines containing `needle`.
    pub fn count_log(&self, needle: &str) -> usize {
        self.log_text().lines().filter(|l| l.contains(needle)).count()
    }

    /// SIGINT, as Ctrl-C would.
    pub fn interrupt(&self) {
        self.signal("-INT");
    }

    /// `kill SIG PID`, e.g. "-TERM".
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap();
        assert!(st.success(), "kill {sig} failed");
    }

    /// Waits (bounded) for the child to exit.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let deadline = tokio::time::Instant::now() + SLOW;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(tokio::time::Instant::now() < deadline, "serve did not exit:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
