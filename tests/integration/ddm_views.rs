//! The proxy as a DDM server, through the real binary against the fake VM: thread tables,
//! heap summary and picture, features, exit, the state `list` shows, and malformed chunks.

use std::time::Duration;

use crate::cli::Served;
use crate::harness::wait_until;
use crate::support::{FakeVm, FakeVmConfig};

pub async fn ready(served: &Served, n: usize) -> serde_json::Value {
    served.wait_log("control socket at").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (code, out, err) = served.run(&["list", "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v.as_array().unwrap().iter().filter(|e| e["state"] == "ready").count() == n {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "not ready: {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Pixels of exactly this colour in an RGB(A) PNG.
fn count_colour(png_bytes: &[u8], rgb: [u8; 3]) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let n = buf[..info.buffer_size()].chunks(step).filter(|p| p[..3] == rgb).count();
    (info.width, info.height, n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_heap_features_and_exit_from_the_shell() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    let list = ready(&served, 1).await;
    assert_eq!(list[0]["app"], "com.example.fake");
    assert_eq!(list[0]["pid"], 4242);

    // threads --once: a table with the VM's threads, then updates go off again.
    let (code, out, err) = served.run(&["threads", "4242", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("com.example.fake"), "{out}");
    for name in ["main", "Signal Catcher", "HeapTaskDaemon"] {
        assert!(out.contains(name), "missing {name}:\n{out}");
    }
    assert!(out.contains("TID") && out.contains("STATE"), "{out}");
    wait_until("THEN off", || {
        vm.received_chunks().iter().any(|c| c.is(b"THEN") && c.data.first() == Some(&0))
    })
    .await
    .unwrap();

    // heap: summary now and the map after the GC it asks for, drawn as a picture.
    let dir = tempfile::tempdir().unwrap();
    let png_path = dir.path().join("heap.png");
    let (code, out, err) = served.run(&["heap", "com.example.fake", "--gc", "--png", png_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heap 1"), "{out}");
    assert!(out.contains("heap map written to"), "{out}");
    assert_eq!(vm.gc_count(), 1);
    let bytes = std::fs::read(&png_path).unwrap();
    // The fake VM's map: 256 units hard object, 256 class objects, 256 free, 128 byte
    // arrays, 128 free. Each unit has the same area, so the colours' areas keep those ratios
    // (give or take the legend's equal swatches).
    let state = |b: u8| jdwpmux::views::colour(jdwpmux::ddm::HeapState(b));
    let (w, h, objects) = count_colour(&bytes, state(0x01));
    let (_, _, classes) = count_colour(&bytes, state(0x09));
    let (_, _, arrays) = count_colour(&bytes, state(0x11));
    let (_, _, free) = count_colour(&bytes, state(0x00));
    assert!(w >= 256 && h >= 256, "{w}x{h}");
    let near = |a: usize, b: f64| (a as f64 - b).abs() / b < 0.1;
    assert!(objects > 1000, "objects drawn: {objects}");
    assert!(near(classes, objects as f64), "classes {classes} vs objects {objects}");
    assert!(near(arrays, objects as f64 / 2.0), "arrays {arrays} vs objects {objects}");
    assert!(near(free, objects as f64 * 1.5), "free {free} vs objects {objects}");

    let (code, out, _) = served.run(&["heap", "4242", "--summary"]);
    assert_eq!(code, 0);
    assert!(out.contains("heap 1"), "{out}");

    let (code, out, err) = served.run(&["features", "4242"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("hprof-heap-dump") && out.contains("view-hierarchy"), "{out}");

    // A VM waiting for a debugger shows it in list.
    vm.send_ddm(&[(*b"WAIT", vec![0u8])]).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, out, _) = served.run(&["list", "--json"]);
        if out.contains("\"waiting_for_debugger\": true") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "WAIT not shown: {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, out, _) = served.run(&["list"]);
    assert!(out.contains("(waiting)"), "{out}");

    let (code, out, err) = served.run(&["exit", "4242", "3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("EXIT 3"), "{out}");
    wait_until("EXIT received", || vm.exit_status() == Some(3)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_bomb_chunks_leave_the_session_alive() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    ready(&served, 1).await;
    // A THCR whose name runs past the chunk, and a ZLIB chunk claiming 1 GiB of output.
    vm.send_ddm(&[(*b"THCR", vec![0, 0, 0, 9, 0, 0, 0, 200, 0, 65])]).unwrap();
    let bomb_input = vec![0u8; 4 << 20];
    let bomb = crate::support::wire::zlib_chunk_claiming(b"HPDS", 1 << 30, &bomb_input);
    vm.send_ddm_chunks(&[bomb]).unwrap();
    // A ZLIB-wrapped chunk is inflated and decoded.
    let thcr = crate::support::Chunk::new(b"THCR", crate::support::ddm::thcr_payload(99, "zipped"));
    vm.send_ddm_chunks(&[crate::support::wire::zlib_chunk(&thcr)]).unwrap();
    // And a valid chunk after them, in its own packet.
    vm.send_ddm(&[(*b"APNM", crate::support::ddm::apnm_payload("com.example.renamed", 0, "com.example"))]).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, out, _) = served.run(&["list", "--json"]);
        if out.contains("com.example.renamed") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "APNM after bad chunks not applied: {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The log is written by a thread of its own, in order: once the zipped chunk's line is
    // there, so are the lines of the chunks before it.
    served.wait_log("THCR tid=99 name=\"zipped\"").await;
    let log = served.log_text();
    assert!(log.contains("malformed DDM chunk"), "{log}");
    assert!(log.matches("malformed DDM chunk").count() >= 2, "both bad chunks reported:\n{log}");
    assert!(log.contains("THCR tid=99 name=\"zipped\""), "the zlib chunk was inflated:\n{log}");
    let (code, out, err) = served.run(&["threads", "com.example.renamed", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("main"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddm_commands_on_a_vm_without_ddm_fail_clearly() {
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string()]);
    ready(&served, 1).await;
    for cmd in [vec!["threads", ":0", "--once"], vec!["heap", "--summary"], vec!["features"]] {
        let mut args = cmd.clone();
        if args.len() == 1 || args[1].starts_with("--") {
            args.insert(1, "");
        }
        let sel = vm.addr().to_string();
        args[1] = &sel;
        let (code, _, err) = served.run(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains("does not speak DDM"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert!(vm.received().iter().all(|p| !p.is_ddm()));
}
