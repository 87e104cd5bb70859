//! Bad input from a debugger closes only that socket (or drops the packet); the VM session and
//! other VMs carry on.

use jdwpmux::settings::DdmMode;

use crate::harness::{Proxy, SOON};
use crate::support::consts::*;
use crate::support::wire::HANDSHAKE;
use crate::support::{FakeVm, FakeVmConfig, RawClient};

async fn still_works(proxy: &Proxy, index: usize) {
    let mut c = crate::harness::soon("attach after bad input", async {
        loop {
            if let Ok(c) = RawClient::connect(proxy.vm_port(index).await).await {
                return c;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    let r = c.request(1, SET_VM, VM_VERSION, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_garbage_closes_only_its_own_socket() {
    let a = FakeVm::start(FakeVmConfig::default()).await;
    let b = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let proxy = Proxy::start(&[a.addr(), b.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    proxy.vm_port(1).await;
    let mut other = RawClient::connect(proxy.vm_port(1).await).await.unwrap();

    // Not a handshake at all.
    let mut c = RawClient::connect_no_handshake(port).await.unwrap();
    c.send_raw(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    c.expect_closed(SOON).await.unwrap();

    let bad_packets: [&[u8]; 3] = [
        &[0, 0, 0, 5, 0, 0, 0, 1, 0, 1, 1],           // length < 11
        &[0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1, 0, 1, 1], // absurd length
        &[0, 0, 0, 40, 0, 0, 0, 1, 0, 1, 1, 1, 2, 3],  // truncated, then EOF
    ];
    for bytes in bad_packets {
        let mut c = RawClient::connect(port).await.unwrap();
        c.send_raw(bytes).await.unwrap();
        c.shutdown_write().await.unwrap();
        c.expect_closed(SOON).await.unwrap();
        still_works(&proxy, 0).await;
    }
    // A handshake split in two writes is fine for the proxy (it is only HotSpot that minds).
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(port).await.unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(&HANDSHAKE[..5]).await.unwrap();
        s.flush().await.unwrap();
        s.write_all(&HANDSHAKE[5..]).await.unwrap();
        let mut echo = [0u8; 14];
        crate::harness::soon("echo", s.read_exact(&mut echo)).await.unwrap();
        assert_eq!(&echo, HANDSHAKE);
    }

    // The other VM's debugger never noticed.
    assert_eq!(other.request(9, SET_VM, VM_VERSION, &[], SOON).await.unwrap().error_code(), Some(ERR_NONE));
    assert!(a.forbidden().is_empty() && b.forbidden().is_empty());
    assert!(a.protocol_errors().is_empty(), "{:?}", a.protocol_errors());
    proxy.stop().await;
}
