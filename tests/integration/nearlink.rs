//! The near link (`jdwpmux::remote::near`) against the real `jdwpmux far` on a real Unix socket
//! with a real JVM, through a relay that cuts the stream as a dropped ssh forward would: the
//! link lists the JVM, opens a channel, speaks JDWP through it; the VM is suspended, the
//! stream cut and kept cut while a command waits, and when it returns the command's reply
//! comes exactly once, the VM stayed suspended (it never saw its debugger go) and resumes
//! when told. Then the link ends and tells the far side, which ends at once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jdwpmux::remote::protocol::frame::VmInfo;
use jdwpmux::remote::near::timing::Liveness;
use jdwpmux::remote::near::{self as nearlink, Config, Dial, LinkState, NearLink, OpenError};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::{UnixListener, UnixStream};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::support::console::Console;
use crate::support::{java_available, JavaApp};

const BIN: &str = env!("CARGO_BIN_EXE_jdwpmux");
/// A JVM and the far side on a busy 2-core machine can be slow.
const SLOW: Duration = Duration::from_secs(60);

/// A Unix-socket relay in front of the far side's socket that can cut every connection
/// through it and refuse new ones until restored: what a dropped ssh forward does.
struct CutRelay {
    path: PathBuf,
    up: Arc<AtomicBool>,
    cuts: watch::Sender<u64>,
    task: JoinHandle<()>,
}

impl CutRelay {
    fn start(path: PathBuf, target: PathBuf) -> Result<CutRelay> {
        let listener = UnixListener::bind(&path)?;
        let up = Arc::new(AtomicBool::new(true));
        let (cuts, cut_rx) = watch::channel(0u64);
        let up2 = up.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut near, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    continue;
                }
                let target = target.clone();
                let mut cut = cut_rx.clone();
                cut.mark_unchanged();
                tokio::spawn(async move {
                    let Ok(mut far) = UnixStream::connect(&target).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut near, &mut far) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Ok(CutRelay { path, up, cuts, task })
    }

    /// Every connection through the relay ends, and new ones are refused.
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cuts.send_modify(|n| *n += 1);
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for CutRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A JDWP command packet.
fn command(id: u32, set: u8, cmd: u8) -> Vec<u8> {
    let mut p = 11u32.to_be_bytes().to_vec();
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0, set, cmd]);
    p
}

/// The next JDWP packet on `s`: (id, flags, error code).
async fn packet(s: &mut DuplexStream) -> Result<(u32, u8, u16)> {
    let mut head = [0u8; 11];
    tokio::time::timeout(SLOW, s.read_exact(&mut head)).await.context("no packet from the VM")??;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let mut rest = vec![0u8; len.checked_sub(11).context("a packet shorter than its header")?];
    tokio::time::timeout(SLOW, s.read_exact(&mut rest)).await.context("a packet's body")??;
    Ok((u32::from_be_bytes([head[4], head[5], head[6], head[7]]), head[8], u16::from_be_bytes([head[9], head[10]])))
}

async fn wait_vm(link: &NearLink, pid: u32) -> Result<VmInfo> {
    let mut vms = link.vms();
    let found = tokio::time::timeout(SLOW, vms.wait_for(|l| l.iter().any(|v| v.pid == pid))).await.context("the far side never listed the JVM")??;
    found.iter().find(|v| v.pid == pid).cloned().context("listed and gone")
}

async fn wait_state(link: &NearLink, what: &str, f: impl FnMut(&LinkState) -> bool) -> Result<LinkState> {
    let mut state = link.state();
    let got = tokio::time::timeout(SLOW, state.wait_for(f)).await.with_context(|| format!("the link never became {what} (it is {:?})", *link.state().borrow()))??;
    Ok(got.clone())
}

async fn start_far(dir: &Path, hold_secs: u64) -> Result<(Console, PathBuf)> {
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", &hold_secs.to_string(), "--scan-interval", "0.2", "--dir"]).arg(dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    let socket = dir.join("far.sock");
    far.expect(&format!("jdwpmux far: listening on {}", socket.display()), SLOW).await?;
    Ok((far, socket))
}

