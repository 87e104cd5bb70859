//! Big answers over a thin link through the far side: a real HotSpot JVM on a test host
//! (`testkit/src/jdi/BigAnswers.java`: 10,000 classes with long names, a 1 MiB string), the
//! host's sshd behind a rate-limited relay (10 Mbit/s, 25 ms each way,
//! `testkit/src/rate_link.rs`), `serve --ssh --far always`. A raw client asks for
//! VirtualMachine.AllClassesWithGeneric and the string's StringReference.Value directly on the
//! host (a socket made inside its network namespace) and through the far side: the classes
//! are the same (the agent numbers them per connection, so without their ids) and the string
//! is byte for byte the same; the link carried less than a third of the answers' bytes; the
//! far side's log says how many frames it compressed, and the near side's the same; `jdwpmux
//! stats` shows the near side's figures while the link runs.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::remote::{agent, port, ready, serve, SLOW};
use crate::remote_far::far_bin;
use crate::support::client::RawClient;
use crate::support::rate_link::RateLink;
use crate::support::testhost::{Keys, TestHost};
use crate::support::{JavaApp, JvmSpec};

const BIG_ANSWERS_JAVA: &str = include_str!("../../testkit/src/jdi/BigAnswers.java");
const CLASSES: usize = 10_000;
const STRING_LEN: usize = 1 << 20;
/// A reply may take this long on the thin link (1 MB uncompressed: under a second).
const REPLY: Duration = Duration::from_secs(60);

/// The classes without their ids (sorted), the string's bytes, and the class list's length.
struct Asked {
    classes: Vec<(u8, String, String, u32)>,
    string: Vec<u8>,
    classes_len: usize,
}

/// Asks the VM behind `c` for the class list and for `BigAnswers.text`'s value.
async fn ask(mut c: RawClient) -> Result<Asked> {
    c.set_max_packet_len(64 << 20);
    let sizes = c.ok(1, 1, 7, &[]).await?.data;
    if sizes.len() != 20 || sizes[12..16] != [0, 0, 0, 8] || sizes[8..12] != [0, 0, 0, 8] {
        bail!("not HotSpot's 8-byte ids: {sizes:?}");
    }
    let mut q = 12u32.to_be_bytes().to_vec();
    q.extend_from_slice(b"LBigAnswers;");
    let found = c.ok(2, 1, 2, &q).await?.data;
    let class = found.get(5..13).context("BigAnswers is not loaded")?.to_vec();
    let fields = c.ok(3, 2, 4, &class).await?.data;
    let field = field_id(&fields, "text")?;
    let mut q = class.clone();
    q.extend_from_slice(&1u32.to_be_bytes());
    q.extend_from_slice(&field);
    let value = c.ok(4, 2, 6, &q).await?.data;
    if value.get(..5) != Some(&[0, 0, 0, 1, b's'][..]) {
        bail!("BigAnswers.text is not a string: {value:?}");
    }
    let string_id = value.get(5..13).context("a cut value")?.to_vec();
    let reply = c.request(5, 1, 20, &[], REPLY).await?;
    let classes_len = reply.data.len();
    let classes = crate::far::classes_of(&reply.data, true)?;
    let reply = c.request(6, 10, 1, &string_id, REPLY).await?;
    let len = reply.data.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize).context("a cut string")?;
    let string = reply.data.get(4..).filter(|s| s.len() == len).context("the string's length differs from its bytes")?.to_vec();
    Ok(Asked { classes, string, classes_len })
}

