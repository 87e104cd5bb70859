//! The capture writer: a tokio task fed by a bounded channel, and the cloneable handle
//! the relay uses. `record` never blocks or fails: when the queue is full the record is
//! dropped and counted, and after a write error or the size limit the task only drains.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::jsonl::JsonlEncoder;
use super::pcapng::PcapngEncoder;
use super::record::Record;
use super::{CaptureError, CaptureOptions, Format, MIN_SNAPLEN};

/// Write buffer: large enough that a busy session costs few syscalls.
const WRITE_BUFFER: usize = 256 * 1024;

enum Msg {
    Record(Record),
    Shutdown,
}

enum Sink {
    Pcapng(Box<PcapngEncoder>),
    Jsonl(JsonlEncoder),
}

impl Sink {
    fn encode(&mut self, r: &Record, out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Sink::Pcapng(enc) => {
                enc.encode(r).map_err(|e| e.to_string())?;
                out.extend_from_slice(&enc.take_output());
                Ok(())
            }
            Sink::Jsonl(enc) => enc.encode(r, out).map_err(|e| e.to_string()),
        }
    }
}

struct Shared {
    dropped: AtomicU64,
    /// Set once the task stops writing: later records are not even queued.
    stopped: AtomicBool,
    snaplen: usize,
}

/// What a finished capture did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSummary {
    pub records_written: u64,
    pub bytes_written: u64,
    pub dropped: u64,
    pub limit_reached: bool,
    pub write_error: Option<String>,
}

/// Entry point: `Capture::start(...)`.
pub struct Capture;

impl Capture {
    /// Creates the file (and writes the pcapng header) now, so a bad path fails here, then
    /// spawns the writer task on the current tokio runtime. `format: None` picks it from
    /// the extension.
    pub fn start(
        path: impl AsRef<Path>,
        format: Option<Format>,
        opts: CaptureOptions,
    ) -> Result<CaptureHandle, CaptureError> {
        let path = path.as_ref().to_path_buf();
        let format = match format {
            Some(f) => f,
            None => {
                Format::from_path(&path).ok_or_else(|| CaptureError::UnknownFormat(path.clone()))?
            }
        };
        if opts.snaplen < MIN_SNAPLEN {
            return Err(CaptureError::Snaplen(opts.snaplen));
        }
        if opts.channel_capacity == 0 {
            return Err(CaptureError::Capacity);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| CaptureError::NoRuntime)?;
        let (sink, header) = match format {
            Format::Pcapng => {
                let mut enc =
                    PcapngEncoder::new().map_err(|e| CaptureError::Pcapng(e.to_string()))?;
                let header = enc.take_output();
                (Sink::Pcapng(Box::new(enc)), header)
            }
            Format::Jsonl => (
                Sink::Jsonl(JsonlEncoder::with_snaplen(opts.chunk_decoder, opts.snaplen)),
                Vec::new(),
            ),
        };
        let mut file = std::fs::File::create(&path).map_err(|source| CaptureError::Create {
            path: path.clone(),
            source,
        })?;
        // Small and done once: a blocking write here keeps start's error reporting simple.
        std::io::Write::write_all(&mut file, &header).map_err(|source| CaptureError::Header {
            path: path.clone(),
            source,
        })?;

        let shared = Arc::new(Shared {
            dropped: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            snaplen: opts.snaplen,
        });
        let (tx, rx) = mpsc::channel(opts.channel_capacity);
        let task = Task {
            rx,
            out: BufWriter::with_capacity(WRITE_BUFFER, tokio::fs::File::from_std(file)),
            sink,
            shared: shared.clone(),
            path,
            max_bytes: opts.max_bytes,
            summary: CaptureSummary {
                records_written: 0,
                bytes_written: header.len() as u64,
                dropped: 0,
                limit_reached: false,
                write_error: None,
            },
        };
        let join = runtime.spawn(task.run());
        Ok(CaptureHandle {
            tx,
            shared,
            task: Arc::new(Mutex::new(Some(join))),
        })
    }
}

/// Cheap to clone; every clone feeds the same file.
#[derive(Clone)]
pub struct CaptureHandle {
    tx: mpsc::Sender<Msg>,
    shared: Arc<Shared>,
    task: Arc<Mutex<Option<JoinHandle<CaptureSummary>>>>,
}

