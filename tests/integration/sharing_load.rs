//! Several debuggers on one VM under load: thousands of interleaved, pipelined commands with
//! colliding ids. Every reply reaches its sender under its own id, none is lost or doubled,
//! and once everybody has left the proxy's tables and the VM are empty.

use std::collections::HashMap;

use jdwpmux::settings::DdmMode;

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::{FakeVm, FakeVmConfig, Packet, RawClient};

const MAIN: u64 = 0x1001;
/// Commands each debugger sends, and how many it keeps in flight at most.
const COMMANDS: u32 = 1500;
const WINDOW: usize = 16;

/// xorshift64: a reproducible sequence without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What a command was, so its reply can be checked for shape.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sent {
    Version,
    IdSizes,
    AllThreads,
    SuspendCount,
    Set,
    Clear,
    Suspend,
    Resume,
}

/// One debugger's run; returns how many replies it checked.
async fn run_debugger(port: std::net::SocketAddr, seed: u64) -> u32 {
    let mut dbg = RawClient::connect(port).await.unwrap();
    let mut rng = Rng(seed | 1);
    let mut pending: HashMap<u32, Sent> = HashMap::new();
    let mut requests: Vec<u32> = Vec::new();
    let mut suspends = 0u32;
    let mut checked = 0u32;
    let mut next_id = 1u32;
    while next_id <= COMMANDS || !pending.is_empty() {
        if next_id <= COMMANDS && pending.len() < WINDOW && (pending.is_empty() || rng.next(3) > 0) {
            let (sent, set, cmd, data): (Sent, u8, u8, Vec<u8>) = match rng.next(8) {
                0 => (Sent::Version, SET_VM, VM_VERSION, vec![]),
                1 => (Sent::IdSizes, SET_VM, VM_ID_SIZES, vec![]),
                2 => (Sent::AllThreads, SET_VM, VM_ALL_THREADS, vec![]),
                3 => (Sent::SuspendCount, SET_THREAD, THREAD_SUSPEND_COUNT, MAIN.to_be_bytes().to_vec()),
                4 => (Sent::Set, SET_EVENT_REQUEST, ER_SET, vec![KIND_THREAD_START, SUSPEND_NONE, 0, 0, 0, 0]),
                5 if !requests.is_empty() => {
                    let r = requests.swap_remove(rng.next(requests.len() as u64) as usize);
                    let mut d = vec![KIND_THREAD_START];
                    d.extend_from_slice(&r.to_be_bytes());
                    (Sent::Clear, SET_EVENT_REQUEST, ER_CLEAR, d)
                }
                6 if suspends < 3 => {
                    suspends += 1;
                    (Sent::Suspend, SET_THREAD, THREAD_SUSPEND, MAIN.to_be_bytes().to_vec())
                }
                _ if suspends > 0 => {
                    suspends -= 1;
                    (Sent::Resume, SET_THREAD, THREAD_RESUME, MAIN.to_be_bytes().to_vec())
                }
                _ => (Sent::Version, SET_VM, VM_VERSION, vec![]),
            };
            dbg.send_command(next_id, set, cmd, &data).await.unwrap();
            pending.insert(next_id, sent);
            next_id += 1;
            continue;
        }
        let p = dbg.read_packet(SOON).await.unwrap();
        assert!(p.is_reply(), "debugger {seed}: unexpected packet {:?}", p.command_of());
        let sent = pending.remove(&p.id).unwrap_or_else(|| panic!("debugger {seed}: reply to id {} it is not waiting for", p.id));
        check_reply(seed, sent, &p);
        if sent == Sent::Set {
            requests.push(u32::from_be_bytes(p.data[..4].try_into().unwrap()));
        }
        checked += 1;
    }
    checked
}

fn check_reply(seed: u64, sent: Sent, p: &Packet) {
    assert_eq!(p.error_code(), Some(ERR_NONE), "debugger {seed}: {sent:?} id {}", p.id);
    let len = p.data.len();
    let ok = match sent {
        Sent::Version => p.reader().jdwp_string().is_ok_and(|s| s.starts_with("Fake VM")),
        Sent::IdSizes => len == 20,
        Sent::AllThreads => len == 4 + 3 * 8,
        Sent::SuspendCount | Sent::Set => len == 4,
        Sent::Clear | Sent::Suspend | Sent::Resume => len == 0,
    };
    assert!(ok, "debugger {seed}: id {} got a reply shaped like another command's ({sent:?}, {len} bytes)", p.id);
}

async fn load(debuggers: u64) {
    let vm = FakeVm::start(FakeVmConfig::default()).await;
    let proxy = Proxy::start(&[vm.addr()], DdmMode::Auto).await;
    let port = proxy.vm_port(0).await;
    let runs: Vec<_> = (1..=debuggers).map(|seed| tokio::spawn(run_debugger(port, seed * 0x9e37_79b9))).collect();
    for r in runs {
        assert_eq!(r.await.unwrap(), COMMANDS, "every reply arrived once");
    }
    wait_until("everybody left", || proxy.list()[0].status.debuggers.is_empty()).await.unwrap();
    wait_until("clean-up done", || vm.dbgd_count() == 1 && vm.event_requests().is_empty() && !vm.any_suspended()).await.unwrap();
    let mut tables = proxy.tables(0).await;
    for _ in 0..200 {
        if tables.outstanding == 0 {
            break;
        }
        // The clean-up's own requests may still be on their way back.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        tables = proxy.tables(0).await;
    }
    assert_eq!(tables, jdwpmux::session::TableSizes::default(), "tables left after everybody left");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_debuggers_pipelining_thousands_of_commands_each_get_their_own_replies() {
    load(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_debuggers_pipelining_thousands_of_commands_each_get_their_own_replies() {
    load(8).await;
}
