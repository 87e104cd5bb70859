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
//! Measured with 50,000 pipelined Version requests (window 16) against HotSpot 17 on two
//! CPUs, six alternating runs: without the yield 51-59k requests/s, one yield 59-67k, two
//! yields 64-82k (socat: 53-65k); three or five were no better than two. The proxy's
//! voluntary context switches in two more runs: 6,400-8,800, 2,200-2,400 and 900-1,500.
//! Sequential round trips: 7.5-10.2k/s without, 10.0-12.1k/s with two yields. Nothing
//! holds a packet back: it yields only when there is nothing left to do.

use std::sync::atomic::{AtomicBool, Ordering};

/// How many times the thread yields before it sleeps.
const YIELDS: usize = 2;

/// Set by every write that moved bytes to a socket since the thread last parked.
static WROTE: AtomicBool = AtomicBool::new(false);

/// Notes that bytes went to a peer (which the write may have woken).
pub fn wrote() {
    WROTE.store(true, Ordering::Relaxed);
}

/// Runs before the runtime's thread parks: yields the CPU if a write since the last park
/// may have woken a peer. An idle daemon (logging DDM chunks, serving `list`) does not yield.
pub fn before_park() {
    if WROTE.swap(false, Ordering::Relaxed) {
        for _ in 0..YIELDS {
            std::thread::yield_now();
        }
    }
}
