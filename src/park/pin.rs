//! Keeps the runtime's thread on one CPU while that pays (`pin_policy`): reads the thread's
//! scheduler figures from `/proc/thread-self/schedstat` at most once per window, when the
//! thread wakes, and sets its CPU affinity. Anything missing (no schedstat, one allowed CPU,
//! an affinity call refused) turns it off for good, and the thread runs free as before.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::pin_policy::{PinPolicy, PinStep, Sample, WINDOW};

/// Set by `serve --cpu-pin`.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The CPUs the process may use, as it started.
static ALLOWED: OnceLock<libc::cpu_set_t> = OnceLock::new();

/// Turns pinning on or off for the thread that runs the runtime (off by default).
pub fn set_enabled(on: bool) {
    if on {
        remember_allowed();
    }
    ENABLED.store(on, Ordering::Relaxed);
}

struct Pinning {
    policy: PinPolicy,
    schedstat: File,
    origin: Instant,
    /// Before this coarse time (ns) no sample can be due: the check at each wake-up reads
    /// the coarse clock (a few instructions) and the precise one only near a window's end.
    coarse_due: u64,
    /// How far the coarse clock may lag the precise one (its resolution).
    coarse_step: Duration,
}

enum State {
    NotStarted,
    On(Pinning),
    Off,
}

thread_local! {
    static STATE: RefCell<State> = const { RefCell::new(State::NotStarted) };
    /// Parks since the last sample, and how many of them waited on exactly one request.
    static PARKS: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// Called before each park of the runtime's thread, with the most requests of one VM in
/// flight.
pub fn note_park(in_flight: usize) {
    if ENABLED.load(Ordering::Relaxed) {
        PARKS.with(|p| {
            let (parks, one) = p.get();
            p.set((parks.saturating_add(1), one.saturating_add(u32::from(in_flight == 1))));
        });
    }
}

/// Called when the runtime's thread wakes.
pub fn check() {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if matches!(*s, State::NotStarted) {
            *s = match start() {
                Some(p) => State::On(p),
                None => State::Off,
            };
        }
        let State::On(p) = &mut *s else { return };
        let coarse = coarse_now();
        if coarse < p.coarse_due {
            return;
        }
        let at = p.origin.elapsed();
        if !p.policy.due(at) {
            return;
        }
        p.coarse_due = coarse.saturating_add(duration_ns(WINDOW.saturating_sub(p.coarse_step)));
        let (parks, one) = PARKS.with(|c| c.replace((0, 0)));
        // A round trip at a time parks once waiting on the request, once on the next one.
        let one_at_a_time = one >= parks / 4 && one > 0;
        let applied = match read_schedstat(&p.schedstat) {
            Some((on_cpu, waited, runs)) => match p.policy.step(Sample { at, on_cpu, waited, runs, one_at_a_time }) {
                PinStep::Stay => Ok(()),
                PinStep::Pin => pin_here(),
                PinStep::Unpin => unpin(),
            },
            None => Err("cannot read /proc/thread-self/schedstat".to_string()),
        };
        if let Err(e) = applied {
            tracing::debug!(error = %e, "CPU pinning off");
            let _ = unpin();
            *s = State::Off;
        }
    });
}

/// Called in each thread the runtime starts (the blocking pool): such a thread inherits
/// the pinned thread's one CPU, and gets the process's CPUs back.
pub fn thread_started() {
    if ENABLED.load(Ordering::Relaxed) {
        let _ = unpin();
    }
}

fn start() -> Option<Pinning> {
    let allowed = ALLOWED.get()?;
    // SAFETY: `allowed` is an initialised cpu_set_t.
    if unsafe { libc::CPU_COUNT(allowed) } < 2 {
        return None;
    }
    let schedstat = File::open("/proc/thread-self/schedstat").ok()?;
    read_schedstat(&schedstat)?;
    let coarse_step = coarse_resolution()?;
    Some(Pinning { policy: PinPolicy::default(), schedstat, origin: Instant::now(), coarse_due: 0, coarse_step })
}

/// CLOCK_MONOTONIC_COARSE in ns: the time of the last tick, read without the TSC.
fn coarse_now() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to fill; the clock id is a constant Linux knows.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return u64::MAX; // never before a due time: every wake-up reads the precise clock
    }
    timespec_ns(&ts)
}

/// The coarse clock's resolution (a scheduler tick); `None` without such a clock.
fn coarse_resolution() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as in `coarse_now`.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::from_nanos(timespec_ns(&ts)))
}

fn timespec_ns(ts: &libc::timespec) -> u64 {
    u64::try_from(ts.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000).saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn remember_allowed() {
    ALLOWED.get_or_init(|| {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity fills at most
        // its size. On failure the set stays empty and pinning never starts.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                libc::CPU_ZERO(&mut set);
            }
            set
        }
    });
}

