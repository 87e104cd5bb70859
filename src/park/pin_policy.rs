//! Whether the runtime's thread should stay on one CPU, decided from the scheduler's own
//! figures for the thread: how long it waited for a CPU and how many times it ran
//! (`/proc/thread-self/schedstat`), sampled at most once per `WINDOW`.
//!
//! A relay sleeps and wakes twice per round trip. Left free, the scheduler puts the woken
//! thread on whichever CPU looks best at that moment, and on small virtual machines that is
//! the other CPU almost every time: its caches are cold and the wake-up crosses CPUs. Kept on
//! one CPU, the thread finds its data where it left it. The risk is a CPU that something
//! else keeps busy: a woken thread that may not move then waits for that CPU (a busy loop on
//! it made each round trip 100 times slower in a test). So the thread is pinned only while
//! its CPU is not contended: when, in a window, it waited for its CPU more than
//! `MAX_WAIT_PER_RUN` per run on average (or, with only a few runs, more than a quarter of
//! the window in all), it is let free at once and tries again after a back-off (doubling up
//! to `MAX_BACKOFF`). Measured on a 2-CPU virtual machine with HotSpot round trips: about
//! 1.5 µs per run pinned to a quiet CPU, 0.3 µs free, 15 µs free with a busy loop on the
//! other CPU, 2.8 ms pinned to the busy loop's CPU.
//!
//! It pins only a busy thread (at least `BUSY_RUNS` runs in a window), on the CPU the
//! scheduler last chose for it, and only while it mostly waits on one request at a time
//! (round trips: an IDE stepping, jdb) and sleeps most of the time in between (on a CPU for
//! at most two thirds of the window). Other busy traffic keeps both CPUs busy and
//! does better when the scheduler may move the thread: with several requests in flight the
//! peers and the proxy all run at once (pipelined Version requests in the benchmark: 0.92 x
//! socat pinned against 1.39 x free), and a VM flooding DDM chunks keeps the proxy and the
//! log writer busy (the longest debugger round trip during the flood went from 75 to
//! 126-146 ms pinned, with a request of the debugger in flight nearly all the time). A busy
//! window of such traffic unpins at once, without a back-off, even when the thread waited
//! for its CPU: the peers of that traffic are what keeps the CPU busy, and they stop when it
//! does. Backing off there kept the thread free for the first seconds of the round trips
//! that followed (in the benchmark, latency phases after a pipelined one).

use std::time::Duration;

/// Shortest time between two samples.
pub const WINDOW: Duration = Duration::from_millis(20);
/// Mean wait for the CPU per run above which the CPU counts as contended.
pub const MAX_WAIT_PER_RUN: Duration = Duration::from_micros(25);
/// Runs in a window below which the mean wait per run says little: the total wait is
/// compared with the window instead.
const MIN_RUNS_FOR_MEAN: u64 = 8;
/// Runs in a window for the thread to count as busy (a few hundred wake-ups a second).
pub const BUSY_RUNS: u64 = 8;
/// Most of a window the thread may spend on a CPU and be pinned, in thirds: a relay of
/// round trips is on a CPU about 40 % of the time, one that decodes a flood nearly always.
const MAX_ON_CPU_THIRDS: u32 = 2;
/// Wait after the first contended window before pinning again.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait before pinning again.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Pinned this long without contention, the back-off starts over from `FIRST_BACKOFF`.
pub const CALM: Duration = Duration::from_secs(10);

/// The thread's scheduler totals at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When, from any fixed origin.
    pub at: Duration,
    /// Total time on a CPU.
    pub on_cpu: Duration,
    /// Total time spent runnable but waiting for a CPU.
    pub waited: Duration,
    /// Total times it was given a CPU.
    pub runs: u64,
    /// Since the last sample, the thread's sleeps mostly waited on one request at a time (at
    /// least a quarter of them with exactly one in flight).
    pub one_at_a_time: bool,
}

/// What to do with the thread's CPU affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinStep {
    Stay,
    /// Keep it on the CPU it runs on now.
    Pin,
    /// Let it run on any CPU it may use.
    Unpin,
}

