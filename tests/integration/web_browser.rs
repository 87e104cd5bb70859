//! The monitor page in a real browser (headless Chromium through chromedriver): the VM list
//! with its filter and sorting, a thread table that follows the VM, the heap map after
//! "GC and refresh", the traffic panel, and "make current"; on a 1280-pixel-wide window every
//! column of the VM list is in view. Saves a screenshot of each size.

use std::time::Duration;

use serde_json::json;

use crate::harness::{wait_until, SOON};
use crate::support::browser::{browser_available, Browser, WINDOW};
use crate::support::consts::*;
use crate::support::{FakeThread, FakeVm, FakeVmConfig, RawClient};
use crate::web_api::monitor_sharing;

/// Where a screenshot goes (a test artifact; docs/web-monitor.png is a copy of one).
fn screenshot_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// A common laptop screen: the VM list must show every column on it.
const LAPTOP: (u32, u32) = (1280, 900);

/// Where the VM list's column headers end, against the window and the list's own box.
const VM_COLUMNS_FIT: &str = "
    const list = document.querySelector('#vms').parentElement;
    const ths = Array.from(document.querySelectorAll('#vms thead th'));
    const right = Math.min(list.getBoundingClientRect().right, window.innerWidth) + 0.5;
    return {
        page_width: document.scrollingElement.scrollWidth,
        list_overflow: list.scrollWidth - list.clientWidth,
        columns: ths.length,
        cut: ths.filter(th => th.getBoundingClientRect().right > right || th.getBoundingClientRect().width < 1).map(th => th.textContent),
    };";

/// Every column of the VM list is in view in a window `width` pixels wide, and neither the
/// list nor the page scrolls sideways.
async fn vm_columns_fit(browser: &Browser, width: u32) {
    let fit = browser.run(VM_COLUMNS_FIT, json!([])).await.unwrap();
    assert!(fit["columns"].as_u64().unwrap() >= 9, "{fit}");
    assert_eq!(fit["cut"], json!([]), "VM list columns out of view at {width} pixels: {fit}");
    assert!(fit["list_overflow"].as_f64().unwrap() <= 0.0, "the VM list scrolls sideways at {width} pixels: {fit}");
    assert!(fit["page_width"].as_u64().unwrap() <= u64::from(width), "the page scrolls sideways at {width} pixels: {fit}");
}

/// An app with the threads an Android app has.
fn busy_app() -> FakeVmConfig {
    let names = [
        "main", "Signal Catcher", "HeapTaskDaemon", "ReferenceQueueDaemon", "FinalizerDaemon",
        "FinalizerWatchdogDaemon", "Binder:4242_1", "Binder:4242_2", "RenderThread", "OkHttp Dispatcher",
        "glide-disk-cache", "Jit thread pool",
    ];
    let threads = names
        .iter()
        .enumerate()
        .map(|(i, n)| FakeThread { daemon: i > 0 && i < 6, ..FakeThread::new(0x1001 + i as u64, n) })
        .collect();
    FakeVmConfig { app_name: "com.example.shop".into(), pid: 4242, threads, ..Default::default() }
}

/// `document.querySelector(css).textContent`, or null.
fn text_of(css: &str) -> String {
    format!("const e = document.querySelector({}); return e ? e.textContent : null;", json!(css))
}

