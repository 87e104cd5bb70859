//! One debugger of the soak run: attaches to a VM through the daemon, sends bursts of random
//! commands (1..=16 in flight), checks every reply against its own request, thinks, and
//! after a while detaches and attaches elsewhere. A connection that closes, or a VM_DEAD
//! reply, cuts the commands in flight when their VM was killed; when it was not, a closed
//! connection loses them and VM_DEAD is a mismatch.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testkit::fake_vm::lean::{string_value, vm_description, VM_DESCRIPTION};
use crate::jdwp_ops::{ALL_THREADS, ARRAY_GET_VALUES, ERR_NOT_IMPLEMENTED, ID_SIZES, STRING_VALUE, TAG_BYTE, VERSION};
use crate::soak_world::{port_of, Counters, Pick, Rng, World};
use testkit::blocking_client::{BlockingClient, ClientError};
use testkit::reader::{put_id, put_jdwp_string as put_str, Reader};
use testkit::wire::command_frame;

/// Most commands in flight in one burst.
pub const MAX_BURST: u64 = 16;
/// Largest GetValues region asked for.
const MAX_REGION: u64 = 4096;
/// VirtualMachine.Dispose.
const DISPOSE: (u8, u8) = (1, 6);
/// A command set no VM knows: the reply must be NOT_IMPLEMENTED.
const UNKNOWN: (u8, u8) = (64, 100);
/// The error a debugger gets for a command in flight when the VM goes away.
const VM_DEAD: u16 = 112;

#[derive(Debug, Clone, Copy)]
pub struct Behaviour {
    /// Pause between bursts.
    pub think: (Duration, Duration),
    /// How long a debugger stays attached.
    pub session: (Duration, Duration),
    /// A reply not here after this long is lost.
    pub reply_timeout: Duration,
}

/// What a reply must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// The Version reply of VM `k`.
    Version(usize),
    IdSizes,
    AllThreads,
    /// StringReference.Value of `id` from VM `k`.
    Str { k: usize, id: u64 },
    /// A byte[] region starting at `first`.
    Region { first: u32, count: u32 },
    NotImplemented,
    /// The proxy's answer to Dispose.
    Disposed,
}

/// A random command for VM `k`: its packet body and what its reply must be.
pub fn random_command(rng: &mut Rng, k: usize) -> ((u8, u8), Vec<u8>, Expect) {
    match rng.range(0, 99) {
        0..=9 => (VERSION, Vec::new(), Expect::Version(k)),
        10..=14 => (ID_SIZES, Vec::new(), Expect::IdSizes),
        15..=24 => (ALL_THREADS, Vec::new(), Expect::AllThreads),
        25..=64 => {
            let id = rng.next();
            let mut b = Vec::new();
            put_id(&mut b, id, 8);
            (STRING_VALUE, b, Expect::Str { k, id })
        }
        65..=94 => {
            let first = rng.next() as u32;
            let count = rng.range(0, MAX_REGION) as u32;
            let mut b = Vec::new();
            put_id(&mut b, rng.next(), 8);
            b.extend_from_slice(&first.to_be_bytes());
            b.extend_from_slice(&count.to_be_bytes());
            (ARRAY_GET_VALUES, b, Expect::Region { first, count })
        }
        _ => (UNKNOWN, Vec::new(), Expect::NotImplemented),
    }
}

/// Whether a reply (error code and body) is what `e` calls for.
pub fn matches(e: &Expect, error: u16, body: &[u8]) -> bool {
    let ok = |want: &[u8]| error == 0 && body == want;
    match e {
        Expect::Version(k) => error == 0 && vm_in_version(body) == Some(*k),
        Expect::IdSizes => ok(&[0, 0, 0, 8].repeat(5)),
        Expect::AllThreads => ok(&[0, 0, 0, 0]),
        Expect::Str { k, id } => {
            let mut want = Vec::new();
            put_str(&mut want, &string_value(*k, *id));
            ok(&want)
        }
        Expect::Region { first, count } => {
            let mut want = vec![TAG_BYTE];
            want.extend_from_slice(&count.to_be_bytes());
            want.extend((0..u64::from(*count)).map(|i| crate::jdwp_ops::pattern_byte(u64::from(*first) + i)));
            ok(&want)
        }
        Expect::NotImplemented => error == ERR_NOT_IMPLEMENTED && body.is_empty(),
        Expect::Disposed => ok(&[]),
    }
}

/// What a reply to a command of ours counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// VM_DEAD for a VM that was killed: the daemon answers what was in flight.
    Cut,
    Mismatch,
}

