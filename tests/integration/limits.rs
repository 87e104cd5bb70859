//! The size limits through the real binary: each hostile size is refused with one log line
//! that names the limit it hit, and the daemon serves on.

use std::time::Duration;

use crate::cli::{port_of, Served};
use crate::support::{FakeVm, FakeVmConfig, RawClient};

/// A ZLIB chunk's data whose 100 deflate bytes claim to inflate to `declared` bytes.
fn zlib_claiming(declared: u32) -> Vec<u8> {
    let mut d = 100u32.to_be_bytes().to_vec();
    d.extend_from_slice(b"HPSG");
    d.extend_from_slice(&declared.to_be_bytes());
    d.extend_from_slice(&[0u8; 100]);
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sizes_are_refused_with_the_limit_named_in_the_log() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    let port = port_of(&served.wait_log(&format!("for vm {}", vm.addr())).await);
    served.wait_log("VM ready").await;

    // A ZLIB chunk that would inflate to 4 GiB, and one under the cap but more than its
    // 100 compressed bytes can hold: both refused before inflating.
    vm.send_ddm(&[(*b"ZLIB", zlib_claiming(u32::MAX))]).unwrap();
    let line = served.wait_log("MAX_INFLATED_LEN").await;
    assert!(line.contains("malformed DDM chunk") && line.contains("4294967295"), "{line}");
    vm.send_ddm(&[(*b"ZLIB", zlib_claiming(2 << 20))]).unwrap();
    served.wait_log("MAX_DEFLATE_RATIO").await;

    // A debugger announcing a 2 GiB packet: dropped, naming the debugger side's limit.
    let mut dbg = RawClient::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port))).await.unwrap();
    dbg.send_raw(&[0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1, 0, 1, 1]).await.unwrap();
    let line = served.wait_log("MAX_DEBUGGER_PACKET").await;
    assert!(line.contains("debugger detached") && line.contains("2147483647"), "{line}");
    dbg.expect_closed(Duration::from_secs(10)).await.unwrap();

    // The daemon serves on: the VM is still listed and ready.
    let (code, out, err) = served.run(&["list", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"ready\""), "{out}");

    // The VM announcing a length no Java int can hold: the connection is dropped, naming
    // MAX_PACKET_LEN, and remade.
    vm.send_raw(vec![0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 9, 0, 1, 1]).unwrap();
    let line = served.wait_log("MAX_PACKET_LEN").await;
    assert!(line.contains("lost the VM connection") && line.contains("4294967295"), "{line}");
}
