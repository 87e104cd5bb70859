//! The far side does on its host what `serve` does here: a JVM in a network namespace of
//! the test host's own (a container's shape: its agent on that namespace's loopback, nothing
//! published), found by the far side's scan, reached inside its namespace, and debugged with
//! jdb through `serve --ssh HOST --far always`; a plain ssh forward cannot reach it and says
//! so, with what to do.

use std::path::Path;

use crate::remote::{agent, debug_once, program, row, serve, SLOW};
use crate::remote_far::far_bin;
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

/// `class` on `host`, in a network namespace of its own inside the host (loopback up), its
/// agent on that namespace's 127.0.0.1:8000.
fn boxed_on(host: &TestHost, class: &str) -> JvmSpec {
    let mut prefix = host.prefix();
    prefix.extend(["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""].map(String::from));
    JvmSpec { java: Path::new("java").to_path_buf(), prefix, agent: agent(false, "127.0.0.1:8000"), sources: program(class), class: class.into(), ..JvmSpec::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_reaches_a_jvm_in_a_namespace_of_its_host() {
    crate::need_test_hosts!();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "boxhost").unwrap();
    let app = JavaApp::spawn(boxed_on(&host, "Boxed")).await.unwrap();
    app.wait_for_output("Listening for transport", SLOW).await.unwrap();

    // Plain ssh forwards reach only the host's own namespace: listed, with the remedy.
    let served = serve(&keys, &["boxhost"], &["--far", "never"]);
    let rows = served.list_until("listed, not reachable by a forward", |r| row(r, "boxhost", "Boxed").is_some_and(|v| v["note"].is_string())).await;
    let note = row(&rows, "boxhost", "Boxed").unwrap()["note"].as_str().unwrap_or_default().to_string();
    assert!(note.contains("--far always") && note.contains("127.0.0.1:8000"), "{note}");
    assert_eq!(row(&rows, "boxhost", "Boxed").unwrap()["process"]["place"], "network namespace", "{rows:?}");
    drop(served);

    // jdwpmux on the host enters the namespace and serves it like any other.
    let far = far_bin();
    let served = serve(&keys, &["boxhost"], &["--far", "always", "--far-path", &far.path]);
    served.wait_log("using jdwpmux on boxhost").await;
    let rows = served.list_until("reached through the far side", |r| row(r, "boxhost", "Boxed").is_some_and(|v| v["state"] == "ready" && v["debugger_port"].is_u64())).await;
    // Where it runs, as the far side said it (protocol 4).
    assert_eq!(row(&rows, "boxhost", "Boxed").unwrap()["process"]["place"], "network namespace", "{rows:?}");
    let line = served.wait_log("connected to the far side").await;
    assert!(line.contains("protocol=4"), "{line}");
    let port = row(&rows, "boxhost", "Boxed").and_then(|v| v["debugger_port"].as_u64()).unwrap() as u16;
    debug_once(port, "Boxed", &app).await;
    drop(served);
}
