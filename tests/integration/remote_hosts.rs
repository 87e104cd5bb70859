//! `--ssh` hosts as rows of their own, in `list` (text and `--hosts --json`) and on the page:
//! a host that is up with its JVM count, one up with no JVM, one whose key is not in
//! known_hosts (refused, with the fix), and a name that does not resolve. The refused host
//! comes up as soon as its key is put in known_hosts, not after the 5-minute wait. A JVM
//! whose agent listens on all addresses is marked, here and on a host, with one WARN line.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::Served;
use crate::remote::{agent, jvm_on, program, ready, row, serve, SLOW};
use crate::support::browser::{browser_available, Browser};
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

/// Waits (up to `within`) until the rows of `list --hosts --json` satisfy `cond`.
async fn hosts_until(served: &Served, what: &str, within: Duration, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        // Until the daemon answers, `list` says none does.
        let (code, out, err) = served.run(&["list", "--hosts", "--json"]);
        if code == 0 {
            let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
            if cond(&rows) {
                return rows;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {out}{err}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn host<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter().find(|r| r["host"] == name).unwrap_or(&Value::Null)
}

/// Removes `addr`'s key from the test's known_hosts (a host never connected to).
fn forget(keys: &Keys, addr: std::net::Ipv4Addr) {
    let path = keys.path("known_hosts");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text.lines().filter(|l| !l.starts_with(&format!("{addr} "))).map(|l| format!("{l}\n")).collect();
    assert_ne!(kept.len(), text.len(), "{addr} was in known_hosts");
    std::fs::write(&path, kept).unwrap();
}

/// The page's monitor address from its log line.
async fn monitor_url(served: &Served) -> String {
    let line = served.wait_log("monitor at http://").await;
    line.split("monitor at ").nth(1).unwrap().split_whitespace().next().unwrap().to_string()
}

/// What the page's host table shows: each row's cell texts.
const HOST_ROWS: &str = "return Array.from(document.querySelectorAll('#hosts tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent))";

/// The host table's cells that are cut or out of a 1280-pixel window.
const HOSTS_FIT: &str = "
    const box = document.querySelector('#hosts-box');
    const cells = Array.from(document.querySelectorAll('#hosts th, #hosts tbody tr:not(.why) td'));
    const scroll = box.parentElement.getBoundingClientRect();
    const rows = Array.from(document.querySelectorAll('#hosts tbody tr'));
    return {
        shown: !box.hidden && box.getBoundingClientRect().height > 0,
        below: rows.filter(r => r.getBoundingClientRect().bottom > scroll.bottom + 0.5).map(r => r.textContent),
        page_width: document.scrollingElement.scrollWidth,
        cut: cells.filter(c => c.getBoundingClientRect().right > window.innerWidth + 0.5 || c.scrollWidth > c.clientWidth).map(c => c.textContent),
    };";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_are_rows_of_their_own_and_a_fixed_known_hosts_is_noticed() {
    crate::need_test_hosts!();
    assert!(browser_available(), "chromium and chromedriver are needed (apt-get install chromium chromium-driver; ./test.sh does)");
    let keys = Keys::new().unwrap();
    let up = TestHost::start(&keys, "up").unwrap();
    let idle = TestHost::start(&keys, "idle").unwrap();
    let stranger = TestHost::start(&keys, "stranger").unwrap();
    forget(&keys, stranger.net.addr);
    // On all of the host's addresses: marked, with who can reach it.
    let app = JavaApp::spawn(jvm_on(&up, Path::new("java"), "Billing", agent(false, "*:8000"))).await.unwrap();
    let served = serve(&keys, &["up", "idle", "stranger", "nowhere.invalid"], &["--web", "127.0.0.1:0"]);

    let rows = hosts_until(&served, "every host's row", SLOW, |r| {
        host(r, "up")["jvms"] == 1
            && host(r, "idle")["note"] == "no JVM with a JDWP agent"
            && host(r, "stranger")["state"] == "refused"
            && host(r, "nowhere.invalid")["state"] == "down"
    })
    .await;
    assert_eq!(rows.iter().map(|r| r["host"].as_str().unwrap()).collect::<Vec<_>>(), ["up", "idle", "stranger", "nowhere.invalid"], "in the order given");
    assert_eq!((&host(&rows, "up")["state"], &host(&rows, "up")["note"]), (&json!("up"), &Value::Null), "{rows:?}");
    assert!(host(&rows, "up")["last_scan_ms"].is_u64() && host(&rows, "idle")["jvms"] == 0, "{rows:?}");
    // The command that works: plain `ssh stranger` would not read the --ssh-config file.
    let connect_once = format!("connect once with `ssh -F {} stranger`", keys.ssh_config().display());
    let refused = host(&rows, "stranger")["reason"].as_str().unwrap();
    assert!(refused.contains("No ED25519 host key is known") && refused.contains(&connect_once), "{refused}");
    assert!(refused.contains("trust it on first use") && refused.contains("as soon as known_hosts changes"), "{refused}");
    assert_eq!(host(&rows, "stranger")["last_scan_ms"], Value::Null);
    let unknown = host(&rows, "nowhere.invalid")["reason"].as_str().unwrap();
    assert!(unknown.contains("Could not resolve hostname nowhere.invalid"), "{unknown}");
    // A name the config given has no `Host` entry for: said, beside ssh's words.
    let no_entry = format!("no `Host nowhere.invalid` entry in {}", keys.ssh_config().display());
    assert!(unknown.contains(&no_entry), "{unknown}");

    // Plain `list`: the VMs, then a row per host and why under it.
    let vms = served.list_until("Billing on up", |r| ready(r, "up", "Billing")).await;
    let (code, text, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    let at = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in:\n{text}"));
    let header = text.lines().position(|l| l.starts_with("HOST ") && l.contains(" LINK ") && l.ends_with("LAST SCAN"));
    assert!(header.is_some_and(|h| h > at("Billing")), "the hosts under the VMs: {text}");
    assert!(text.lines().nth(at("idle ") + 1).is_some_and(|l| l == "    ! no JVM with a JDWP agent"), "{text}");
    assert!(text.lines().nth(at("stranger ")).is_some_and(|l| l.contains("refused")), "{text}");
    assert!(text.lines().nth(at("stranger ") + 1).is_some_and(|l| l.contains(&connect_once)), "{text}");
    assert!(text.lines().nth(at("nowhere.invalid ")).is_some_and(|l| l.contains("down")), "{text}");

    // The agent on all of up's addresses: in the list, its JSON, and once in the log.
    let billing = row(&vms, "up", "Billing").unwrap();
    let exposed = billing["process"]["exposed"].as_str().unwrap_or_default();
    assert!(exposed.contains("anyone who can reach up's port 8000") && exposed.contains("address=127.0.0.1:8000"), "{vms:?}");
    assert!(text.contains("127.0.0.1:8000 (all addresses)") && text.contains(exposed), "{text}");
    let warn = served.wait_log("listens on all addresses").await;
    assert!(warn.contains("WARN") && warn.contains("Billing") && warn.contains("up's port 8000"), "{warn}");

    // The page at 1280 pixels shows a row per host, and why under the refused and idle ones.
    let browser = Browser::start().await.unwrap();
    browser.resize(1280, 900).await.unwrap();
    browser.goto(&monitor_url(&served).await).await.unwrap();
    let shown = browser.wait_for("the host rows", &format!("{HOST_ROWS}.filter(r => r.length === 4).length === 4"), SLOW).await;
    assert!(shown.is_ok(), "{shown:?}");
    let cells = browser.run(HOST_ROWS, json!([])).await.unwrap();
    let cells: Vec<Vec<String>> = serde_json::from_value(cells).unwrap();
    let find = |name: &str| cells.iter().position(|r| r.first().is_some_and(|c| c == name)).unwrap_or_else(|| panic!("no {name} in {cells:?}"));
    assert_eq!(cells[find("up")][1..3], ["up".to_string(), "1".into()], "{cells:?}");
    assert_eq!(cells[find("idle") + 1], ["no JVM with a JDWP agent"], "{cells:?}");
    assert_eq!(cells[find("stranger")][1], "refused", "{cells:?}");
    assert!(cells[find("stranger") + 1][0].contains(&connect_once), "{cells:?}");
    assert_eq!(cells[find("nowhere.invalid")][1], "down", "{cells:?}");
    let marked = "return Array.from(document.querySelectorAll('#vms td.state.exposed')).map(td => td.title)";
    let marked = browser.wait_for("the exposed VM marked", &format!("const m = (() => {{ {marked} }})(); return m.length ? m : null"), SLOW).await.unwrap();
    assert!(marked[0].as_str().is_some_and(|t| t.contains("up's port 8000")), "{marked}");
    let fit = browser.run(HOSTS_FIT, json!([])).await.unwrap();
    assert_eq!((&fit["shown"], &fit["cut"], &fit["below"]), (&json!(true), &json!([]), &json!([])), "every host row in view: {fit}");
    assert!(fit["page_width"].as_u64().unwrap() <= 1280, "the page scrolls sideways: {fit}");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-monitor-hosts-1280.png");
    std::fs::write(&shot, browser.screenshot().await.unwrap()).unwrap();
    eprintln!("screenshot: {}", shot.display());
    drop(browser);

    // The user connects once (here: the key put in known_hosts): the host comes up at the
    // next look, not after the 5 minutes a refusal waits.
    let fixed_at = tokio::time::Instant::now();
    keys.trust(stranger.net.addr, &stranger.host_key_pub()).unwrap();
    hosts_until(&served, "stranger up", SLOW, |r| host(r, "stranger")["state"] == "up" && host(r, "stranger")["last_scan_ms"].is_u64()).await;
    assert!(fixed_at.elapsed() < Duration::from_secs(60), "{:?}", fixed_at.elapsed());
    served.wait_log("known_hosts changed; trying stranger again now").await;
    let log = served.log_text();
    assert_eq!(log.matches("listens on all addresses").count(), 1, "one WARN line, not one per round:\n{log}");
    drop(served);
    drop(app);
    drop((up, idle, stranger));
}

/// A JVM on this machine whose agent listens on all addresses (bound only while the test
/// runs, on a port it picks) is marked in `list` and its JSON, with one WARN line; one on
/// loopback beside it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_agent_on_all_addresses_is_marked_once() {
    let marker = format!("jdwpmux.test=exposed-{}", std::process::id());
    let spec = |class: &str, address: &str| JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, address),
        sources: program(class),
        class: class.into(),
        ..JvmSpec::default()
    };
    let open = JavaApp::spawn(spec("Open", "0.0.0.0:0")).await.unwrap();
    let closed = JavaApp::spawn(spec("Closed", "127.0.0.1:0")).await.unwrap();
    let port = open.port();
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let find = |rows: &[Value], app: &str| rows.iter().find(|r| r["app"] == app).cloned().unwrap_or(Value::Null);
    // Ready, and looked at again after jdwpmux attached (the agent stopped listening).
    let rows = served
        .list_until("both JVMs ready and scanned again", |r| {
            ["Open", "Closed"].iter().all(|a| find(r, a)["state"] == "ready" && find(r, a)["process"]["listening"] == false)
        })
        .await;
    let exposed = find(&rows, "Open")["process"]["exposed"].as_str().unwrap_or_default().to_string();
    assert!(exposed.contains(&format!("anyone who can reach this machine's port {port}")), "{rows:?}");
    assert!(exposed.contains(&format!("start it with address=127.0.0.1:{port}")), "{rows:?}");
    assert_eq!(find(&rows, "Closed")["process"]["exposed"], Value::Null, "{rows:?}");
    let (code, text, err) = served.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    let line = |app: &str| text.lines().position(|l| l.contains(app)).unwrap_or_else(|| panic!("no {app} in:\n{text}"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[line("Open")].ends_with("(all addresses)") && lines[line("Open") + 1] == format!("    ! {exposed}"), "{text}");
    assert!(!lines[line("Closed")].contains("all addresses") && !lines.get(line("Closed") + 1).is_some_and(|l| l.contains("all addresses")), "{text}");
    let log = served.log_text();
    let warns: Vec<&str> = log.lines().filter(|l| l.contains("listens on all addresses")).collect();
    assert_eq!(warns.len(), 1, "{log}");
    assert!(warns[0].contains("WARN") && warns[0].contains("Open") && warns[0].contains(&format!("port {port}")), "{log}");
    drop(served);
    drop((open, closed));
}
