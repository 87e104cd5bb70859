//! Protocol logs people can analyse: `decode --stats` and `decode --trace` on captures of a
//! DDM-aware fake VM (pcapng and JSON lines), `jdwpmux stats` from a running daemon, and
//! the Wireshark dissector for DDM (`wireshark`).

#[path = "logs_wireshark.rs"]
mod wireshark;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::capture::util::{capture_settings, run, BIN};
use crate::harness::{Proxy, SOON};
use crate::support::consts::*;
use crate::support::ddm::thcr_payload;
use crate::support::trace_check::check_trace;
use crate::support::wire::encode_chunks;
use crate::support::{Chunk, FakeVm, FakeVmConfig, RawClient};

/// How long the fake VM takes to answer Version and IDSizes: long enough to see in the
/// latency figures, and to make pipelined requests overlap.
const VERSION_DELAY: Duration = Duration::from_millis(30);
const ID_SIZES_DELAY: Duration = Duration::from_millis(20);

fn slow_vm() -> FakeVmConfig {
    FakeVmConfig::default()
        .with_reply_delay(SET_VM, VM_VERSION, VERSION_DELAY)
        .with_reply_delay(SET_VM, VM_ID_SIZES, ID_SIZES_DELAY)
}

/// A DDM-speaking debugger: 4 Version round trips, 3 IDSizes at once, one request that
/// fails (INVALID_THREAD), FEAT, and a THCR the VM pushes; then it leaves. Returns its
/// address.
pub async fn drive(vm: &FakeVm, port: SocketAddr) -> SocketAddr {
    let mut dbg = RawClient::connect(port).await.unwrap();
    let me = dbg.local_addr().unwrap();
    for id in 1..=4 {
        let r = dbg.request(id, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE));
    }
    for id in 10..13 {
        dbg.send_command(id, SET_VM, VM_ID_SIZES, &[]).await.unwrap();
    }
    // Replies in any order.
    let mut answered = std::collections::HashSet::new();
    while answered.len() < 3 {
        let p = dbg.read_packet(SOON).await.unwrap();
        assert!(p.is_reply() && (10..13).contains(&p.id), "{p:?}");
        answered.insert(p.id);
    }
    let r = dbg.request(20, SET_THREAD, THREAD_SUSPEND, &0xdead_u64.to_be_bytes(), SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(10), "INVALID_THREAD");
    let feat = encode_chunks(&[Chunk::new(b"FEAT", Vec::new())]);
    dbg.request(21, DDM_SET, DDM_CMD, &feat, SOON).await.unwrap();
    vm.send_ddm(&[(*b"THCR", thcr_payload(77, "worker"))]).unwrap();
    let mut got = false;
    for _ in 0..16 {
        let p = dbg.read_packet(SOON).await.unwrap();
        if p.is_ddm() && p.chunks().unwrap().iter().any(|c| c.is(b"THCR")) {
            got = true;
            break;
        }
    }
    assert!(got, "the THCR push reached the debugger");
    drop(dbg);
    vm.wait_for(|v| v.dbgd_count() > 0, SOON).await.unwrap();
    me
}

/// Captures one driven session to `file`; returns the debugger's address and the VM's.
async fn captured_session(file: &Path) -> (SocketAddr, SocketAddr) {
    let vm = FakeVm::start(slow_vm()).await;
    let proxy = Proxy::with(capture_settings(&[vm.addr()], file)).await;
    let port = proxy.vm_port(0).await;
    let me = drive(&vm, port).await;
    proxy.stop().await;
    (me, vm.addr())
}

async fn decode(file: &Path, args: &[&str]) -> (String, String) {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("decode").arg(file).args(args);
    let (code, out, err) = run(&mut cmd).await;
    assert_eq!(code, 0, "decode {args:?} failed: {err}");
    (out, err)
}

fn command<'a>(source: &'a Value, name: &str) -> &'a Value {
    let rows = source["commands"].as_array().unwrap();
    rows.iter().find(|c| c["command"] == name).unwrap_or_else(|| panic!("no {name} row in {source:#}"))
}