fn test_config() -> Config {
    Config {
        hold_secs: 120,
        liveness: Liveness { ping_every: Duration::from_millis(500), dead_after: Duration::from_secs(3) },
        first_retry: Duration::from_millis(100),
        max_retry: Duration::from_millis(500),
        ..Config::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_through_the_near_link_survives_a_cut_with_the_vm_suspended() -> Result<()> {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::start(false).await?;
    let pid = app.pid().context("the JVM's pid")?;
    let tmp = tempfile::tempdir()?;
    let (mut far, far_socket) = start_far(&tmp.path().join("far"), 120).await?;
    let relay = CutRelay::start(tmp.path().join("relay.sock"), far_socket)?;

    let link = nearlink::start(Dial::Unix(relay.path.clone()), test_config());
    let state = wait_state(&link, "up", |s| matches!(s, LinkState::Up { .. })).await?;
    assert_eq!(state, LinkState::Up { connections: 1, resumed: false, hold_secs: 120 });
    let vm = wait_vm(&link, pid).await?;
    assert_eq!(vm.port, app.port(), "{vm:?}");

    // A VM the far side does not know is refused with its reason.
    match link.open(vm.key + 1000).await {
        Err(OpenError::NoSuchVm { vm: key, .. }) => assert_eq!(key, vm.key + 1000),
        other => bail!("an unknown VM opened: {other:?}"),
    }

    let mut s = tokio::time::timeout(SLOW, link.open(vm.key)).await.context("the open was not answered")??;
    s.write_all(b"JDWP-Handshake").await?;
    let mut echo = [0u8; 14];
    tokio::time::timeout(SLOW, s.read_exact(&mut echo)).await??;
    assert_eq!(&echo, b"JDWP-Handshake");
    s.write_all(&command(1, 1, 1)).await?; // VirtualMachine.Version
    assert_eq!(packet(&mut s).await?, (1, 0x80, 0));
    s.write_all(&command(2, 1, 8)).await?; // VirtualMachine.Suspend
    assert_eq!(packet(&mut s).await?, (2, 0x80, 0));

    // Cut: the link sees its stream end and tries again, refused, while a command waits.
    relay.cut();
    wait_state(&link, "down", |s| matches!(s, LinkState::Down { .. })).await?;
    s.write_all(&command(3, 1, 1)).await?;
    let frozen = app.ticks_seen();
    // Long enough for several refused attempts and several of the app's ticks had it run.
    let mut state = link.state();
    let held = tokio::time::timeout(Duration::from_secs(3), state.wait_for(|s| matches!(s, LinkState::Up { .. }))).await;
    assert!(held.is_err(), "the link came up through a cut relay: {:?}", *link.state().borrow());
    assert_eq!(app.ticks_seen(), frozen, "the VM ran on during the cut: it saw its debugger go");

    relay.restore();
    let state = wait_state(&link, "up again", |s| matches!(s, LinkState::Up { connections: 2, .. })).await?;
    assert_eq!(state, LinkState::Up { connections: 2, resumed: true, hold_secs: 120 });
    // The command sent during the cut is answered once, and the next one follows it.
    assert_eq!(packet(&mut s).await?, (3, 0x80, 0));
    s.write_all(&command(4, 1, 9)).await?; // VirtualMachine.Resume
    assert_eq!(packet(&mut s).await?, (4, 0x80, 0));
    let ticked = app.wait_ticks_advance(SLOW).await?;
    assert!(ticked > frozen.unwrap_or(0), "the app runs on after the resume");

    // The channel's end closes it on the far side: the VM takes a new debugger.
    drop(s);
    let mut again = tokio::time::timeout(SLOW, async {
        loop {
            if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(5), link.open(vm.key)).await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await?;
    again.write_all(b"JDWP-Handshake").await?;
    tokio::time::timeout(SLOW, again.read_exact(&mut echo)).await??;
    assert_eq!(&echo, b"JDWP-Handshake");
    drop(again);

    // The link ends and says so: the far side ends at once instead of holding for 120 s.
    link.shutdown().await;
    let status = far.wait_exit(SLOW).await?;
    assert!(status.success(), "{status:?}\n{}", far.output());
    Ok(())
}

/// The far side restarted while the link was cut: the session is gone, so is every channel
/// (its stream ends, as a VM connection that closed), and the link goes on with a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_side_that_restarted_ends_the_channels_and_the_link_goes_on() -> Result<()> {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::start(false).await?;
    let pid = app.pid().context("the JVM's pid")?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let (mut far, far_socket) = start_far(&dir, 120).await?;
    let relay = CutRelay::start(tmp.path().join("relay.sock"), far_socket)?;
    let link = nearlink::start(Dial::Unix(relay.path.clone()), test_config());
    let vm = wait_vm(&link, pid).await?;
    let mut s = tokio::time::timeout(SLOW, link.open(vm.key)).await??;
    s.write_all(b"JDWP-Handshake").await?;
    let mut echo = [0u8; 14];
    tokio::time::timeout(SLOW, s.read_exact(&mut echo)).await??;

    relay.cut();
    far.kill().await;
    let (mut far, _) = start_far(&dir, 120).await?;
    relay.restore();
    wait_state(&link, "up with a new session", |s| matches!(s, LinkState::Up { resumed: false, connections: 2, .. })).await?;
    let mut rest = Vec::new();
    let n = tokio::time::timeout(SLOW, s.read_to_end(&mut rest)).await.context("the channel's stream did not end")??;
    assert_eq!(n, 0, "bytes after the session was lost");
    let vm = wait_vm(&link, pid).await?;
    let mut s = tokio::time::timeout(SLOW, link.open(vm.key)).await??;
    s.write_all(b"JDWP-Handshake").await?;
    tokio::time::timeout(SLOW, s.read_exact(&mut echo)).await??;
    assert_eq!(&echo, b"JDWP-Handshake");
    drop(s);
    link.shutdown().await;
    assert!(far.wait_exit(SLOW).await?.success());
    Ok(())
}
