//! Unit tests of the request/answer layer against a scripted one-connection server.

use super::*;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Accepts one connection; for each step reads one request, records it, writes the reply.
/// Then, with `linger`, reads until the client closes, so the client sees no early EOF;
/// without it, closes at once.
async fn scripted_with(steps: Vec<&'static [u8]>, linger: bool) -> (AdbServer, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a local port");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        let Ok((mut s, _)) = listener.accept().await else { return seen };
        for reply in steps {
            let mut head = [0u8; 4];
            if s.read_exact(&mut head).await.is_err() {
                return seen;
            }
            let Ok(len) = parse_hex4(head) else { return seen };
            let mut body = vec![0u8; len];
            if s.read_exact(&mut body).await.is_err() {
                return seen;
            }
            seen.push(String::from_utf8_lossy(&body).into_owned());
            if s.write_all(reply).await.is_err() {
                return seen;
            }
        }
        if linger {
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest).await;
        }
        seen
    });
    (AdbServer::new(addr), task)
}

async fn scripted(steps: Vec<&'static [u8]>) -> (AdbServer, JoinHandle<Vec<String>>) {
    scripted_with(steps, true).await
}

#[tokio::test]
async fn okay_returns_the_stream() {
    let (server, task) = scripted(vec![b"OKAY"]).await;
    let stream = server.request("host:track-devices").await;
    assert!(stream.is_ok(), "{stream:?}");
    drop(stream);
    assert_eq!(task.await.expect("server task"), vec!["host:track-devices"]);
}

#[tokio::test]
async fn bad_answers_are_errors() {
    let cases: Vec<(&'static [u8], &str)> = vec![
        (b"FAIL0010device not found", "Failed(\"device not found\")"),
        (b"FAIL0000", "Failed(\"\")"),
        (b"FAILzzzz", "BadLength"),
        (b"FAILffff", "TooLarge"),
        (b"NOPE", "BadStatus"),
        (b"OK", "Closed"),
        (b"FAIL0010short", "Closed"),
    ];
    for (reply, want) in cases {
        let (server, task) = scripted_with(vec![reply], false).await;
        let got = server.request("host:version").await.map(|_| ());
        let text = format!("{got:?}");
        assert!(text.contains(want), "reply {:?}: got {text}", String::from_utf8_lossy(reply));
        task.abort();
    }
}

#[tokio::test]
async fn version_and_devices() {
    let (server, task) = scripted(vec![b"OKAY00040029"]).await;
    assert_eq!(server.version().await.ok(), Some(41));
    task.abort();

    for reply in [&b"OKAY0002zz"[..], b"OKAY0004zzzz", b"OKAY000500029"] {
        let (server, task) = scripted_with(vec![reply], false).await;
        let got = server.version().await;
        assert!(matches!(got, Err(AdbError::BadVersion(_))), "{:?}: {got:?}", String::from_utf8_lossy(reply));
        task.abort();
    }

    let (server, task) = scripted(vec![b"OKAY001bemu-1\tdevice\nusb-2\toffline\n"]).await;
    let got = server.devices().await.ok();
    let want = vec![
        DeviceEntry { serial: "emu-1".into(), state: "device".into() },
        DeviceEntry { serial: "usb-2".into(), state: "offline".into() },
    ];
    assert_eq!(got, Some(want));
    task.abort();
}

#[tokio::test]
async fn open_jdwp_leaves_vm_bytes_to_the_caller() {
    // The VM's first bytes arrive in the same segment as the second OKAY.
    let (server, task) = scripted(vec![b"OKAY", b"OKAYJDWP-Handshake"]).await;
    let mut stream = server.open_jdwp("emu-1", 4242).await.expect("open_jdwp");
    let mut buf = [0u8; 14];
    stream.read_exact(&mut buf).await.expect("handshake bytes");
    assert_eq!(&buf, b"JDWP-Handshake");
    drop(stream);
    assert_eq!(task.await.expect("server task"), vec!["host:transport:emu-1", "jdwp:4242"]);
}

#[tokio::test]
async fn transport_failure_is_reported() {
    let (server, task) = scripted(vec![b"FAIL000edevice offline"]).await;
    let got = server.open_transport("emu-1", "track-jdwp").await.map(|_| ());
    assert!(matches!(&got, Err(AdbError::Failed(m)) if m == "device offline"), "{got:?}");
    task.abort();
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let addr = l.local_addr().expect("local addr");
    drop(l);
    let got = AdbServer::new(addr).version().await;
    assert!(matches!(&got, Err(AdbError::Connect { addr: a, .. }) if a.addr == addr), "{got:?}");
}

#[test]
fn default_is_localhost_5037() {
    assert_eq!(AdbServer::default().addr.to_string(), "127.0.0.1:5037");
}
