//! The VMs of the soak run: one slot per port of the scanned range, each empty or holding a
//! live fake VM; which debuggers are attached where; VMs killed and started elsewhere; and
//! the counters every debugger adds to.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

use testkit::fake_vm::lean::{KillableVm, LeanVms};

/// Debuggers attached to one VM at most (the daemon allows 8 by default).
pub const MAX_SHARE: usize = 3;

/// A small xorshift generator: the run needs variety, not reproducibility.
pub struct Rng(u64);

impl Rng {
    pub fn seeded(salt: u64) -> Rng {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Rng((t ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi.saturating_sub(lo) + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn duration(&mut self, (lo, hi): (Duration, Duration)) -> Duration {
        Duration::from_micros(self.range(lo.as_micros() as u64, hi.as_micros() as u64))
    }
}

/// The number a fake VM is started with: its port in the high half, its life in the low.
pub fn vm_number(port: u16, life: u32) -> usize {
    ((port as usize) << 32) | life as usize
}

pub fn port_of(k: usize) -> u16 {
    (k >> 32) as u16
}

/// Everything counted during the run.
#[derive(Default)]
pub struct Counters {
    /// Commands answered with the reply their request called for.
    pub done: AtomicU64,
    /// Replies that did not match: wrong content or VM, unknown id, an unasked-for command.
    pub mismatched: AtomicU64,
    /// Commands never answered although their VM was still running.
    pub lost: AtomicU64,
    /// Commands in flight when their VM was killed (no reply is owed).
    pub cut: AtomicU64,
    /// Of those, commands the daemon answered VM_DEAD.
    pub vm_dead: AtomicU64,
    pub attaches: AtomicU64,
    /// Attaches to a VM that already had a debugger.
    pub shared_attaches: AtomicU64,
    /// Attaches that failed although the VM was up all along.
    pub attach_failed: AtomicU64,
    /// Attaches that failed, or reached a newer VM on the port, because the VM was killed
    /// or restarted meanwhile.
    pub attach_raced: AtomicU64,
    /// Sessions the debugger ended itself (closing, or Dispose first).
    pub detaches: AtomicU64,
    pub disposes: AtomicU64,
    /// Sessions ended because their VM was killed.
    pub sessions_cut: AtomicU64,
    /// Sessions the daemon ended while their VM was up.
    pub sessions_dropped: AtomicU64,
    pub vms_killed: AtomicU64,
    /// Of those, VMs that had debuggers attached.
    pub vms_killed_debugged: AtomicU64,
    pub vms_started: AtomicU64,
    /// Started VMs the daemon connected to.
    pub vms_found: AtomicU64,
}

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

struct Slot {
    port: u16,
    /// The debugger port the daemon gave this address (0 until known).
    daemon_port: u16,
    vm: Option<KillableVm>,
    k: usize,
    life: u32,
    debuggers: usize,
    /// When the VM was started, until the daemon connects to it.
    waiting_since: Option<Instant>,
}

/// A VM a debugger was given.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub slot: usize,
    pub daemon_port: u16,
    pub k: usize,
}

pub struct World {
    pub fakes: LeanVms,
    slots: Mutex<Vec<Slot>>,
    pub counters: Counters,
    pub stop: AtomicBool,
    /// Errors worth showing (first few of each kind).
    notes: Mutex<Vec<String>>,
    /// Milliseconds from a VM's start until the daemon connected, per VM found.
    found_ms: Mutex<Vec<f64>>,
}

impl World {
    /// VMs on every port of `ports` (all of which must be free).
    pub fn start(fakes: LeanVms, ports: &[u16]) -> Result<World> {
        let mut slots = Vec::with_capacity(ports.len());
        for &port in ports {
            let k = vm_number(port, 0);
            let vm = fakes.start_on(port, k)?;
            let now = Some(Instant::now());
            slots.push(Slot { port, daemon_port: 0, vm: Some(vm), k, life: 0, debuggers: 0, waiting_since: now });
        }
        Ok(World {
            fakes,
            slots: Mutex::new(slots),
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            notes: Mutex::default(),
            found_ms: Mutex::default(),
        })
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn ports(&self) -> Vec<u16> {
        self.slots().iter().map(|s| s.port).collect()
    }

    pub fn set_daemon_port(&self, vm_port: u16, daemon_port: u16) {
        if let Some(s) = self.slots().iter_mut().find(|s| s.port == vm_port) {
            s.daemon_port = daemon_port;
        }
    }

    pub fn daemon_ports_known(&self) -> usize {
        self.slots().iter().filter(|s| s.daemon_port != 0).count()
    }

    /// Live VMs, and of those the ones the daemon is connected to.
    pub fn live(&self) -> (usize, usize) {
        let s = self.slots();
        let up = s.iter().filter(|s| s.vm.is_some()).count();
        let connected = s.iter().filter(|s| s.vm.as_ref().is_some_and(|v| v.live.load(Ordering::SeqCst) > 0)).count();
        (up, connected)
    }

    /// Debuggers attached now, and VMs with two or more.
    pub fn sharing(&self) -> (usize, usize, usize) {
        let s = self.slots();
        let attached = s.iter().map(|s| s.debuggers).sum();
        let shared = s.iter().filter(|s| s.debuggers >= 2).count();
        let most = s.iter().map(|s| s.debuggers).max().unwrap_or(0);
        (attached, shared, most)
    }

    pub fn note(&self, what: String) {
        let mut n = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        if n.len() < 20 {
            n.push(what);
        }
    }

    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }

    pub fn found_ms(&self) -> Vec<f64> {
        self.found_ms.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// A running VM the daemon is connected to, for a debugger: half the time one that
    /// already has a debugger (VMs are shared), never one with MAX_SHARE.
    pub fn pick(&self, rng: &mut Rng) -> Option<Pick> {
        let mut s = self.slots();
        let usable =
            |x: &Slot| x.daemon_port != 0 && x.debuggers < MAX_SHARE && x.vm.as_ref().is_some_and(|v| v.live.load(Ordering::SeqCst) > 0);
        let share = rng.chance(0.5);
        let mut cands: Vec<usize> = (0..s.len()).filter(|i| usable(&s[*i]) && (!share || s[*i].debuggers > 0)).collect();
        if cands.is_empty() {
            cands = (0..s.len()).filter(|i| usable(&s[*i])).collect();
        }
        if cands.is_empty() {
            return None;
        }
        let i = cands[rng.range(0, cands.len() as u64 - 1) as usize];
        if s[i].debuggers > 0 {
            Counters::add(&self.counters.shared_attaches, 1);
        }
        s[i].debuggers += 1;
        Some(Pick { slot: i, daemon_port: s[i].daemon_port, k: s[i].k })
    }

    /// The debugger of `p` left (its VM may have been replaced meanwhile).
    pub fn release(&self, p: Pick) {
        let mut s = self.slots();
        if s[p.slot].k == p.k && s[p.slot].vm.is_some() {
            s[p.slot].debuggers = s[p.slot].debuggers.saturating_sub(1);
        }
    }

    /// Whether VM `k` still runs.
    pub fn alive(&self, k: usize) -> bool {
        self.slots().iter().any(|s| s.k == k && s.vm.is_some())
    }

    /// Kills a running VM: one with debuggers when `debugged` and there is one, else one
    /// without. The debuggers' connections must close; the daemon keeps the address.
    pub fn kill_one(&self, rng: &mut Rng, debugged: bool) -> Option<usize> {
        let vm = {
            let mut s = self.slots();
            let running: Vec<usize> = (0..s.len()).filter(|i| s[*i].vm.is_some()).collect();
            let with: Vec<usize> = running.iter().copied().filter(|i| s[*i].debuggers > 0).collect();
            let without: Vec<usize> = running.iter().copied().filter(|i| s[*i].debuggers == 0).collect();
            let from = if (debugged && !with.is_empty()) || without.is_empty() { with } else { without };
            if from.is_empty() {
                return None;
            }
            let i = from[rng.range(0, from.len() as u64 - 1) as usize];
            if s[i].debuggers > 0 {
                Counters::add(&self.counters.vms_killed_debugged, 1);
            }
            s[i].debuggers = 0;
            s[i].waiting_since = None;
            s[i].vm.take().map(|v| (i, v))
        };
        // Killed outside the lock: debuggers that see their connection close ask `alive`.
        let (i, vm) = vm?;
        vm.kill();
        Counters::add(&self.counters.vms_killed, 1);
        Some(i)
    }

    /// Starts a new VM on an empty slot other than `not`.
    pub fn start_one(&self, rng: &mut Rng, not: Option<usize>) -> Result<()> {
        let mut s = self.slots();
        let empty: Vec<usize> = (0..s.len()).filter(|i| s[*i].vm.is_none() && Some(*i) != not).collect();
        if empty.is_empty() {
            return Ok(());
        }
        let i = empty[rng.range(0, empty.len() as u64 - 1) as usize];
        let life = s[i].life + 1;
        let k = vm_number(s[i].port, life);
        let vm = self.fakes.start_on(s[i].port, k)?;
        let slot = &mut s[i];
        (slot.vm, slot.k, slot.life, slot.debuggers, slot.waiting_since) = (Some(vm), k, life, 0, Some(Instant::now()));
        Counters::add(&self.counters.vms_started, 1);
        Ok(())
    }

    /// Records VMs the daemon has connected to since they started; returns how long the
    /// longest-waiting VM not found yet has waited.
    pub fn check_found(&self) -> Duration {
        let mut s = self.slots();
        let mut longest = Duration::ZERO;
        let mut found = Vec::new();
        for slot in s.iter_mut() {
            let Some(t) = slot.waiting_since else { continue };
            if slot.vm.as_ref().is_some_and(|v| v.live.load(Ordering::SeqCst) > 0) {
                slot.waiting_since = None;
                found.push(t.elapsed().as_secs_f64() * 1e3);
            } else {
                longest = longest.max(t.elapsed());
            }
        }
        drop(s);
        Counters::add(&self.counters.vms_found, found.len() as u64);
        if let Ok(mut f) = self.found_ms.lock() {
            f.extend(found);
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_ranges_stay_in_bounds() {
        let mut r = Rng::seeded(7);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let v = r.range(3, 6);
            assert!((3..=6).contains(&v));
            seen[(v - 3) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s), "every value comes up");
        let d = r.duration((Duration::from_millis(5), Duration::from_millis(6)));
        assert!(d >= Duration::from_millis(5) && d <= Duration::from_millis(6));
    }

    #[test]
    fn vm_numbers_carry_their_port() {
        let k = vm_number(20123, 7);
        assert_eq!(port_of(k), 20123);
        assert_ne!(k, vm_number(20123, 8));
    }
}
