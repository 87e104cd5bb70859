//! Log lines written to stderr by a thread of their own, in batches.
//!
//! Every decoded DDM chunk is logged; with one `write` per line a VM flooding thread status
//! kept the relay busy writing logs while a debugger's reply waited behind the flood. Here
//! the relay only appends a line to a shared buffer and the writer thread writes whatever
//! has gathered in one go.
//!
//! A channel of one message per line cost more than the formatting: every line woke the
//! writer (a futex call on each side) and allocated. So lines are appended in place, the
//! writer is woken only when it sleeps, and after a wake-up it lingers a moment so that one
//! write carries a flood's worth of lines. The buffer is bounded: when the writer falls that
//! far behind (stderr blocked), logging waits, as a direct write would; no line is dropped.
//!
//! For the JSON format the queue also escapes what serde_json writes as it is (DEL, C1 and
//! bidi controls, `safe_text::escape_json_line`), so a JSON log is as inert on a terminal as
//! the text one and still decodes to the exact strings.

pub mod text;

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Bytes gathered before a logging call waits for the writer.
pub const CAP: usize = 4 << 20;
/// How long the writer lets lines gather after the first one woke it: bounds wake-ups to
/// a few hundred a second under a flood, and delays a lone line by no more than this.
const LINGER: Duration = Duration::from_millis(2);
/// Capacity a buffer keeps after it was written.
const KEEP: usize = 512 * 1024;

type Sink = Box<dyn Write + Send>;

struct State {
    buf: Vec<u8>,
    /// The writer sleeps until told; loggers only signal it then.
    writer_asleep: bool,
    /// No writer thread: loggers write their own lines.
    no_writer: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when the sleeping writer has lines to write.
    lines: Condvar,
    /// Signalled when the writer took the buffer, for loggers waiting for room.
    room: Condvar,
    /// Held from taking the buffer until it is written, so batches leave in order whether
    /// the writer thread or a flush takes them.
    sink: Mutex<Sink>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A logger that panicked mid-append leaves at worst a partial line: keep logging.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sink(&self) -> MutexGuard<'_, Sink> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn append(&self, line: &[u8]) {
        let mut st = self.state();
        if st.no_writer {
            drop(st);
            let mut sink = self.sink();
            let _ = sink.write_all(line);
            let _ = sink.flush();
            return;
        }
        // A line longer than the whole buffer still goes in once the buffer is empty.
        while !st.buf.is_empty() && st.buf.len() + line.len() > CAP {
            st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.buf.extend_from_slice(line);
        if st.writer_asleep {
            st.writer_asleep = false;
            self.lines.notify_one();
        }
    }

    /// Writes everything appended so far; `spare` is an empty buffer to swap in.
    fn write_out(&self, spare: &mut Vec<u8>) {
        let mut sink = self.sink();
        {
            let mut st = self.state();
            std::mem::swap(&mut st.buf, spare);
        }
        self.room.notify_all();
        if !spare.is_empty() {
            let _ = sink.write_all(spare);
            let _ = sink.flush();
        }
        spare.clear();
        // Keep what a flood's 2 ms batches need (about 300 KB at a million lines a second),
        // not what a stalled stderr or a huge line made it grow to.
        spare.shrink_to(KEEP);
    }
}

/// The `MakeWriter` handed to tracing-subscriber.
#[derive(Clone)]
pub struct StderrQueue {
    shared: Arc<Shared>,
    json: bool,
}

impl StderrQueue {
    /// The queue for lines of JSON: hostile characters inside strings become `\uXXXX`.
    pub fn for_json(self) -> Self {
        StderrQueue { json: true, ..self }
    }
}

/// Flushes the buffer when dropped (at the end of `main`), so no line is lost at exit.
pub struct FlushGuard {
    shared: Arc<Shared>,
}