#[derive(Clone, Copy, Debug)]
pub struct PinPolicy {
    last: Option<Sample>,
    /// Since when it is pinned; `None`: free.
    pinned_since: Option<Duration>,
    /// No pinning before this.
    retry_at: Duration,
    /// The wait after the next contended window.
    backoff: Duration,
}

impl Default for PinPolicy {
    fn default() -> Self {
        PinPolicy { last: None, pinned_since: None, retry_at: Duration::ZERO, backoff: FIRST_BACKOFF }
    }
}

impl PinPolicy {
    /// Whether a sample taken at `at` is wanted (a window has passed since the last one).
    pub fn due(&self, at: Duration) -> bool {
        self.last.is_none_or(|l| at >= l.at + WINDOW)
    }

    pub fn pinned(&self) -> bool {
        self.pinned_since.is_some()
    }

    /// Takes a sample; says what to do with the thread. Samples closer than `WINDOW` to the
    /// last one are ignored; so are totals that went backwards (the first sample after them
    /// is the new base).
    pub fn step(&mut self, s: Sample) -> PinStep {
        let Some(last) = self.last else {
            self.last = Some(s);
            return PinStep::Stay;
        };
        if s.at < last.at + WINDOW {
            return PinStep::Stay;
        }
        self.last = Some(s);
        if s.runs < last.runs || s.waited < last.waited || s.on_cpu < last.on_cpu {
            return PinStep::Stay;
        }
        let span = s.at - last.at;
        let runs = s.runs - last.runs;
        let waited = s.waited - last.waited;
        let contended = if runs >= MIN_RUNS_FOR_MEAN {
            waited.as_nanos() > MAX_WAIT_PER_RUN.as_nanos() * u128::from(runs)
        } else {
            waited > span / 4
        };
        let busy = runs >= BUSY_RUNS;
        let round_trips = s.one_at_a_time && (s.on_cpu - last.on_cpu) * 3 <= span * MAX_ON_CPU_THIRDS;
        match self.pinned_since {
            Some(_) if busy && !round_trips => {
                self.pinned_since = None;
                PinStep::Unpin
            }
            Some(_) if contended => {
                self.pinned_since = None;
                self.retry_at = s.at + self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                PinStep::Unpin
            }
            Some(since) => {
                if s.at >= since + CALM {
                    self.backoff = FIRST_BACKOFF;
                }
                PinStep::Stay
            }
            None if !contended && round_trips && busy && s.at >= self.retry_at => {
                self.pinned_since = Some(s.at);
                PinStep::Pin
            }
            None => PinStep::Stay,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Feeds windows of `WINDOW` with `runs` runs and `wait` per run, one request at a time.
    fn feed(p: &mut PinPolicy, s: &mut Sample, windows: usize, runs: u64, wait: Duration) -> Vec<PinStep> {
        (0..windows)
            .map(|_| {
                s.at += WINDOW;
                s.on_cpu += WINDOW * 2 / 5;
                s.runs += runs;
                s.waited += wait * runs as u32;
                p.step(*s)
            })
            .collect()
    }

    fn start() -> (PinPolicy, Sample) {
        let mut p = PinPolicy::default();
        let s = Sample { at: ms(5), on_cpu: Duration::ZERO, waited: Duration::ZERO, runs: 0, one_at_a_time: true };
        assert_eq!(p.step(s), PinStep::Stay, "the first sample is only a base");
        (p, s)
    }

    /// Pinned, then busy traffic of several requests whose runs wait `wait` each for the CPU:
    /// unpinned at once, never pinned while it lasts, pinned again as soon as round trips
    /// come back, and no back-off on the way.
    fn other_busy_traffic_unpins_at_once(wait: Duration) -> (PinPolicy, Sample) {
        let (mut p, mut s) = start();
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
        s.one_at_a_time = false;
        assert_eq!(feed(&mut p, &mut s, 1, 800, wait), vec![PinStep::Unpin]);
        assert!(feed(&mut p, &mut s, 10, 800, wait).iter().all(|&x| x == PinStep::Stay));
        s.one_at_a_time = true;
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin], "one request at a time again: pinned at once");
        assert_eq!(p.backoff, FIRST_BACKOFF);
        (p, s)
    }

