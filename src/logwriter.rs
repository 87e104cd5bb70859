//! Log lines written to stderr by a thread of their own, in batches.
//!
//! Every decoded DDM chunk is logged; with one `write` per line a VM flooding thread status
//! kept the relay busy writing logs while a debugger's reply waited behind the flood. Here
//! the relay only queues a line (bounded: when the writer falls that far behind, logging
//! waits, as a direct write would) and the writer thread writes whatever is queued at once.

use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Lines queued before a logging call waits for the writer.
pub const QUEUE: usize = 16_384;
/// Most bytes gathered into one write.
const BATCH: usize = 256 * 1024;

enum Msg {
    Line(Vec<u8>),
    /// Write everything before this, then answer.
    Flush(SyncSender<()>),
}

/// The `MakeWriter` handed to tracing-subscriber.
#[derive(Clone)]
pub struct StderrQueue {
    tx: SyncSender<Msg>,
}

/// Flushes the queue when dropped (at the end of `main`), so no line is lost at exit.
pub struct FlushGuard {
    tx: SyncSender<Msg>,
}

impl FlushGuard {
    pub fn flush(&self) {
        let (done, wait) = sync_channel(1);
        if self.tx.send(Msg::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Starts the writer thread. Falls back to nothing worse than direct writes: if the thread
/// cannot start, lines are written by the caller.
pub fn start() -> (StderrQueue, FlushGuard) {
    let (tx, rx) = sync_channel(QUEUE);
    let spawned = std::thread::Builder::new().name("jdwpmux-log".into()).spawn(move || run(rx));
    if spawned.is_err() {
        let (tx2, rx2) = sync_channel(QUEUE);
        drop(rx2);
        return (StderrQueue { tx: tx2.clone() }, FlushGuard { tx: tx2 });
    }
    (StderrQueue { tx: tx.clone() }, FlushGuard { tx })
}

fn run(rx: Receiver<Msg>) {
    let mut buf = Vec::with_capacity(BATCH);
    while let Ok(first) = rx.recv() {
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Line(l) => buf.extend_from_slice(&l),
                Msg::Flush(done) => flushes.push(done),
            }
            if buf.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(&buf);
        let _ = err.flush();
        buf.clear();
        for f in flushes {
            let _ = f.send(());
        }
    }
}

/// One log line being formatted; queued whole when the formatter is done with it.
pub struct Line {
    buf: Vec<u8>,
    tx: SyncSender<Msg>,
}

impl Write for Line {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.buf);
        if let Err(e) = self.tx.send(Msg::Line(line)) {
            // No writer thread: write it here rather than lose it.
            if let Msg::Line(l) = e.0 {
                let _ = std::io::stderr().write_all(&l);
            }
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for StderrQueue {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line { buf: Vec::with_capacity(256), tx: self.tx.clone() }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_queued_and_flushed() {
        use std::io::Write;
        let (q, guard) = super::start();
        for i in 0..1000 {
            let mut l = tracing_subscriber::fmt::MakeWriter::make_writer(&q);
            writeln!(l, "line {i}").unwrap();
        }
        guard.flush();
        drop(guard);
    }
}