impl FlushGuard {
    /// Returns once every line logged before the call is written.
    pub fn flush(&self) {
        self.shared.write_out(&mut Vec::new());
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Starts the writer thread for stderr.
pub fn start() -> (StderrQueue, FlushGuard) {
    start_with(Box::new(std::io::stderr()))
}

/// Starts a writer thread for `sink`. If the thread cannot start, each line is written by
/// the caller: nothing worse than direct writes.
pub fn start_with(sink: Sink) -> (StderrQueue, FlushGuard) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State { buf: Vec::with_capacity(64 * 1024), writer_asleep: false, no_writer: false }),
        lines: Condvar::new(),
        room: Condvar::new(),
        sink: Mutex::new(sink),
    });
    // The thread holds only a weak reference: when main's handles are gone it ends.
    let weak = Arc::downgrade(&shared);
    let spawned = std::thread::Builder::new().name("jdwpmux-log".into()).spawn(move || run(weak));
    if spawned.is_err() {
        shared.state().no_writer = true;
    }
    (StderrQueue { shared: shared.clone(), json: false }, FlushGuard { shared })
}

fn run(shared: std::sync::Weak<Shared>) {
    let mut spare = Vec::with_capacity(64 * 1024);
    loop {
        let Some(s) = shared.upgrade() else { return };
        {
            let mut st = s.state();
            while st.buf.is_empty() {
                st.writer_asleep = true;
                // Timed, so that the thread notices when every handle is gone.
                let (g, _) = s.lines.wait_timeout(st, Duration::from_secs(1)).unwrap_or_else(|e| e.into_inner());
                st = g;
                if st.buf.is_empty() && Arc::strong_count(&s) == 1 {
                    return;
                }
            }
            st.writer_asleep = false;
        }
        std::thread::sleep(LINGER);
        s.write_out(&mut spare);
    }
}

/// One log line being formatted: appended to the shared buffer as it is written.
/// tracing-subscriber formats a whole line first and writes it in one call, so lines from
/// different threads never mix.
pub struct Line<'a> {
    shared: &'a Shared,
    json: bool,
}

