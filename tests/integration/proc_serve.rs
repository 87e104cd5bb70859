//! `serve` finding this machine's JVMs by their process: one on a port no scan would try,
//! one in a container (another network and pid namespace) whose agent listens on all of the
//! container's addresses, reached at the container's own address, and one whose agent
//! listens on the container's loopback, reached inside its network namespace. Only JVMs
//! with this test's marker on their command line are looked at (--proc-match), so other
//! tests' JVMs are never touched.

use crate::cli::Served;
use crate::remote::{agent, debug_once, program};
use crate::support::testnet::Netns;
use crate::support::ports::free_port;
use crate::support::{JavaApp, JvmSpec};

/// This test's row of `app`, wherever it is reached (`remote::row` leaves out rows reached at
/// another namespace's address; here one is meant to be).
fn row<'a>(rows: &'a [serde_json::Value], host: &str, app: &str) -> Option<&'a serde_json::Value> {
    rows.iter().find(|r| r["host"] == host && r["app"] == app)
}


#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_jvms_are_found_by_their_process_containers_too() {
    crate::need_test_hosts!();
    let marker = format!("jdwpmux.test=proc-{}", std::process::id());
    let spec = |class: &str, prefix: Vec<String>, address: String| JvmSpec {
        prefix,
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, &address),
        sources: program(class),
        class: class.into(),
        ..JvmSpec::default()
    };
    let here_port = free_port();
    let here = JavaApp::spawn(spec("Billing", vec![], format!("127.0.0.1:{here_port}"))).await.unwrap();
    // A container: a network namespace on a link to this one, and a pid namespace of its own.
    let box_net = Netns::new().unwrap();
    let mut in_box = box_net.prefix();
    in_box.extend(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"].map(String::from));
    let open = JavaApp::spawn(spec("Shipping", in_box.clone(), "*:8100".into())).await.unwrap();
    let closed = JavaApp::spawn(spec("Hidden", in_box, "127.0.0.1:8101".into())).await.unwrap();

    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let rows = served
        .list_until("three JVMs", |r| ["Billing", "Shipping", "Hidden"].iter().all(|a| row(r, "local", a).is_some_and(|v| v["state"] == "ready")))
        .await;
    assert_eq!(rows.len(), 3, "only this test's JVMs: {rows:?}");
    let billing = row(&rows, "local", "Billing").unwrap();
    assert_eq!((&billing["addr"], &billing["pid"], &billing["source"]), (&format!("127.0.0.1:{here_port}").into(), &here.pid().unwrap().into(), &"proc".into()));
    let shipping = row(&rows, "local", "Shipping").unwrap();
    assert_eq!(shipping["addr"], format!("{}:8100", box_net.addr), "{rows:?}");
    assert!(shipping["note"].as_str().is_some_and(|n| n.contains("container")), "{rows:?}");
    // On all of its container's addresses: said so, with the container's remedy.
    let exposed = shipping["process"]["exposed"].as_str().unwrap_or_default();
    assert!(exposed.contains("the container's port 8100") && exposed.contains("-p 127.0.0.1:8100:8100"), "{rows:?}");
    assert_eq!(row(&rows, "local", "Billing").unwrap()["process"]["exposed"], serde_json::Value::Null, "{rows:?}");
    // On its namespace's loopback only, nothing published: reached inside the namespace,
    // which is named where it runs.
    let hidden = row(&rows, "local", "Hidden").unwrap();
    assert!(hidden["debugger_port"].is_u64() && hidden["note"].is_null(), "{rows:?}");
    assert_eq!(hidden["process"]["place"], format!("netns {}", box_net.name), "{rows:?}");
    let (_, text, _) = served.run(&["list"]);
    assert!(text.contains(&format!("netns {}", box_net.name)), "{text}");

    for (class, app) in [("Billing", &here), ("Shipping", &open), ("Hidden", &closed)] {
        let rows = served.list_until("ready", |r| row(r, "local", class).is_some_and(|v| v["state"] == "ready")).await;
        let port = row(&rows, "local", class).unwrap()["debugger_port"].as_u64().unwrap() as u16;
        debug_once(port, class, app).await;
    }
    // A JVM that ends leaves the list.
    drop(closed);
    served.list_until("Hidden gone", |r| row(r, "local", "Hidden").is_none()).await;
    drop(served);
}

/// A JVM restarted on its port is a new process: `list` names it, on the same debugger port,
/// and jdb reaches it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_restarted_on_its_port_is_listed_with_its_new_pid() {
    let marker = format!("jdwpmux.test=restart-{}", std::process::id());
    let vm_port = free_port();
    let spec = || JvmSpec {
        jvm: vec![format!("-D{marker}")],
        agent: agent(false, &format!("127.0.0.1:{vm_port}")),
        sources: program("Billing"),
        class: "Billing".into(),
        ..JvmSpec::default()
    };
    let mut first = JavaApp::spawn(spec()).await.unwrap();
    let served = Served::start(&["--proc", "--proc-match", &marker, "--no-scan", "--no-adb", "--scan-interval", "0.5"]);
    let ready_with = |pid: u32| move |r: &[serde_json::Value]| row(r, "local", "Billing").is_some_and(|v| v["state"] == "ready" && v["pid"] == pid);
    let rows = served.list_until("the first JVM", ready_with(first.pid().unwrap())).await;
    let port = row(&rows, "local", "Billing").unwrap()["debugger_port"].as_u64().unwrap();

    first.kill().await.unwrap();
    let second = JavaApp::spawn(spec()).await.unwrap();
    let rows = served.list_until("the new pid", ready_with(second.pid().unwrap())).await;
    assert_eq!(row(&rows, "local", "Billing").unwrap()["debugger_port"].as_u64(), Some(port), "{rows:?}");
    debug_once(port as u16, "Billing", &second).await;
    drop(served);
}