/// The id of field `name` in a ReferenceType.Fields reply (8-byte ids).
fn field_id(data: &[u8], name: &str) -> Result<Vec<u8>> {
    let mut at = 4;
    let text = |at: &mut usize| -> Result<Vec<u8>> {
        let len = data.get(*at..*at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize).context("cut")?;
        let s = data.get(*at + 4..*at + 4 + len).context("cut")?.to_vec();
        *at += 4 + len;
        Ok(s)
    };
    let n = data.get(..4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    for _ in 0..n {
        let id = data.get(at..at + 8).context("cut")?.to_vec();
        at += 8;
        let found = text(&mut at)?;
        text(&mut at)?;
        at += 4;
        if found == name.as_bytes() {
            return Ok(id);
        }
    }
    bail!("no field {name}")
}

/// A raw client on 127.0.0.1:`port` inside network namespace `netns` (a thread of its own
/// enters it to connect; the socket stays there).
async fn client_in(netns: &str, port: u16) -> Result<RawClient> {
    let path = format!("/run/netns/{netns}");
    let deadline = tokio::time::Instant::now() + SLOW;
    loop {
        let p = path.clone();
        let made = std::thread::spawn(move || -> Result<std::net::TcpStream> {
            let ns = std::fs::File::open(&p).with_context(|| format!("open {p}"))?;
            // SAFETY: setns(2) on this short-lived thread only; the fd is valid while `ns` lives.
            if unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) } != 0 {
                bail!("setns {p}: {}", std::io::Error::last_os_error());
            }
            Ok(std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))?)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the connecting thread panicked"))?;
        match made {
            Ok(s) => {
                s.set_nonblocking(true)?;
                return RawClient::over(tokio::net::TcpStream::from_std(s)?).await;
            }
            // The agent listens again a moment after its last debugger left.
            Err(e) if tokio::time::Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// "K of M data frames compressed, R bytes sent as W" in `log`: (K, R, W) of the last line.
fn compressed(log: &str) -> Option<(u64, u64, u64)> {
    let line = log.lines().rev().find(|l| l.contains("data frames compressed, "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "data")?;
    let num = |i: usize| words.get(i).and_then(|w| w.trim_end_matches(',').parse().ok());
    Some((num(at.checked_sub(3)?)?, num(at + 3)?, num(at + 7)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_far_thin_big_answers_go_compressed_and_are_the_vms_own() {
    crate::need_test_hosts!();
    let far = far_bin();
    let keys = Keys::new().unwrap();
    let host = TestHost::start(&keys, "farthin").unwrap();
    let link = RateLink::start(SocketAddr::from((host.net.addr, 22)), 10_000_000, Duration::from_millis(25)).unwrap();
    let alias = "farthin-vpn";
    keys.add_host(alias, Ipv4Addr::LOCALHOST, "id_ed25519", &format!("  Port {}\n  HostKeyAlias {}\n", link.port(), host.net.addr)).unwrap();
    let spec = JvmSpec {
        prefix: host.prefix(),
        agent: agent(false, "8000"),
        sources: vec![("BigAnswers.java".into(), BIG_ANSWERS_JAVA.into())],
        class: "BigAnswers".into(),
        args: vec![CLASSES.to_string(), STRING_LEN.to_string()],
        ..JvmSpec::default()
    };
    let app = JavaApp::spawn(spec).await.unwrap();
    app.wait_for_output("bench debuggee ready", SLOW).await.unwrap();

    let direct = ask(client_in(&host.net.name, 8000).await.unwrap()).await.unwrap();
    assert!(direct.classes.len() > CLASSES && direct.classes_len > 900_000, "{} classes, {} bytes", direct.classes.len(), direct.classes_len);
    assert_eq!(direct.string.len(), STRING_LEN);

    let served = serve(&keys, &[alias], &["--far", "always", "--far-path", &far.path]);
    served.wait_log(&format!("using jdwpmux on {alias}")).await;
    let rows = served.list_until("BigAnswers ready", |r| ready(r, alias, "BigAnswers")).await;
    let vm_port = port(&rows, alias, "BigAnswers");
    let (_, before) = link.carried();
    let t0 = std::time::Instant::now();
    let through = ask(RawClient::connect(("127.0.0.1", vm_port)).await.unwrap()).await.unwrap();
    let carried = link.carried().1 - before;
    eprintln!("through the far side: both answers (and 5 small commands) in {:?}, {carried} bytes from the host on the link", t0.elapsed());
    // The JVM may load a class of its own between the two asks (the first Thread.sleep may,
    // on some JDKs), and a class's status may move on: every class asked directly is there
    // through the far side with its signatures, and nothing more than such a few.
    let key = |c: &(u8, String, String, u32)| (c.0, c.1.clone(), c.2.clone());
    let seen: std::collections::HashSet<_> = through.classes.iter().map(key).collect();
    let lost: Vec<_> = direct.classes.iter().map(key).filter(|k| !seen.contains(k)).take(5).collect();
    assert!(
        lost.is_empty() && through.classes.len() <= direct.classes.len() + 64,
        "the classes differ: {} through the far side, {} directly; not through the far side: {lost:?}",
        through.classes.len(),
        direct.classes.len()
    );
    assert!(through.string == direct.string, "the string differs");
    let answers = (direct.classes_len + direct.string.len()) as u64;
    assert!(carried * 3 < answers, "the link carried {carried} bytes for {answers} bytes of answers");

    // `stats` shows the far link's figures while it runs: what came compressed, and the
    // text a person reads.
    let (code, out, err) = served.run(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let far_link = report["links"].as_array().and_then(|l| l.iter().find(|l| l["host"] == alias)).unwrap_or_else(|| panic!("no far link to {alias} in stats: {out}"));
    let came = |k: &str| far_link["received"][k].as_u64().unwrap_or(0);
    assert!(
        came("compressed") >= 16 && came("frames") >= came("compressed") && came("raw_bytes") >= answers * 9 / 10 && came("wire_bytes") * 3 < came("raw_bytes"),
        "the far link's figures in stats: {far_link}"
    );
    let (code, text, err) = served.run(&["stats"]);
    assert_eq!(code, 0, "{err}");
    eprintln!("jdwpmux stats:\n{text}");
    let line = text.lines().find(|l| l.starts_with(&format!("far link from {alias}: "))).unwrap_or_else(|| panic!("no far link line: {text}"));
    assert!(line.contains(" data frames compressed, ") && line.ends_with("x)"), "{line}");

    // Each side says what it compressed when the connection ends: serve stops, says goodbye.
    let mut served = served;
    served.terminate(SLOW);
    let far_log = far.far_dir().join("far.log");
    let deadline = tokio::time::Instant::now() + SLOW;
    let (k, raw, wire) = loop {
        if let Some(c) = compressed(&std::fs::read_to_string(&far_log).unwrap_or_default()) {
            break c;
        }
        assert!(tokio::time::Instant::now() < deadline, "no compression line in the far side's log:\n{}", std::fs::read_to_string(&far_log).unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("the far side: {k} frames compressed, {raw} bytes sent as {wire}");
    assert!(k >= 16 && raw >= answers * 9 / 10 && wire * 3 < raw, "{k} frames compressed, {raw} bytes as {wire}");
    let near_log = served.log_text();
    assert!(near_log.contains("compressed on the link: from the far side "), "{near_log}");
}

#[test]
fn the_compression_line_is_read() {
    let line = "2026-11-28T17:00:00Z  INFO session: to the near side: 40 of 120 data frames compressed, 2000000 bytes sent as 180000 frames=120";
    assert_eq!(compressed(line), Some((40, 2_000_000, 180_000)));
    assert_eq!(compressed("nothing"), None);
}