    #[test]
    fn other_busy_traffic_unpins_without_back_off_and_never_pins() {
        other_busy_traffic_unpins_at_once(us(2));
    }

    #[test]
    fn pipelined_traffic_that_crowds_the_cpu_unpins_without_back_off() {
        // The VM's threads and the client on the same CPU: the thread waits 100 µs per run.
        let (mut p, mut s) = other_busy_traffic_unpins_at_once(us(100));
        // Round trips on a CPU something else keeps busy still back off.
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(100)), vec![PinStep::Unpin]);
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Stay]);
        assert_eq!(p.backoff, FIRST_BACKOFF * 2);
    }

    #[test]
    fn a_busy_thread_on_a_quiet_cpu_is_pinned_once() {
        let (mut p, mut s) = start();
        let steps = feed(&mut p, &mut s, 5, 800, us(2));
        assert_eq!(steps, vec![PinStep::Pin, PinStep::Stay, PinStep::Stay, PinStep::Stay, PinStep::Stay]);
        assert!(p.pinned());
    }

    #[test]
    fn a_thread_on_its_cpu_most_of_the_window_is_not_pinned() {
        let (mut p, mut s) = start();
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
        // A flood to decode, with a debugger's request in flight: 90 % of each window on a CPU.
        let saturated = |p: &mut PinPolicy, s: &mut Sample| {
            s.at += WINDOW;
            s.on_cpu += WINDOW * 9 / 10;
            s.runs += 200;
            p.step(*s)
        };
        assert_eq!(saturated(&mut p, &mut s), PinStep::Unpin);
        assert_eq!(saturated(&mut p, &mut s), PinStep::Stay);
        assert!(!p.pinned());
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin], "round trips again: no back-off");
    }

    #[test]
    fn a_pause_in_the_traffic_keeps_the_pin() {
        let (mut p, mut s) = start();
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
        s.one_at_a_time = false;
        assert!(feed(&mut p, &mut s, 5, 1, us(2)).iter().all(|&x| x == PinStep::Stay));
        assert!(p.pinned());
    }

    #[test]
    fn an_idle_thread_is_not_pinned() {
        let (mut p, mut s) = start();
        assert!(feed(&mut p, &mut s, 20, 2, us(1)).iter().all(|&x| x == PinStep::Stay));
        assert!(!p.pinned());
    }

    #[test]
    fn a_contended_cpu_frees_the_thread_and_backs_off_doubling() {
        let (mut p, mut s) = start();
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
        // A busy loop on the same CPU: a few runs per window, milliseconds of wait each.
        assert_eq!(feed(&mut p, &mut s, 1, 7, ms(3)), vec![PinStep::Unpin]);
        assert!(!p.pinned());
        // Quiet again, but within the first back-off (1 s = 50 windows): stays free.
        let steps = feed(&mut p, &mut s, 49, 800, us(2));
        assert!(steps.iter().all(|&x| x == PinStep::Stay), "{steps:?}");
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
        // Contended again at once: the next back-off is 2 s.
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(100)), vec![PinStep::Unpin]);
        let steps = feed(&mut p, &mut s, 99, 800, us(2));
        assert!(steps.iter().all(|&x| x == PinStep::Stay));
        assert_eq!(feed(&mut p, &mut s, 1, 800, us(2)), vec![PinStep::Pin]);
    }

    #[test]
    fn a_long_calm_resets_the_back_off() {
        let (mut p, mut s) = start();
        feed(&mut p, &mut s, 1, 800, us(2));
        for _ in 0..4 {
            assert_eq!(feed(&mut p, &mut s, 1, 800, us(200)), vec![PinStep::Unpin]);
            let steps = feed(&mut p, &mut s, 3000, 800, us(2));
            assert_eq!(steps.iter().filter(|&&x| x == PinStep::Pin).count(), 1);
        }
        // Each stretch of 60 s pinned mostly calm: the back-off is the first again.
        assert_eq!(p.backoff, FIRST_BACKOFF);
    }

    #[test]
    fn many_short_waits_of_a_free_thread_do_not_stop_the_pinning() {
        // Free, with a busy loop on the other CPU: 15 µs per run, 1,300 runs a window, which
        // is nearly the whole window in all.
        let (mut p, mut s) = start();
        assert_eq!(feed(&mut p, &mut s, 1, 1300, us(15)), vec![PinStep::Pin]);
    }

    #[test]
    fn one_long_wait_counts_even_with_few_runs() {
        let (mut p, mut s) = start();
        feed(&mut p, &mut s, 1, 800, us(2));
        // One run that waited 10 ms of a 20 ms window.
        assert_eq!(feed(&mut p, &mut s, 1, 1, ms(10)), vec![PinStep::Unpin]);
    }

    #[test]
    fn samples_too_close_or_going_backwards_change_nothing() {
        let mut p = PinPolicy::default();
        let at = |t, waited, runs| Sample { at: ms(t), on_cpu: Duration::ZERO, waited, runs, one_at_a_time: true };
        p.step(at(100, ms(1), 1000));
        assert!(!p.due(ms(110)));
        assert_eq!(p.step(at(110, ms(1), 5000)), PinStep::Stay);
        assert_eq!(p.step(at(130, Duration::ZERO, 0)), PinStep::Stay);
        assert!(!p.pinned());
        assert_eq!(p.step(at(150, us(100), 800)), PinStep::Pin);
    }

    proptest! {
        /// Whatever the samples, it pins and unpins in turn, pins only in a window of one
        /// request at a time, and after an unpin for contention waits at least the first
        /// back-off before pinning again.
        #[test]
        fn pins_and_unpins_alternate_with_a_back_off(windows in proptest::collection::vec((0u64..40, 0u64..2000, 0u64..5000, proptest::bool::weighted(0.8), 0u32..=100), 1..400)) {
            let mut p = PinPolicy::default();
            let mut s = Sample { at: Duration::ZERO, on_cpu: Duration::ZERO, waited: Duration::ZERO, runs: 0, one_at_a_time: true };
            p.step(s);
            let mut pinned = false;
            let mut contended_at: Option<Duration> = None;
            let mut base = s;
            for (gap_ms, runs, wait_us, one_at_a_time, on_cpu_pct) in windows {
                s.at += Duration::from_millis(gap_ms);
                s.on_cpu += Duration::from_millis(gap_ms) * on_cpu_pct / 100;
                s.runs += runs;
                s.waited += Duration::from_micros(wait_us);
                s.one_at_a_time = one_at_a_time;
                // The window the policy judges: since the last sample it took.
                let window = (s.at >= base.at + WINDOW).then(|| (s.on_cpu - base.on_cpu, s.at - base.at));
                if window.is_some() {
                    base = s;
                }
                match p.step(s) {
                    PinStep::Pin => {
                        prop_assert!(!pinned && one_at_a_time);
                        let (on_cpu, span) = window.expect("a pin comes from a sample taken");
                        prop_assert!(on_cpu * 3 <= span * 2, "pinned a thread {on_cpu:?} of {span:?} on its CPU");
                        if let Some(u) = contended_at {
                            prop_assert!(s.at >= u + FIRST_BACKOFF);
                        }
                        pinned = true;
                    }
                    PinStep::Unpin => {
                        prop_assert!(pinned);
                        pinned = false;
                        // Round trips that neither saturate the CPU nor are quiet: only
                        // contention unpins them, and then with a back-off.
                        let (on_cpu, span) = window.expect("an unpin comes from a sample taken");
                        if one_at_a_time && on_cpu * 3 <= span * 2 {
                            contended_at = Some(s.at);
                        }
                    }
                    PinStep::Stay => {}
                }
                prop_assert_eq!(p.pinned(), pinned);
            }
        }
    }
}