pub fn judge(e: &Expect, error: u16, body: &[u8], vm_alive: impl FnOnce() -> bool) -> Outcome {
    if matches(e, error, body) {
        Outcome::Done
    } else if error == VM_DEAD && body.is_empty() && !vm_alive() {
        Outcome::Cut
    } else {
        Outcome::Mismatch
    }
}

/// The VM number out of a fake VM's Version reply.
pub fn vm_in_version(body: &[u8]) -> Option<usize> {
    let description = Reader::new(body).jdwp_string().ok()?;
    let k: usize = description.strip_prefix(VM_DESCRIPTION)?.parse().ok()?;
    (vm_description(k) == description).then_some(k)
}

/// How a session ended.
enum End {
    /// The debugger chose to leave (or the run is over).
    Leave,
    /// The connection failed with commands in flight.
    Broken(ClientError, u64),
}

/// Runs one debugger until `world.stop`; returns burst round-trip times in µs.
pub fn run(world: &World, index: usize, how: Behaviour) -> Vec<u32> {
    let mut rng = Rng::seeded(index as u64 + 1);
    let mut rtts = Vec::new();
    let stop = || world.stop.load(std::sync::atomic::Ordering::Relaxed);
    while !stop() {
        let Some(pick) = world.pick(&mut rng) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        session(world, pick, how, &mut rng, &mut rtts);
        world.release(pick);
    }
    rtts
}

