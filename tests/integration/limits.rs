//! The size limits through the real binary: each hostile size is refused with one log line
//! that names the limit it hit, and the daemon serves on.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::{port_of, Served};
use crate::harness::SOON;
use crate::support::consts::*;
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
    served.wait_ready().await;

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

/// The 11 bytes of a JDWP header claiming `len`: a VirtualMachine.Version command.
fn header_claiming(len: u32, id: u32) -> Vec<u8> {
    let mut h = len.to_be_bytes().to_vec();
    h.extend_from_slice(&id.to_be_bytes());
    h.extend_from_slice(&[0, SET_VM, VM_VERSION]);
    h
}

/// Lengths 0xFFFFFFFF, 0, 10 and 11 from each side. Per JDWP the length counts the 11-byte
/// header, so 0 and 10 are malformed and 11 is a packet with no data. A malformed length
/// closes only the connection it came on, with a log line naming the limit; 11 is served;
/// neither a debugger sharing the VM nor another VM's debugger notices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_length_from_either_side_is_handled_per_jdwp() {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let other = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--vm", &other.addr().to_string(), "--no-scan", "--no-adb"]);
    let port = port_of(&served.wait_log(&format!("for vm {}", vm.addr())).await);
    let other_port = port_of(&served.wait_log(&format!("for vm {}", other.addr())).await);
    served.list_until("both VMs ready", |v| v.iter().filter(|e| e["state"] == "ready").count() == 2).await;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut neighbour = RawClient::connect(addr).await.unwrap();
    let mut elsewhere = RawClient::connect(SocketAddr::from(([127, 0, 0, 1], other_port))).await.unwrap();
    let mut id = 1;
    let mut still_fine = async |c: &mut RawClient| {
        id += 1;
        let r = c.request(id, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
        assert_eq!(r.error_code(), Some(ERR_NONE));
    };

    // From a debugger.
    for (len, says) in [
        (u32::MAX, "packet length 4294967295 exceeds MAX_DEBUGGER_PACKET (268435456 bytes)"),
        (0, "packet length 0 is shorter than the 11-byte header"),
        (10, "packet length 10 is shorter than the 11-byte header"),
    ] {
        let mut dbg = RawClient::connect(addr).await.unwrap();
        dbg.send_raw(&header_claiming(len, 7)).await.unwrap();
        dbg.expect_closed(SOON).await.unwrap();
        let line = served.wait_log(says).await;
        assert!(line.contains("debugger detached"), "{line}");
        still_fine(&mut neighbour).await;
    }
    let mut dbg = RawClient::connect(addr).await.unwrap();
    dbg.send_raw(&header_claiming(11, 7)).await.unwrap();
    let r = dbg.wait_reply(7, SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE), "a header-only command is served");
    drop(dbg);

    // From the VM: 11 is a packet (an empty DDM command, a reply nobody asked for).
    let accepted = vm.connections_accepted();
    vm.send_raw(vec![0, 0, 0, 11, 0, 0, 0, 0x51, 0, 0xC7, 1]).unwrap();
    vm.send_raw(vec![0, 0, 0, 11, 0x00, 0x51, 0x00, 0x11, 0x80, 0, 0]).unwrap();
    served.wait_log(&format!("dropping a reply to id {}", 0x0051_0011)).await;
    still_fine(&mut neighbour).await;
    assert_eq!(vm.connections_accepted(), accepted, "an 11-byte packet cost the VM connection");
    // 0 and 10: the VM connection is dropped, naming the limit, and remade.
    for (n, len) in [0u32, 10].into_iter().enumerate() {
        vm.send_raw(header_claiming(len, 0x99)).unwrap();
        // (The debugger's line above says the same of its packet: find the VM's.)
        let says = format!("packet length {len} is shorter than the 11-byte header");
        crate::harness::wait_until("the VM's line", || {
            served.log_text().lines().any(|l| l.contains("lost the VM connection") && l.contains(&says))
        })
        .await
        .unwrap();
        vm.wait_for(|v| v.connections_accepted() as usize > accepted as usize + n, SOON).await.unwrap();
        served.list_until("the VM ready again", |v| v.iter().filter(|e| e["state"] == "ready").count() == 2).await;
    }
    still_fine(&mut elsewhere).await;

    // The largest length JDWP allows, and then nothing: streamed, never allocated.
    let pid = served.pid();
    let rss = |pid: u32| -> u64 { crate::support::process::status_kib(pid, "VmRSS").unwrap() };
    let mut watcher = RawClient::connect(addr).await.unwrap();
    still_fine(&mut watcher).await;
    let before = rss(pid);
    // A command (not an event or DDM, which the proxy reads itself): relayed as it comes.
    let mut huge = vec![0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0x52, 0, 0x01, 0x01];
    huge.extend_from_slice(&[0u8; 128 << 10]);
    vm.send_raw(huge).unwrap();
    watcher.wait_for_bytes(11 + (64 << 10), SOON).await.unwrap();
    let after = rss(pid);
    eprintln!("a VM announcing a 2 GiB - 1 packet: daemon RSS {before} -> {after} KiB");
    assert!(after < before + 16 * 1024, "RSS {before} -> {after} KiB");
    still_fine(&mut elsewhere).await;
}

