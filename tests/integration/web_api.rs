//! The monitor page's JSON API and event streams against a running daemon (in-process),
//! with the fake DDM VM and a real HotSpot JVM: the same data as `list`, `threads` and
//! `heap`, and no DDM traffic for a VM nobody looks at.

use std::net::SocketAddr;
use std::time::Duration;

use jdwpmux::settings::{DdmMode, Settings};

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::fake_vm::HEAP_OBJECTS;
use crate::support::http::{self, EventStream, Response};
use crate::support::tap::Tap;
use crate::support::{java_available, FakeVm, FakeVmConfig, JavaApp, RawClient};

/// The monitor of an in-process daemon: its address and token.
pub struct Page {
    pub addr: SocketAddr,
    pub token: String,
    /// The address the log prints, token included.
    pub url: String,
}

impl Page {
    pub async fn get(&self, path: &str) -> Response {
        http::get(self.addr, path, &[("X-Jdwpmux-Token", &self.token)]).await.unwrap()
    }

    pub async fn post(&self, path: &str, body: &str) -> Response {
        let headers = [("X-Jdwpmux-Token", self.token.as_str()), ("Content-Type", "application/json")];
        http::request(self.addr, "POST", path, &headers, body.as_bytes()).await.unwrap()
    }

    pub async fn events(&self, path: &str) -> EventStream {
        http::events(self.addr, path, &[("X-Jdwpmux-Token", &self.token)]).await.unwrap()
    }
}

/// A daemon watching `vms` with the monitor on an ephemeral loopback port.
pub async fn monitor(vms: &[SocketAddr]) -> (Proxy, Page) {
    monitor_with(Proxy::settings(vms, DdmMode::Auto)).await
}

/// As [`monitor`], letting several debuggers attach to one VM whatever
/// JDWPMUX_TEST_MAX_DEBUGGERS says (the page must show them).
pub async fn monitor_sharing(vms: &[SocketAddr]) -> (Proxy, Page) {
    let mut s = Proxy::settings(vms, DdmMode::Auto);
    s.max_debuggers = Settings::default().max_debuggers;
    monitor_with(s).await
}

/// As [`monitor`], with these settings.
pub async fn monitor_with(mut s: Settings) -> (Proxy, Page) {
    s.web = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    let proxy = Proxy::with(s).await;
    let m = proxy.daemon.as_ref().and_then(|d| d.web.clone()).expect("the monitor is served");
    let token = m.url.split("token=").nth(1).expect("a token in the URL").to_string();
    (proxy, Page { addr: m.addr, token, url: m.url })
}

