//! Capture end to end: a DDM-aware fake VM captured as JSON lines and as pcapng (read back by
//! `jdwpmux decode` and tshark), a real jdb session (`capture_jdb`), and the binary's
//! failures: a bad path at start, a full disk at run time, the size limit, SIGINT flushing.

#[path = "capture_jdb.rs"]
mod jdb;
#[path = "capture_util.rs"]
pub mod util;

use std::net::SocketAddr;

use crate::harness::{Proxy, SOON};
use crate::support::consts::*;
use crate::support::ddm::thcr_payload;
use crate::support::wire::encode_chunks;
use crate::support::{Chunk, FakeVm, FakeVmConfig, RawClient};
use util::*;

/// A DDM-speaking raw debugger on VM 0's port: VirtualMachine.Version with id 1 (the
/// proxy's own first request, when it identified the VM, used id 1 on the VM leg too, so the
/// proxy must rewrite it), FEAT, a THCR pushed by the VM, IDSizes; then it leaves. Returns
/// the debugger port.
async fn drive_ddm_session(vm: &FakeVm, proxy: &Proxy) -> SocketAddr {
    let port = proxy.vm_port(0).await;
    let mut dbg = RawClient::connect(port).await.unwrap();
    let r = dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let feat = encode_chunks(&[Chunk::new(b"FEAT", Vec::new())]);
    let r = dbg.request(2, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
    assert!(r.chunks().unwrap().iter().any(|c| c.is(b"FEAT")));
    vm.send_ddm(&[(*b"THCR", thcr_payload(77, "captured"))]).unwrap();
    let mut got_thcr = false;
    for _ in 0..16 {
        let p = dbg.read_packet(SOON).await.unwrap();
        if p.is_ddm() && p.chunks().unwrap().iter().any(|c| c.is(b"THCR")) {
            got_thcr = true;
            break;
        }
    }
    assert!(got_thcr, "the THCR push reached the DDM-speaking debugger");
    let r = dbg.request(3, SET_VM, VM_ID_SIZES, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    drop(dbg);
    // The VM hears the proxy's clean-up (DBGD) once the debugger has gone.
    vm.wait_for(|v| v.dbgd_count() > 0, SOON).await.unwrap();
    port
}

/// The VM-leg command the proxy sent for the debugger's `orig`, and its reply.
fn relayed<'a>(pkts: &'a [Pkt], orig: u32, name: &str) -> (&'a Pkt, &'a Pkt) {
    let cmd = pkts.iter().find(|p| p.is_cmd("vm", true) && p.orig_id == Some(orig));
    let cmd = cmd.unwrap_or_else(|| panic!("no VM-leg command with orig_id {orig}"));
    assert_eq!(cmd.command.as_deref(), Some(name));
    let reply = pkts.iter().find(|p| p.is_reply("vm", false) && p.conn == cmd.conn && p.id == cmd.id);
    let reply = reply.unwrap_or_else(|| panic!("no VM-leg reply to id {}", cmd.id));
    (cmd, reply)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_ddm_session_as_json_lines_has_chunks_latency_and_orig_ids() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ddm.jsonl");
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::with(capture_settings(&[vm.addr()], &file)).await;
    drive_ddm_session(&vm, &proxy).await;
    proxy.stop().await;

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with('\n'), "the last line is complete");
    let lines = json_lines(&text);
    for l in &lines {
        assert!(l["time"].is_string() && l["conn"]["id"].is_u64() && l["kind"].is_string(), "{l}");
    }
    assert_opens_are_closed(&lines);
    let pkts = packets(&lines);

    // The proxy's HELO and the VM's answer, decoded.
    let helo = pkts.iter().find(|p| p.is_cmd("vm", true) && p.chunk_types() == ["HELO"]).expect("HELO sent");
    assert_eq!((helo.orig_id, helo.chunks[0]["version"].as_u64()), (None, Some(1)), "{:?}", helo.chunks);
    let helo_reply = pkts.iter().find(|p| p.is_reply("vm", false) && p.conn == helo.conn && p.id == helo.id);
    let helo_reply = helo_reply.expect("HELO answered");
    let c = &helo_reply.chunks[0];
    assert_eq!(
        (c["type"].as_str(), c["pid"].as_u64(), c["app_name"].as_str()),
        (Some("HELO"), Some(4242), Some("com.example.fake")),
        "{c}"
    );
    assert!(helo_reply.latency_us.is_some(), "a reply carries its latency");

    // The push, on both legs, decoded.
    for leg in ["vm", "debugger"] {
        let thcr = pkts.iter().find(|p| p.is_cmd(leg, false) && p.chunk_types() == ["THCR"]);
        let c = &thcr.unwrap_or_else(|| panic!("no THCR on the {leg} leg")).chunks[0];
        assert_eq!((c["tid"].as_u64(), c["name"].as_str()), (Some(77), Some("captured")), "{c}");
    }
    let feat = pkts.iter().find(|p| p.is_reply("debugger", false) && p.id == 2).expect("FEAT reply");
    assert_eq!(feat.chunk_types(), ["FEAT"]);

    // Rewritten ids carry the debugger's own; replies come back to it.
    let (cmd, reply) = relayed(&pkts, 1, "VirtualMachine.Version");
    assert_ne!(cmd.id, 1, "the proxy's own first request took id 1: the debugger's 1 is rewritten");
    assert_eq!(reply.orig_id, Some(1));
    assert!(reply.latency_us.is_some());
    relayed(&pkts, 2, "DDM.Chunk");
    relayed(&pkts, 3, "VirtualMachine.IDSizes");
    for id in 1..=3 {
        let r = pkts.iter().filter(|p| p.is_reply("debugger", false) && p.id == id).count();
        assert_eq!(r, 1, "one reply to the debugger's id {id}");
    }
    for p in pkts.iter().filter(|p| p.reply) {
        assert!(p.latency_us.is_some(), "reply without latency_us: {p:?}");
    }
    // Ids are rewritten on the VM leg only.
    assert!(pkts.iter().filter(|p| p.leg == "debugger").all(|p| p.orig_id.is_none()));

    // decode reads the same file as text.
    let text = decode(&file, false).await;
    assert!(
        text.lines().any(|l| l.contains("dbg 127.0.0.1:") && l.ends_with("id=1 VirtualMachine.Version len=11")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("<- proxy  reply id=1 VirtualMachine.Version error=NONE") && l.contains("latency=")),
        "{text}"
    );
    let rewritten = format!("id={} VirtualMachine.Version orig_id=1 len=11", cmd.id);
    assert!(text.lines().any(|l| l.contains("proxy -> vm") && l.contains(&rewritten)), "{text}");
    assert!(text.lines().any(|l| l.contains("DDM.Chunk") && l.contains("chunks=HELO(")), "{text}");
    assert!(text.lines().any(|l| l.contains("<- proxy  id=") && l.contains("chunks=THCR(")), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_ddm_session_as_pcapng_decodes_ddm_chunks_and_reads_in_tshark() {
    require_tshark();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ddm.pcapng");
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::with(capture_settings(&[vm.addr()], &file)).await;
    let dbg_port = drive_ddm_session(&vm, &proxy).await.port();
    proxy.stop().await;

    // Text: decoded chunks indented under their DDM packet.
    let text = decode(&file, false).await;
    let lines: Vec<&str> = text.lines().collect();
    let under = |needle: &str, chunk: &str| {
        lines
            .windows(2)
            .any(|w| w[0].contains(needle) && w[0].contains("DDM.Chunk") && w[1].starts_with(&format!("    {chunk}")))
    };
    assert!(under("proxy -> vm", "HELO version=1"), "{text}");
    assert!(
        under("proxy <- vm", "HELO version=1 pid=4242 vm=\"Dalvik v2.1.0 (fake)\" app=\"com.example.fake\""),
        "{text}"
    );
    assert!(under("proxy <- vm", "THCR tid=77 name=\"captured\""), "{text}");
    assert!(under("<- proxy  id=", "THCR tid=77 name=\"captured\""), "{text}");
    assert!(under("<- proxy  reply id=2", "FEAT"), "{text}");
    assert!(lines.iter().any(|l| l.contains("<- proxy  reply id=1 VirtualMachine.Version error=NONE")), "{text}");
    assert!(
        lines.iter().any(|l| l.contains("proxy -> vm") && l.contains("VirtualMachine.Version orig_id=1")),
        "{text}"
    );

    // JSON: the same packets, decoded chunks, latency, orig ids.
    let lines = json_lines(&decode(&file, true).await);
    assert_opens_are_closed(&lines);
    let pkts = packets(&lines);
    let (cmd, reply) = relayed(&pkts, 1, "VirtualMachine.Version");
    assert_ne!(cmd.id, 1);
    assert_eq!((reply.orig_id, reply.latency_us.is_some()), (Some(1), true));
    let thcr = pkts.iter().find(|p| p.is_cmd("debugger", false) && p.chunk_types() == ["THCR"]).expect("THCR");
    assert_eq!(thcr.chunks[0]["name"], "captured");

    // tshark sees exactly the packets decode sees, on both legs.
    let mut want: Vec<Key> = pkts.iter().map(key).collect();
    let mut got = tshark_packets(&file, dbg_port, vm.addr().port()).await;
    want.sort();
    got.sort();
    assert_eq!(got, want, "tshark vs jdwpmux decode");
    assert!(got.iter().any(|k| k.4 == Some((DDM_SET, DDM_CMD))), "DDM packets dissected");
    let bad = tshark_malformed(&file, &[dbg_port, vm.addr().port()]).await;
    assert!(bad.trim().is_empty(), "tshark flags frames:\n{bad}");
}

/// Length of the big DDM packet's chunk: far above the 256 KiB streaming threshold, so the
/// proxy relays it in pieces (a head record, then body records).
const BIG: usize = 4 << 20;
/// The VM's id for it.
const BIG_ID: u32 = 0x8000_0005;

/// A DDM-speaking raw debugger gets a BIG-byte DDM packet (a heap dump) through a proxy
/// capturing to `file` with `snaplen`.
/// Returns (debugger port, VM port) once the proxy has stopped.
async fn stream_big_event(file: &std::path::Path, snaplen: usize) -> (u16, u16) {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let mut settings = capture_settings(&[vm.addr()], file);
    settings.capture.as_mut().expect("capture").snaplen = snaplen;
    let proxy = Proxy::with(settings).await;
    let port = proxy.vm_port(0).await;
    let mut dbg = RawClient::connect(port).await.unwrap();
    let feat = crate::support::wire::encode_chunks(&[crate::support::Chunk::new(b"FEAT", Vec::new())]);
    dbg.request(1, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
    dbg.set_max_packet_len(64 << 20);
    let heap: Vec<u8> = (0..BIG as u32).map(|i| (i % 251) as u8).collect();
    let big = crate::support::Packet::ddm(BIG_ID, &[crate::support::Chunk::new(b"HPDS", heap)]);
    let data = big.data.clone();
    vm.send_packet(&big).unwrap();
    let p = dbg.read_packet(SOON).await.unwrap();
    assert!(p.data == data, "relayed whole");
    dbg.request(2, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    drop(dbg);
    proxy.stop().await;
    (port.port(), vm.addr().port())
}

fn big_events(pkts: &[Pkt]) -> Vec<&Pkt> {
    let big: Vec<&Pkt> = pkts.iter().filter(|p| p.set_cmd == Some((DDM_SET, DDM_CMD)) && !p.to_server && p.id == BIG_ID).collect();
    assert_eq!(big.len(), 2, "the large packet on both legs: {big:?}");
    big
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_packet_is_captured_whole_and_reads_in_tshark() {
    require_tshark();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.pcapng");
    let (dbg_port, vm_port) = stream_big_event(&file, 8 << 20).await;
    let pkts = packets(&json_lines(&decode(&file, true).await));
    assert!(big_events(&pkts).iter().all(|e| !e.truncated), "kept whole under an 8 MiB snaplen");
    let mut want: Vec<Key> = pkts.iter().map(key).collect();
    let mut got = tshark_packets(&file, dbg_port, vm_port).await;
    want.sort();
    got.sort();
    assert_eq!(got, want, "tshark vs jdwpmux decode");
    let bad = tshark_malformed(&file, &[dbg_port, vm_port]).await;
    assert!(bad.trim().is_empty(), "tshark flags frames:\n{bad}");
}

/// Bytes kept of each packet in the snaplen test.
const SNAPLEN: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snaplen_bounds_what_is_kept_of_a_large_streamed_packet() {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for name in ["cut.pcapng", "cut.jsonl"] {
        let file = dir.path().join(name);
        stream_big_event(&file, SNAPLEN).await;
        let pkts = packets(&json_lines(&decode(&file, true).await));
        if !big_events(&pkts).iter().all(|e| e.truncated) {
            problems.push(format!(
                "{name}: decode does not mark the {BIG}-byte event truncated under a {SNAPLEN}-byte snaplen"
            ));
        }
        // pcapng stores the bytes: at most SNAPLEN of the event per leg, plus a few small
        // packets and the framing.
        let size = std::fs::metadata(&file).unwrap().len();
        if name.ends_with(".pcapng") && size > 32 * 1024 {
            problems.push(format!("{name} is {size} bytes: more than {SNAPLEN} bytes of the event were kept per leg"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_the_binary_cannot_create_fails_at_start_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/c.pcapng");
    let mut report = Vec::new();
    // /dev/full opens but takes no bytes: pcapng's header cannot be written.
    for (path, format, why) in [
        (missing.to_str().unwrap(), "pcapng", "No such file or directory"),
        ("/dev/full", "pcapng", "No space left on device"),
    ] {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(["serve", "--no-scan", "--no-proc", "--base-port", "0", "--current-port", "0", "--control"]);
        cmd.arg(dir.path().join("control.sock"));
        cmd.args(["--capture", path, "--capture-format", format]).env("RUST_LOG", "info");
        let (code, _, err) = run(&mut cmd).await;
        let lines: Vec<&str> = err.lines().collect();
        let last = lines.last().copied().unwrap_or_default();
        let mut problems: Vec<String> = Vec::new();
        if code != 1 {
            problems.push(format!("exit code {code}, expected 1"));
        }
        if lines.len() != 1 {
            problems.push(format!("{} lines on stderr, expected one", lines.len()));
        }
        if !(last.starts_with("jdwpmux: ") && last.contains(path) && last.contains(why)) {
            problems.push("the last line does not name the file and the cause".into());
        }
        if last.matches(why).count() > 1 || last.matches(path).count() > 2 {
            problems.push(format!(
                "the cause is repeated: {}x {why:?}, {}x the path",
                last.matches(why).count(),
                last.matches(path).count()
            ));
        }
        if !problems.is_empty() {
            report.push(format!("--capture {path}: {}\nstderr:\n{err}", problems.join("; ")));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// 40 commands through the binary's VM port, each answered.
async fn traffic(port: u16, first: u32) {
    let mut c = RawClient::connect(("127.0.0.1", port)).await.unwrap();
    for id in first..first + 40 {
        let r = c.request(id, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE), "id {id}");
    }
}

async fn serve_fake(vm: &FakeVm, capture: &[&str]) -> (Serve, u16) {
    let addr = vm.addr().to_string();
    let mut args = vec!["--vm", addr.as_str()];
    args.extend_from_slice(capture);
    let mut s = Serve::start(&args);
    let port = crate::cli::port_of(&s.wait_log("for vm ").await);
    (s, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_error_at_run_time_is_logged_once_and_the_relay_goes_on() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let (mut s, port) = serve_fake(&vm, &["--capture", "/dev/full", "--capture-format", "jsonl"]).await;
    s.wait_log("capturing every packet").await;
    traffic(port, 1).await;
    let line = s.wait_log("no longer writing").await;
    assert!(line.contains("ERROR") && line.contains("/dev/full") && line.contains("No space left on device"), "{line}");
    // Long after the failure, packets still flow; the error is not repeated.
    traffic(port, 100).await;
    s.interrupt();
    let st = s.wait_exit().await;
    assert_eq!(st.code(), Some(0), "{}", s.log_text());
    assert_eq!(s.count_log("no longer writing"), 1, "{}", s.log_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_size_limit_is_logged_once_and_the_relay_goes_on() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("small.jsonl");
    let f = file.to_str().unwrap();
    let (mut s, port) = serve_fake(&vm, &["--capture", f, "--capture-max-bytes", "3000"]).await;
    traffic(port, 1).await;
    let line = s.wait_log("reached its limit").await;
    assert!(line.contains("3000 bytes") && line.contains(f), "{line}");
    traffic(port, 100).await;
    s.signal("-TERM");
    assert_eq!(s.wait_exit().await.code(), Some(0), "{}", s.log_text());
    assert_eq!(s.count_log("reached its limit"), 1, "{}", s.log_text());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.len() <= 3000 && text.len() > 500, "{} bytes", text.len());
    assert!(text.ends_with('\n'), "whole lines only");
    json_lines(&text);
    decode(&file, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_closes_the_binary_capture_and_decode_reads_it() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sig.pcapng");
    let (mut s, port) = serve_fake(&vm, &["--capture", file.to_str().unwrap()]).await;
    traffic(port, 7).await;
    s.interrupt();
    assert_eq!(s.wait_exit().await.code(), Some(0), "{}", s.log_text());
    assert!(s.log_text().contains("capture closed"), "{}", s.log_text());
    let lines = json_lines(&decode(&file, true).await);
    assert_opens_are_closed(&lines);
    let pkts = packets(&lines);
    let dbg: Vec<u32> = pkts.iter().filter(|p| p.is_cmd("debugger", true)).map(|p| p.id).collect();
    assert_eq!(dbg, (7..47).collect::<Vec<_>>());
    for id in 7..47 {
        relayed(&pkts, id, "VirtualMachine.Version");
    }
    let text = decode(&file, false).await;
    assert!(text.contains("<- proxy  reply id=46 VirtualMachine.Version error=NONE"), "{text}");
}
