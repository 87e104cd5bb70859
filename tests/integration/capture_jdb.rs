//! A real jdb against a real JVM through the proxy, captured as pcapng: Wireshark's JDWP
//! dissector (tshark) and `jdwpmux decode --json` must read the same packets on both legs,
//! the debugger leg must show jdb's own ids (as jdb's `-dbgtrace` reports them), and the VM
//! leg the proxy's ids with jdb's as orig_id.
//!
//! JDI's packet counter also counts every packet it *receives* (each reply and event is
//! built as a `Packet`, which takes the next number), so jdb's commands go 1, 3, 5, ...
//! with a further gap after each event: not 1, 2, 3.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::util::*;
use crate::harness::{wait_until, Proxy};
use crate::support::output::OutputLog;
use crate::support::{java_available, jdb_available, JavaApp};

/// VirtualMachine.Dispose: the proxy answers it itself and keeps its VM connection.
const DISPOSE: (u8, u8) = (1, 6);
const EVENT_COMPOSITE: (u8, u8) = (64, 100);
const JDB: Duration = Duration::from_secs(60);
const TRACE: &str = "[JDI: Sending Command(id=";

/// `jdb -dbgtrace 1`: JDI prints `[JDI: Sending Command(id=N) JDWP.Set.Command]` on stderr
/// for every command it sends once tracing is on (after its first few). Kept apart from
/// stdout, where the prompts are.
struct TracedJdb {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    out: Arc<OutputLog>,
    trace: Arc<OutputLog>,
    cursor: usize,
}

impl TracedJdb {
    fn attach(port: u16) -> TracedJdb {
        let mut child = tokio::process::Command::new("jdb")
            .args(["-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-dbgtrace", "1", "-attach"])
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn jdb");
        let (out, trace) = (Arc::new(OutputLog::default()), Arc::new(OutputLog::default()));
        out.spawn_reader(child.stdout.take().expect("stdout"), 0);
        trace.spawn_reader(child.stderr.take().expect("stderr"), 0);
        let stdin = child.stdin.take();
        TracedJdb { child, stdin, out, trace, cursor: 0 }
    }

    async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("jdb stdin open");
        stdin.write_all(format!("{line}\n").as_bytes()).await.expect("write to jdb");
        stdin.flush().await.expect("flush jdb stdin");
    }

    /// Waits for each text in turn after the previous match.
    async fn expect(&mut self, texts: &[&str]) {
        for t in texts {
            let r = self.out.wait_text(self.cursor, t, JDB).await;
            let (_, end) = r.unwrap_or_else(|e| panic!("jdb: {e:#}\nstderr:\n{}", self.trace.tail(2000)));
            self.cursor = end;
        }
    }

    /// Waits until every text has appeared after the previous match, in any order (jdb's
    /// command and event threads print concurrently).
    async fn expect_all(&mut self, texts: &[&str]) {
        let from = self.cursor;
        let mut end = from;
        let what = format!("{texts:?}");
        let found = |text: &str, _: &_| {
            let tail = text.get(from..).unwrap_or_default();
            let ends: Option<Vec<usize>> = texts.iter().map(|t| tail.find(t).map(|i| from + i + t.len())).collect();
            ends.map(|e| end = e.into_iter().max().unwrap_or(from)).is_some()
        };
        self.out.wait_until(&what, found, JDB).await.unwrap_or_else(|e| panic!("jdb: {e:#}"));
        self.cursor = end;
    }

    /// Sends `quit`; waits for jdb to exit (killing it if it will not).
    async fn quit(&mut self) {
        self.send("quit").await;
        self.stdin = None;
        if tokio::time::timeout(JDB, self.child.wait()).await.is_err() {
            let _ = self.child.start_kill();
            panic!("jdb did not quit:\n{}", self.out.tail(2000));
        }
    }

    /// (id, command) of every traced send, e.g. (7, "EventRequest.Set").
    fn sent(&self) -> Vec<(u32, String)> {
        let text = self.trace.text();
        let parse = |l: &str| {
            let rest = &l[l.find(TRACE)? + TRACE.len()..];
            let (id, rest) = rest.split_once(") JDWP.")?;
            let name = rest.split([']', ',']).next()?;
            Some((id.parse().ok()?, name.to_string()))
        };
        text.lines()
            .filter(|l| l.contains(TRACE))
            .map(|l| parse(l).unwrap_or_else(|| panic!("bad trace line {l:?}")))
            .collect()
    }
}