/// The thread's total time on a CPU, its total wait for one and its number of runs:
/// schedstat's three fields (times in ns).
fn read_schedstat(f: &File) -> Option<(Duration, Duration, u64)> {
    let mut buf = [0u8; 96];
    let n = f.read_at(&mut buf, 0).ok()?;
    parse_schedstat(std::str::from_utf8(buf.get(..n)?).ok()?)
}

fn parse_schedstat(text: &str) -> Option<(Duration, Duration, u64)> {
    let mut it = text.split_ascii_whitespace();
    let on_cpu: u64 = it.next()?.parse().ok()?;
    let waited: u64 = it.next()?.parse().ok()?;
    let runs: u64 = it.next()?.parse().ok()?;
    Some((Duration::from_nanos(on_cpu), Duration::from_nanos(waited), runs))
}

fn pin_here() -> Result<(), String> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    let cpu = usize::try_from(cpu).map_err(|_| "sched_getcpu failed".to_string())?;
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET ignores out-of-range CPUs.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set)?;
    tracing::debug!(cpu, "runtime thread kept on one CPU");
    Ok(())
}

fn unpin() -> Result<(), String> {
    let allowed = ALLOWED.get().ok_or_else(|| "no CPU set remembered".to_string())?;
    set_affinity(allowed)?;
    tracing::debug!("runtime thread free to move between CPUs");
    Ok(())
}

fn set_affinity(set: &libc::cpu_set_t) -> Result<(), String> {
    // SAFETY: `set` points to a valid cpu_set_t of the size given; pid 0 is this thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(format!("sched_setaffinity: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_the_wait_and_the_runs() {
        assert_eq!(parse_schedstat("4071393 1526 44020\n"), Some((Duration::from_nanos(4071393), Duration::from_nanos(1526), 44020)));
        assert_eq!(parse_schedstat("1 2"), None);
        assert_eq!(parse_schedstat("a b c"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn this_kernel_gives_a_schedstat_that_parses() {
        let f = File::open("/proc/thread-self/schedstat").expect("Linux with CONFIG_SCHED_INFO has it");
        let (_, _, runs) = read_schedstat(&f).expect("schedstat parses");
        assert!(runs > 0, "a running thread has run at least once");
    }

    #[test]
    fn the_coarse_clock_never_runs_ahead_of_the_precise_one_by_more_than_its_step() {
        let step = coarse_resolution().expect("Linux has CLOCK_MONOTONIC_COARSE");
        assert!(step > Duration::ZERO && step < WINDOW, "a tick of {step:?} would make windows too long");
        let precise = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: as in `coarse_now`.
            assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) }, 0);
            timespec_ns(&ts)
        };
        for _ in 0..1000 {
            let before = precise();
            let coarse = coarse_now();
            let after = precise();
            // The coarse time is the last tick: never ahead, and behind by about a step. A
            // loaded virtual machine misses ticks (6.9 ms behind a 4 ms step was seen with
            // two test runs at once), so the lag's bound is loose: it only catches a clock
            // that does not move.
            assert!(coarse <= after, "coarse {coarse} after precise {after}");
            assert!(coarse + duration_ns(step) + 100_000_000 >= before, "coarse {coarse} lags {before} by more than {step:?} + 100 ms");
        }
    }

    fn affinity() -> libc::cpu_set_t {
        // SAFETY: as in `remember_allowed`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
            set
        }
    }

    #[test]
    fn a_busy_thread_is_kept_on_its_cpu_and_its_helpers_are_not() {
        set_enabled(true);
        let allowed = *ALLOWED.get().expect("remembered");
        // SAFETY: an initialised cpu_set_t.
        let cpus = unsafe { libc::CPU_COUNT(&allowed) };
        let (pinned_to, helper) = std::thread::spawn(|| {
            // A thread that sleeps and wakes a few thousand times a second, waiting on one
            // request at a time, as the runtime's thread does while an IDE steps; bounded by
            // a deadline.
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut pinned = None;
            while Instant::now() < deadline {
                note_park(1);
                std::thread::sleep(Duration::from_micros(100));
                check();
                // SAFETY: an initialised cpu_set_t.
                if unsafe { libc::CPU_COUNT(&affinity()) } == 1 {
                    pinned = Some(unsafe { libc::sched_getcpu() });
                    break;
                }
            }
            let helper = std::thread::spawn(|| {
                thread_started();
                // SAFETY: an initialised cpu_set_t.
                unsafe { libc::CPU_COUNT(&affinity()) }
            });
            (pinned, helper.join().expect("helper thread"))
        })
        .join()
        .expect("busy thread");
        if cpus >= 2 {
            assert!(pinned_to.is_some(), "a busy thread on a quiet machine is pinned within 20 s");
            assert_eq!(helper, cpus, "a thread it starts gets every CPU back");
        } else {
            assert_eq!(pinned_to, None, "with one CPU allowed there is nothing to choose");
        }
    }
}