/// What every capture of the driven session must show in `--stats --json`.
pub fn check_session_stats(report: &Value, me: SocketAddr) -> Value {
    let vms = report["vms"].as_array().unwrap();
    assert_eq!(vms.len(), 1, "{report:#}");
    let vm = &vms[0];
    let sources = vm["sources"].as_array().unwrap();
    let dbg = sources.iter().find(|s| s["source"] == "debugger").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(dbg["peer"], me.to_string(), "the debugger is shown with its address");
    assert!(dbg["conn"].is_u64());
    let version = command(dbg, "VirtualMachine.Version");
    assert_eq!((version["count"].as_u64(), version["replies"].as_u64()), (Some(4), Some(4)), "{version}");
    let min = VERSION_DELAY.as_micros() as u64;
    assert!(version["p50_us"].as_u64().unwrap() >= min, "{version}");
    assert!(version["max_us"].as_u64().unwrap() >= version["p99_us"].as_u64().unwrap(), "{version}");
    assert!(version["total_us"].as_u64().unwrap() >= 4 * min, "{version}");
    assert_eq!(version["bytes_out"].as_u64(), Some(4 * 11));
    assert_eq!(command(dbg, "VirtualMachine.IDSizes")["count"].as_u64(), Some(3));
    let failed = command(dbg, "ThreadReference.Suspend");
    assert_eq!((failed["count"].as_u64(), failed["errors"].as_u64()), (Some(1), Some(1)));
    assert_eq!(command(dbg, "DDM.Chunk")["count"].as_u64(), Some(1));
    assert_eq!(dbg["commands"][0]["command"], "VirtualMachine.Version", "sorted by total time: {dbg:#}");
    let proxy = sources.iter().find(|s| s["source"] == "proxy").unwrap_or_else(|| panic!("{report:#}"));
    assert!(command(proxy, "DDM.Chunk")["count"].as_u64().unwrap() >= 2, "HELO and DBGD at least: {proxy:#}");
    let errors = vm["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["name"] == "INVALID_THREAD" && e["count"] == 1), "{errors:?}");
    let chunk = |t: &str| vm["ddm_chunks"].as_array().unwrap().iter().find(|c| c["chunk_type"] == t).map(|c| c["count"].as_u64());
    assert_eq!(chunk("FEAT"), Some(Some(2)), "request and reply, on the VM leg only");
    assert_eq!(chunk("THCR").flatten().map(|n| n >= 1), Some(true));
    assert!(chunk("HELO").flatten().unwrap_or(0) >= 2);
    assert_eq!(chunk("DBGD"), Some(Some(1)));
    dbg.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_stats_of_pcapng_and_json_lines_captures() {
    let dir = tempfile::tempdir().unwrap();
    let mut debuggers = Vec::new();
    for name in ["s.pcapng", "s.jsonl"] {
        let file = dir.path().join(name);
        let (me, vm) = captured_session(&file).await;
        let (json, _) = decode(&file, &["--stats", "--json"]).await;
        let report: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(report["vms"][0]["vm"], vm.to_string());
        let dbg = check_session_stats(&report, me);
        debuggers.push((me, dbg));

        let (text, err) = decode(&file, &["--stats"]).await;
        assert!(err.is_empty(), "{err}");
        assert!(text.starts_with(&format!("VM {vm}: ")), "{text}");
        let header = format!("  debugger #{} {me}: 9 commands,", debuggers[debuggers.len() - 1].1["conn"]);
        assert!(text.lines().any(|l| l.starts_with(&header)), "{header}\n{text}");
        let row = text.lines().find(|l| l.trim_start().starts_with("VirtualMachine.Version ")).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(row.split_whitespace().nth(1), Some("4"), "{row}");
        assert!(text.contains("INVALID_THREAD (10)"), "{text}");
        assert!(text.contains("  DDM chunks:\n    type"), "{text}");
    }
    // The same requests, whichever format recorded them.
    let rows = |d: &Value| -> Vec<(String, u64, u64, u64)> {
        let mut v: Vec<_> = d["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["command"].as_str().unwrap().to_string(), c["count"].as_u64().unwrap(), c["replies"].as_u64().unwrap(), c["errors"].as_u64().unwrap()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(rows(&debuggers[0].1), rows(&debuggers[1].1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_trace_opens_as_slices_per_debugger() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.pcapng");
    let (me, vm) = captured_session(&file).await;
    let out_file = dir.path().join("trace.json");
    let (out, err) = decode(&file, &["--trace", out_file.to_str().unwrap()]).await;
    assert!(err.is_empty(), "{err}");
    assert!(out.starts_with(&format!("trace written to {}: ", out_file.display())) && out.contains("ui.perfetto.dev"), "{out}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    let t = check_trace(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.processes.values().collect::<Vec<_>>(), [&format!("VM {vm}")]);
    let track = |s: &crate::support::trace_check::Slice| t.threads[&(s.pid, s.tid)].clone();
    let own = format!(" {me}");
    let mine = |name: &str| t.slices.iter().filter(|s| s.name == name && track(s).contains(&own)).collect::<Vec<_>>();
    let version = mine("VirtualMachine.Version");
    assert_eq!(version.len(), 4, "{:?}", t.threads);
    for s in &version {
        assert!(s.end - s.start >= VERSION_DELAY.as_micros() as f64, "{s:?}");
        assert!(track(s).starts_with("debugger #") && track(s).ends_with(&own), "lane 0: {s:?}");
        assert_eq!((s.args["bytes"].as_u64(), s.args["error"].as_str()), (Some(11), Some("NONE")), "{s:?}");
    }
    let id_sizes = mine("VirtualMachine.IDSizes");
    assert_eq!(id_sizes.len(), 3);
    let lanes: std::collections::HashSet<String> = id_sizes.iter().map(|s| track(s)).collect();
    assert_eq!(lanes.len(), 3, "three requests at once take three lanes: {lanes:?}");
    assert_eq!(mine("ThreadReference.Suspend")[0].args["error"], "INVALID_THREAD");
    let proxy_track = |i: &(u64, u64, String, Value)| t.threads[&(i.0, i.1)].starts_with("proxy");
    let pushed = t.instants.iter().find(|i| i.2 == "DDM THCR" && proxy_track(i)).unwrap_or_else(|| panic!("{:?}", t.instants));
    assert_eq!(pushed.3["chunks"][0], "THCR tid=77 name=\"worker\"");
    assert!(t.instants.iter().any(|i| i.2 == "DDM THCR" && !proxy_track(i)), "relayed to the debugger too");
    let helo = t.slices.iter().find(|s| s.name == "DDM.Chunk" && track(s).starts_with("proxy")).unwrap_or_else(|| panic!("no HELO slice"));
    assert_eq!(helo.args["chunks"][0], "HELO version=1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_from_the_daemon_since_it_started() {
    let vm = FakeVm::start(slow_vm()).await;
    let served = crate::cli::Served::start(&["--vm", &vm.addr().to_string()]);
    let list = crate::ddm_views::ready(&served, 1).await;
    let port = SocketAddr::from(([127, 0, 0, 1], list[0]["debugger_port"].as_u64().unwrap() as u16));
    let me = drive(&vm, port).await;

    let (code, out, err) = served.run(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let vm_name = format!("{} (com.example.fake, pid 4242)", vm.addr());
    assert_eq!(report["vms"][0]["vm"], vm_name);
    assert!(report["vms"][0]["seconds"].as_f64().unwrap() > 0.0);
    check_session_stats(&report, me);

    let (code, text, err) = served.run(&["stats", "com.example.fake"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with(&format!("VM {vm_name}: ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("  debugger #") && l.contains(&format!(" {me}: 9 commands,"))), "{text}");
    assert!(text.contains("INVALID_THREAD (10)"), "{text}");

    let (code, _, err) = served.run(&["stats", "no.such.app"]);
    assert_eq!(code, 2, "an unknown VM is a usage error: {err}");
}
