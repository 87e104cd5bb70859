//! A gate in front of one source of a `select!`: the source is polled only when its own waker
//! has fired since it last said `Pending`, or when it last said `Ready`.
//!
//! `select!` polls every enabled branch each time the task wakes, whichever source woke it.
//! The session waits on the VM socket, each debugger's socket, its control channel and the
//! daemon's cancellation, and a round trip wakes it twice; polling every one of them each
//! time was about a fifth of the proxy's own instructions per round trip (the cancellation
//! future alone takes two locks per poll). Behind a gate, a quiet source costs a flag test.
//!
//! The source is polled with the gate's own waker, which sets the flag and then wakes the
//! task. So a source must not be polled in the same direction by anyone else (its waker slot
//! would be taken over and the gate would never learn it is ready), and whatever makes a
//! source worth polling without a wake-up (more room in a buffer, a condition turned back on)
//! must `open` the gate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

struct Shared {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

pub(super) struct WakeGate {
    shared: Arc<Shared>,
    waker: Waker,
}

impl Default for WakeGate {
    /// A new gate is open: the source has not been polled yet.
    fn default() -> Self {
        let shared = Arc::new(Shared { woken: AtomicBool::new(true), task: AtomicWaker::new() });
        let waker = Waker::from(shared.clone());
        WakeGate { shared, waker }
    }
}

impl WakeGate {
    /// Polls the source through `poll` if the gate is open. `Ready` leaves it open (the source
    /// may have more); `Pending` closes it until the source's waker fires.
    pub fn poll<T>(&self, cx: &mut Context<'_>, poll: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
        // Registered before the flag is read: a wake-up in between still reaches the task.
        self.shared.task.register(cx.waker());
        if !self.shared.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let mut inner = Context::from_waker(&self.waker);
        let r = poll(&mut inner);
        if r.is_ready() {
            self.open();
        }
        r
    }

    /// Makes the next poll reach the source.
    pub fn open(&self) {
        self.shared.woken.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A source that counts its polls and is ready when told, keeping the last waker.
    #[derive(Default)]
    struct Source {
        polls: AtomicUsize,
        ready: AtomicBool,
        waker: std::sync::Mutex<Option<Waker>>,
    }

    impl Source {
        fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            if self.ready.swap(false, Ordering::Relaxed) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }

        fn fire(&self) {
            self.ready.store(true, Ordering::Relaxed);
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }

        fn polls(&self) -> usize {
            self.polls.load(Ordering::Relaxed)
        }
    }

    /// Counts the task's wake-ups.
    #[derive(Default)]
    struct Task(AtomicUsize);
    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_quiet_source_is_polled_once_then_only_after_its_wake_up() {
        let gate = WakeGate::default();
        let src = Source::default();
        let task = Arc::new(Task::default());
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending());
        for _ in 0..10 {
            assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending());
        }
        assert_eq!(src.polls(), 1, "a closed gate does not poll the source");
        src.fire();
        assert_eq!(task.0.load(Ordering::Relaxed), 1, "the source's wake-up reaches the task");
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_ready());
        assert_eq!(src.polls(), 2);
        // Ready leaves it open: the next poll asks again (and finds nothing).
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending());
        assert_eq!(src.polls(), 3);
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending());
        assert_eq!(src.polls(), 3);
    }

    #[test]
    fn open_lets_the_next_poll_through() {
        let gate = WakeGate::default();
        let src = Source::default();
        let waker = Waker::from(Arc::new(Task::default()));
        let mut cx = Context::from_waker(&waker);
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending());
        src.ready.store(true, Ordering::Relaxed);
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_pending(), "ready without a wake-up is not seen");
        gate.open();
        assert!(gate.poll(&mut cx, |c| src.poll(c)).is_ready());
    }

    #[test]
    fn a_wake_up_from_another_thread_is_not_lost() {
        let gate = Arc::new(WakeGate::default());
        let src = Arc::new(Source::default());
        let task = Arc::new(Task::default());
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        for round in 1..=200 {
            while gate.poll(&mut cx, |c| src.poll(c)).is_ready() {}
            let s = src.clone();
            let t = std::thread::spawn(move || s.fire());
            t.join().unwrap();
            assert!(task.0.load(Ordering::Relaxed) >= round, "round {round}: the task was not woken");
            assert!(gate.poll(&mut cx, |c| src.poll(c)).is_ready(), "round {round}");
        }
    }
}