fn session(world: &World, pick: Pick, how: Behaviour, rng: &mut Rng, rtts: &mut Vec<u32>) {
    let c = &world.counters;
    let addr = SocketAddr::from(([127, 0, 0, 1], pick.daemon_port));
    let attached = BlockingClient::connect(addr, Duration::from_secs(5)).and_then(|mut cl| {
        cl.set_read_timeout(how.reply_timeout)?;
        let body = cl.request(VERSION.0, VERSION.1, &[])?;
        Ok((cl, vm_in_version(&body)))
    });
    let mut client = match attached {
        Ok((cl, Some(k))) if k == pick.k => cl,
        Ok((_, Some(k))) if port_of(k) == port_of(pick.k) && !world.alive(pick.k) => {
            // The VM was restarted on its port between the pick and the attach.
            return Counters::add(&c.attach_raced, 1);
        }
        Ok((_, other)) => {
            world.note(format!("attach to {addr}: Version names VM {other:?}, expected {}", pick.k));
            return Counters::add(&c.mismatched, 1);
        }
        Err(_) if !world.alive(pick.k) => return Counters::add(&c.attach_raced, 1),
        Err(e) => {
            world.note(format!("attach to {addr} (VM {}): {e}", pick.k));
            return Counters::add(&c.attach_failed, 1);
        }
    };
    Counters::add(&c.attaches, 1);
    let until = Instant::now() + rng.duration(how.session);
    let stop = || world.stop.load(std::sync::atomic::Ordering::Relaxed);
    let mut end = End::Leave;
    while Instant::now() < until && !stop() {
        let t0 = Instant::now();
        if let Err((e, pending)) = burst(&mut client, rng, pick.k, world) {
            end = End::Broken(e, pending);
            break;
        }
        rtts.push(t0.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
        let pause = rng.duration(how.think);
        let wake = Instant::now() + pause;
        while Instant::now() < wake && !stop() {
            std::thread::sleep((wake - Instant::now()).min(Duration::from_millis(100)));
        }
    }
    match end {
        End::Leave => {
            Counters::add(&c.detaches, 1);
            if rng.chance(0.25) {
                // Dispose is answered by the daemon, which lets this debugger go alone.
                let sent = client.send(DISPOSE.0, DISPOSE.1, &[]);
                let mut body = Vec::new();
                let reply = sent.and_then(|id| client.read_header().map(|h| (id, h)));
                match reply.and_then(|(id, h)| client.read_body(&h, &mut body).map(|_| (id, h))) {
                    Ok((id, h)) if h.is_reply() && h.id == id && matches(&Expect::Disposed, h.error(), &body) => {
                        Counters::add(&c.disposes, 1);
                        Counters::add(&c.done, 1);
                    }
                    Ok((_, h)) => {
                        world.note(format!("Dispose answered by {h:?}"));
                        Counters::add(&c.mismatched, 1);
                    }
                    Err(_) if !world.alive(pick.k) => Counters::add(&c.cut, 1),
                    Err(e) => {
                        world.note(format!("Dispose on VM {}: {e}", pick.k));
                        Counters::add(&c.lost, 1);
                    }
                }
            }
        }
        End::Broken(e, pending) => {
            if world.alive(pick.k) {
                world.note(format!("session on VM {} ended by the daemon with {pending} in flight: {e}", pick.k));
                Counters::add(&c.sessions_dropped, 1);
                Counters::add(&c.lost, pending);
            } else {
                Counters::add(&c.sessions_cut, 1);
                Counters::add(&c.cut, pending);
            }
        }
    }
}

/// Sends 1..=MAX_BURST random commands in one write and reads a reply to each, in any
/// order. On a connection error returns it with the number of commands still unanswered.
fn burst(client: &mut BlockingClient, rng: &mut Rng, k: usize, world: &World) -> Result<(), (ClientError, u64)> {
    let c = &world.counters;
    let n = rng.range(1, MAX_BURST);
    let mut pending: HashMap<u32, Expect> = HashMap::with_capacity(n as usize);
    let mut out = Vec::new();
    for _ in 0..n {
        let ((set, cmd), body, expect) = random_command(rng, k);
        let id = client.next_id();
        out.extend_from_slice(&command_frame(id, set, cmd, &body));
        pending.insert(id, expect);
    }
    client.write_all(&out).map_err(|e| (e, n))?;
    let mut body = Vec::new();
    while !pending.is_empty() {
        let left = pending.len() as u64;
        let h = client.read_header().map_err(|e| (e, left))?;
        client.read_body(&h, &mut body).map_err(|e| (e, left))?;
        if !h.is_reply() {
            world.note(format!("a command ({},{}) came to a debugger that asked for no events", h.a, h.b));
            Counters::add(&c.mismatched, 1);
            continue;
        }
        match pending.remove(&h.id).map(|e| (judge(&e, h.error(), &body, || world.alive(k)), e)) {
            Some((Outcome::Done, _)) => Counters::add(&c.done, 1),
            Some((Outcome::Cut, _)) => {
                Counters::add(&c.cut, 1);
                Counters::add(&c.vm_dead, 1);
            }
            Some((Outcome::Mismatch, e)) => {
                world.note(format!("reply {} (error {}, {} bytes) does not answer {e:?}", h.id, h.error(), body.len()));
                Counters::add(&c.mismatched, 1);
            }
            None => {
                world.note(format!("reply to id {} that was not asked for", h.id));
                Counters::add(&c.mismatched, 1);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jdwp_ops::region_body;

    #[test]
    fn replies_are_checked_against_their_requests() {
        let k = crate::soak_world::vm_number(20001, 3);
        let mut version = Vec::new();
        put_str(&mut version, &vm_description(k));
        assert_eq!(vm_in_version(&version), Some(k));
        let mut other = Vec::new();
        put_str(&mut other, &vm_description(k + 1));
        let mut s = Vec::new();
        put_str(&mut s, &string_value(k, 42));
        let cases: Vec<(Expect, u16, Vec<u8>, bool)> = vec![
            (Expect::Version(k), 0, version.clone(), true),
            (Expect::Version(k), 0, other, false),
            (Expect::Str { k, id: 42 }, 0, s.clone(), true),
            (Expect::Str { k, id: 43 }, 0, s.clone(), false),
            (Expect::Str { k: k + 1, id: 42 }, 0, s, false),
            (Expect::Region { first: 250, count: 10 }, 0, region_body(250, 10), true),
            (Expect::Region { first: 251, count: 10 }, 0, region_body(250, 10), false),
            (Expect::Region { first: 250, count: 9 }, 0, region_body(250, 10), false),
            (Expect::IdSizes, 0, [0, 0, 0, 8].repeat(5), true),
            (Expect::AllThreads, 0, vec![0, 0, 0, 0], true),
            (Expect::AllThreads, 99, vec![], false),
            (Expect::NotImplemented, 99, vec![], true),
            (Expect::NotImplemented, 0, vec![], false),
            (Expect::Disposed, 0, vec![], true),
        ];
        for (e, error, body, want) in cases {
            assert_eq!(matches(&e, error, &body), want, "{e:?} error {error}");
        }
    }

    #[test]
    fn vm_dead_is_a_cut_only_when_the_vm_was_killed() {
        let e = Expect::AllThreads;
        assert_eq!(judge(&e, 0, &[0, 0, 0, 0], || true), Outcome::Done);
        assert_eq!(judge(&e, VM_DEAD, &[], || false), Outcome::Cut);
        assert_eq!(judge(&e, VM_DEAD, &[], || true), Outcome::Mismatch, "VM_DEAD from a running VM");
        assert_eq!(judge(&e, 99, &[], || false), Outcome::Mismatch);
    }

    #[test]
    fn random_commands_cover_every_kind() {
        let mut rng = Rng::seeded(3);
        let mut kinds = std::collections::HashSet::new();
        for _ in 0..2000 {
            let (cmd, _, e) = random_command(&mut rng, 5);
            kinds.insert(cmd);
            if let Expect::Region { count, .. } = e {
                assert!(u64::from(count) <= MAX_REGION);
            }
        }
        assert_eq!(kinds.len(), 6);
    }
}
