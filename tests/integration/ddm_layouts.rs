//! The proxy's DDM requests against a VM that follows the design document's layouts and
//! against one that refuses them: thread status both ways (THST polled, or THST with an
//! interval and pushed status), the form remembered per VM, and a FAIL reply ending every
//! command at once with the VM's code and message.

use std::time::{Duration, Instant};

use jdwpmux::settings::DdmMode;

use crate::cli::Served;
use crate::ddm_views::ready;
use crate::harness::{wait_until, Proxy, SOON};
use crate::support::{FakeVm, FakeVmConfig};

/// A command that fails must say so long before any of the proxy's deadlines (10 s and up).
const AT_ONCE: Duration = Duration::from_secs(5);

fn then_off(vm: &FakeVm) -> bool {
    vm.received_chunks().iter().any(|c| c.is(b"THEN") && c.data.first() == Some(&0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_show_on_a_vm_that_takes_the_documents_thst_and_the_form_is_remembered() {
    let vm = FakeVm::start(FakeVmConfig::document()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    ready(&served, 1).await;

    let (code, out, err) = served.run(&["threads", "4242", "--once"]);
    assert_eq!(code, 0, "{err}");
    for name in ["main", "Signal Catcher", "HeapTaskDaemon"] {
        assert!(out.contains(name), "missing {name}:\n{out}");
    }
    // The document's layout says whether each thread is suspended (the real one does not).
    let main_row = out.lines().find(|l| l.contains("main")).unwrap();
    assert!(main_row.contains("running") && main_row.contains(" no"), "{out}");
    let asked = vm.thst_requests();
    assert_eq!(asked[..2], [None, Some(500)], "polled first, then the document's form: {asked:?}");
    // The viewer left: the pushes are turned off (interval 0) and thread updates too.
    wait_until("THST 0 and THEN off", || vm.thst_interval() == 0 && vm.thst_requests().contains(&Some(0)) && then_off(&vm))
        .await
        .unwrap();

    // The next viewer, and one after a reconnect, are served the document's way at once.
    for reconnect in [false, true] {
        if reconnect {
            let before = vm.connections_accepted();
            assert!(vm.drop_connection());
            wait_until("reconnected", || vm.connections_accepted() > before && vm.is_connected()).await.unwrap();
            ready(&served, 1).await;
        }
        let seen = vm.thst_requests().len();
        let (code, out, err) = served.run(&["threads", "4242", "--once"]);
        assert_eq!(code, 0, "after reconnect {reconnect}: {err}");
        assert!(out.contains("HeapTaskDaemon"), "{out}");
        let asked = vm.thst_requests();
        assert!(asked[seen..].iter().all(Option::is_some), "polled again (reconnect {reconnect}): {asked:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_status_reaches_each_viewer_at_its_pace_and_stops_with_the_last() {
    let vm = FakeVm::start(FakeVmConfig::document()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let handle = proxy.handle(0).await;
    let mut fast = handle.watch_threads(Duration::from_millis(100)).await.unwrap();
    let mut slow = handle.watch_threads(Duration::from_millis(1500)).await.unwrap();
    let started = Instant::now();
    for n in 0..4 {
        let snapshot = tokio::time::timeout(SOON, fast.recv()).await.unwrap().unwrap().unwrap();
        let main = snapshot.threads.get(&0x1001).unwrap_or_else(|| panic!("snapshot {n}: {snapshot:?}"));
        assert_eq!((main.name.as_deref(), main.suspended), (Some("main"), Some(false)));
    }
    // Four pushes take at least 1.5 s (one every 500 ms): the slow viewer had two at most.
    assert!(started.elapsed() >= Duration::from_millis(1400), "{:?}", started.elapsed());
    let mut slow_got = 0;
    while let Ok(update) = slow.try_recv() {
        assert!(update.is_ok());
        slow_got += 1;
    }
    assert!((1..=2).contains(&slow_got), "the slow viewer got {slow_got}");
    assert_eq!(vm.thst_interval(), 500);
    drop(fast);
    drop(slow);
    wait_until("pushes off", || vm.thst_interval() == 0 && then_off(&vm)).await.unwrap();
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documents_vm_answers_features_heap_and_exit() {
    let vm = FakeVm::start(FakeVmConfig::document()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    ready(&served, 1).await;
    // FEAT is not in the document: answered empty, shown as no feature list, at once.
    let t = Instant::now();
    let (code, out, err) = served.run(&["features", "4242"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no feature list"), "{out}");
    assert!(t.elapsed() < AT_ONCE, "{:?}", t.elapsed());
    let (code, out, err) = served.run(&["heap", "4242", "--summary"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heap 1"), "{out}");
    let (code, out, err) = served.run(&["exit", "4242", "3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sent EXIT 3") && out.contains("closed its connection"), "{out}");
    assert_eq!(vm.exit_status(), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fail_reply_ends_each_command_at_once_with_the_vms_code_and_message() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    ready(&served, 1).await;
    let cases: &[(&[u8; 4], &[&str])] = &[
        (b"HPIF", &["heap", "4242", "--summary"]),
        (b"HPSG", &["heap", "4242", "--timeout", "25"]),
        (b"NHSG", &["heap", "4242", "--native", "--timeout", "25"]),
        (b"HPGC", &["heap", "4242", "--gc", "--timeout", "25"]),
        (b"FEAT", &["features", "4242"]),
        (b"THEN", &["threads", "4242", "--once"]),
        // Both THST forms refused.
        (b"THST", &["threads", "4242", "--once"]),
        (b"EXIT", &["exit", "4242", "3"]),
    ];
    for (ty, args) in cases {
        let what = String::from_utf8_lossy(&ty[..]).into_owned();
        vm.fail_chunks_of(ty, Some((7, "not today")));
        let t = Instant::now();
        let (code, out, err) = served.run(args);
        let took = t.elapsed();
        vm.fail_chunks_of(ty, None);
        assert_eq!(code, 1, "{what}: {out}{err}");
        let want = format!("the VM refused {what}: FAIL error 7: not today");
        assert!(err.contains(&want), "{what}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        assert!(took < AT_ONCE, "{what} took {took:?}");
    }
    let asked = vm.thst_requests();
    assert!(asked.contains(&None) && asked.contains(&Some(500)), "both THST forms tried: {asked:?}");
    assert_eq!(vm.exit_status(), None);
    // And the VM serves on.
    let (code, out, err) = served.run(&["threads", "4242", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("main"), "{out}");
}