/// VM-leg connections with at least one reply in the capture so far (read in-process: the
/// writer flushes whenever it is idle).
fn vm_connections_answered(file: &std::path::Path) -> usize {
    use jdwpmux::capture::{DecodedEvent, Leg, PacketKind};
    let Ok(c) = jdwpmux::capture::read_capture(file) else { return 0 };
    let answered = c.records.iter().filter(|r| {
        r.conn.leg == Some(Leg::Vm)
            && matches!(&r.event, DecodedEvent::Packet(p) if matches!(p.kind, PacketKind::Reply { .. }))
    });
    answered.map(|r| r.conn.id).collect::<HashSet<u64>>().len()
}

impl Drop for TracedJdb {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jdb_session_captured_as_pcapng_reads_the_same_in_tshark_and_decode() {
    assert!(java_available() && jdb_available(), "java, javac and jdb are needed (install a JDK)");
    require_tshark();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jdb.pcapng");
    let mut app = JavaApp::start(false).await.unwrap();
    let proxy = Proxy::with(capture_settings(&[app.addr()], &file)).await;
    proxy.ready(0).await;
    let dbg_port = proxy.current_addr().port();

    let mut jdb = TracedJdb::attach(dbg_port);
    jdb.expect(&["Initializing jdb", "> "]).await;
    jdb.send("stop in Main.tick").await;
    jdb.expect_all(&["Set breakpoint Main.tick", "Breakpoint hit"]).await;
    jdb.expect(&["main[1] "]).await;
    jdb.send("where").await;
    jdb.expect(&["Main.main", "main[1] "]).await;
    jdb.send("clear Main.tick").await;
    jdb.expect(&["Removed: breakpoint Main.tick", "main[1] "]).await;
    jdb.send("cont").await;
    app.wait_ticks_advance(JDB).await.unwrap();
    jdb.quit().await;
    let traced = jdb.sent();
    // HotSpot forgets a debugger only when its connection closes: wait until the capture
    // shows the proxy's second VM connection answered, so both are in it.
    wait_until("a second VM connection in the capture", || vm_connections_answered(&file) >= 2).await.unwrap();
    app.wait_ticks_advance(JDB).await.unwrap();
    proxy.stop().await;
    app.kill().await.unwrap();

    let lines = json_lines(&decode(&file, true).await);
    assert_opens_are_closed(&lines);
    let pkts = packets(&lines);
    assert!(pkts.iter().all(|p| !p.truncated), "nothing in a jdb session exceeds the snaplen");

    // 1. The debugger leg: one connection, jdb's own ids (as its trace reports them), each
    //    answered once with that id and a latency.
    let dbg_conns: HashSet<u64> = pkts.iter().filter(|p| p.leg == "debugger").map(|p| p.conn).collect();
    assert_eq!(dbg_conns.len(), 1, "one jdb connection");
    let dbg_cmds: Vec<&Pkt> = pkts.iter().filter(|p| p.is_cmd("debugger", true)).collect();
    let mut ids: Vec<u32> = dbg_cmds.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    assert!(ids.len() > 20, "jdb sent only {} commands", ids.len());
    let unique: HashSet<u32> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "jdb's ids never repeat: {ids:?}");
    // JDI's counter starts at 1; a packet it builds before its first command (now and then
    // it does) takes a number too.
    assert!(ids[0] <= 3, "jdb's first command has id {}: {ids:?}", ids[0]);
    // Exactly what jdb says it sent, id for id and command for command.
    assert!(traced.len() > 10, "jdb traced {} sends", traced.len());
    let first_traced = traced.iter().map(|t| t.0).min().unwrap_or(0);
    let captured: Vec<(u32, String)> = {
        let mut v: Vec<(u32, String)> = dbg_cmds
            .iter()
            .filter(|c| c.id >= first_traced)
            .map(|c| (c.id, c.command.clone().unwrap_or_default()))
            .collect();
        v.sort();
        v
    };
    let mut traced_sorted = traced.clone();
    traced_sorted.sort();
    assert_eq!(captured, traced_sorted, "the debugger leg vs jdb's own trace of its sends");
    assert!(ids.iter().filter(|i| **i < first_traced).count() <= 8, "untraced: {ids:?} vs first traced {first_traced}");
    for c in &dbg_cmds {
        let replies: Vec<&Pkt> = pkts.iter().filter(|p| p.is_reply("debugger", false) && p.id == c.id).collect();
        assert_eq!(replies.len(), 1, "replies to jdb's id {} ({:?})", c.id, c.command);
        assert!(replies[0].latency_us.is_some(), "no latency on the reply to {}", c.id);
        assert!(c.orig_id.is_none() && replies[0].orig_id.is_none(), "the debugger leg has no rewritten ids");
    }
    let disposes: Vec<u32> = dbg_cmds.iter().filter(|c| c.set_cmd == Some(DISPOSE)).map(|c| c.id).collect();
    assert_eq!(disposes.len(), 1, "jdb's quit sends VirtualMachine.Dispose once");