impl std::fmt::Debug for CaptureHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureHandle")
            .field("snaplen", &self.shared.snaplen)
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl CaptureHandle {
    /// Queues a record; never blocks. Data beyond the snaplen is cut here (orig_len keeps
    /// the real size). A full queue drops the record and counts it; after close or once
    /// the writer has stopped (limit, error) records are silently ignored.
    pub fn record(&self, mut r: Record) {
        if self.shared.stopped.load(Ordering::Relaxed) {
            return;
        }
        if let Record::Data { bytes, .. } = &mut r {
            bytes.truncate(self.shared.snaplen);
        }
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(Msg::Record(r)) {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Bytes kept per record: the proxy may cut before building the record to save copies.
    pub fn snaplen(&self) -> usize {
        self.shared.snaplen
    }

    /// Records dropped because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Writes everything queued before this call, flushes, and waits for the task.
    /// Only the first close (from any clone) gets the summary.
    pub async fn close(&self) -> Result<CaptureSummary, CaptureError> {
        let join = match self.task.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let join = join.ok_or(CaptureError::AlreadyClosed)?;
        // Fails only if the task already ended; joining below reports why.
        let _ = self.tx.send(Msg::Shutdown).await;
        join.await.map_err(|e| CaptureError::Task(e.to_string()))
    }
}

struct Task {
    rx: mpsc::Receiver<Msg>,
    out: BufWriter<tokio::fs::File>,
    sink: Sink,
    shared: Arc<Shared>,
    path: PathBuf,
    max_bytes: Option<u64>,
    summary: CaptureSummary,
}

impl Task {
    fn writing(&self) -> bool {
        !self.summary.limit_reached && self.summary.write_error.is_none()
    }

    fn fail(&mut self, what: &str, err: String) {
        tracing::error!(path = %self.path.display(), "capture {what} failed, no longer writing: {err}");
        self.summary.write_error = Some(err);
        self.shared.stopped.store(true, Ordering::Relaxed);
    }

    /// The only await points are `recv` (cancel-safe) and writes whose partial progress
    /// is irrelevant once the task is gone; there is no select!, so nothing is lost to a
    /// losing branch.
    async fn run(mut self) -> CaptureSummary {
        let mut warned_drops = false;
        let mut buf = Vec::new();
        while let Some(msg) = self.rx.recv().await {
            let Msg::Record(rec) = msg else { break };
            if !warned_drops {
                let d = self.shared.dropped.load(Ordering::Relaxed);
                if d > 0 {
                    tracing::warn!(path = %self.path.display(), dropped = d, "capture writer fell behind: {d} record(s) dropped so far");
                    warned_drops = true;
                }
            }
            if !self.writing() {
                continue;
            }
            buf.clear();
            if let Err(e) = self.sink.encode(&rec, &mut buf) {
                self.fail("encoding", e);
                continue;
            }
            if let Some(max) = self.max_bytes {
                if self.summary.bytes_written + buf.len() as u64 > max {
                    tracing::warn!(path = %self.path.display(), "capture file reached its limit of {max} bytes ({} written); further traffic is not captured", self.summary.bytes_written);
                    self.summary.limit_reached = true;
                    self.shared.stopped.store(true, Ordering::Relaxed);
                    continue;
                }
            }
            if let Err(e) = self.out.write_all(&buf).await {
                self.fail("write", e.to_string());
                continue;
            }
            self.summary.bytes_written += buf.len() as u64;
            self.summary.records_written += 1;
            // Flush when idle so a quiet session is on disk promptly (tail -f works) while
            // a busy one still writes in large batches.
            if self.rx.is_empty() {
                if let Err(e) = self.out.flush().await {
                    self.fail("flush", e.to_string());
                }
            }
        }
        if self.summary.write_error.is_none() {
            if let Err(e) = self.out.flush().await {
                self.fail("flush", e.to_string());
            }
        }
        // Clones still held by the relay stop queueing into a channel nobody reads.
        self.shared.stopped.store(true, Ordering::Relaxed);
        self.summary.dropped = self.shared.dropped.load(Ordering::Relaxed);
        if self.summary.dropped > 0 {
            tracing::warn!(path = %self.path.display(), dropped = self.summary.dropped, "capture closed: {} record(s) were dropped in total", self.summary.dropped);
        }
        self.summary
    }
}
