//! What the runtime's one thread does before it sleeps: when it has just written to a peer,
//! it first gives the CPU away (`sched_yield`).
//!
//! A write to a local socket wakes the process reading it (the VM's JDWP thread, the
//! debugger), and on a machine with few CPUs that process often waits for this CPU. If
//! the proxy goes to sleep in `epoll_wait` at once, the peer's answer has to wake it
//! again: a sleep and a wake-up per packet, which is most of a relay's cost. Yielding
//! first lets the woken peer run; by the time the proxy polls, its answer (or the next
//! request) is often already there, so the poll returns without sleeping and several
//! packets move per system call. With nobody else runnable the yield returns at once.
//!
//! It yields twice: the peer it woke often wakes a thread of its own (HotSpot's JDWP agent
//! reads commands in one thread and runs them in another), and that one needs the CPU too.
//!
//! Whether that pays depends on the traffic and the machine, so the thread learns it
//! (`yield_policy`): it times each park that followed yields, and when most of them slept
//! anyway (one request at a time, peers woken on the other CPU) it yields before one park in
//! eight only. With more than one request in flight it always yields: the peers then make
//! several packets per wake-up. On a 2-vCPU Intel machine, sequential Version round trips
//! then cost the proxy about a tenth less CPU with no loss of latency, while pipelined
//! requests keep the yields.
//!
//! Measured with 50,000 pipelined Version requests (window 16) against HotSpot 17 on two
//! CPUs, six alternating runs: without the yield 51-59k requests/s, one yield 59-67k, two
//! yields 64-82k (socat: 53-65k); three or five were no better than two. The proxy's
//! voluntary context switches in two more runs: 6,400-8,800, 2,200-2,400 and 900-1,500.
//! Sequential round trips: 7.5-10.2k/s without, 10.0-12.1k/s with two yields. Nothing
//! holds a packet back: it yields only when there is nothing left to do.
//!
//! With `--spin-us N` it then polls the sockets it wrote to, yielding between polls, for up
//! to N µs before it sleeps, so an answer that comes within that time is taken without a
//! sleep and a wake-up. On this 2-CPU virtual machine, with 50 µs, sequential Version round
//! trips against HotSpot 17 through the proxy came close to a direct connection's (see the
//! README's performance section), at about 1.4 times the proxy CPU per round trip. Off by
//! default: the CPU is spent on every packet, and a person stepping in an IDE does not see
//! 40 µs. It spins only after a write, so an idle daemon sleeps.
//!
//! With `--cpu-pin`, when it wakes, the thread now and then checks whether it should stay on
//! its CPU (`pin`, `pin_policy`): kept on one quiet CPU it does not wake on the other one with cold
//! caches, which on a 2-CPU virtual machine was most of the difference between a relay's
//! round trip and the same round trip with everything on one CPU.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub mod pin;
mod pin_policy;
mod yield_policy;
pub use pin_policy::{PinPolicy, PinStep};
pub use yield_policy::YieldPolicy;

/// How many times the thread yields before it sleeps.
const YIELDS: usize = 2;

/// Set by every write that moved bytes to a socket since the thread last parked.
static WROTE: AtomicBool = AtomicBool::new(false);

/// The most requests of one VM in flight when a session went to wait since the last park.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Notes that a session waits with `n` requests of its VM in flight. With more than one the
/// thread yields before this park whatever the policy says; the CPU pinning keeps to
/// traffic that waits on one request at a time.
pub fn in_flight(n: usize) {
    // Only the runtime's thread writes it: no read-modify-write needed.
    if n > IN_FLIGHT.load(Ordering::Relaxed) {
        IN_FLIGHT.store(n, Ordering::Relaxed);
    }
}

/// Notes that bytes went to a peer (which the write may have woken).
pub fn wrote() {
    WROTE.store(true, Ordering::Relaxed);
}

/// Runs before the runtime's thread parks: yields the CPU if a write since the last park
/// may have woken a peer. An idle daemon (logging DDM chunks, serving `list`) does not yield.
pub fn before_park() {
    let in_flight = IN_FLIGHT.swap(0, Ordering::Relaxed);
    let many_in_flight = in_flight > 1;
    pin::note_park(in_flight);
    if !WROTE.swap(false, Ordering::Relaxed) {
        return;
    }
    let spin_us = SPIN_US.load(Ordering::Relaxed);
    // Spinning waits for the answer on this CPU: the yields are part of it. With several
    // requests in flight the yields let the peers make more packets per wake-up: kept too.
    let always = spin_us > 0 || many_in_flight;
    let learn = !always
        && POLICY.with(|p| {
            let mut policy = p.get();
            let y = policy.should_yield();
            p.set(policy);
            y
        });
    if always || learn {
        for _ in 0..YIELDS {
            std::thread::yield_now();
        }
    }
    if learn {
        YIELDED_AT.with(|t| t.set(Some(Instant::now())));
    }
    spin(Duration::from_micros(spin_us));
}

/// Runs when the runtime's thread wakes: tells the policy how long a park after yields took,
/// and now and then whether the thread stays on its CPU (`pin`).
pub fn after_unpark() {
    pin::check();
    if let Some(at) = YIELDED_AT.with(|t| t.take()) {
        let parked = at.elapsed();
        POLICY.with(|p| {
            let mut policy = p.get();
            policy.parked_after_yield(parked);
            p.set(policy);
        });
    }
}

thread_local! {
    static POLICY: std::cell::Cell<YieldPolicy> = std::cell::Cell::new(YieldPolicy::default());
    /// When the thread last finished yielding before a park.
    static YIELDED_AT: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// How long the thread polls for an answer after the yields (`--spin-us`), in µs; 0: off.
static SPIN_US: AtomicU64 = AtomicU64::new(0);

/// Sets how long the thread polls for an answer before it sleeps (`--spin-us`).
pub fn set_spin(d: Duration) {
    SPIN_US.store(d.as_micros().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
}

/// The most sockets watched while spinning.
const MAX_HOT: usize = 8;

thread_local! {
    /// Sockets written to since the last park: their answers are what the spin waits for.
    static HOT: std::cell::RefCell<Vec<std::os::fd::RawFd>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Notes that bytes went to the peer on `fd`: its answer will come on the same socket.
pub fn wrote_to(fd: std::os::fd::RawFd) {
    wrote();
    HOT.with(|h| {
        let mut h = h.borrow_mut();
        if !h.contains(&fd) && h.len() < MAX_HOT {
            h.push(fd);
        }
    });
}

/// Polls the sockets written to until one is readable or the budget is spent, yielding
/// between polls.
fn spin(budget: Duration) {
    if budget.is_zero() {
        HOT.with(|h| h.borrow_mut().clear());
        return;
    }
    let mut fds: Vec<libc::pollfd> = HOT.with(|h| h.borrow_mut().drain(..).map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect());
    if fds.is_empty() {
        return;
    }
    let until = Instant::now() + budget;
    loop {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd entries; a zero timeout never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if n != 0 || Instant::now() >= until {
            return;
        }
        std::thread::yield_now();
    }
}