/// A raw deflate stream of `mib` MiB of zeros: one sync-flushed MiB repeated (its matches
/// only reach back into zeros), then an empty final block. 4096 MiB is a 4 GiB bomb.
fn deflate_zeros(mib: usize) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let zeros = vec![0u8; 1 << 20];
    let mut block = Vec::with_capacity(64 << 10);
    while (c.total_in() as usize) < zeros.len() {
        let done = c.total_in() as usize;
        c.compress_vec(&zeros[done..], &mut block, flate2::FlushCompress::Sync).unwrap();
    }
    let mut out = block.repeat(mib);
    out.extend_from_slice(&[0x01, 0x00, 0x00, 0xFF, 0xFF]);
    out
}

/// ZLIB chunk data wrapping `stream` as HPSG data declared `declared` bytes long.
fn zlib_data(declared: u32, stream: &[u8]) -> Vec<u8> {
    let mut d = b"HPSG".to_vec();
    d.extend_from_slice(&declared.to_be_bytes());
    d.extend_from_slice(stream);
    d
}

/// A ZLIB chunk that really inflates to 4 GiB while declaring no more than the cap (and no
/// more than its compressed bytes could honestly hold): inflation stops at the declared
/// length, bounded by MAX_INFLATED_LEN, in moments. Through the VM the same bomb is cut by
/// the bounded prefix the session keeps of a large packet; a smaller one that fits is
/// refused at the same bound with a log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zlib_chunk_that_inflates_to_4_gib_stops_at_its_bound() {
    use jdwpmux::ddm::{decode_chunk, ChunkType, Dir, MAX_DEFLATE_RATIO, MAX_INFLATED_LEN};
    // The construction is sound: 4 MiB of zeros from 4 copies of the block.
    let small = deflate_zeros(4);
    let mut d = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(5 << 20);
    d.decompress_vec(&small, &mut out, flate2::FlushDecompress::Finish).unwrap();
    assert_eq!((out.len(), out.iter().all(|b| *b == 0)), (4 << 20, true));

    let bomb = deflate_zeros(4096);
    let declared = MAX_INFLATED_LEN as u32;
    assert!(declared as usize <= bomb.len() * MAX_DEFLATE_RATIO, "the declared length passes the ratio check");
    let t = std::time::Instant::now();
    let err = decode_chunk(ChunkType::ZLIB, &zlib_data(declared, &bomb), Dir::FromVm, false).unwrap_err();
    let took = t.elapsed();
    eprintln!("a {}-byte stream that inflates to 4 GiB, declared {declared}: refused in {took:?}: {err}", bomb.len());
    assert!(err.to_string().contains(&format!("inflates past {MAX_INFLATED_LEN} bytes")), "{err}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");

    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--no-scan", "--no-adb"]);
    served.wait_ready().await;
    vm.send_ddm(&[(*b"ZLIB", zlib_data(declared, &bomb))]).unwrap();
    let line = served.wait_log("chunk ZLIB declares").await;
    eprintln!("the 4 GiB bomb through the VM: {line}");
    let kept = jdwpmux::session::COLLECT_PREFIX - 8;
    assert!(line.contains(&format!("declares {} bytes but only {kept} follow", bomb.len() + 8)), "{line}");
    // 512 MiB of inflation in under COLLECT_PREFIX bytes.
    let fits = deflate_zeros(512);
    vm.send_ddm(&[(*b"ZLIB", zlib_data(declared, &fits))]).unwrap();
    let line = served.wait_log(&format!("inflates past {MAX_INFLATED_LEN} bytes")).await;
    assert!(line.contains("malformed DDM chunk"), "{line}");
    let (code, out, err) = served.run(&["list", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"ready\""), "{out}");
}