    // 2. The VM leg: every jdb command but Dispose went to the VM once, under a proxy id,
    //    with orig_id = jdb's id, and its reply names the same orig_id.
    let vm_cmds: Vec<&Pkt> = pkts.iter().filter(|p| p.is_cmd("vm", true)).collect();
    let relayed: HashMap<u32, Vec<&Pkt>> =
        vm_cmds.iter().filter_map(|p| p.orig_id.map(|o| (o, *p))).fold(HashMap::new(), |mut m, (o, p)| {
            m.entry(o).or_default().push(p);
            m
        });
    for c in &dbg_cmds {
        let on_vm = relayed.get(&c.id).map(Vec::as_slice).unwrap_or_default();
        if c.set_cmd == Some(DISPOSE) {
            assert!(on_vm.is_empty(), "Dispose reached the VM");
            continue;
        }
        assert_eq!(on_vm.len(), 1, "jdb's id {} ({:?}) on the VM leg", c.id, c.command);
        assert_eq!(on_vm[0].set_cmd, c.set_cmd, "id {}", c.id);
        let reply = pkts.iter().filter(|p| p.is_reply("vm", false) && p.conn == on_vm[0].conn && p.id == on_vm[0].id);
        let reply: Vec<&Pkt> = reply.collect();
        assert_eq!(reply.len(), 1, "VM reply to proxy id {} (jdb's {})", on_vm[0].id, c.id);
        assert_eq!(reply[0].orig_id, Some(c.id), "the VM-leg reply names jdb's id");
        assert!(reply[0].latency_us.is_some());
    }
    assert_eq!(relayed.values().map(Vec::len).sum::<usize>(), dbg_cmds.len() - 1, "VM-leg commands with an orig_id");
    // The proxy's own requests (identification) carry no orig_id, and HotSpot gets no DDM.
    let own: Vec<&&Pkt> = vm_cmds.iter().filter(|p| p.orig_id.is_none()).collect();
    assert!(own.iter().any(|p| p.command.as_deref() == Some("VirtualMachine.Version")), "the proxy identifies the VM");
    assert!(vm_cmds.iter().all(|p| p.set_cmd.is_some_and(|(s, _)| s < 0x80)), "a vendor command reached HotSpot");
    let vm_conns: HashSet<u64> = pkts.iter().filter(|p| p.leg == "vm").map(|p| p.conn).collect();
    assert_eq!(vm_conns.len(), 2, "the VM leg before and after jdb");

    // 3. Events jdb got are the VM's own packets, ids unchanged.
    let vm_events: HashSet<u32> =
        pkts.iter().filter(|p| p.is_cmd("vm", false) && p.set_cmd == Some(EVENT_COMPOSITE)).map(|p| p.id).collect();
    let dbg_events: Vec<u32> = pkts.iter().filter(|p| p.is_cmd("debugger", false)).map(|p| p.id).collect();
    assert!(!dbg_events.is_empty(), "jdb saw the breakpoint event");
    for id in &dbg_events {
        assert!(vm_events.contains(id), "event id {id} on the debugger leg never came from the VM");
    }

    // 4. Wireshark's dissector reads every packet of both legs exactly as decode does.
    let mut want: Vec<Key> = pkts.iter().map(key).collect();
    let mut got = tshark_packets(&file, dbg_port, app.port()).await;
    assert_eq!(got.len(), want.len(), "tshark decodes as many JDWP packets as jdwpmux decode reads");
    want.sort();
    got.sort();
    assert_eq!(got, want, "tshark vs jdwpmux decode");
    let tshark_dbg_ids: Vec<u32> = {
        let mut v: Vec<u32> = got.iter().filter(|k| k.0 == "debugger" && k.1 && !k.3).map(|k| k.2).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(tshark_dbg_ids, ids, "tshark sees jdb's ids on the debugger leg");
    let bad = tshark_malformed(&file, &[dbg_port, app.port()]).await;
    assert!(bad.trim().is_empty(), "tshark flags frames:\n{bad}");
}