/// In the traffic table's rows (cell texts), the row of `command` under the debugger at `peer`.
fn command_row(rows: &[Vec<String>], peer: &str, command: &str) -> Option<Vec<String>> {
    let start = rows.iter().position(|r| r.first().is_some_and(|c| c.ends_with(peer)))?;
    let mut mine = rows[start + 1..].iter().take_while(|r| r.first().is_some_and(|c| !c.starts_with("debugger") && c != "proxy"));
    mine.find(|r| r.first().is_some_and(|c| c == command)).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_a_real_browser() {
    assert!(browser_available(), "chromium and chromedriver are needed (apt-get install chromium chromium-driver; ./test.sh does)");
    let shop = FakeVm::start(busy_app()).await;
    let maps = FakeVm::start(FakeVmConfig { app_name: "com.example.maps".into(), pid: 5151, ..Default::default() }).await;
    let plain = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    // More apps, so the list looks like a device's.
    let mut others = Vec::new();
    for (i, app) in ["com.example.mail", "com.android.systemui", "com.example.music", "com.google.android.gms"].iter().enumerate() {
        others.push(FakeVm::start(FakeVmConfig { app_name: app.to_string(), pid: 6001 + 17 * i as u32, ..Default::default() }).await);
    }
    let mut addrs = vec![shop.addr(), maps.addr(), plain.addr()];
    addrs.extend(others.iter().map(|v| v.addr()));
    let (proxy, page) = monitor_sharing(&addrs).await;
    for i in 0..addrs.len() {
        proxy.ready(i).await;
    }
    let ids: Vec<u32> = proxy.list().iter().map(|v| v.id).collect();
    for (tid, state) in [(0x1002, 4), (0x1007, 7), (0x1008, 7), (0x1009, 8), (0x100a, 4)] {
        shop.set_thread_state(tid, state);
    }
    // Two debuggers on the shop app at once, so the page has them to show.
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    dbg.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    let mut other = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    for id in 1..=3 {
        other.request(id, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    }

    let browser = Browser::start().await.unwrap();
    browser.goto(&page.url).await.unwrap();
    // The token went into a cookie and out of the address bar.
    let href = browser.run("return location.href", json!([])).await.unwrap();
    assert_eq!(href, json!(format!("http://{}/", page.addr)));

    // The VM list: three rows, filter, sort.
    let rows = "return document.querySelectorAll('#vms tbody tr').length";
    browser.wait_for("every VM listed", &format!("{rows} === {}", addrs.len()), SOON).await.unwrap();
    let listed = browser.run(&text_of("#vms tbody"), json!([])).await.unwrap();
    for app in ["com.example.shop", "com.example.maps", "OpenJDK", "local"] {
        assert!(listed.as_str().unwrap().contains(app), "{app} not listed: {listed}");
    }
    let filter = "const f = document.getElementById('filter'); f.value = arguments[0]; f.dispatchEvent(new Event('input'));";
    browser.run(filter, json!(["maps"])).await.unwrap();
    assert_eq!(browser.run(rows, json!([])).await.unwrap(), json!(1));
    browser.run(filter, json!([""])).await.unwrap();
    let pids = "const i = Array.from(document.querySelectorAll('#vms th')).findIndex(th => th.dataset.key === 'pid') + 1; \
                return Array.from(document.querySelectorAll('#vms tbody td:nth-child(' + i + ')')).map(td => Number(td.textContent))";
    let pids_now = || async { serde_json::from_value::<Vec<u64>>(browser.run(pids, json!([])).await.unwrap()).unwrap() };
    browser.click("#vms th[data-key=pid]").await.unwrap();
    let up = pids_now().await;
    assert!(up.windows(2).all(|w| w[0] <= w[1]) && up.contains(&5151), "pid, ascending: {up:?}");
    browser.click("#vms th[data-key=pid]").await.unwrap();
    let down = pids_now().await;
    assert!(down.windows(2).all(|w| w[0] >= w[1]) && down.len() == addrs.len(), "pid, descending: {down:?}");

    // Make the maps app current from its page.
    browser.click(&format!("#vms tbody tr[data-id='{}']", ids[1])).await.unwrap();
    browser
        .wait_for("the maps app shown", "const t = document.getElementById('vm-title').textContent; return t.startsWith('com.example.maps');", SOON)
        .await
        .unwrap();
    browser.click("#make-current").await.unwrap();
    wait_until("maps is current", || proxy.list().iter().all(|v| v.current == (v.id == ids[1]))).await.unwrap();
    let star = format!("return document.querySelector(\"#vms tbody tr[data-id='{}'] td.current\").textContent === '★'", ids[1]);
    browser.wait_for("the star on maps", &star, SOON).await.unwrap();

    // An empty packet table says why: the maps app's packets are the proxy's own (its DDM
    // thread updates), so only debuggers' shows none; the plain VM has had none at all.
    let hint = "const h = document.getElementById('no-packets'); return h.hidden ? '' : h.textContent";
    browser.wait_for("the proxy's packets to maps", "return document.querySelectorAll('#packets tbody tr').length > 0", SOON).await.unwrap();
    assert_eq!(browser.run(hint, json!([])).await.unwrap(), json!(""));
    browser.click("#only-debuggers").await.unwrap();
    let filtered = browser.run(hint, json!([])).await.unwrap();
    assert!(filtered.as_str().is_some_and(|t| t.contains("None of the last packets is a debugger's")), "{filtered}");
    browser.click("#only-debuggers").await.unwrap();
    browser.click(&format!("#vms tbody tr[data-id='{}']", ids[2])).await.unwrap();
    let plain_shown = format!("return document.getElementById('vm-facts').textContent.includes('address {}')", plain.addr());
    browser.wait_for("the plain VM shown", &plain_shown, SOON).await.unwrap();
    let none = browser.run(hint, json!([])).await.unwrap();
    assert!(none.as_str().is_some_and(|t| t.starts_with("No packets since this page opened")), "{none}");
    assert_eq!(browser.run("return document.querySelectorAll('#packets tbody tr').length", json!([])).await.unwrap(), json!(0));

    // The shop app: its threads, coloured, and following the VM.
    browser.click(&format!("#vms tbody tr[data-id='{}']", ids[0])).await.unwrap();
    browser.wait_for("twelve threads", "return document.querySelectorAll('#threads tbody tr').length === 12", SOON).await.unwrap();
    let states = "return Array.from(document.querySelectorAll('#threads tbody td.state')).map(td => td.className + ':' + td.textContent).join(',')";
    let s = browser.run(states, json!([])).await.unwrap();
    for want in ["st-running:running", "st-waiting:waiting", "st-native:native", "st-vmwait:vmwait"] {
        assert!(s.as_str().unwrap().contains(want), "{want} in {s}");
    }
    let updated = browser.run(&text_of("#threads-info"), json!([])).await.unwrap();
    shop.set_thread_state(0x1001, 3);
    let main_monitor = "return document.querySelector('#threads tbody tr:first-child td.state').classList.contains('st-monitor')";
    browser.wait_for("main shown in monitor", main_monitor, SOON).await.unwrap();
    let again = browser.run(&text_of("#threads-info"), json!([])).await.unwrap();
    assert_ne!(updated, again, "the table's time moves on");

    // Traffic: both debuggers, each with its commands and reply latency percentiles, and
    // the last packets with their names.
    dbg.request(2, SET_VM, 7, &[], SOON).await.unwrap(); // IDSizes
    dbg.request(3, 2, 12, &[0, 0, 0, 0, 0, 0, 0, 1], SOON).await.unwrap(); // SourceDebugExtension: ABSENT_INFORMATION
    browser.wait_for("both debuggers listed", "return document.querySelectorAll('#debuggers tbody tr').length === 2", SOON).await.unwrap();
    let peers = [dbg.local_addr().unwrap().to_string(), other.local_addr().unwrap().to_string()];
    let listed = browser.run(&text_of("#debuggers tbody"), json!([])).await.unwrap();
    assert!(peers.iter().all(|p| listed.as_str().unwrap().contains(p.as_str())), "{peers:?} in {listed}");
    // Row by row: "debugger #N PEER" with its totals, then its commands.
    let traffic = "return Array.from(document.querySelectorAll('#traffic tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent))";
    let deadline = tokio::time::Instant::now() + SOON;
    let (version, id_sizes) = loop {
        let rows: Vec<Vec<String>> = serde_json::from_value(browser.run(traffic, json!([])).await.unwrap()).unwrap();
        if let (Some(v), Some(i)) = (command_row(&rows, &peers[1], "VirtualMachine.Version"), command_row(&rows, &peers[0], "VirtualMachine.IDSizes")) {
            break (v, i);
        }
        assert!(tokio::time::Instant::now() < deadline, "both debuggers' figures never showed: {peers:?} in {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(version[1], "3", "{version:?}");
    // count, out, in, total, p50, p90, p99, max, errors: latencies in µs, ms or s.
    assert!(version[4..9].iter().all(|t| t.ends_with('s')), "{version:?}");
    assert_eq!(id_sizes[1], "1", "{id_sizes:?}");
    // A routine "there is none" is said as such, not in red.
    let smap = "const tr = Array.from(document.querySelectorAll('#traffic tbody tr')).find(tr => tr.cells[0].textContent === 'ReferenceType.SourceDebugExtension'); \
                return tr ? [tr.cells[9].textContent, tr.cells[9].className] : null";
    let cell = browser.wait_for("the SourceDebugExtension row", smap, SOON).await.unwrap();
    assert_eq!(cell, json!(["1 routine", "num"]), "{cell}");

    // Held suspended by a debugger (as at a breakpoint): "stopped", not "ready", until resumed.
    let shop_state = format!("return document.querySelector(\"#vms tbody tr[data-id='{}'] td.state\").textContent", ids[0]);
    dbg.request(4, SET_VM, VM_SUSPEND, &[], SOON).await.unwrap();
    browser.wait_for("the shop app stopped", &format!("{shop_state} === 'stopped'"), SOON).await.unwrap();
    let facts = browser.run(&text_of("#vm-facts"), json!([])).await.unwrap();
    assert!(facts.as_str().is_some_and(|f| f.contains("state stopped")), "{facts}");
    dbg.request(5, SET_VM, VM_RESUME, &[], SOON).await.unwrap();
    browser.wait_for("the shop app ready again", &format!("{shop_state} === 'ready'"), SOON).await.unwrap();
    browser.wait_for("IDSizes in the packets", "return document.getElementById('packets').textContent.includes('VirtualMachine.IDSizes')", SOON).await.unwrap();

    // Heap: the summary at once, the map after "GC and refresh".
    browser.wait_for("the heap summary", "return document.querySelectorAll('#heaps tbody tr').length >= 1", SOON).await.unwrap();
    assert_eq!(shop.gc_count(), 0);
    browser.click("#gc").await.unwrap();
    let drawn = "const i = document.getElementById('heap-map'); return !document.getElementById('heap-figure').hidden && i.complete && i.naturalWidth";
    let width = browser.wait_for("the heap map drawn", drawn, SOON).await.unwrap();
    // Back to the list's natural order for the picture.
    browser.click("#vms th[data-key=port]").await.unwrap();
    assert!(width.as_u64().unwrap() >= 256, "{width}");
    assert_eq!(shop.gc_count(), 1);
    assert_eq!(maps.gc_count(), 0);

    // The page never hit an error (a failed request or a script error shows here).
    let notice = browser.run("const n = document.getElementById('notice'); return n.hidden ? '' : n.textContent", json!([])).await.unwrap();
    assert_eq!(notice, json!(""));
    let link = browser.run(&text_of("#link"), json!([])).await.unwrap();
    assert_eq!(link, json!("live"));

    // Let the row highlight fade before the picture is taken.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let png_bytes = browser.screenshot().await.unwrap();
    let info = png::Decoder::new(std::io::Cursor::new(&png_bytes)).read_info().unwrap().info().clone();
    std::fs::write(screenshot_path("web-monitor.png"), &png_bytes).unwrap();
    // The window less what the browser keeps for itself.
    assert!(info.width == WINDOW.0 && info.height > WINDOW.1 / 2, "{}x{}", info.width, info.height);
    eprintln!("screenshot: {}", screenshot_path("web-monitor.png").display());

    vm_columns_fit(&browser, WINDOW.0).await;

    // A laptop's window: the list goes above the VM shown, every column in view.
    browser.resize(LAPTOP.0, LAPTOP.1).await.unwrap();
    let width = format!("return window.innerWidth === {}", LAPTOP.0);
    browser.wait_for("the narrower window", &width, SOON).await.unwrap();
    std::fs::write(screenshot_path("web-monitor-1280.png"), browser.screenshot().await.unwrap()).unwrap();
    // With the list across the window, no app or VM name is cut, and the star column is
    // no wider than its header.
    let cut = "return Array.from(document.querySelectorAll('#vms td.app, #vms td.ident')).filter(td => td.scrollWidth > td.clientWidth).map(td => td.textContent)";
    assert_eq!(browser.run(cut, json!([])).await.unwrap(), json!([]));
    let star = "const th = document.querySelector('#vms th[data-key=current]'); return th.getBoundingClientRect().width";
    let star_width = browser.run(star, json!([])).await.unwrap().as_f64().unwrap_or(f64::MAX);
    assert!(star_width < 50.0, "the star column is {star_width} px wide");
    eprintln!("screenshot: {}", screenshot_path("web-monitor-1280.png").display());
    vm_columns_fit(&browser, LAPTOP.0).await;
    drop(browser);
    drop((dbg, other));
    proxy.stop().await;
}

/// Two VMs of one name: the header names which one is current (here by its pid; a VM of
/// that name on another host makes it "NAME on HOST").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_tells_apart_vms_of_one_name() {
    assert!(browser_available(), "chromium and chromedriver are needed (apt-get install chromium chromium-driver; ./test.sh does)");
    let worker = |pid| FakeVmConfig { app_name: "Worker".into(), pid, ..Default::default() };
    let (a, b) = (FakeVm::start(worker(3131)).await, FakeVm::start(worker(3232)).await);
    let (proxy, page) = monitor_sharing(&[a.addr(), b.addr()]).await;
    proxy.ready(0).await;
    proxy.ready(1).await;
    let current = proxy.list().into_iter().find(|v| v.current).expect("a current VM");
    let pid = current.status.pid.expect("its pid");
    let browser = Browser::start().await.unwrap();
    browser.goto(&page.url).await.unwrap();
    let summary = "return document.getElementById('summary').textContent";
    let want = format!("current: Worker pid {pid}");
    let shown = browser.wait_for("the header", &format!("{summary}.endsWith({})", json!(want)), SOON).await;
    let text = browser.run(summary, json!([])).await.unwrap();
    assert!(shown.is_ok(), "{want:?} in {text}");
    drop(browser);
    proxy.stop().await;
}