/// DDM requests that poll a VM: thread updates and heap reads.
fn polled(vm: &FakeVm) -> Vec<String> {
    vm.received_chunks()
        .iter()
        .filter(|c| [b"THEN", b"THST", b"HPIF", b"HPSG", b"HPGC"].iter().any(|t| c.is(t)))
        .map(|c| String::from_utf8_lossy(&c.ty).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_reads_what_list_threads_and_heap_read() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let (proxy, page) = monitor(&[vm.addr()]).await;
    let info = proxy.ready(0).await;

    // The address the log prints opens the page (through its cookie).
    let path = page.url.split_once(&page.addr.to_string()).map(|(_, p)| p.to_string()).unwrap();
    let open = http::get(page.addr, &path, &[]).await.unwrap();
    assert_eq!((open.status, open.header("location")), (303, Some("/")), "{}", page.url);

    let r = page.get("/api/vms").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("content-type").unwrap_or("").starts_with("application/json"));
    assert_eq!(r.json(), serde_json::to_value(proxy.list()).unwrap(), "the list `jdwpmux list --json` prints");
    let one = page.get(&format!("/api/vms/{}", info.id)).await.json();
    assert_eq!((one["app"].as_str(), one["pid"].as_u64(), one["current"].as_bool()), (Some("com.example.fake"), Some(4242), Some(true)));
    assert_eq!(page.get("/api/vms/999").await.status, 404);

    let t = page.get(&format!("/api/vms/{}/threads", info.id)).await;
    assert_eq!(t.status, 200, "{}", t.text());
    let t = t.json();
    assert_eq!(t["app"], "com.example.fake");
    let names: Vec<&str> = t["threads"].as_array().unwrap().iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(names, ["main", "Signal Catcher", "HeapTaskDaemon"]);
    assert_eq!((t["threads"][0]["state"].as_str(), t["threads"][1]["state"].as_str()), (Some("running"), Some("sleeping")));
    // As `threads --once`: updates go off again after the one snapshot.
    wait_until("THEN off", || vm.received_chunks().iter().any(|c| c.is(b"THEN") && c.data.first() == Some(&0))).await.unwrap();

    let h = page.get(&format!("/api/vms/{}/heap", info.id)).await.json();
    assert_eq!(h["heaps"][0]["objects"].as_u64(), Some(u64::from(HEAP_OBJECTS)));
    assert!(h["text"].as_str().unwrap().contains("heap 1"), "{h}");
    assert!(h["picture"].is_null());
    assert_eq!(vm.gc_count(), 0, "a summary asks for no GC");
    assert_eq!(page.get(&format!("/api/vms/{}/heap.png", info.id)).await.status, 404);

    let g = page.post(&format!("/api/vms/{}/gc", info.id), "").await;
    assert_eq!(g.status, 200, "{}", g.text());
    assert_eq!(vm.gc_count(), 1);
    let g = g.json();
    let url = g["picture"]["url"].as_str().expect("a picture").to_string();
    let png = page.get(&url).await;
    assert_eq!((png.status, png.header("content-type")), (200, Some("image/png")));
    let mut reader = png::Decoder::new(std::io::Cursor::new(png.body)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).unwrap();
    assert_eq!((u64::from(frame.width), u64::from(frame.height)), (g["picture"]["width"].as_u64().unwrap(), g["picture"]["height"].as_u64().unwrap()));
    assert!(frame.width >= 256, "{}x{}", frame.width, frame.height);
    // The summary now names the picture too.
    assert_eq!(page.get(&format!("/api/vms/{}/heap", info.id)).await.json()["picture"]["url"].as_str(), Some(url.as_str()));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_is_polled_only_while_a_page_shows_it() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let (proxy, page) = monitor(&[vm.addr()]).await;
    let info = proxy.ready(0).await;

    // The list, however long it is watched, asks the VM nothing.
    let mut list = page.events("/api/events").await;
    for _ in 0..2 {
        let e = list.next_named("vms", SOON).await.unwrap().json();
        assert_eq!(e["vms"][0]["app"], "com.example.fake");
        assert!(e["now_ms"].as_u64().unwrap() > 0);
    }
    assert!(polled(&vm).is_empty(), "polled with only the list open: {:?}", polled(&vm));

    // The VM's stream: a thread table about twice a second.
    let mut stream = page.events(&format!("/api/vms/{}/events", info.id)).await;
    let first = stream.next_named("threads", SOON).await.unwrap().json();
    assert_eq!(first["threads"].as_array().unwrap().len(), 3);
    let t0 = tokio::time::Instant::now();
    let mut tables = 0;
    while t0.elapsed() < Duration::from_secs(3) {
        stream.next_named("threads", SOON).await.unwrap();
        tables += 1;
    }
    let per_s = f64::from(tables) / t0.elapsed().as_secs_f64();
    assert!((1.0..=4.0).contains(&per_s), "{tables} tables in {:?}", t0.elapsed());

    // A state change reaches the page.
    vm.set_thread_state(vm.config().threads[0].ddm_id, 3);
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let t = stream.next_named("threads", SOON).await.unwrap().json();
        if t["threads"][0]["state"] == "monitor" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "main never showed as monitor: {t}");
    }

    // A debugger's commands and their replies, named, with latencies.
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(21, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    let (mut command, mut reply) = (None, None);
    while command.is_none() || reply.is_none() {
        let p = stream.next_named("packets", SOON).await.unwrap().json();
        for p in p["packets"].as_array().unwrap() {
            if p["id"] == 21 && p["command"] == "VirtualMachine.Version" {
                if p["reply"] == true { reply = Some(p.clone()) } else { command = Some(p.clone()) }
            }
        }
    }
    let (command, reply) = (command.unwrap(), reply.unwrap());
    assert_eq!((command["from"].as_str(), command["to"].as_str()), (Some("debugger"), Some("vm")));
    assert_eq!((reply["from"].as_str(), reply["error"].as_str()), (Some("vm"), Some("NONE")));
    assert_eq!(command["conn"], reply["conn"]);
    assert!(reply["latency_us"].as_u64().is_some(), "{reply}");
    // The list counts the debugger's commands.
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let e = list.next_named("vms", SOON).await.unwrap().json();
        if e["vms"][0]["debuggers"][0]["commands"].as_u64() >= Some(1) {
            assert_eq!(e["vms"][0]["debuggers"][0]["conn"], reply["conn"]);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the debugger never showed: {e}");
    }

    // Closing the stream turns thread updates off; the VM is asked nothing more.
    drop(stream);
    wait_until("THEN off", || vm.received_chunks().iter().rfind(|c| c.is(b"THEN")).is_some_and(|c| c.data.first() == Some(&0))).await.unwrap();
    vm.clear_received();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(polled(&vm).is_empty(), "polled after the page left: {:?}", polled(&vm));
    drop(list);
    drop(dbg);
    proxy.stop().await;
}