impl Write for Line<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.json {
            // A whole line per call (above), so no character is split between calls.
            self.shared.append(&crate::safe_text::escape_json_line(b));
        } else {
            self.shared.append(b);
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for StderrQueue {
    type Writer = Line<'a>;
    fn make_writer(&'a self) -> Line<'a> {
        Line { shared: &self.shared, json: self.json }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    use tracing_subscriber::fmt::MakeWriter;

    /// A sink the test can read, and close like a stalled stderr.
    #[derive(Clone, Default)]
    struct TestSink {
        out: Arc<Mutex<Vec<u8>>>,
        gate: Arc<(Mutex<bool>, Condvar)>,
    }

    impl TestSink {
        fn text(&self) -> String {
            String::from_utf8(self.out.lock().unwrap().clone()).unwrap()
        }
        fn set_open(&self, open: bool) {
            *self.gate.0.lock().unwrap() = open;
            self.gate.1.notify_all();
        }
    }

    impl Write for TestSink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let mut open = self.gate.0.lock().unwrap();
            while !*open {
                open = self.gate.1.wait(open).unwrap();
            }
            self.out.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn open_sink() -> TestSink {
        let s = TestSink::default();
        s.set_open(true);
        s
    }

    fn log(q: &StderrQueue, line: &str) {
        q.make_writer().write_all(line.as_bytes()).unwrap();
    }

    #[test]
    fn lines_from_threads_arrive_whole_and_in_order() {
        let sink = open_sink();
        let (q, guard) = start_with(Box::new(sink.clone()));
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || (0..5000).for_each(|i| log(&q, &format!("t{t} line {i}\n"))))
            })
            .collect();
        threads.into_iter().for_each(|h| h.join().unwrap());
        guard.flush();
        let text = sink.text();
        assert_eq!(text.lines().count(), 15_000);
        for t in 0..3 {
            let prefix = format!("t{t} line ");
            let seen: Vec<u32> = text.lines().filter_map(|l| l.strip_prefix(&prefix)).map(|n| n.parse().unwrap()).collect();
            assert_eq!(seen, (0..5000).collect::<Vec<_>>(), "thread {t}");
        }
    }

    #[test]
    fn flush_writes_what_was_logged_before_it_at_once() {
        let sink = open_sink();
        let (q, guard) = start_with(Box::new(sink.clone()));
        log(&q, "one\n");
        log(&q, "two\n");
        guard.flush();
        assert_eq!(sink.text(), "one\ntwo\n");
        log(&q, "three\n");
        drop(guard); // at the end of main
        assert_eq!(sink.text(), "one\ntwo\nthree\n");
    }

    #[test]
    fn the_writer_writes_without_a_flush() {
        let sink = open_sink();
        let (q, _guard) = start_with(Box::new(sink.clone()));
        log(&q, "alone\n");
        let deadline = Instant::now() + Duration::from_secs(20);
        while sink.text().is_empty() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(sink.text(), "alone\n");
    }

    #[test]
    fn a_stalled_sink_makes_logging_wait_and_loses_nothing() {
        let sink = TestSink::default(); // closed: the writer blocks in its first write
        let (q, guard) = start_with(Box::new(sink.clone()));
        let line = format!("{}\n", "x".repeat(1023));
        let lines = 3 * CAP / line.len();
        let finished = Arc::new(AtomicBool::new(false));
        let producer = {
            let (q, line, finished) = (q.clone(), line.clone(), finished.clone());
            std::thread::spawn(move || {
                (0..lines).for_each(|_| log(&q, &line));
                finished.store(true, Ordering::SeqCst);
            })
        };
        // The writer holds at most one buffer, the buffer at most CAP: the producer must
        // stop with the buffer (nearly) full.
        let deadline = Instant::now() + Duration::from_secs(20);
        while q.shared.state().buf.len() + line.len() <= CAP && Instant::now() < deadline {
            std::thread::yield_now();
        }
        let held = q.shared.state().buf.len();
        assert!(held + line.len() > CAP && held <= CAP, "buffer holds {held}");
        assert!(!finished.load(Ordering::SeqCst));
        sink.set_open(true);
        producer.join().unwrap();
        guard.flush();
        let text = sink.text();
        assert_eq!(text.len(), lines * line.len());
        assert!(text.lines().all(|l| l.len() == 1023));
    }

    #[test]
    fn a_burst_leaves_no_big_buffer_behind() {
        let sink = open_sink();
        let (q, _guard) = start_with(Box::new(sink.clone()));
        let line = format!("{}\n", "y".repeat(4095));
        let lines = 2 * CAP / line.len();
        (0..lines).for_each(|_| log(&q, &line));
        let deadline = Instant::now() + Duration::from_secs(20);
        while sink.out.lock().unwrap().len() < lines * line.len() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(sink.out.lock().unwrap().len(), lines * line.len());
        let st = q.shared.state();
        assert!(st.buf.is_empty() && st.buf.capacity() <= KEEP, "capacity {}", st.buf.capacity());
    }

    #[test]
    fn json_lines_escape_what_their_encoder_leaves_raw() {
        let sink = open_sink();
        let (q, guard) = start_with(Box::new(sink.clone()));
        let name = "vm \u{9b}31m \u{202e}cba \x7f";
        log(&q.clone().for_json(), &format!("{{\"vm_name\":{}}}\n", serde_json::to_string(name).unwrap()));
        log(&q, "text \u{9b}\n");
        guard.flush();
        let text = sink.text();
        let mut lines = text.lines();
        let json = lines.next().unwrap();
        assert_eq!(json, r#"{"vm_name":"vm \u009b31m \u202ecba \u007f"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(json).unwrap()["vm_name"], name);
        assert_eq!(lines.next(), Some("text \u{9b}"), "the queue leaves text lines to their format");
    }

    #[test]
    fn without_a_writer_thread_lines_are_written_by_the_caller() {
        let sink = open_sink();
        let (q, _guard) = start_with(Box::new(sink.clone()));
        q.shared.state().no_writer = true;
        log(&q, "direct\n");
        assert_eq!(sink.text(), "direct\n");
    }
}
