//! Who may use the monitor page, through the real binary: no token, a wrong token, a wrong
//! Host (DNS rebinding) and cross-origin requests are refused with one log line each; no
//! answer carries a CORS header; a non-loopback `--web` needs `--allow-remote`.

use std::net::SocketAddr;

use crate::cli::Served;
use crate::harness::wait_until;
use crate::support::http::{self, Response};
use crate::support::{FakeVm, FakeVmConfig};

const REFUSED: &str = "web monitor refused a request";

/// `serve --web 127.0.0.1:0`: the monitor's address and token, from the log line.
async fn served_monitor(vm: &FakeVm) -> (Served, SocketAddr, String) {
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--web", "127.0.0.1:0"]);
    let line = served.wait_log("monitor at http://").await;
    let url = line.split("monitor at ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, query) = rest.split_once('/').unwrap();
    let token = query.strip_prefix("?token=").unwrap().to_string();
    assert_eq!(token.len(), 64, "{line}");
    (served, addr.parse().unwrap(), token)
}

/// A request that must be refused: what it is, method, path, headers, status.
type Refused<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>, u16);

fn refusals(served: &Served) -> Vec<String> {
    served.log_text().lines().filter(|l| l.contains(REFUSED)).map(str::to_string).collect()
}

fn no_cors(r: &Response) {
    let cors: Vec<_> = r.headers.iter().filter(|(k, _)| k.to_ascii_lowercase().starts_with("access-control-")).collect();
    assert!(cors.is_empty(), "CORS headers: {cors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_token_from_elsewhere_or_for_another_host_are_refused() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let (served, addr, token) = served_monitor(&vm).await;
    wait_until("VM ready", || {
        let (_, out, _) = served.run(&["list", "--json"]);
        out.contains("\"ready\"")
    })
    .await
    .unwrap();
    let host = addr.to_string();
    let evil = format!("http://evil.example:{}", addr.port());
    let ours = format!("http://{addr}");
    let cookie = format!("jdwpmux_{}={token}", addr.port());
    let t = token.as_str();
    let exit_with_url_token = format!("/api/vms/0/exit?token={t}");

    // Let through: the token as a header, in the URL, or as the cookie the page sets.
    let ok = http::get(addr, "/api/vms", &[("X-Jdwpmux-Token", t)]).await.unwrap();
    assert_eq!(ok.status, 200, "{}", ok.text());
    no_cors(&ok);
    assert_eq!(http::get(addr, &format!("/api/vms?token={t}"), &[]).await.unwrap().status, 200);
    let page = http::get(addr, &format!("/?token={t}"), &[]).await.unwrap();
    assert_eq!((page.status, page.header("location")), (303, Some("/")));
    let set = page.header("set-cookie").unwrap();
    assert!(set.starts_with(&cookie) && set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    let html = http::get(addr, "/", &[("Cookie", &cookie)]).await.unwrap();
    assert_eq!(html.status, 200);
    assert!(html.text().contains(t), "the page carries the token for its POSTs");
    assert!(html.header("content-security-policy").unwrap().contains("frame-ancestors 'none'"));
    no_cors(&html);
    assert!(refusals(&served).is_empty(), "{:?}", refusals(&served));

    // Refused, each with one log line.
    let cases: Vec<Refused> = vec![
        ("no token", "GET", "/api/vms", vec![], 401),
        ("no token on the page", "GET", "/", vec![], 401),
        ("wrong token", "GET", "/api/vms", vec![("X-Jdwpmux-Token", "0123")], 401),
        ("wrong cookie", "GET", "/api/vms", vec![("Cookie", "jdwpmux_1=x")], 401),
        ("rebound name", "GET", "/api/vms", vec![("Host", "evil.example:8699"), ("X-Jdwpmux-Token", t)], 403),
        ("another port", "GET", "/api/vms", vec![("Host", "127.0.0.1:1"), ("X-Jdwpmux-Token", t)], 403),
        ("cross-origin read", "GET", "/api/vms", vec![("Origin", &evil), ("X-Jdwpmux-Token", t)], 403),
        ("cross-origin GC", "POST", "/api/vms/0/gc", vec![("Origin", &evil), ("X-Jdwpmux-Token", t)], 403),
        ("cross-site GC", "POST", "/api/vms/0/gc", vec![("Sec-Fetch-Site", "cross-site"), ("X-Jdwpmux-Token", t)], 403),
        ("same-site GC", "POST", "/api/vms/0/gc", vec![("Sec-Fetch-Site", "same-site"), ("X-Jdwpmux-Token", t)], 403),
        ("a forged form: cookie only", "POST", "/api/vms/0/select", vec![("Origin", &ours), ("Cookie", &cookie)], 401),
        ("token in the URL only", "POST", &exit_with_url_token, vec![], 401),
        ("preflight", "OPTIONS", "/api/vms/0/gc", vec![("Origin", &evil), ("Access-Control-Request-Method", "POST")], 403),
    ];
    for (i, (what, method, path, headers, status)) in cases.iter().enumerate() {
        let mut h = headers.clone();
        if !h.iter().any(|(k, _)| *k == "Host") {
            h.push(("Host", &host));
        }
        let r = http::request(addr, method, path, &h, &[]).await.unwrap();
        assert_eq!(r.status, *status, "{what}: {}", r.text());
        assert!(r.text().contains("refused"), "{what}: {}", r.text());
        no_cors(&r);
        wait_until("the refusal's log line", || refusals(&served).len() == i + 1).await.unwrap_or_else(|e| panic!("{what}: {e}: {:?}", refusals(&served)));
    }
    let lines = refusals(&served);
    assert!(lines.iter().all(|l| !l.contains(t)), "the token never reaches the log in a refusal");
    assert!(lines.iter().any(|l| l.contains("evil.example")), "{lines:?}");
    // Nothing the refused requests asked for happened.
    assert_eq!(vm.gc_count(), 0);
    assert_eq!(vm.exit_status(), None);

    // The page's own POST, for comparison: same origin, the header, the cookie.
    let headers = [("Origin", ours.as_str()), ("Sec-Fetch-Site", "same-origin"), ("X-Jdwpmux-Token", t), ("Cookie", &cookie)];
    let r = http::request(addr, "POST", "/api/vms/0/select", &headers, &[]).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // A GET cannot change anything.
    let r = http::get(addr, "/api/vms/0/gc", &[("X-Jdwpmux-Token", t)]).await.unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(vm.gc_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_open_to_the_network_needs_allow_remote() {
    let mut served = Served::start(&["--no-scan", "--no-proc", "--no-adb", "--web", "0.0.0.0:0"]);
    let code = served.wait_exit(std::time::Duration::from_secs(20));
    assert_eq!(code, Some(2), "{}", served.log_text());
    let log = served.log_text();
    assert!(log.contains("--web 0.0.0.0:0 is not a loopback address") && log.contains("--allow-remote"), "{log}");
    assert_eq!(log.trim().lines().count(), 1, "{log}");
}