/// The figures the monitor shows of one debugger source, without what moves by itself.
fn debugger_source(report: &serde_json::Value, conn: u64) -> serde_json::Value {
    let sources = report["sources"].as_array().cloned().unwrap_or_default();
    sources.into_iter().find(|s| s["source"] == "debugger" && s["conn"] == conn).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_debuggers_on_one_vm_each_with_their_figures() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let (proxy, page) = monitor_sharing(&[vm.addr()]).await;
    let info = proxy.ready(0).await;
    let port = proxy.vm_port(0).await;
    let mut stream = page.events(&format!("/api/vms/{}/events", info.id)).await;

    // Both attached at once: three Version commands from one, two IDSizes from the other.
    let mut one = RawClient::connect(port).await.unwrap();
    let mut two = RawClient::connect(port).await.unwrap();
    for id in 1..=3 {
        one.ok(id, SET_VM, VM_VERSION, &[]).await.unwrap();
    }
    for id in 1..=2 {
        two.ok(id, SET_VM, VM_ID_SIZES, &[]).await.unwrap();
    }
    let peers = [one.local_addr().unwrap().to_string(), two.local_addr().unwrap().to_string()];

    // The list: both debuggers, each with its peer, since when and its own command count.
    let deadline = tokio::time::Instant::now() + SOON;
    let debuggers = loop {
        let list = page.get("/api/vms").await.json();
        let d = list[0]["debuggers"].as_array().cloned().unwrap_or_default();
        if d.len() == 2 && d.iter().map(|d| d["commands"].as_u64()).collect::<Vec<_>>() == [Some(3), Some(2)] {
            break d;
        }
        assert!(tokio::time::Instant::now() < deadline, "never both with their commands: {list}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    for (d, peer) in debuggers.iter().zip(&peers) {
        assert_eq!(d["peer"].as_str(), Some(peer.as_str()), "{d}");
        let since = d["since_ms"].as_u64().unwrap();
        assert!(since <= now && now - since < 60_000, "attached {since}, now {now}");
    }
    let conns: Vec<u64> = debuggers.iter().map(|d| d["conn"].as_u64().unwrap()).collect();
    assert_ne!(conns[0], conns[1]);

    // The traffic figures: each debugger's own commands with reply latency percentiles, the
    // same as the session gives `jdwpmux stats`.
    let r = page.get(&format!("/api/vms/{}/stats", info.id)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let report = r.json();
    for (conn, peer, command, count) in [(conns[0], &peers[0], "VirtualMachine.Version", 3), (conns[1], &peers[1], "VirtualMachine.IDSizes", 2)] {
        let s = debugger_source(&report, conn);
        assert_eq!((s["peer"].as_str(), s["count"].as_u64()), (Some(peer.as_str()), Some(count)), "{report}");
        let rows = s["commands"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), 1, "only its own commands: {s}");
        let c = &rows[0];
        assert_eq!((c["command"].as_str(), c["count"].as_u64(), c["replies"].as_u64(), c["errors"].as_u64()), (Some(command), Some(count), Some(count), Some(0)), "{c}");
        let p: Vec<u64> = ["p50_us", "p90_us", "p99_us", "max_us"].iter().map(|k| c[*k].as_u64().unwrap()).collect();
        assert!(p.windows(2).all(|w| w[0] <= w[1]) && p[3] > 0, "percentiles {p:?}");
    }
    let session = serde_json::to_value(proxy.handle(0).await.stats().await.expect("the session's figures")).unwrap();
    for conn in &conns {
        assert_eq!(debugger_source(&report, *conn), debugger_source(&session, *conn), "the monitor and `stats` disagree");
    }

    // The page's stream carries the same figures.
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let e = stream.next_named("stats", SOON).await.unwrap().json();
        if conns.iter().all(|c| debugger_source(&e, *c) == debugger_source(&report, *c)) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the stream never had both: {e}");
    }
    drop((one, two, stream));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_current_exit_and_packets_for_scripts() {
    let a = FakeVm::start(FakeVmConfig { app_name: "com.example.alpha".into(), pid: 1111, ..Default::default() }).await;
    let b = FakeVm::start(FakeVmConfig { app_name: "com.example.beta".into(), pid: 2222, ..Default::default() }).await;
    let (proxy, page) = monitor(&[a.addr(), b.addr()]).await;
    proxy.ready(0).await;
    let beta = proxy.ready(1).await;
    assert!(!beta.current);

    let r = page.post(&format!("/api/vms/{}/select", beta.id), "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["current"], true);
    assert!(proxy.list().iter().all(|v| v.current == (v.id == beta.id)), "{:?}", proxy.list());
    // The current port leads to beta now. The proxy's ids start again on each VM connection,
    // so beta's Version commands are counted rather than looked for by id.
    let mut c = RawClient::connect(proxy.current_addr()).await.unwrap();
    let versions = || b.received_commands(SET_VM, VM_VERSION).len();
    let before = versions();
    c.request(3, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    wait_until("beta has the debugger", || versions() > before).await.unwrap();
    assert_eq!(page.post("/api/vms/77/select", "").await.status, 404);

    // Packets by polling: the first call starts keeping them.
    let first = page.get(&format!("/api/vms/{}/packets", beta.id)).await.json();
    let next = first["next"].as_u64().unwrap();
    c.request(4, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    let deadline = tokio::time::Instant::now() + SOON;
    let seen = loop {
        let got = page.get(&format!("/api/vms/{}/packets?since={next}", beta.id)).await.json();
        let got = got["packets"].as_array().cloned().unwrap_or_default();
        if got.iter().any(|p| p["id"] == 4 && p["reply"] == true) {
            break got;
        }
        assert!(tokio::time::Instant::now() < deadline, "the script never saw the reply: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(seen.iter().all(|p| p["seq"].as_u64().unwrap() >= next));
    assert!(seen.iter().any(|p| p["id"] == 4 && p["command"] == "VirtualMachine.Version" && p["reply"] == false));

    let r = page.post(&format!("/api/vms/{}/exit", beta.id), r#"{"status": 3}"#).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let outcome = r.json()["outcome"].as_str().map(str::to_owned);
    assert!(matches!(outcome.as_deref(), Some("vm_left" | "acknowledged" | "no_answer")), "{}", r.text());
    wait_until("EXIT received", || b.exit_status() == Some(3)).await.unwrap();
    assert_eq!(a.exit_status(), None);
    drop(c);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_jvm_in_the_monitor() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    let mut app = JavaApp::start(false).await.unwrap();
    let tap = Tap::start(app.addr()).await;
    let (proxy, page) = monitor(&[tap.addr()]).await;
    let info = proxy.ready(0).await;

    let vms = page.get("/api/vms").await.json();
    assert!(vms[0]["vm_ident"].as_str().unwrap_or("").contains("OpenJDK"), "{vms}");
    assert_eq!(vms[0]["ddm"], false);
    for path in ["threads", "heap"] {
        let r = page.get(&format!("/api/vms/{}/{path}", info.id)).await;
        assert_eq!(r.status, 409, "{path}: {}", r.text());
        assert!(r.json()["error"].as_str().unwrap().contains("does not speak DDM"));
    }
    let r = page.post(&format!("/api/vms/{}/gc", info.id), "").await;
    assert_eq!(r.status, 409);

    let mut stream = page.events(&format!("/api/vms/{}/events", info.id)).await;
    let notice = stream.next_named("notice", SOON).await.unwrap().json();
    assert!(notice["text"].as_str().unwrap().contains("not DDM-aware"), "{notice}");
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(5, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    dbg.request(6, SET_VM, 7, &[], SOON).await.unwrap(); // IDSizes
    let mut names = Vec::new();
    while !names.iter().any(|(n, reply): &(String, bool)| n == "VirtualMachine.IDSizes" && *reply) {
        let p = stream.next_named("packets", SOON).await.unwrap().json();
        for p in p["packets"].as_array().unwrap() {
            if p["from"] == "vm" && p["reply"] == true {
                assert!(p["latency_us"].as_u64().is_some(), "{p}");
            }
            names.push((p["command"].as_str().unwrap_or("?").to_string(), p["reply"] == true));
        }
    }
    assert!(names.iter().any(|(n, r)| n == "VirtualMachine.Version" && !*r), "{names:?}");
    assert!(tap.sent_to_vm().iter().all(|p| !p.is_ddm()), "a DDM packet reached HotSpot");

    // jdb asks every class it stops in for its SMAP; HotSpot's "there is none"
    // (ABSENT_INFORMATION) is counted as an error, and as routine.
    let mut q = 6u32.to_be_bytes().to_vec();
    q.extend(b"LMain;");
    let classes = dbg.request(7, SET_VM, 2, &q, SOON).await.unwrap(); // ClassesBySignature
    assert!(classes.data.len() >= 17 && classes.data[..4] == 1u32.to_be_bytes(), "{classes:?}");
    let smap = dbg.request(8, 2, 12, &classes.data[5..13], SOON).await.unwrap(); // SourceDebugExtension
    assert_eq!(smap.error_code(), Some(101), "ABSENT_INFORMATION");
    let deadline = tokio::time::Instant::now() + SOON;
    let row = loop {
        let s = stream.next_named("stats", SOON).await.unwrap().json();
        let rows: Vec<serde_json::Value> =
            s["sources"].as_array().into_iter().flatten().flat_map(|src| src["commands"].as_array().cloned().unwrap_or_default()).collect();
        if let Some(r) = rows.into_iter().find(|c| c["command"] == "ReferenceType.SourceDebugExtension") {
            break r;
        }
        assert!(tokio::time::Instant::now() < deadline, "no SourceDebugExtension row: {s}");
    };
    assert_eq!((row["errors"].as_u64(), row["routine"].as_u64()), (Some(1), Some(1)), "{row}");
    drop(stream);
    drop(dbg);
    proxy.stop().await;
    assert!(app.is_running(), "the JVM runs on");
    app.kill().await.unwrap();
}
